package slurmtest_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

// TestClusterAgreesWithRealSlurm runs each recorded command against a Cluster in the state
// the recording was made in and wants Slurm's recorded answer, byte for byte (or, for a
// node line whose recording has fields the fake does not keep, the same parsed node).
func TestClusterAgreesWithRealSlurm(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		recorded string
		setup    func(c *slurmtest.Cluster)
		parsed   bool // compare the parsed node's name, state and reason
	}{
		{recorded: "show-node-idle", setup: func(c *slurmtest.Cluster) { c.AddNode("node1") }},
		{recorded: "show-node-drained", parsed: true, setup: func(c *slurmtest.Cluster) {
			c.AddNode("node1")
			run(c, "scontrol", "update", "nodename=node1", "state=drain", "reason=unit slurmd/1 removed")
		}},
		{recorded: "show-node-draining", parsed: true, setup: func(c *slurmtest.Cluster) {
			c.AddNode("node1")
			c.StartJob("node1")
			run(c, "scontrol", "update", "nodename=node1", "state=drain", "reason=unit slurmd/1 removed")
		}},
		{recorded: "show-node-allocated", parsed: true, setup: func(c *slurmtest.Cluster) { c.AddNode("node1"); c.StartJob("node1") }},
		{recorded: "show-node-none"},
		{recorded: "show-node-unknown"},
		{recorded: "show-node-unreachable", setup: func(c *slurmtest.Cluster) { c.AddNode("node1"); c.SetUnreachable(true) }},
		{recorded: "squeue-node-running", setup: func(c *slurmtest.Cluster) { c.AddNode("node1"); c.StartJob("node1") }},
		{recorded: "squeue-node-empty", setup: func(c *slurmtest.Cluster) { c.AddNode("node1") }},
		{recorded: "squeue-node-unknown"},
		{recorded: "squeue-unreachable", setup: func(c *slurmtest.Cluster) { c.AddNode("node1"); c.SetUnreachable(true) }},
		{recorded: "drain-busy", setup: func(c *slurmtest.Cluster) { c.AddNode("node1"); c.StartJob("node1") }},
		{recorded: "delete-busy", setup: func(c *slurmtest.Cluster) { c.AddNode("node1"); c.StartJob("node1") }},
		{recorded: "delete-drained", setup: func(c *slurmtest.Cluster) { c.AddNode("node1") }},
		{recorded: "delete-unknown"},
		{recorded: "delete-unreachable", setup: func(c *slurmtest.Cluster) { c.AddNode("node1"); c.SetUnreachable(true) }},
		{recorded: "update-unknown"},
		{recorded: "update-unreachable", setup: func(c *slurmtest.Cluster) { c.AddNode("node1"); c.SetUnreachable(true) }},
		{recorded: "resume-idle", setup: func(c *slurmtest.Cluster) { c.AddNode("node2") }},
		{recorded: "reconfigure"},
		{recorded: "reconfigure-unreachable", setup: func(c *slurmtest.Cluster) { c.SetUnreachable(true) }},
		{recorded: "ping-up"},
		{recorded: "ping-down", setup: func(c *slurmtest.Cluster) { c.SetUnreachable(true) }},
	} {
		t.Run(tt.recorded, func(t *testing.T) {
			t.Parallel()
			c := slurmtest.NewCluster()
			if tt.setup != nil {
				tt.setup(c)
			}
			want := slurmtest.Real(tt.recorded)
			got, err := c.Run(context.Background(), want.Argv, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.parsed {
				wn, err1 := slurm.ParseShowNode(want.Output.Stdout)
				gn, err2 := slurm.ParseShowNode(got.Stdout)
				if err1 != nil || err2 != nil || len(wn) != 1 || len(gn) != 1 {
					t.Fatalf("parse: %v, %v", err1, err2)
				}
				key := func(n slurm.Node) []string { return []string{n.Name, n.State.String(), n.Reason} }
				if d := cmp.Diff(key(wn[0]), key(gn[0])); d != "" {
					t.Errorf("node (-real +fake):\n%s", d)
				}
				return
			}
			if d := cmp.Diff(string(want.Output.Stdout), string(got.Stdout)); d != "" {
				t.Errorf("stdout (-real +fake):\n%s", d)
			}
			if d := cmp.Diff(string(want.Output.Stderr), string(got.Stderr)); d != "" {
				t.Errorf("stderr (-real +fake):\n%s", d)
			}
			if got.ExitCode != want.Output.ExitCode {
				t.Errorf("exit code %d, real %d", got.ExitCode, want.Output.ExitCode)
			}
		})
	}
}

func TestClusterRefusesUnmodelledCommands(t *testing.T) {
	t.Parallel()
	if _, err := slurmtest.NewCluster().Run(context.Background(), []string{"sinfo", "-N"}, nil); err == nil {
		t.Error("unmodelled command: no error")
	}
}

func run(c *slurmtest.Cluster, argv ...string) {
	if _, err := c.Run(context.Background(), argv, nil); err != nil {
		panic(err)
	}
}
