package e2e_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLeaderMovesMidWork: Juju moves the leadership from slurmctld/0 (primary, in control) to
// the backup slurmctld/1 while a busy slurmd unit is being removed (remove-unit slurmd/1, its
// job running) and a slurmd application's partition is being removed (remove-application gpu,
// its job running). The new leader takes both over (its log says so) without starting,
// stopping or reconfiguring either slurmctld; the node stays until its job has ended and the
// partition stays INACTIVE until its job records are gone; then both go, the partition
// removed once, by the new leader, and each job ran once, to completion.
func TestLeaderMovesMidWork(t *testing.T) {
	t.Parallel()
	c := newHAClusterWith(t, "", "SlurmctldTimeout=10 MinJobAge=2")
	c.deploy(slurmdPath, "gpu", 1, nil)
	c.integrate("slurmctld", "gpu")
	c.waitActive()
	c.waitIdleNodes(3)

	// Each job runs until the test lets it go (a file on its node).
	dir := t.TempDir()
	hold := func(name string) string {
		return fmt.Sprintf("while [ ! -e %s ]; do sleep 0.1; done", filepath.Join(dir, name+".release"))
	}
	nodeJob := c.sbatch("slurmd", "-w", "slurmd-1", "--wrap", hold("node"))
	gpuJob := c.sbatch("gpu", "--wrap", hold("gpu"))
	c.waitJobState(nodeJob, "RUNNING", 30*time.Second)
	c.waitJobState(gpuJob, "RUNNING", 30*time.Second)

	t0 := time.Now()
	c.logHooksOnFailure("the removals and the leadership move", t0)
	if err := c.m.RemoveUnit(c.bg(), "slurmd/1"); err != nil {
		t.Fatal(err)
	}
	if err := c.m.RemoveApplication(c.bg(), "gpu"); err != nil {
		t.Fatal(err)
	}
	var broken time.Time
	c.eventually(2*time.Minute, "slurmctld/0's relation-departed of slurmd/1 and relation-broken of gpu ended", func() (bool, string) {
		runs := c.hookRuns("slurmctld/0", t0)
		b := ended(runs, "slurmd-relation-broken")
		if len(b) == 1 {
			broken = b[0].End
		}
		return len(b) == 1 && len(ended(runs, "slurmd-relation-departed")) >= 2, fmt.Sprint(runs)
	})
	c.eventually(30*time.Second, "slurmd-1 drained for its unit's removal, partition gpu INACTIVE", func() (bool, string) {
		state, reason := c.nodeState("slurmd-1")
		p := c.partition("gpu")
		return strings.Contains(state, "DRAIN") && reason == "unit slurmd/1 removed" && field(p, "State") == "INACTIVE", state + " " + reason + " | " + p
	})
	// The backup runs the leader's files: the leader shared the INACTIVE include in its
	// relation-broken hook, and the backup's restart for them has finished.
	c.eventually(time.Minute, "slurmctld/1 runs partition gpu's INACTIVE include, standing by", func() (bool, string) {
		applied := len(ended(c.hookRuns("slurmctld/1", broken), "slurmctld-peers-relation-changed")) > 0
		inc, _, _ := c.tryExec("slurmctld/1", "cat", "/etc/slurm/partition-gpu.conf")
		restarting := c.logged("slurmctld/1", "restarting slurmctld to run the leader's configuration")
		restarted := c.logged("slurmctld/1", "restarted slurmctld to run the leader's configuration")
		_, msg := c.unitStatus("slurmctld/1")
		return applied && strings.Contains(inc, "State=INACTIVE") && restarting == restarted && strings.Contains(msg, "backup 1 controller standing by (active: slurmctld/0)"),
			fmt.Sprintf("applied %v, restarts %d, answered %d, %s | %s", applied, restarting, restarted, msg, inc)
	})

	untouched := c.controllersUntouched()
	moved := time.Now()
	if err := c.m.MoveLeader(c.bg(), "slurmctld/1"); err != nil {
		t.Fatal(err)
	}
	c.eventually(time.Minute, "slurmctld/1 ran leader-elected", func() (bool, string) {
		return len(ended(c.hookRuns("slurmctld/1", moved), "leader-elected")) == 1, fmt.Sprint(c.hookRuns("slurmctld/1", moved))
	})
	for _, line := range []string{
		"new leader: partition gpu of removed application gpu is being removed",
		"new leader: node slurmd-1 of departed unit slurmd/1 is removed once it has no job",
	} {
		if n := c.logged("slurmctld/1", line); n != 1 {
			t.Errorf("slurmctld/1 logged %q %d times, want once", line, n)
		}
	}
	c.eventually(30*time.Second, "slurmctld/1's status naming the removals", func() (bool, string) {
		_, msg := c.unitStatus("slurmctld/1")
		return strings.Contains(msg, "partition gpu") || strings.Contains(msg, "removing slurmd-1"), msg
	})
	if p := c.partition("gpu"); field(p, "State") != "INACTIVE" {
		t.Errorf("partition gpu after the move: %q, want it INACTIVE", p)
	}
	for _, j := range []string{nodeJob, gpuJob} {
		if s := c.jobState(j); s != "RUNNING" {
			t.Errorf("job %s is %s after the move, want RUNNING (held by the test)", j, s)
		}
	}
	if !slices.Contains(c.nodeNames(), "slurmd-1") {
		t.Error("node slurmd-1 deleted while its job runs")
	}
	untouched()

	// The jobs end: the node and the partition go, under the new leader, once.
	c.exec("slurmd/1", "install", "-D", "-m", "0644", "/dev/null", filepath.Join(dir, "node.release"))
	c.exec("gpu/0", "install", "-D", "-m", "0644", "/dev/null", filepath.Join(dir, "gpu.release"))
	c.waitJobState(nodeJob, "COMPLETED", time.Minute)
	c.waitJobState(gpuJob, "COMPLETED", time.Minute)
	c.eventually(3*time.Minute, "node slurmd-1, partition gpu and node gpu-0 gone", func() (bool, string) {
		// Asked here rather than with c.nodeNames and c.partition: the controller reconfigures
		// meanwhile, and a refused command must not pass for a partition gone.
		nodes, code, errOut := c.tryExec("slurmctld/0", "env", "SLURM_CONF="+ctlConf, "scontrol", "show", "node", "-o")
		if code != 0 {
			return false, errOut
		}
		parts, code, errOut := c.tryExec("slurmctld/0", "env", "SLURM_CONF="+ctlConf, "scontrol", "show", "partition", "-o")
		if code != 0 {
			return false, errOut
		}
		gone := !strings.Contains(parts, "PartitionName=gpu ") && !strings.Contains(nodes, "NodeName=slurmd-1 ") && !strings.Contains(nodes, "NodeName=gpu-0 ")
		return gone, nodes + " | " + parts
	})
	c.waitIdle()
	if n := c.logged("slurmctld/1", "removed partition gpu"); n != 1 {
		t.Errorf("slurmctld/1 removed partition gpu %d times, want once", n)
	}
	if n := c.logged("slurmctld/0", "removed partition gpu"); n != 0 {
		t.Errorf("the former leader removed partition gpu %d times", n)
	}
	for _, j := range []string{nodeJob, gpuJob} {
		if n := c.jobStarts(j); n != 1 {
			t.Errorf("job %s started %d times, want once", j, n)
		}
	}
	// The former leader's waiter, which watched the removals, woke it: as a follower it
	// dropped them.
	c.eventually(90*time.Second, "slurmctld/0 dropped the leader's records", func() (bool, string) {
		return c.logged("slurmctld/0", "not the leader any more") > 0, fmt.Sprint(c.hookRuns("slurmctld/0", moved))
	})
	c.slurm("srun", "-p", "slurmd", "-N1", "true")
}

// jobStarts counts the starts of job id in both controllers' slurmctld logs (the main
// scheduler's "sched: Allocate JobId=N" or the backfill scheduler's "backfill: Started JobId=N"):
// a job started again after a controller lost it is counted twice.
func (c *cluster) jobStarts(id string) int {
	c.t.Helper()
	re := regexp.MustCompile(`(sched: Allocate|backfill: Started) JobId=` + regexp.QuoteMeta(id) + ` `)
	n := 0
	for _, u := range []string{"slurmctld/0", "slurmctld/1"} {
		n += len(re.FindAllString(c.exec(u, "cat", ctlLogPath), -1))
	}
	return n
}
