package slurm_test

import (
	"context"
	"testing"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// anyRunner answers every command with exit code exit and no output, and records the
// commands run.
type anyRunner struct {
	exit  int
	calls int
}

func (r *anyRunner) Run(ctx context.Context, argv, env []string) (command.Output, error) {
	r.calls++
	return command.Output{ExitCode: r.exit}, nil
}

// TestChanged: Client.Changed is called after every command that may change Slurm, whether
// it succeeded or failed, and after no read, so that a caller keeping what it read (a hook's
// node list) can drop it at the one place every change passes.
func TestChanged(t *testing.T) {
	job := slurm.PendingJob{ID: "7", Partitions: []string{"p1"}}
	tests := []struct {
		name    string
		call    func(context.Context, *slurm.Client) error
		changes bool
	}{
		{"ping", func(ctx context.Context, c *slurm.Client) error { _, err := c.Ping(ctx); return err }, false},
		{"version", func(ctx context.Context, c *slurm.Client) error { _, err := c.Version(ctx); return err }, false},
		{"slurmd version", func(ctx context.Context, c *slurm.Client) error { _, err := c.SlurmdVersion(ctx); return err }, false},
		{"slurmctld version", func(ctx context.Context, c *slurm.Client) error { _, err := c.SlurmctldVersion(ctx); return err }, false},
		{"machine", func(ctx context.Context, c *slurm.Client) error { _, err := c.MachineInfo(ctx); return err }, false},
		{"show node", func(ctx context.Context, c *slurm.Client) error { _, err := c.ShowNode(ctx, "n1"); return err }, false},
		{"nodes", func(ctx context.Context, c *slurm.Client) error { _, err := c.Nodes(ctx); return err }, false},
		{"jobs on nodes", func(ctx context.Context, c *slurm.Client) error {
			_, err := c.JobsOnNodes(ctx, []string{"n1"})
			return err
		}, false},
		{"local jobs", func(ctx context.Context, c *slurm.Client) error {
			c.ClusterVersion = slurm.Version{Major: 24, Minor: 11}
			_, err := c.LocalJobs(ctx, "n1")
			return err
		}, false},
		{"partition jobs", func(ctx context.Context, c *slurm.Client) error { _, err := c.JobsInPartition(ctx, "p1"); return err }, false},
		{"job records", func(ctx context.Context, c *slurm.Client) error {
			_, err := c.PartitionJobRecords(ctx, "p1")
			return err
		}, false},
		{"pending jobs", func(ctx context.Context, c *slurm.Client) error { _, err := c.PendingJobs(ctx); return err }, false},
		{"partitions", func(ctx context.Context, c *slurm.Client) error { _, err := c.Partitions(ctx); return err }, false},
		{"show partition", func(ctx context.Context, c *slurm.Client) error { _, err := c.ShowPartition(ctx, "p1"); return err }, false},
		{"sdiag", func(ctx context.Context, c *slurm.Client) error { _, err := c.DbdAgentQueue(ctx); return err }, false},
		{"cluster known", func(ctx context.Context, c *slurm.Client) error { _, err := c.ClusterKnown(ctx, "c"); return err }, false},
		{"update node", func(ctx context.Context, c *slurm.Client) error {
			return c.UpdateNode(ctx, "n1", slurm.NodeUpdate{State: "down", Reason: "r"})
		}, true},
		{"drain", func(ctx context.Context, c *slurm.Client) error { return c.Drain(ctx, "n1", "r") }, true},
		{"resume", func(ctx context.Context, c *slurm.Client) error { return c.Resume(ctx, "n1") }, true},
		{"delete", func(ctx context.Context, c *slurm.Client) error { return c.DeleteNode(ctx, "n1") }, true},
		{"cancel", func(ctx context.Context, c *slurm.Client) error { return c.CancelJobs(ctx, "7") }, true},
		{"reconfigure", func(ctx context.Context, c *slurm.Client) error { return c.Reconfigure(ctx) }, true},
		{"takeover", func(ctx context.Context, c *slurm.Client) error { return c.Takeover(ctx, 1) }, true},
		{"partition state", func(ctx context.Context, c *slurm.Client) error {
			return c.UpdatePartitionState(ctx, "p1", slurm.PartitionInactive)
		}, true},
		{"move job", func(ctx context.Context, c *slurm.Client) error { return c.MovePendingJob(ctx, "7", "p2") }, true},
		{"reconsider job", func(ctx context.Context, c *slurm.Client) error { return c.Reconsider(ctx, job) }, true},
		{"reboot", func(ctx context.Context, c *slurm.Client) error { return c.RebootNodes(ctx, []string{"n1"}, "r") }, true},
	}
	for _, tt := range tests {
		for _, exit := range []int{0, 1} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				r := &anyRunner{exit: exit}
				changed := 0
				c := &slurm.Client{Runner: r, Conf: conf, Changed: func() { changed++ }}
				_ = tt.call(context.Background(), c) // empty outputs: parse errors are not the point
				if r.calls == 0 {
					t.Fatal("no command run")
				}
				want := 0
				if tt.changes {
					want = r.calls
				}
				if changed != want {
					t.Errorf("exit %d: Changed called %d times after %d commands, want %d", exit, changed, r.calls, want)
				}
			})
		}
	}
}
