package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

func TestParseFutureNodes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    futureNodes
		wantErr string
	}{
		{in: defaultFutureNodes, want: futureNodes{Nodes: 8, CPUs: 1, Memory: 1}},
		{in: "", want: futureNodes{}},
		{in: " none ", want: futureNodes{}},
		{in: "nodes=0", want: futureNodes{Nodes: 0, CPUs: 1, Memory: 1}},
		{in: "memory=4096 Nodes=6 cpus=4", want: futureNodes{Nodes: 6, CPUs: 4, Memory: 4096}},
		{in: "cpus=2", want: futureNodes{Nodes: 8, CPUs: 2, Memory: 1}},
		{in: "nodes", wantErr: "is not key=value"},
		{in: "nodes=2 nodes=3", wantErr: "given twice"},
		{in: "nodes=x", wantErr: "not a whole number"},
		{in: "nodes=-1", wantErr: "out of range"},
		{in: "nodes=1025", wantErr: "out of range"},
		{in: "cpus=0", wantErr: "out of range"},
		{in: "memory=0", wantErr: "out of range"},
		{in: "gpus=1", wantErr: `unknown key "gpus"`},
	} {
		got, err := parseFutureNodes(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseFutureNodes(%q) error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseFutureNodes(%q): %v", tc.in, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("parseFutureNodes(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

func FuzzParseFutureNodes(f *testing.F) {
	for _, s := range []string{defaultFutureNodes, "", "none", "nodes=0", "cpus=4 memory=100", "nodes=2 nodes=3", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseFutureNodes(s)
		if err != nil {
			return
		}
		if got.Nodes < 0 || got.Nodes > 1024 || (got.Nodes > 0 && (got.CPUs < 1 || got.Memory < 1)) {
			t.Fatalf("parseFutureNodes(%q) = %+v: out of range", s, got)
		}
		line := futureRecord(slurm.Version{Major: 24, Minor: 11}, got, slurmconf.NodeSet{Name: "a", Params: slurmconf.Params{{Key: "Feature", Value: "a"}}})
		if (line == "") != (got.Nodes == 0) {
			t.Fatalf("parseFutureNodes(%q) = %+v: record %q", s, got, line)
		}
	})
}

func TestFutureRecord(t *testing.T) {
	ns := slurmconf.NodeSet{Name: "gpu", Params: slurmconf.Params{{Key: "Feature", Value: "gpu"}}}
	def := futureNodes{Nodes: 8, CPUs: 1, Memory: 1}
	for _, tc := range []struct {
		name string
		v    slurm.Version
		f    futureNodes
		ns   slurmconf.NodeSet
		want string
	}{
		{"22.05 holds jobs without them", slurm.Version{Major: 22, Minor: 5, Micro: 8}, def, ns, ""},
		{"unknown version is 22.05", slurm.Version{}, def, ns, ""},
		{"24.11", slurm.Version{Major: 24, Minor: 11, Micro: 5}, def, ns, "NodeName=gpu-future[1-8] State=FUTURE Feature=gpu CPUs=1 RealMemory=1"},
		{"23.02", slurm.Version{Major: 23, Minor: 2}, futureNodes{Nodes: 2, CPUs: 4, Memory: 2048}, ns, "NodeName=gpu-future[1-2] State=FUTURE Feature=gpu CPUs=4 RealMemory=2048"},
		{"one record", slurm.Version{Major: 25, Minor: 5}, futureNodes{Nodes: 1, CPUs: 1, Memory: 1}, ns, "NodeName=gpu-future1 State=FUTURE Feature=gpu CPUs=1 RealMemory=1"},
		{"turned off", slurm.Version{Major: 24, Minor: 11}, futureNodes{}, ns, ""},
		{"NodeSet without a feature", slurm.Version{Major: 24, Minor: 11}, def, slurmconf.NodeSet{Name: "gpu"}, ""},
	} {
		if got := futureRecord(tc.v, tc.f, tc.ns); got != tc.want {
			t.Errorf("%s: futureRecord = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestFutureRecordNamesAreNoUnitsNodes: no FUTURE record name is a unit's node name, of its
// own application or of any other (slurmd.NodeApp finds no application in it).
func TestFutureRecordNamesAreNoUnitsNodes(t *testing.T) {
	for _, app := range []string{"slurmd", "slurmd-future", "gpu-2x"} {
		for i := 1; i <= 12; i++ {
			name := fmt.Sprintf("%s-future%d", app, i)
			if owner, ok := slurmd.NodeApp(name); ok {
				t.Errorf("FUTURE record %s is taken for a node of application %s", name, owner)
			}
		}
	}
}

// TestFutureRecordsFollowTheVersion: on Slurm 24.11 the partition file carries the FUTURE
// records (and Slurm's parser, the fake's, reads the candidate); future-nodes=none removes
// them with one reconfigure; on 22.05 (TestSlurmdRelation) nothing changes.
func TestFutureRecordsFollowTheVersion(t *testing.T) {
	e := newEnv(t)
	e.slurm.version = "slurm 24.11.5"
	in := baseState()
	in.Config["future-nodes"] = "nodes=3 cpus=2 memory=512"
	in = e.run(in, jujutest.Hook(juju.ConfigChanged))
	in.Relations = []jujutest.Relation{relation("slurmd:1", "slurmd", compute(t, "slurmd", ""), "slurmd/0")}
	out := e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
	want := "# Partition of the slurmd application \"slurmd\", managed by the slurmctld charm.\n" +
		"# FUTURE records (never up, never scheduled) so that Slurm accepts and holds jobs while\n" +
		"# the application has no unit; see the future-nodes option.\n" +
		"NodeName=slurmd-future[1-3] State=FUTURE Feature=slurmd CPUs=2 RealMemory=512\n" +
		"NodeSet=slurmd Feature=slurmd\nPartitionName=slurmd Nodes=slurmd Default=YES\n"
	if d := cmp.Diff(want, e.read(partitionPath("slurmd"))); d != "" {
		t.Errorf("partition file on 24.11 (-want +got):\n%s", d)
	}
	// The records are node records: MaxNodeCount leaves max-node-count to dynamic nodes.
	if conf := e.read(confPath); !strings.Contains(conf, "MaxNodeCount=1027\n") {
		t.Errorf("slurm.conf with 3 FUTURE records and max-node-count 1024 lacks MaxNodeCount=1027:\n%s", conf)
	}
	before := e.slurm.count("scontrol", "reconfigure")
	out.Config["future-nodes"] = "none"
	out = e.run(out, jujutest.Hook(juju.ConfigChanged))
	want = "# Partition of the slurmd application \"slurmd\", managed by the slurmctld charm.\n" +
		"NodeSet=slurmd Feature=slurmd\nPartitionName=slurmd Nodes=slurmd Default=YES\n"
	if d := cmp.Diff(want, e.read(partitionPath("slurmd"))); d != "" {
		t.Errorf("partition file with future-nodes=none (-want +got):\n%s", d)
	}
	if conf := e.read(confPath); !strings.Contains(conf, "MaxNodeCount=1024\n") {
		t.Errorf("slurm.conf without FUTURE records lacks MaxNodeCount=1024:\n%s", conf)
	}
	if n := e.slurm.count("scontrol", "reconfigure") - before; n != 1 {
		t.Errorf("%d reconfigures after future-nodes changed, want 1", n)
	}
	out.Config["future-nodes"] = "nodes=many"
	out = e.run(out, jujutest.Hook(juju.ConfigChanged))
	if out.UnitStatus.Code != juju.StatusBlocked || !strings.Contains(out.UnitStatus.Message, "future-nodes: nodes=\"many\" is not a whole number") {
		t.Errorf("status with a bad future-nodes: %+v", out.UnitStatus)
	}
}
