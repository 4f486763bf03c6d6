package slurm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

// TestRealSlurmReleases replays outputs recorded from real Slurm 24.11 and 26.05 (auth/slurm,
// dynamic nodes on Debian 13 and 14 machines, tests/e2e TestRecordSlurm): the operators'
// parsing and error classification hold there too.
func TestRealSlurmReleases(t *testing.T) {
	for _, r := range []struct {
		release string
		real    func(string) slurmtest.Case
		version slurm.Version
		// reconfigures: the reconfigures in slurmctld-log (the charm's on integrate, the
		// recorder's).
		reconfigures int
	}{
		{"24.11", slurmtest.Real2411, slurm.Version{Major: 24, Minor: 11, Micro: 5}, 2},
		{"26.05", slurmtest.Real2605, slurm.Version{Major: 26, Minor: 5, Micro: 5}, 2},
	} {
		t.Run(r.release, func(t *testing.T) {
			replayRelease(t, r.real, r.version, r.reconfigures)
		})
	}
}

// replayRelease checks the client against release's recordings (real) of Slurm version.
func replayRelease(t *testing.T, real func(string) slurmtest.Case, version slurm.Version, reconfigures int) {
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
			c, _ := newClient(real(tt.real))
			if err := tt.call(c); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("delete drained", func(t *testing.T) {
		c, _ := newClient(real("delete-drained"))
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
			c, _ := newClient(real(tt.real))
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
		for name, want := range map[string][]slurm.Job{
			"listjobs":             {{ID: "1", State: "RUNNING"}},
			"listjobs-by-hostname": nil,
		} {
			c, _ := newClient(real(name))
			c.ClusterVersion = version
			got, err := c.LocalJobs(ctx, "slurmd-0")
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s: jobs (-want +got):\n%s", name, d)
			}
		}
	})
	t.Run("versions", func(t *testing.T) {
		c, _ := newClient(real("slurmd-V"))
		v, err := c.SlurmdVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(version, v); d != "" {
			t.Errorf("version (-want +got):\n%s", d)
		}
		if f := slurm.FeaturesOf(v); f.Munge || f.AuthType != "auth/slurm" || !f.ListJobs {
			t.Errorf("features of %v: %+v", v, f)
		}
	})
	t.Run("machine facts", func(t *testing.T) {
		// slurmd -C, and where Slurm's own GPU detection finds GPUs: 26.05 adds Gres= and its
		// "Found gpu:..." lines, 24.11 nothing.
		want := slurm.MachineInfo{Hostname: "juju-1", CPUs: 2, Boards: 1, SocketsPerBoard: 1, CoresPerSocket: 2, ThreadsPerCore: 1, RealMemory: 24105}
		for _, name := range []string{"slurmd-C", "slurmd-C-gpus"} {
			mi, err := slurm.ParseMachineInfo(real(name).Output.Stdout)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			gres, _ := mi.Params.Get("Gres")
			mi.Params = nil
			if d := cmp.Diff(want, mi); d != "" {
				t.Errorf("%s (-want +got):\n%s", name, d)
			}
			wantGres := ""
			if name == "slurmd-C-gpus" && slurm.FeaturesOf(version).GPUAutoDetect {
				wantGres = "gpu:tesla_t4:2"
			}
			if gres != wantGres {
				t.Errorf("%s: Gres=%q, want %q", name, gres, wantGres)
			}
		}
	})
	t.Run("controller log", func(t *testing.T) {
		// One start and the reconfigures, each a new process from 23.11 (not a restart).
		got := slurm.ParseControllerLog(real("slurmctld-log").Output.Stdout)
		if d := cmp.Diff(slurm.ControllerEvents{Reconfigures: reconfigures, Starts: 1}, got); d != "" {
			t.Errorf("events (-want +got):\n%s", d)
		}
	})
}
