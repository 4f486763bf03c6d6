package integration_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/pebble"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/tests/hosts"
)

// slurmdArgs is the command line of dynamic slurmd name registering with
// conf as its node parameters, configless from the controller at ctl.
func slurmdArgs(name string, ctl netip.Addr, conf string) []string {
	return []string{"slurmd", "-D", "-Z", "--conf", conf, "-N", name,
		"--conf-server", netip.AddrPortFrom(ctl, 6817).String()}
}

// TestDynamicNodeLifecycle drives libs/slurm and the slurmd service through
// the removal of a dynamic node that runs a job, and its re-registration
// with a new --conf, against real munged, slurmctld and slurmd 22.05.
func TestDynamicNodeLifecycle(t *testing.T) {
	t.Parallel()
	c := newCluster(t, func(ctl *hosts.Host) []byte { return baseConf(t, ctl) })
	node := c.addCompute("node1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	sc := &slurm.Client{
		Runner:       command.Exec{Command: c.ctl.Command},
		Conf:         confPath,
		PollInterval: pollInterval,
	}
	ctls, err := sc.Ping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]slurm.Controller{{Role: "primary", Host: "ctl", Up: true}}, ctls); d != "" {
		t.Errorf("Ping (-want +got):\n%s", d)
	}
	v, err := sc.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.Major != 22 || v.Minor != 5 {
		t.Errorf("Version = %v, want 22.05.x", v)
	}
	// slurmd -C on the compute host gives its real hardware.
	nc := &slurm.Client{Runner: command.Exec{Command: node.Command}}
	mi, err := nc.MachineInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if mi.Hostname != "node1" || mi.CPUs < 1 || mi.RealMemory < 100 {
		t.Errorf("MachineInfo = %+v", mi)
	}

	// slurmd runs under the node's Pebble, managed through service/pebble.
	svc, err := pebble.New(node.PebbleSocket())
	if err != nil {
		t.Fatal(err)
	}
	spec := service.Spec{
		Name:      "slurmd",
		Summary:   "Slurm compute daemon (dynamic node)",
		Command:   slurmdArgs("node1", c.ctl.Addr, "RealMemory=1000 CPUs=1 Feature=base"),
		KillDelay: 10 * time.Second,
	}
	if err := svc.Configure(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := svc.Enable(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	checkStatus(t, ctx, svc, service.StateActive)
	n := waitNode(t, ctx, sc, "node1", func(n slurm.Node) bool { return n.State.Base == slurm.StateIdle })
	if !n.State.Dynamic() || n.RealMemory != 1000 || n.Addr != node.Addr.String() {
		t.Errorf("registered node: state %v, RealMemory %d, Addr %q", n.State, n.RealMemory, n.Addr)
	}
	if d := cmp.Diff([]string{"base"}, n.Features); d != "" {
		t.Errorf("features (-want +got):\n%s", d)
	}

	// A job that runs until the test releases it (it waits for a file in
	// the node's private /var/lib/juju).
	release := node.Path("/var/lib/juju/release")
	out, err := c.onCtl(ctx, "sbatch", "--parsable", "-p", "base", "-w", "node1", "-o", "/dev/null",
		"--wrap", "while [ ! -e /var/lib/juju/release ]; do sleep 0.1; done")
	if err != nil {
		t.Fatal(err)
	}
	jobID := strings.TrimSpace(out)
	if _, err := strconv.Atoi(jobID); err != nil {
		t.Fatalf("sbatch printed %q", out)
	}
	waitUntil(t, ctx, "job running on node1", func() (bool, string) {
		jobs, err := sc.JobsOnNode(ctx, "node1")
		if err != nil {
			return false, err.Error()
		}
		return len(jobs) == 1 && jobs[0].ID == jobID && jobs[0].State == "RUNNING", ""
	})

	if err := sc.Drain(ctx, "node1", "removed by test: unit slurmd/1"); err != nil {
		t.Fatal(err)
	}
	n, err = sc.ShowNode(ctx, "node1")
	if err != nil {
		t.Fatal(err)
	}
	if !n.State.Draining() || n.Reason != "removed by test: unit slurmd/1" {
		t.Errorf("after Drain: state %v reason %q, want DRAINING with the reason", n.State, n.Reason)
	}
	if err := sc.DeleteNode(ctx, "node1"); !errors.Is(err, slurm.ErrNodeBusy) {
		t.Fatalf("DeleteNode with a running job: %v, want ErrNodeBusy", err)
	}

	drained := make(chan error, 1)
	go func() { drained <- sc.WaitDrained(ctx, "node1") }()
	select {
	case err := <-drained:
		t.Fatalf("WaitDrained returned while the job still runs: %v", err)
	default:
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if jobs, err := sc.JobsOnNode(ctx, "node1"); err != nil || len(jobs) != 0 {
		t.Errorf("after WaitDrained: jobs %v, err %v", jobs, err)
	}
	n, err = sc.ShowNode(ctx, "node1")
	if err != nil {
		t.Fatal(err)
	}
	if !n.State.Drained() {
		t.Errorf("after WaitDrained: state %v, want DRAINED", n.State)
	}

	if err := svc.Stop(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	checkStatus(t, ctx, svc, service.StateInactive)
	if err := sc.DeleteNode(ctx, "node1"); err != nil {
		t.Fatalf("DeleteNode of a drained, stopped node: %v", err)
	}
	if _, err := sc.ShowNode(ctx, "node1"); !errors.Is(err, slurm.ErrUnknownNode) {
		t.Fatalf("ShowNode after delete: %v, want ErrUnknownNode", err)
	}

	// Restart with a new --conf: the node registers afresh with it.
	spec.Command = slurmdArgs("node1", c.ctl.Addr, "RealMemory=800 CPUs=1 Feature=base,fast")
	if err := svc.Configure(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := svc.Restart(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	checkStatus(t, ctx, svc, service.StateActive)
	n = waitNode(t, ctx, sc, "node1", func(n slurm.Node) bool { return n.State.Base == slurm.StateIdle })
	if d := cmp.Diff([]string{"base", "fast"}, n.Features); d != "" {
		t.Errorf("features after re-registration (-want +got):\n%s", d)
	}
	if n.RealMemory != 800 || n.State.Drain() {
		t.Errorf("after re-registration: RealMemory %d, state %v", n.RealMemory, n.State)
	}
	// And it runs jobs again.
	if out, err := c.onCtl(ctx, "srun", "-p", "base", "-w", "node1", "hostname"); err != nil || out != "node1" {
		t.Errorf("srun hostname: %q, %v", out, err)
	}
}

func checkStatus(t *testing.T, ctx context.Context, m service.Manager, want service.State) {
	t.Helper()
	st, err := m.Status(ctx, "slurmd")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != want {
		t.Errorf("slurmd status %q, want %q", st.State, want)
	}
}

// waitNode waits until node exists and ok(node) holds.
func waitNode(t *testing.T, ctx context.Context, sc *slurm.Client, name string, ok func(slurm.Node) bool) slurm.Node {
	t.Helper()
	var n slurm.Node
	waitUntil(t, ctx, "node "+name, func() (bool, string) {
		var err error
		n, err = sc.ShowNode(ctx, name)
		if err != nil {
			return false, err.Error()
		}
		return ok(n), n.State.String()
	})
	return n
}
