package integration_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/tests/hosts"
)

// TestRemoverDeletesStuckNode removes, with slurm.Remover as the charms do, a dynamic node
// that ran a job during a `scontrol reconfigure` on real slurmctld. On Slurm 22.05 the
// node then stays ALLOCATED with no job once the job ends and `scontrol delete` refuses
// it as busy (SchedMD bug 16434): the removal must see squeue empty while the node stays
// busy for StuckFor, stop its slurmd, set it DOWN and delete it, instead of waiting for
// ever. On a fixed Slurm the node is idle and removed the ordinary way.
func TestRemoverDeletesStuckNode(t *testing.T) {
	t.Parallel()
	c := newCluster(t, func(ctl *hosts.Host) []byte { return baseConf(t, ctl) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sc := &slurm.Client{Runner: command.Exec{Command: c.ctl.Command}, Conf: confPath, PollInterval: pollInterval}
	v, err := sc.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := c.addDynamicNode(ctx, "node1", "base")
	waitNode(t, ctx, sc, n.name, func(n slurm.Node) bool { return n.State.Base == slurm.StateIdle })

	// A job runs on node1 across a reconfigure, then ends.
	id, err := c.onCtl(ctx, "sbatch", "--parsable", "-p", "base", "-w", "node1", "-o", "/dev/null",
		"--wrap", "while [ ! -e /var/lib/juju/release ]; do sleep 0.1; done")
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "job running on node1", func() (bool, string) {
		jobs, err := sc.JobsOnNode(ctx, "node1")
		return err == nil && len(jobs) == 1 && jobs[0].ID == id && jobs[0].State == "RUNNING", fmt.Sprint(jobs, err)
	})
	if err := sc.Reconfigure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.host.Path("/var/lib/juju/release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "the job on node1 to end", func() (bool, string) {
		jobs, err := sc.JobsOnNode(ctx, "node1")
		node, err2 := sc.ShowNode(ctx, "node1")
		return err == nil && err2 == nil && len(jobs) == 0 && !node.State.Has(slurm.FlagCompleting), fmt.Sprint(jobs, node.State)
	})
	wedged := !jobCountFixed(v)
	if node, err := sc.ShowNode(ctx, "node1"); err != nil || node.State.Busy() != wedged {
		t.Fatalf("node1 after its job ended on Slurm %v: %v, %v; want busy (bug 16434): %v", v, node.State, err, wedged)
	}

	var stopped []string
	m := &slurm.Remover{
		Client:   sc,
		Interval: pollInterval,
		StuckFor: 2 * time.Second,
		Stop: func(ctx context.Context, node string) error {
			stopped = append(stopped, node)
			return n.svc.Stop(ctx, "slurmd")
		},
	}
	r := &slurm.Removal{Node: "node1", Reason: "unit compute/1 removed"}
	if err := m.Remove(ctx, r); err != nil {
		t.Fatalf("Remove: %v (removal %+v)", err, r)
	}
	if r.Stuck != wedged || !slices.Equal(stopped, []string{"node1"}) {
		t.Errorf("removal stuck %v (want %v), stopped %v", r.Stuck, wedged, stopped)
	}
	if _, err := sc.ShowNode(ctx, "node1"); !errors.Is(err, slurm.ErrUnknownNode) {
		t.Errorf("node1 after the removal: %v, want unknown", err)
	}
	// The host's slurmd, started again, registers a fresh node record that runs jobs.
	n.start(t, ctx)
	waitNode(t, ctx, sc, n.name, func(n slurm.Node) bool { return n.State.Base == slurm.StateIdle && !n.State.Busy() })
	if out, err := c.onCtl(ctx, "srun", "-p", "base", "-w", "node1", "hostname"); err != nil || out != "node1" {
		t.Errorf("srun on the re-registered node1: %q, %v", out, err)
	}
}
