package slurm_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

const conf = "/etc/slurm/slurm.conf"

func newClient(cases ...slurmtest.Case) (*slurm.Client, *slurmtest.Runner) {
	r := &slurmtest.Runner{}
	r.Expect(cases...)
	return &slurm.Client{Runner: r, Conf: conf, PollInterval: time.Millisecond}, r
}

func TestCommandErrors(t *testing.T) {
	tests := []struct {
		name string
		call func(context.Context, *slurm.Client) error
		real string
		want error // nil: a *CommandError with no kind
	}{
		{"delete busy", func(ctx context.Context, c *slurm.Client) error { return c.DeleteNode(ctx, "node1") }, "delete-busy", slurm.ErrNodeBusy},
		{"delete unknown", func(ctx context.Context, c *slurm.Client) error { return c.DeleteNode(ctx, "nodeX") }, "delete-unknown", slurm.ErrUnknownNode},
		{"delete unreachable", func(ctx context.Context, c *slurm.Client) error { return c.DeleteNode(ctx, "node1") }, "delete-unreachable", slurm.ErrControllerUnreachable},
		{"update unknown", func(ctx context.Context, c *slurm.Client) error { return c.Drain(ctx, "nodeX", "x") }, "update-unknown", slurm.ErrUnknownNode},
		{"update unreachable", func(ctx context.Context, c *slurm.Client) error { return c.Resume(ctx, "node1") }, "update-unreachable", slurm.ErrControllerUnreachable},
		{"resume idle", func(ctx context.Context, c *slurm.Client) error { return c.Resume(ctx, "node2") }, "resume-idle", slurm.ErrInvalidNodeState},
		{"bad state", func(ctx context.Context, c *slurm.Client) error {
			return c.UpdateNode(ctx, "node2", slurm.NodeUpdate{State: "bogus"})
		}, "update-bad-state", nil},
		{"show unknown", func(ctx context.Context, c *slurm.Client) error { _, err := c.ShowNode(ctx, "nodeX"); return err }, "show-node-unknown", slurm.ErrUnknownNode},
		{"show deleted", func(ctx context.Context, c *slurm.Client) error { _, err := c.ShowNode(ctx, "node1"); return err }, "show-node-deleted", slurm.ErrUnknownNode},
		{"show unreachable", func(ctx context.Context, c *slurm.Client) error { _, err := c.ShowNode(ctx, "node1"); return err }, "show-node-unreachable", slurm.ErrControllerUnreachable},
		{"squeue unknown", func(ctx context.Context, c *slurm.Client) error { _, err := c.JobsOnNode(ctx, "nodeX"); return err }, "squeue-node-unknown", slurm.ErrUnknownNode},
		{"squeue unreachable", func(ctx context.Context, c *slurm.Client) error { _, err := c.JobsOnNode(ctx, "node1"); return err }, "squeue-unreachable", slurm.ErrControllerUnreachable},
		{"partition unknown", func(ctx context.Context, c *slurm.Client) error {
			return c.UpdatePartitionState(ctx, "nope", slurm.PartitionInactive)
		}, "partition-unknown", slurm.ErrUnknownPartition},
		{"reconfigure unreachable", func(ctx context.Context, c *slurm.Client) error { return c.Reconfigure(ctx) }, "reconfigure-unreachable", slurm.ErrControllerUnreachable},
		{"ping down", func(ctx context.Context, c *slurm.Client) error { _, err := c.Ping(ctx); return err }, "ping-down", slurm.ErrControllerUnreachable},
	}
	kinds := []error{slurm.ErrNodeBusy, slurm.ErrUnknownNode, slurm.ErrUnknownPartition, slurm.ErrInvalidNodeState, slurm.ErrControllerUnreachable}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newClient(slurmtest.Real(tt.real))
			err := tt.call(context.Background(), c)
			if err == nil {
				t.Fatal("got no error")
			}
			for _, k := range kinds {
				if got := errors.Is(err, k); got != (k == tt.want) {
					t.Errorf("errors.Is(%v, %v) = %v", err, k, got)
				}
			}
			if tt.name != "ping down" {
				var ce *slurm.CommandError
				if !errors.As(err, &ce) || ce.ExitCode != 1 {
					t.Errorf("got %#v, want a *CommandError with exit code 1", err)
				}
			}
		})
	}
}

func TestSuccessfulCommands(t *testing.T) {
	tests := []struct {
		name string
		call func(context.Context, *slurm.Client) error
		real string
	}{
		{"drain", func(ctx context.Context, c *slurm.Client) error {
			return c.Drain(ctx, "node1", "unit slurmd/1 removed")
		}, "drain-busy"},
		{"delete", func(ctx context.Context, c *slurm.Client) error { return c.DeleteNode(ctx, "node1") }, "delete-drained"},
		{"reconfigure", func(ctx context.Context, c *slurm.Client) error { return c.Reconfigure(ctx) }, "reconfigure"},
		{"partition", func(ctx context.Context, c *slurm.Client) error {
			return c.UpdatePartitionState(ctx, "ns1", slurm.PartitionInactive)
		}, "partition-inactive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, r := newClient(slurmtest.Real(tt.real))
			if err := tt.call(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			want := []slurmtest.Call{{Argv: slurmtest.Real(tt.real).Argv, Env: []string{"SLURM_CONF=" + conf}}}
			if d := cmp.Diff(want, r.Calls()); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}

func TestUpdateNodeArgv(t *testing.T) {
	r := &slurmtest.Runner{}
	r.Expect(slurmtest.Case{Argv: []string{"scontrol", "update", "nodename=node1", "state=down", "reason=unit slurmd/2 removed", "comment=a b"}})
	c := &slurm.Client{Runner: r, Conf: conf, Env: []string{"A=b"}}
	if err := c.UpdateNode(context.Background(), "node1", slurm.NodeUpdate{State: "down", Reason: "unit slurmd/2 removed", Comment: "a b"}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"A=b", "SLURM_CONF=" + conf}, r.Calls()[0].Env); d != "" {
		t.Errorf("env (-want +got):\n%s", d)
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name string
		c    *slurm.Client
		call func(context.Context, *slurm.Client) error
	}{
		{"no conf", &slurm.Client{Runner: &slurmtest.Runner{}}, func(ctx context.Context, c *slurm.Client) error { return c.DeleteNode(ctx, "n") }},
		{"no runner", &slurm.Client{Conf: conf}, func(ctx context.Context, c *slurm.Client) error { return c.Reconfigure(ctx) }},
		{"empty node", &slurm.Client{Runner: &slurmtest.Runner{}, Conf: conf}, func(ctx context.Context, c *slurm.Client) error { return c.DeleteNode(ctx, "") }},
		{"node with space", &slurm.Client{Runner: &slurmtest.Runner{}, Conf: conf}, func(ctx context.Context, c *slurm.Client) error { return c.DeleteNode(ctx, "a state=down") }},
		{"drain without reason", &slurm.Client{Runner: &slurmtest.Runner{}, Conf: conf}, func(ctx context.Context, c *slurm.Client) error { return c.Drain(ctx, "n", " ") }},
		{"reason with newline", &slurm.Client{Runner: &slurmtest.Runner{}, Conf: conf}, func(ctx context.Context, c *slurm.Client) error { return c.Drain(ctx, "n", "a\nb") }},
		{"nothing to update", &slurm.Client{Runner: &slurmtest.Runner{}, Conf: conf}, func(ctx context.Context, c *slurm.Client) error {
			return c.UpdateNode(ctx, "n", slurm.NodeUpdate{})
		}},
		{"bad partition state", &slurm.Client{Runner: &slurmtest.Runner{}, Conf: conf}, func(ctx context.Context, c *slurm.Client) error {
			return c.UpdatePartitionState(ctx, "p", "gone")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(context.Background(), tt.c); err == nil {
				t.Fatal("got no error")
			}
			if r, ok := tt.c.Runner.(*slurmtest.Runner); ok && len(r.Calls()) != 0 {
				t.Errorf("ran %v for bad input", r.Calls())
			}
		})
	}
}

func TestPingVersionMachine(t *testing.T) {
	c, r := newClient(slurmtest.Real("ping-up"), slurmtest.Real("scontrol-V"), slurmtest.Real("slurmd-V"), slurmtest.Real("slurmd-C"))
	ctx := context.Background()
	ctls, err := c.Ping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]slurm.Controller{{Role: "primary", Host: "slurmctl", Up: true}}, ctls); d != "" {
		t.Errorf("ping (-want +got):\n%s", d)
	}
	want := slurm.Version{Major: 22, Minor: 5, Micro: 8}
	for _, f := range []func(context.Context) (slurm.Version, error){c.Version, c.SlurmdVersion} {
		v, err := f(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v != want {
			t.Errorf("version %v, want %v", v, want)
		}
	}
	m, err := c.MachineInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.String(), "CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105"; got != want {
		t.Errorf("machine info %q, want %q", got, want)
	}
	if m.Hostname != "node1" || m.CPUs != 2 || m.RealMemory != 24105 || m.CoresPerSocket != 2 {
		t.Errorf("machine info %+v", m)
	}
	// slurmd -V/-C need no controller: no SLURM_CONF is required, but it is passed.
	for _, call := range r.Calls() {
		want := []string{"SLURM_CONF=" + conf}
		if call.Argv[0] == "slurmd" && call.Argv[1] == "-C" {
			want = append(want, slurm.NoHwlocPlugins)
		}
		if d := cmp.Diff(want, call.Env); d != "" {
			t.Errorf("%v env (-want +got):\n%s", call.Argv, d)
		}
	}
	noConf := &slurm.Client{Runner: r}
	if _, err := noConf.MachineInfo(ctx); err != nil {
		t.Errorf("MachineInfo without Conf: %v", err)
	}
}

func TestJobs(t *testing.T) {
	tests := []struct {
		name string
		real string
		call func(context.Context, *slurm.Client) ([]slurm.Job, error)
		want []slurm.Job
	}{
		{"running", "squeue-node-running", func(ctx context.Context, c *slurm.Client) ([]slurm.Job, error) { return c.JobsOnNode(ctx, "node1") },
			[]slurm.Job{{ID: "1", State: "RUNNING", Partition: "ns1", User: "root", Nodes: "node1", Name: "sleep|pipe job"}}},
		{"completing", "squeue-node-completing", func(ctx context.Context, c *slurm.Client) ([]slurm.Job, error) { return c.JobsOnNode(ctx, "node1") },
			[]slurm.Job{{ID: "3", State: "COMPLETING", Partition: "ns1", User: "root", Nodes: "node1", Name: "wrap"}}},
		{"empty", "squeue-node-empty", func(ctx context.Context, c *slurm.Client) ([]slurm.Job, error) { return c.JobsOnNode(ctx, "node1") }, nil},
		{"partition", "squeue-partition", func(ctx context.Context, c *slurm.Client) ([]slurm.Job, error) { return c.JobsInPartition(ctx, "ns1") },
			[]slurm.Job{
				{ID: "2", State: "PENDING", Partition: "ns1", User: "root", Name: "wrap"},
				{ID: "1", State: "RUNNING", Partition: "ns1", User: "root", Nodes: "node1", Name: "sleep|pipe job"},
			}},
		{"local jobs before 24.05", "squeue-node-running", func(ctx context.Context, c *slurm.Client) ([]slurm.Job, error) { return c.LocalJobs(ctx, "node1") },
			[]slurm.Job{{ID: "1", State: "RUNNING", Partition: "ns1", User: "root", Nodes: "node1", Name: "sleep|pipe job"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newClient(slurmtest.Real(tt.real))
			got, err := tt.call(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("jobs (-want +got):\n%s", d)
			}
		})
	}
}

func TestLocalJobsListJobs(t *testing.T) {
	listjobs := []string{"scontrol", "listjobs", "--json"}
	tests := []struct {
		name    string
		out     command.Output
		want    []slurm.Job
		wantErr bool
	}{
		{"jobs", command.Output{Stdout: []byte(`{"jobs":[{"job_id":12,"step_id":"batch"},{"job_id":13}]}`)},
			[]slurm.Job{{ID: "12", State: "RUNNING"}, {ID: "13", State: "RUNNING"}}, false},
		{"none", command.Output{Stderr: []byte("No slurmstepd's found on this node\n"), ExitCode: 1}, nil, false},
		{"failure", command.Output{Stderr: []byte("boom\n"), ExitCode: 2}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &slurmtest.Runner{}
			r.Expect(slurmtest.Case{Argv: listjobs, Output: tt.out})
			c := &slurm.Client{Runner: r, ClusterVersion: slurm.Version{Major: 24, Minor: 5}}
			got, err := c.LocalJobs(context.Background(), "node1")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("jobs (-want +got):\n%s", d)
			}
			// The node name, not the host name, finds the node's slurmstepds.
			if calls := r.Calls(); len(calls) != 1 || !slices.Contains(calls[0].Env, "SLURMD_NODENAME=node1") {
				t.Errorf("calls %+v, want one with SLURMD_NODENAME=node1", calls)
			}
		})
	}
}

func TestWaitDrained(t *testing.T) {
	// The real sequence: a running job, then completing, then nothing left.
	c, r := newClient(
		slurmtest.Real("squeue-node-running"),
		slurmtest.Real("squeue-node-completing"),
		slurmtest.Real("squeue-node-empty"),
		slurmtest.Real("show-node-drained"),
	)
	if err := c.WaitDrained(context.Background(), "node1"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, call := range r.Calls() {
		got = append(got, call.Argv[0])
	}
	if d := cmp.Diff([]string{"squeue", "squeue", "squeue", "scontrol"}, got); d != "" {
		t.Errorf("commands (-want +got):\n%s", d)
	}
}

func TestWaitDrainedNodeStillCompleting(t *testing.T) {
	// squeue shows nothing, but the node still reports COMPLETING: keep waiting.
	c, r := newClient(
		slurmtest.Real("squeue-node-empty"),
		slurmtest.Case{Argv: slurmtest.Real("show-node-drained").Argv, Output: slurmtest.Real("show-node-completing").Output},
		slurmtest.Real("show-node-drained"),
	)
	if err := c.WaitDrained(context.Background(), "node1"); err != nil {
		t.Fatal(err)
	}
	if n := len(r.Calls()); n != 4 {
		t.Errorf("ran %d commands, want 4", n)
	}
}

func TestWaitDrainedErrors(t *testing.T) {
	t.Run("unknown node", func(t *testing.T) {
		c, _ := newClient(slurmtest.Case{Argv: slurmtest.Real("squeue-node-running").Argv, Output: slurmtest.Real("squeue-node-unknown").Output})
		if err := c.WaitDrained(context.Background(), "node1"); !errors.Is(err, slurm.ErrUnknownNode) {
			t.Errorf("got %v, want ErrUnknownNode", err)
		}
	})
	t.Run("context cancelled while busy", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		c, r := newClient(slurmtest.Real("squeue-node-running"))
		polled := make(chan struct{}, 10)
		c.Runner = notifyRunner{r, polled}
		c.PollInterval = time.Hour
		done := make(chan error, 1)
		go func() { done <- c.WaitDrained(ctx, "node1") }()
		// Cancel once the first poll happened; the wait must then end without a second poll.
		<-polled
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		if n := len(r.Calls()); n != 1 {
			t.Errorf("ran %d commands, want 1", n)
		}
	})
}

// notifyRunner signals on ran after every command.
type notifyRunner struct {
	command.Runner
	ran chan<- struct{}
}

func (n notifyRunner) Run(ctx context.Context, argv, env []string) (command.Output, error) {
	out, err := n.Runner.Run(ctx, argv, env)
	n.ran <- struct{}{}
	return out, err
}

func TestSlurmctldVersion(t *testing.T) {
	// Recorded without any slurm.conf: slurmctld -V, unlike scontrol -V, needs none.
	c, r := newClient(slurmtest.Real("slurmctld-V"))
	v, err := c.SlurmctldVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(slurm.Version{Major: 22, Minor: 5, Micro: 8}, v); d != "" {
		t.Errorf("version (-want +got):\n%s", d)
	}
	if len(r.Calls()) != 1 {
		t.Errorf("calls %v", r.Calls())
	}
}

func TestPartitionJobRecords(t *testing.T) {
	argv := []string{"squeue", "-h", "-t", "all", "-p", "ns1", "-o", "%i|%T|%P|%u|%N|%j"}
	tests := []struct {
		name    string
		out     command.Output
		want    []slurm.Job
		wantErr bool
	}{
		// Written by hand in the format of the real squeue-partition capture; -t all adds the
		// finished records. capture.sh has a partition-records case, not recorded yet.
		{"finished records", command.Output{Stdout: []byte("4|PENDING|ns1|root||wrap\n3|COMPLETED|ns1|root|node1|wrap\n2|CANCELLED|ns1|root|node1|sleep|pipe job\n")},
			[]slurm.Job{
				{ID: "4", State: "PENDING", Partition: "ns1", User: "root", Name: "wrap"},
				{ID: "3", State: "COMPLETED", Partition: "ns1", User: "root", Nodes: "node1", Name: "wrap"},
				{ID: "2", State: "CANCELLED", Partition: "ns1", User: "root", Nodes: "node1", Name: "sleep|pipe job"},
			}, false},
		{"none", command.Output{}, nil, false},
		{"unknown partition", command.Output{Stderr: []byte("squeue: error: Invalid partition name specified\n"), ExitCode: 1}, nil, false},
		{"unreachable", command.Output{Stderr: []byte("slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"), ExitCode: 1}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newClient(slurmtest.Case{Argv: argv, Output: tt.out})
			got, err := c.PartitionJobRecords(context.Background(), "ns1")
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("jobs (-want +got):\n%s", d)
			}
		})
	}
	c, r := newClient()
	if _, err := c.PartitionJobRecords(context.Background(), "a b"); err == nil || len(r.Calls()) != 0 {
		t.Errorf("bad partition name: %v, calls %v", err, r.Calls())
	}
}

// TestJobsOnNodes: one squeue over a list of nodes gives the jobs on any of them; an unknown
// node anywhere in the list is ErrUnknownNode for the whole list (as real 22.05 answers);
// names that would change the argument are refused before anything runs.
func TestJobsOnNodes(t *testing.T) {
	c := slurmtest.NewCluster()
	for _, n := range []string{"a-0", "a-1", "a-2"} {
		c.AddNode(n)
	}
	j0, j2 := c.StartJob("a-0"), c.StartJob("a-2")
	cl := &slurm.Client{Runner: c, Conf: conf}
	ctx := context.Background()
	jobs, err := cl.JobsOnNodes(ctx, []string{"a-0", "a-1", "a-2"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range jobs {
		got = append(got, j.ID+"@"+j.Nodes)
	}
	if d := cmp.Diff([]string{j0 + "@a-0", j2 + "@a-2"}, got); d != "" {
		t.Errorf("jobs (-want +got):\n%s", d)
	}
	if jobs, err := cl.JobsOnNodes(ctx, []string{"a-1"}); err != nil || len(jobs) != 0 {
		t.Errorf("a node without jobs: %v %v", jobs, err)
	}
	if _, err := cl.JobsOnNodes(ctx, []string{"a-0", "nosuch-3"}); !errors.Is(err, slurm.ErrUnknownNode) {
		t.Errorf("a list with an unknown node: %v, want ErrUnknownNode", err)
	}
	n := len(c.Calls())
	for _, bad := range [][]string{nil, {"a-0,a-1"}, {"-a"}, {"a b"}} {
		if _, err := cl.JobsOnNodes(ctx, bad); err == nil {
			t.Errorf("JobsOnNodes(%q) succeeded", bad)
		}
	}
	if len(c.Calls()) != n {
		t.Errorf("bad names ran commands: %v", c.Calls()[n:])
	}
}

func TestTakeoverArgv(t *testing.T) {
	r := &slurmtest.Runner{}
	r.Expect(slurmtest.Case{Argv: []string{"scontrol", "takeover", "1"}})
	c := &slurm.Client{Runner: r, Conf: conf}
	if err := c.Takeover(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []int{0, -1, 100} {
		if err := c.Takeover(context.Background(), bad); err == nil {
			t.Errorf("Takeover(%d) accepted", bad)
		}
	}
	if n := len(r.Calls()); n != 1 {
		t.Errorf("%d calls, want the one good takeover", n)
	}
}
