package slurmtest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	conf := func(t *testing.T, text string) []string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "slurm.conf"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{"SLURM_CONF=" + filepath.Join(dir, "slurm.conf")}
	}
	for _, tt := range []struct {
		recorded string
		setup    func(c *slurmtest.Cluster)
		parsed   bool // compare the parsed node's name, state and reason
		// partition: compare the parsed partition's name, NodeSets, nodes and state
		partition bool
		env       func(t *testing.T) []string
	}{
		{recorded: "show-partition-empty", setup: func(c *slurmtest.Cluster) { c.AddPartition("gpu") }},
		{recorded: "show-partition-unknown"},
		{recorded: "show-partition-repaired", partition: true, setup: func(c *slurmtest.Cluster) {
			c.AddPartition("base")
			for _, n := range []string{"node3", "node5"} {
				c.AddNode(n)
				c.SetFeatures(n, "base")
			}
			c.AddNode("node4")
			c.SetFeatures("node4", "gpu")
		}},
		{recorded: "update-partition-nodes", setup: func(c *slurmtest.Cluster) {
			c.AddPartition("base")
			c.AddNode("node3")
			c.SetFeatures("node3", "base")
			c.Lose("node3")
		}},
		{recorded: "checkconf-ok", env: func(t *testing.T) []string { return conf(t, "MaxTime=1:00:00\n") }},
		{recorded: "checkconf-refused", setup: func(c *slurmtest.Cluster) { c.RefuseConfig("abc") },
			env: func(t *testing.T) []string { return conf(t, "MaxTime=abc\n") }},
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
		{recorded: "show-node-notresponding", parsed: true, setup: func(c *slurmtest.Cluster) {
			c.AddNode("node2")
			c.SetNotResponding("node2", true)
		}},
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
		{recorded: "squeue-partition", setup: func(c *slurmtest.Cluster) {
			c.AddNode("node1")
			c.StartJob("node1")
			c.SubmitJob(slurmtest.DefaultPartition, "")
		}},
		{recorded: "partition-inactive"},
		{recorded: "partition-unknown"},
		{recorded: "slurmd-V"},
		{recorded: "slurmctld-V"},
		{recorded: "scontrol-V"},
		{recorded: "slurmd-C"},
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
			var env []string
			if tt.env != nil {
				env = tt.env(t)
			}
			got, err := c.Run(context.Background(), want.Argv, env)
			if err != nil {
				t.Fatal(err)
			}
			if tt.partition {
				wp, err1 := slurm.ParseShowPartition(want.Output.Stdout)
				gp, err2 := slurm.ParseShowPartition(got.Stdout)
				if err1 != nil || err2 != nil || len(wp) != 1 || len(gp) != 1 {
					t.Fatalf("parse: %v, %v", err1, err2)
				}
				key := func(p slurm.Partition) []string {
					return append([]string{p.Name, p.State, strings.Join(p.NodeSets, ",")}, p.Nodes...)
				}
				if d := cmp.Diff(key(wp[0]), key(gp[0])); d != "" {
					t.Errorf("partition (-real +fake):\n%s", d)
				}
				return
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

// TestClusterJobRecords: an ended job leaves the node at once but its record stays in the
// partition (squeue -t all) until PurgeJobs, as slurmctld keeps it for MinJobAge.
func TestClusterJobRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := slurmtest.NewCluster()
	c.AddNode("node1")
	job := c.StartJob("node1")
	cl := &slurm.Client{Runner: c, Conf: "/etc/slurm/slurm.conf"}
	count := func() []int {
		on, err1 := cl.JobsOnNode(ctx, "node1")
		in, err2 := cl.JobsInPartition(ctx, slurmtest.DefaultPartition)
		recs, err3 := cl.PartitionJobRecords(ctx, slurmtest.DefaultPartition)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		return []int{len(on), len(in), len(recs)}
	}
	for _, step := range []struct {
		do   func()
		want []int
	}{
		{func() {}, []int{1, 1, 1}},
		{func() { c.EndJob(job) }, []int{0, 0, 1}},
		{c.PurgeJobs, []int{0, 0, 0}},
	} {
		step.do()
		if d := cmp.Diff(step.want, count()); d != "" {
			t.Errorf("jobs on node, in partition, records (-want +got):\n%s", d)
		}
	}
	if err := cl.UpdatePartitionState(ctx, slurmtest.DefaultPartition, slurm.PartitionInactive); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.PartitionState(slurmtest.DefaultPartition); st != slurm.PartitionInactive {
		t.Errorf("partition state %q", st)
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

// TestClusterPartitions: partitions come from the live configuration at each reconfigure;
// a lost node is missing from its partition until the repair; a pending job moves.
func TestClusterPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	write := func(text string) {
		if err := os.WriteFile(filepath.Join(dir, "partition-gpu.conf"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := slurmtest.NewCluster()
	c.ReadConfig(dir)
	c.RequireConf("/etc/slurm/slurm.conf")
	cl := &slurm.Client{Runner: c, Conf: "/etc/slurm/slurm.conf"}
	write("NodeSet=gpu Feature=gpu\nPartitionName=gpu Nodes=gpu\n")
	if err := cl.Reconfigure(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.PartitionState("gpu"); !ok {
		t.Fatal("partition gpu of the configuration unknown after reconfigure")
	}
	if _, ok := c.PartitionState(slurmtest.DefaultPartition); ok {
		t.Error("a partition the configuration lacks is still known")
	}
	c.AddNode("gpu-0")
	c.SetFeatures("gpu-0", "gpu")
	// The node record's Partitions follow the partition, as on real 22.05
	// (show-node-moved): none while lost, back after the repair.
	parts := func() []string {
		n, err := cl.ShowNode(ctx, "gpu-0")
		if err != nil {
			t.Fatal(err)
		}
		return n.Partitions
	}
	if d := cmp.Diff([]string{"gpu"}, parts()); d != "" {
		t.Errorf("Partitions of gpu-0 (-want +got):\n%s", d)
	}
	c.Lose("gpu-0")
	if p := parts(); len(p) != 0 {
		t.Errorf("Partitions of lost gpu-0: %v, want none", p)
	}
	repaired, err := cl.RepairPartitionMembership(ctx, "gpu", "gpu")
	if err != nil || c.Lost("gpu-0") {
		t.Fatalf("repair: %v, lost %v", err, c.Lost("gpu-0"))
	}
	if d := cmp.Diff([]string{"gpu"}, parts()); d != "" {
		t.Errorf("Partitions of repaired gpu-0 (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"gpu-0"}, repaired); d != "" {
		t.Errorf("repaired (-want +got):\n%s", d)
	}
	job := c.SubmitJob("gpu", "")
	write("PartitionName=gpu Nodes=gpu\nPartitionName=other Nodes=other\n")
	if err := cl.Reconfigure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.MovePendingJob(ctx, job, "other"); err != nil {
		t.Fatal(err)
	}
	if recs, _ := cl.PartitionJobRecords(ctx, "other"); len(recs) != 1 {
		t.Errorf("job not moved: %v", recs)
	}
	if _, err := c.Run(ctx, []string{"scontrol", "ping"}, nil); err == nil {
		t.Error("a controller command without SLURM_CONF answered")
	}
}

// TestClusterReboot: `scontrol reboot ASAP nextstate=resume` drains the nodes with the
// reason and marks them REBOOT_REQUESTED; Rebooted brings one back with a new boot time.
func TestClusterReboot(t *testing.T) {
	t.Parallel()
	c := slurmtest.NewCluster()
	c.AddNode("n1")
	before, _ := c.Node("n1")
	run(c, "scontrol", "reboot", "ASAP", "nextstate=resume", "reason=kernel", "n1")
	n, _ := c.Node("n1")
	if !n.State.Drain() || !strings.Contains(n.State.String(), "REBOOT_REQUESTED") || n.Reason != "kernel" {
		t.Errorf("after scontrol reboot: %v, reason %q", n.State, n.Reason)
	}
	c.Rebooted("n1")
	n, _ = c.Node("n1")
	if n.State.String() != "IDLE+DYNAMIC_NORM" || n.Reason != "" || fieldOf(n, "BootTime") == fieldOf(before, "BootTime") {
		t.Errorf("after the reboot: %v, reason %q, boot time %q", n.State, n.Reason, fieldOf(n, "BootTime"))
	}
}

func fieldOf(n slurm.Node, key string) string {
	for _, f := range n.Fields {
		if f.Key == key {
			return f.Value
		}
	}
	return ""
}

// TestClusterRegister: a dynamic slurmd's registration creates a record with its --conf
// values; a second registration keeps the old record (Slurm 22.05) until it is deleted;
// INVALID_REG and NOT_RESPONDING show in the state.
func TestClusterRegister(t *testing.T) {
	t.Parallel()
	c := slurmtest.NewCluster()
	if err := c.Register("slurmd-3", `CPUs=2 CoresPerSocket=2 RealMemory=20000 TmpDisk=7 Weight=10 Gres="gpu:1" Feature=slurmd,gpu`); err != nil {
		t.Fatal(err)
	}
	key := func(n slurm.Node) []string {
		return []string{n.Name, n.State.String(), strconv.Itoa(n.CPUs), strconv.FormatInt(n.RealMemory, 10), fieldOf(n, "Weight"),
			fieldOf(n, "TmpDisk"), fieldOf(n, "Gres"), fieldOf(n, "CoresPerSocket"), fieldOf(n, "CPUEfctv"), strings.Join(n.Features, ",")}
	}
	n, _ := c.Node("slurmd-3")
	want := []string{"slurmd-3", "IDLE+DYNAMIC_NORM", "2", "20000", "10", "7", "gpu:1", "2", "2", "slurmd,gpu"}
	if d := cmp.Diff(want, key(n)); d != "" {
		t.Errorf("registered node (-want +got):\n%s", d)
	}
	if err := c.Register("slurmd-3", "CPUs=2 RealMemory=30000 Feature=slurmd"); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Node("slurmd-3"); n.RealMemory != 20000 {
		t.Errorf("a second registration replaced the record: RealMemory %d", n.RealMemory)
	}
	c.Invalidate("slurmd-3", "Low TmpDisk")
	c.SetNotResponding("slurmd-3", true)
	n, _ = c.Node("slurmd-3")
	if n.State.String() != "IDLE+DRAIN+DYNAMIC_NORM+INVALID_REG+NOT_RESPONDING" || n.Reason != "Low TmpDisk" {
		t.Errorf("invalid, silent node: %v, reason %q", n.State, n.Reason)
	}
	run(c, "scontrol", "delete", "nodename=slurmd-3")
	if err := c.Register("slurmd-3", "CPUs=2 RealMemory=30000 Feature=slurmd"); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Node("slurmd-3"); n.RealMemory != 30000 || n.State.String() != "IDLE+DYNAMIC_NORM" {
		t.Errorf("registration after the delete: RealMemory %d, %v", n.RealMemory, n.State)
	}
	if err := c.Register("slurmd-4", `Weight="1`); err == nil {
		t.Error("a --conf that does not parse registered")
	}
}
