package slurm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

// The partition-membership cases were recorded by
// `go test ./tests/integration -run TestReconfigureKeepsDynamicNodesInPartitions -args
// -record-real $PWD/libs/slurm/slurmtest/real` on Slurm 22.05.8: "moved" is the state
// after node1 (slot 0) was deleted and slurmctld reconfigured, with node2 and node4 in
// NodeSet gpu and node3 and node5 in NodeSet base, the partitions swapped by the bug.

var realPartitionCases = []string{"show-partition-moved", "show-partition-repaired", "show-partitions-moved",
	"show-partition-empty"}

func TestParseShowPartition(t *testing.T) {
	type part struct {
		Name            string
		NodeSets, Nodes []string
		State           string
	}
	tests := []struct {
		name string
		data []byte
		want []part
	}{
		{"moved", slurmtest.Real("show-partition-moved").Output.Stdout,
			[]part{{"base", []string{"base"}, []string{"node4"}, "UP"}}},
		{"repaired", slurmtest.Real("show-partition-repaired").Output.Stdout,
			[]part{{"base", []string{"base"}, []string{"node3", "node5"}, "UP"}}},
		{"all", slurmtest.Real("show-partitions-moved").Output.Stdout, []part{
			{"base", []string{"base"}, []string{"node4"}, "UP"},
			{"gpu", []string{"gpu"}, []string{"node3", "node5"}, "UP"},
		}},
		{"no nodes", slurmtest.Real("show-partition-empty").Output.Stdout,
			[]part{{"gpu", []string{"gpu"}, nil, "UP"}}},
		{"none", []byte("No partitions in the system\n"), nil},
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := slurm.ParseShowPartition(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			var got []part
			for _, p := range ps {
				got = append(got, part{p.Name, p.NodeSets, p.Nodes, p.State})
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestParseShowPartitionErrors(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"not key=value", "garbage", `line 1: text "garbage" is not key=value`},
		{"no name", "State=UP Nodes=n1", "line 1: record does not start with PartitionName="},
		{"bad hostlist", "PartitionName=p\nPartitionName=q Nodes=n[1-", `line 2: partition q: bad Nodes="n[1-"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := slurm.ParseShowPartition([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestPartitionNodes(t *testing.T) {
	ctx := context.Background()
	c, r := newClient(slurmtest.Real("show-partition-repaired"), slurmtest.Real("show-partition-unknown"))
	got, err := c.PartitionNodes(ctx, "base")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"node3", "node5"}, got); d != "" {
		t.Errorf("PartitionNodes (-want +got):\n%s", d)
	}
	if _, err := c.PartitionNodes(ctx, "nope"); !errors.Is(err, slurm.ErrUnknownPartition) {
		t.Errorf("PartitionNodes(nope): %v, want ErrUnknownPartition", err)
	}
	if _, err := c.PartitionNodes(ctx, "a b"); err == nil {
		t.Error("PartitionNodes accepted a name with a space")
	}
	if d := cmp.Diff([]string{"SLURM_CONF=" + conf}, r.Calls()[0].Env); d != "" {
		t.Errorf("env (-want +got):\n%s", d)
	}
}

func TestNodesWithFeature(t *testing.T) {
	tests := []struct {
		feature string
		want    []string
	}{
		{"base", []string{"node3", "node5"}},
		{"gpu", []string{"node2", "node4"}},
		{"fast", nil},
	}
	for _, tt := range tests {
		t.Run(tt.feature, func(t *testing.T) {
			c, _ := newClient(slurmtest.Real("show-node-moved"))
			got, err := c.NodesWithFeature(context.Background(), tt.feature)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestCheckPartitionMembership(t *testing.T) {
	tests := []struct {
		name, partition, feature string
		cases                    []slurmtest.Case
		missing, extra           []string
	}{
		{"swapped by reconfigure", "base", "base",
			[]slurmtest.Case{slurmtest.Real("show-node-moved"), slurmtest.Real("show-partition-moved")},
			[]string{"node3", "node5"}, []string{"node4"}},
		{"repaired", "base", "base",
			[]slurmtest.Case{slurmtest.Real("show-node-moved"), slurmtest.Real("show-partition-repaired")}, nil, nil},
		// A node in the partition that the node list does not show (it registered
		// after the list was read) is neither missing nor foreign.
		{"node unknown to the list", "gpu", "gpu",
			[]slurmtest.Case{slurmtest.Real("show-node-none"), renamed("show-partition-repaired", "base", "gpu")}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, r := newClient(tt.cases...)
			m, err := c.CheckPartitionMembership(context.Background(), tt.partition, tt.feature)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.missing, m.Missing); d != "" {
				t.Errorf("Missing (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.extra, m.Extra); d != "" {
				t.Errorf("Extra (-want +got):\n%s", d)
			}
			if m.OK() != (tt.missing == nil && tt.extra == nil) {
				t.Errorf("OK() = %v", m.OK())
			}
			// The nodes are read before the partition.
			want := [][]string{tt.cases[0].Argv, tt.cases[1].Argv}
			if d := cmp.Diff(want, argvs(r)); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}

func TestRepairPartitionMembership(t *testing.T) {
	update := slurmtest.Real("update-partition-nodes")
	showNode := slurmtest.Real("show-node-moved")
	moved := slurmtest.Real("show-partition-moved")
	repaired := slurmtest.Real("show-partition-repaired")
	tests := []struct {
		name      string
		cases     []slurmtest.Case
		want      []string
		wantErr   string
		wantCalls [][]string
	}{{
		name:      "swapped partition repaired",
		cases:     []slurmtest.Case{showNode, moved, repaired, update},
		want:      []string{"node3", "node4", "node5"},
		wantCalls: [][]string{showNode.Argv, moved.Argv, update.Argv, showNode.Argv, repaired.Argv},
	}, {
		name:      "right partition left alone",
		cases:     []slurmtest.Case{showNode, repaired},
		wantCalls: [][]string{showNode.Argv, repaired.Argv},
	}, {
		name:      "still wrong after the update",
		cases:     []slurmtest.Case{showNode, moved, update},
		wantErr:   `cannot repair partition "base": still missing [node3 node5], extra [node4] after nodes=base`,
		wantCalls: [][]string{showNode.Argv, moved.Argv, update.Argv, showNode.Argv, moved.Argv},
	}, {
		name: "no NodeSets",
		cases: []slurmtest.Case{showNode, {Argv: moved.Argv, Output: command.Output{
			Stdout: []byte(strings.Replace(string(moved.Output.Stdout), "NodeSets=base", "NodeSets=(null)", 1))}}},
		wantErr:   `cannot repair partition "base" (missing [node3 node5], extra [node4]): it has no NodeSets`,
		wantCalls: [][]string{showNode.Argv, moved.Argv},
	}, {
		name:      "controller gone before the update",
		cases:     []slurmtest.Case{showNode, moved, {Argv: update.Argv, Output: slurmtest.Real("update-unreachable").Output}},
		wantErr:   "Unable to contact slurm controller",
		wantCalls: [][]string{showNode.Argv, moved.Argv, update.Argv},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, r := newClient(tt.cases...)
			got, err := c.RepairPartitionMembership(context.Background(), "base", "base")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("repaired (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantCalls, argvs(r)); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}

func TestRepairPartitionMembershipUnreachable(t *testing.T) {
	c, _ := newClient(slurmtest.Case{Argv: []string{"scontrol", "show", "node", "-o"}, Output: slurmtest.Real("show-node-unreachable").Output})
	if _, err := c.RepairPartitionMembership(context.Background(), "base", "base"); !errors.Is(err, slurm.ErrControllerUnreachable) {
		t.Errorf("error %v, want ErrControllerUnreachable", err)
	}
}

func FuzzShowPartition(f *testing.F) {
	for _, name := range realPartitionCases {
		f.Add(slurmtest.Real(name).Output.Stdout)
	}
	f.Add([]byte("PartitionName=p NodeSets=a,b Nodes=n[01-03,7] State=DOWN\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := slurm.ParseShowPartition(data)
		if err != nil {
			return
		}
		for _, p := range ps {
			if p.Name == "" {
				t.Fatalf("parsed partition without a name: %+v", p)
			}
			if f := p.Fields[0]; f.Key != "PartitionName" || f.Value != p.Name {
				t.Fatalf("first field %+v, Name %q", f, p.Name)
			}
			for _, n := range p.Nodes {
				if n == "" {
					t.Fatalf("partition %s: empty node name in %q", p.Name, p.Nodes)
				}
			}
		}
	})
}

// renamed is recorded case name with partition from renamed to to, in argv and output.
func renamed(name, from, to string) slurmtest.Case {
	c := slurmtest.Real(name)
	for i, a := range c.Argv {
		if a == from {
			c.Argv[i] = to
		}
	}
	c.Output.Stdout = []byte(strings.Replace(string(c.Output.Stdout), "PartitionName="+from, "PartitionName="+to, 1))
	return c
}

func argvs(r *slurmtest.Runner) [][]string {
	var out [][]string
	for _, c := range r.Calls() {
		out = append(out, c.Argv)
	}
	return out
}
