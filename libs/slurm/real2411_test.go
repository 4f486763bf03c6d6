package slurm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

// TestRealSlurm2411 replays outputs recorded from real Slurm 24.11 (auth/slurm, dynamic nodes
// on Debian 13 machines): the operators' parsing and error classification hold there too.
func TestRealSlurm2411(t *testing.T) {
	ctx := context.Background()
	errCases := []struct {
		name string
		call func(*slurm.Client) error
		real string
		want error
	}{
		{"delete busy", func(c *slurm.Client) error { return c.DeleteNode(ctx, "slurmd-0") }, "delete-busy", slurm.ErrNodeBusy},
		{"delete unknown", func(c *slurm.Client) error { return c.DeleteNode(ctx, "nodeX") }, "delete-unknown", slurm.ErrUnknownNode},
		{"update unknown", func(c *slurm.Client) error { return c.Drain(ctx, "nodeX", "x") }, "update-unknown", slurm.ErrUnknownNode},
		{"resume idle", func(c *slurm.Client) error { return c.Resume(ctx, "slurmd-1") }, "resume-idle", slurm.ErrInvalidNodeState},
		{"show unknown", func(c *slurm.Client) error { _, err := c.ShowNode(ctx, "nodeX"); return err }, "show-node-unknown", slurm.ErrUnknownNode},
		{"show deleted", func(c *slurm.Client) error { _, err := c.ShowNode(ctx, "slurmd-0"); return err }, "show-node-deleted", slurm.ErrUnknownNode},
		{"squeue unknown", func(c *slurm.Client) error { _, err := c.JobsOnNode(ctx, "nodeX"); return err }, "squeue-node-unknown", slurm.ErrUnknownNode},
		{"partition unknown", func(c *slurm.Client) error {
			return c.UpdatePartitionState(ctx, "nope", slurm.PartitionInactive)
		}, "partition-unknown", slurm.ErrUnknownPartition},
	}
	for _, tt := range errCases {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newClient(slurmtest.Real2411(tt.real))
			if err := tt.call(c); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("delete drained", func(t *testing.T) {
		c, _ := newClient(slurmtest.Real2411("delete-drained"))
		if err := c.DeleteNode(ctx, "slurmd-0"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("node states", func(t *testing.T) {
		for _, tt := range []struct {
			real, node string
			want       []string
		}{
			{"show-node-idle", "slurmd-1", []string{slurm.StateIdle}},
			{"show-node-draining", "slurmd-0", []string{slurm.StateMixed, slurm.FlagDrain}},
			{"show-node-drained", "slurmd-0", []string{slurm.StateIdle, slurm.FlagDrain}},
		} {
			c, _ := newClient(slurmtest.Real2411(tt.real))
			n, err := c.ShowNode(ctx, tt.node)
			if err != nil {
				t.Fatalf("%s: %v", tt.real, err)
			}
			for _, s := range tt.want {
				if !n.State.Has(s) {
					t.Errorf("%s: state %+v lacks %s", tt.real, n.State, s)
				}
			}
		}
	})
	t.Run("local jobs", func(t *testing.T) {
		// scontrol listjobs on the node running job 1, found by node name; by host name it
		// finds nothing (the node slurmd-0 runs on host juju-1).
		for real, want := range map[string][]slurm.Job{
			"listjobs":             {{ID: "1", State: "RUNNING"}},
			"listjobs-by-hostname": nil,
		} {
			c, _ := newClient(slurmtest.Real2411(real))
			c.ClusterVersion = slurm.Version{Major: 24, Minor: 11, Micro: 5}
			got, err := c.LocalJobs(ctx, "slurmd-0")
			if err != nil {
				t.Fatalf("%s: %v", real, err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s: jobs (-want +got):\n%s", real, d)
			}
		}
	})
	t.Run("versions", func(t *testing.T) {
		c, _ := newClient(slurmtest.Real2411("slurmd-V"))
		v, err := c.SlurmdVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff("24.11.5", v.String()); d != "" {
			t.Errorf("version (-want +got):\n%s", d)
		}
		if f := slurm.FeaturesOf(v); f.Munge || f.AuthType != "auth/slurm" || !f.ListJobs {
			t.Errorf("features of %v: %+v", v, f)
		}
	})
}
