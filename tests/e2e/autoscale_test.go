package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts"
)

// autoscaler is a running slurm-autoscaler command acting on the cluster's model through the
// juju-local CLI, as an administrator runs it beside their Juju client.
type autoscaler struct {
	mu      sync.Mutex
	lines   []string
	removal chan struct{} // closed at the first scale-in decision
}

// startAutoscaler builds slurm-autoscaler, serves the model's CLI socket and starts the command
// with args; it is stopped (by PID) in a cleanup.
func (c *cluster) startAutoscaler(args ...string) *autoscaler {
	c.t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	bin := filepath.Join(c.t.TempDir(), "slurm-autoscaler")
	build := exec.Command("go", "build", "-o", bin, "./cmd/slurm-autoscaler")
	build.Dir = filepath.Join(root, "autoscaler")
	if out, err := build.CombinedOutput(); err != nil {
		c.t.Fatalf("cannot build slurm-autoscaler: %v\n%s", err, out)
	}
	if err := c.m.ListenCLI(filepath.Join(c.m.Dir(), "model.sock")); err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--juju", toolsBin, "--interval", "1s"}, args...)...)
	cmd.Env = append(os.Environ(), "JUJU_LOCAL_DIR="+c.m.Dir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	a := &autoscaler{removal: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		closed := false
		for sc.Scan() {
			l := sc.Text()
			a.mu.Lock()
			a.lines = append(a.lines, l)
			a.mu.Unlock()
			if !closed && strings.HasSuffix(l, ": removing") {
				close(a.removal)
				closed = true
			}
		}
	}()
	c.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan error, 1)
		go func() { <-done; exited <- cmd.Wait() }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		c.t.Log("slurm-autoscaler:\n" + strings.Join(a.output(), "\n"))
	})
	return a
}

func (a *autoscaler) output() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.lines)
}

// said reports whether some status line contains s.
func (a *autoscaler) said(s string) bool {
	return slices.ContainsFunc(a.output(), func(l string) bool { return strings.Contains(l, s) })
}

// unitWatch records the largest number of units an application had, polling the model's status
// until stopped.
type unitWatch struct {
	mu  sync.Mutex
	max int
}

func (c *cluster) watchUnits(app string) *unitWatch {
	w := &unitWatch{}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			n := len(c.m.Status(ctx).Applications[app].Units)
			w.mu.Lock()
			w.max = max(w.max, n)
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	c.t.Cleanup(func() { cancel(); <-stopped })
	return w
}

func (w *unitWatch) most() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max
}

// units returns the application's current unit count.
func (c *cluster) units(app string) int {
	return len(c.m.Status(context.Background()).Applications[app].Units)
}

// partitionNodes lists the nodes whose record names partition p.
func (c *cluster) partitionNodes(p string) []string {
	c.t.Helper()
	out := c.slurm("sinfo", "-h", "-N", "-p", p, "-o", "%N")
	return strings.Fields(out)
}

// failedJobStates are the ends of a job that did not complete.
var failedJobStates = []string{"FAILED", "CANCELLED", "NODE_FAIL", "TIMEOUT", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"}

// waitCompleted waits until every job is COMPLETED, failing at once on a job that ended otherwise.
func (c *cluster) waitCompleted(ids []string, d time.Duration) {
	c.t.Helper()
	c.eventually(d, fmt.Sprintf("%d jobs COMPLETED", len(ids)), func() (bool, string) {
		var notDone []string
		for _, id := range ids {
			s := c.jobState(id)
			if s == "FAILED" {
				if unit := c.scriptPurgedBySlurmd(id); unit != "" {
					c.t.Logf("job %s FAILED on %s by Slurm's own race, not counted as lost: slurmd purged the job's script as vestigial while its slurmstepd was still starting (a registration's step scan met the step's socket before it listened; src/common/stepd_api.c, _handle_stray_script)", id, unit)
					continue
				}
			}
			if slices.Contains(failedJobStates, s) {
				c.t.Fatalf("job %s ended %s: no operator may cost a job", id, s)
			}
			if s != "COMPLETED" {
				notDone = append(notDone, id+"="+s)
			}
		}
		return len(notDone) == 0, strings.Join(notDone, " ")
	})
}

// scriptPurgedBySlurmd names the slurmd unit whose slurmd.log says it purged job id's batch
// script as vestigial, or "" if none did. Slurm's slurmd does so when it connects to a
// step's socket that refuses the connection (stepd_api.c, _handle_stray_script): meant for a
// dead slurmstepd's leftovers, it also hits a batch step whose slurmstepd has made its socket
// but not yet listens, when a registration request (which connects to every step on the node)
// comes at the same moment as the launch. Seen once (Debian 14, Slurm 26.05.5, load about 10):
// a restarted slurmctld's first registration pass and its first scheduling pass reached a node
// in the same millisecond; the batch step then failed to exec its deleted script (exit 2).
func (c *cluster) scriptPurgedBySlurmd(id string) string {
	c.t.Helper()
	n, err := strconv.Atoi(id)
	if err != nil {
		return ""
	}
	want := fmt.Sprintf("_handle_stray_script: Purging vestigial job script /.*/job%05d/slurm_script$", n)
	for _, app := range c.m.Status(c.bg()).Applications {
		for unit := range app.Units {
			if _, code, _ := c.tryExec(unit, "grep", "-q", "-e", want, "/var/log/slurm/slurmd.log"); code == 0 {
				return unit
			}
		}
	}
	return ""
}

// recordPending writes the real output of the autoscaler's pending-job query for slurmtest
// when SLURMTEST_RECORD names a directory (libs/slurm/slurmtest/real).
func (c *cluster) recordPending(name string) {
	dir := os.Getenv("SLURMTEST_RECORD")
	if dir == "" {
		return
	}
	argv := []string{"squeue", "-h", "-r", "-t", "PENDING", "-o", "%i|%P|%D|%r"}
	stdout, code, stderr := c.tryExec("slurmctld/0", append([]string{"env", "SLURM_CONF=" + ctlConf}, argv...)...)
	for ext, data := range map[string]string{"argv": strings.Join(argv, "\n") + "\n", "stdout": stdout, "stderr": stderr, "rc": fmt.Sprintln(code)} {
		if err := os.WriteFile(filepath.Join(dir, name+"."+ext), []byte(data), 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
}

// recordStatus writes `juju-local status --format=json`, as the autoscaler reads it, to
// $JUJU_STATUS_RECORD/name when JUJU_STATUS_RECORD names a directory
// (autoscaler/jujucli/testdata).
func (c *cluster) recordStatus(name string) {
	dir := os.Getenv("JUJU_STATUS_RECORD")
	if dir == "" {
		return
	}
	cmd := exec.Command(toolsBin, "status", "--format=json")
	cmd.Env = append(os.Environ(), "JUJU_LOCAL_DIR="+c.m.Dir())
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("juju-local status: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), out, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// TestAutoscaleBurst is the scenario: a partition at 1 node with max 6 receives 12
// one-node jobs of a few seconds. The autoscaler adds units, every job completes, the partition
// returns to 1 node after the idle time, no job is killed and there are never more than 6
// units; a job submitted while nodes are being scaled in runs to the end.
func TestAutoscaleBurst(t *testing.T) {
	c := newCluster(t, 1)
	watch := c.watchUnits("slurmd")
	as := c.startAutoscaler("--app", "slurmd:min=1,max=6,idle=10s,out=5,in=5,register-timeout=3m")
	c.eventually(30*time.Second, "the autoscaler's first decision", func() (bool, string) {
		return as.said(" slurmd: "), strings.Join(as.output(), "; ")
	})

	var ids []string
	for range 12 {
		ids = append(ids, c.sbatch("slurmd", "-N1", "--wrap", "sleep 4"))
	}
	c.recordPending("squeue-pending")
	c.waitCompleted(ids, 4*time.Minute)
	c.recordStatus("status-burst.json")
	if got := watch.most(); got < 3 {
		t.Errorf("at most %d units during the burst: the autoscaler did not scale out", got)
	}

	// Scale-in: once the autoscaler decides a removal, a new job arrives; it must run to the end.
	select {
	case <-as.removal:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no scale-in decision 2 minutes after the burst")
	}
	late := c.sbatch("slurmd", "-N1", "--wrap", "sleep 3")
	c.waitCompleted([]string{late}, 2*time.Minute)

	c.eventually(3*time.Minute, "the partition back at 1 node and 1 unit", func() (bool, string) {
		nodes := c.partitionNodes("slurmd")
		all := c.nodeNames()
		u := c.units("slurmd")
		return len(nodes) == 1 && len(all) == 1 && u == 1, fmt.Sprintf("%d units, partition nodes %v, node records %v", u, nodes, all)
	})
	c.waitCompleted(append(ids, late), time.Minute) // still COMPLETED: nothing was requeued or killed
	if got := watch.most(); got > 6 {
		t.Errorf("%d units at the peak, above max 6", got)
	}
	for _, want := range []string{"more nodes: adding", "idle", ": removing", "removed slurmd/"} {
		if !as.said(want) {
			t.Errorf("no autoscaler status line says %q", want)
		}
	}
	t.Logf("peak %d units", watch.most())
}

var (
	jobReasonRE = regexp.MustCompile(`Reason=(\S+)`)
	jobTimeRE   = regexp.MustCompile(`SubmitTime=\S+`)
	jobStartRE  = regexp.MustCompile(`StartTime=\S+`)
	jobNodesRE  = regexp.MustCompile(` NodeList=\S+`)
)

// submitHeld submits a 1-node and a 2-node job to partition slurmd, which has no node, records
// squeue's pending output as record (SLURMTEST_RECORD), and fails unless both were accepted
// (sbatch exited 0) and are PENDING; where says what the partition has.
func (c *cluster) submitHeld(record, where string) (one, two string) {
	c.t.Helper()
	one = c.sbatch("slurmd", "-N1", "--wrap", "sleep 2")
	two = c.sbatch("slurmd", "-N2", "--wrap", "sleep 2")
	c.recordPending(record)
	for _, id := range []string{one, two} {
		out := c.slurm("scontrol", "show", "job", "-o", id)
		st, reason := jobStateRE.FindStringSubmatch(out), jobReasonRE.FindStringSubmatch(out)
		if st == nil || st[1] != "PENDING" || reason == nil {
			c.t.Fatalf("job %s with %s: want PENDING, got %s", id, where, out)
		}
		c.t.Logf("job %s with %s: %s (Reason=%s)", id, where, st[1], reason[1])
	}
	return one, two
}

// TestAutoscaleFromZero: with minimum 0 a partition whose application has no unit left still
// accepts jobs and holds them (Slurm 22.05: PENDING with reason PartitionConfig, because the
// partition and its NodeSet stay in slurm.conf with no node); the autoscaler adds units for them,
// once a node is idle it hands the held jobs back to Slurm's main scheduler, they complete, and
// the application goes back to 0 units.
func TestAutoscaleFromZero(t *testing.T) {
	autoscaleFromZero(t, newCluster(t, 1), "squeue-pending-no-nodes")
}

// autoscaleFromZero is TestAutoscaleFromZero on cluster c (one slurmd unit) whose Slurm holds
// a job sent to a partition with no node; record names squeue's output of the held jobs.
func autoscaleFromZero(t *testing.T, c *cluster, record string) {
	if err := c.m.RemoveUnit(c.bg(), "slurmd/0"); err != nil {
		t.Fatal(err)
	}
	c.eventually(2*time.Minute, "no slurmd unit and no node", func() (bool, string) {
		u, nodes := c.units("slurmd"), c.nodeNames()
		return u == 0 && len(nodes) == 0, fmt.Sprintf("%d units, nodes %v", u, nodes)
	})
	if p := c.partition("slurmd"); p == "" {
		t.Fatal("partition slurmd is gone with its last unit: jobs would be rejected")
	} else {
		t.Logf("partition with no node: %s", p)
	}
	one, two := c.submitHeld(record, "no node in its partition")

	watch := c.watchUnits("slurmd")
	as := c.startAutoscaler("--app", "slurmd:min=0,max=2,idle=5s,out=2,in=2,register-timeout=3m")
	c.waitCompleted([]string{one, two}, 3*time.Minute)
	// Where the time from zero went: when the jobs were submitted and started, and how
	// slurmctld started them (the main scheduler, or backfill).
	for _, id := range []string{one, two} {
		out := c.slurm("scontrol", "show", "job", "-o", id)
		t.Logf("job %s: %s %s", id, jobTimeRE.FindString(out), jobStartRE.FindString(out))
	}
	backfilled := false
	for _, l := range strings.Split(c.exec("slurmctld/0", "cat", ctlLogPath), "\n") {
		if strings.Contains(l, "JobId="+one+" ") || strings.Contains(l, "JobId="+two+" ") || strings.Contains(l, "slurmd-") {
			t.Log(l)
			backfilled = backfilled || strings.Contains(l, "sched/backfill")
		}
	}
	c.eventually(3*time.Minute, "back to 0 units and no node", func() (bool, string) {
		u, nodes := c.units("slurmd"), c.nodeNames()
		return u == 0 && len(nodes) == 0, fmt.Sprintf("%d units, nodes %v", u, nodes)
	})
	c.waitCompleted([]string{one, two}, time.Minute)
	if got := watch.most(); got != 2 {
		t.Errorf("peak %d units, want 2 (max 2, one 2-node job)", got)
	}
	if !as.said("more nodes: adding") {
		t.Error("no autoscaler status line says it added units")
	}
	// Held jobs are started by the main scheduler: handed back by the autoscaler once nodes are
	// up, or picked up at once when the nodes registered before the autoscaler's next decision
	// (then there is nothing to hand back); never left to the backfill scheduler's next pass.
	handedBack := as.said("held for want of a node, with nodes up: asked Slurm to schedule them again")
	if backfilled && !handedBack {
		t.Error("the held jobs waited for the backfill scheduler: the autoscaler did not hand them back to the main scheduler")
	}
	t.Logf("handed back by the autoscaler: %v; started by backfill: %v", handedBack, backfilled)
}

// TestAutoscaleResumesARemoval: an autoscaler that stopped between its drain and remove-unit
// left slurmd-1 drained with its reason; a new one, with no memory of it, recognises the drain
// in Slurm and finishes the removal (its idle time of 1h is not what decides), and leaves
// slurmd-0 alone.
func TestAutoscaleResumesARemoval(t *testing.T) {
	c := newCluster(t, 2)
	c.slurm("scontrol", "update", "nodename=slurmd-1", "state=drain", "reason=autoscaler: idle, removing unit slurmd/1")
	as := c.startAutoscaler("--app", "slurmd:min=1,max=3,idle=1h")
	c.eventually(2*time.Minute, "slurmd/1 removed and its node deleted", func() (bool, string) {
		u, nodes := c.units("slurmd"), c.nodeNames()
		return u == 1 && slices.Equal(nodes, []string{"slurmd-0"}), fmt.Sprintf("%d units, nodes %v", u, nodes)
	})
	if !as.said("slurmd-1 drained and idle: removing") {
		t.Error("no status line says the drained node is removed")
	}
	if st := c.nodes()["slurmd-0"]; !strings.HasPrefix(st, "idle") {
		t.Errorf("slurmd-0 is %q, want idle", st)
	}
}

// TestAutoscaleRetriesAFailedAddUnit: the Juju client refuses the first add-unit (as a cloud
// out of quota does); the autoscaler reports it, waits its backoff, retries, and the waiting
// job runs.
func TestAutoscaleRetriesAFailedAddUnit(t *testing.T) {
	c := newCluster(t, 1)
	dir := t.TempDir()
	juju := filepath.Join(dir, "juju")
	script := "#!/bin/sh\n" +
		"if [ \"$1\" = add-unit ] && [ ! -e " + dir + "/failed ]; then\n" +
		"  touch " + dir + "/failed; echo 'ERROR cannot add unit: quota exceeded (injected)' >&2; exit 1\n" +
		"fi\n" +
		"exec " + toolsBin + " \"$@\"\n"
	if err := hosts.WriteExecutable(juju, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	as := c.startAutoscaler("--juju", juju, "--add-retry", "2s", "--app", "slurmd:min=1,max=2,idle=5s")
	// Jobs long enough that the second still waits when the backoff has passed.
	ids := []string{
		c.sbatch("slurmd", "-N1", "--exclusive", "--wrap", "sleep 20"),
		c.sbatch("slurmd", "-N1", "--exclusive", "--wrap", "sleep 20"),
	}
	c.waitCompleted(ids, 3*time.Minute)
	for _, want := range []string{"quota exceeded (injected)", "attempt 1, retrying in 2s", "added 1 units"} {
		if !as.said(want) {
			t.Errorf("no autoscaler status line says %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "failed")); err != nil {
		t.Errorf("the injected failure never happened: %v", err)
	}
}

// TestAutoscaleFromZeroMachines: scale from zero on Debian 13 and 14 machines (auth/slurm).
// Slurm 26.05 holds a job sent to a partition with no node by itself, as 22.05 does (Slurm
// fixed 24.11's rejection in 24.11.6 and 25.05.1): the slurmctld charm writes no FUTURE record
// there, and the scenario is TestAutoscaleFromZero's. 24.11.5 rejects such a job:
// autoscaleFromZeroFuture.
func TestAutoscaleFromZeroMachines(t *testing.T) {
	onReleases(t, []release{trixie, forky}, func(t *testing.T, r release) {
		if !r.holdsEmpty {
			autoscaleFromZeroFuture(t, r)
			return
		}
		c := newClusterOn(t, r.base, 1)
		c.checkRelease(r)
		partFile := filepath.Join(filepath.Dir(ctlConf), "partition-slurmd.conf")
		if part := c.exec("slurmctld/0", "cat", partFile); strings.Contains(part, "FUTURE") {
			t.Errorf("%s on Slurm %s, which holds jobs without them, has FUTURE records:\n%s", partFile, r.slurm, part)
		}
		autoscaleFromZero(t, c, "squeue-pending-no-nodes-"+r.slurm)
	})
}

// autoscaleFromZeroFuture: scale from zero on Slurm 24.11.5 (Debian 13 machines, auth/slurm).
// Unlike 22.05, it rejects a job for a NodeSet partition with no node ("Requested node
// configuration is not available"): shown with the slurmctld charm's future-nodes=none. With
// its default, the charm writes FUTURE node records carrying the NodeSet's feature into the
// partition file: the same jobs are accepted and held, the autoscaler adds units for them, they
// complete on the units' nodes (never on a FUTURE record), and the application goes back to 0
// units.
//
// max-node-count=2 (MaxNodeCount) is what the application's max needs: the 8 FUTURE records do
// not take the place of dynamic nodes.
func autoscaleFromZeroFuture(t *testing.T, r release) {
	c := newClusterOn(t, r.base, 1, map[string]string{"max-node-count": "2"})
	if v := c.slurm("scontrol", "-V"); !strings.Contains(v, " "+r.slurm+".") {
		t.Fatalf("scontrol -V = %q, want Slurm %s", v, r.slurm)
	}
	const record = "NodeName=slurmd-future[1-8] State=FUTURE Feature=slurmd CPUs=1 RealMemory=1"
	partFile := filepath.Join(filepath.Dir(ctlConf), "partition-slurmd.conf")
	if part := c.exec("slurmctld/0", "cat", partFile); !strings.Contains(part, record+"\n") {
		t.Fatalf("%s on Slurm %s lacks %q:\n%s", partFile, r.slurm, record, part)
	}
	if conf := c.exec("slurmctld/0", "cat", ctlConf); !strings.Contains(conf, "MaxNodeCount=10\n") {
		t.Errorf("slurm.conf with max-node-count 2 and 8 FUTURE records lacks MaxNodeCount=10")
	}
	if err := c.m.RemoveUnit(c.bg(), "slurmd/0"); err != nil {
		t.Fatal(err)
	}
	c.eventually(3*time.Minute, "no slurmd unit and no node", func() (bool, string) {
		u, nodes := c.units("slurmd"), c.nodeNames()
		return u == 0 && len(nodes) == 0, fmt.Sprintf("%d units, nodes %v", u, nodes)
	})

	// Without the records: rejected.
	setFuture := func(v string) {
		t.Helper()
		if err := c.m.SetConfig(c.bg(), "slurmctld", map[string]string{"future-nodes": v}, nil); err != nil {
			t.Fatal(err)
		}
		c.waitIdle()
	}
	setFuture("none")
	if part := c.exec("slurmctld/0", "cat", partFile); strings.Contains(part, "FUTURE") {
		t.Fatalf("future-nodes=none left FUTURE records:\n%s", part)
	}
	sbatch := []string{"env", "SLURM_CONF=" + ctlConf, "sbatch", "--parsable", "-p", "slurmd", "-N1", "-o", "/dev/null", "--wrap", "sleep 1"}
	if out, code, stderr := c.tryExec("slurmctld/0", sbatch...); code == 0 || !strings.Contains(stderr, "Requested node configuration is not available") {
		t.Fatalf("Slurm %s, no node and no FUTURE record: sbatch exited %d (%s%s), want the rejection 22.05 does not make", r.slurm, code, out, stderr)
	}

	// With the charm's records (its default): accepted and held.
	setFuture("nodes=8 cpus=1 memory=1")
	if part := c.exec("slurmctld/0", "cat", partFile); !strings.Contains(part, record+"\n") {
		t.Fatalf("future-nodes back to its default: %s lacks %q:\n%s", partFile, record, part)
	}
	one, two := c.submitHeld("squeue-pending-future-"+r.slurm, "only FUTURE records in its partition (Slurm "+r.slurm+")")
	if nodes := c.nodeNames(); len(nodes) != 0 {
		t.Errorf("node records %v listed with no unit: the FUTURE records count as nodes", nodes)
	}

	watch := c.watchUnits("slurmd")
	as := c.startAutoscaler("--app", "slurmd:min=0,max=2,idle=5s,out=2,in=2,register-timeout=3m")
	c.waitCompleted([]string{one, two}, 4*time.Minute)
	for _, id := range []string{one, two} {
		out := c.slurm("scontrol", "show", "job", "-o", id)
		t.Logf("job %s: %s %s %s", id, jobTimeRE.FindString(out), jobStartRE.FindString(out), jobNodesRE.FindString(out))
		if strings.Contains(jobNodesRE.FindString(out), "future") {
			t.Errorf("job %s ran on a FUTURE record: %s", id, out)
		}
	}
	c.eventually(4*time.Minute, "back to 0 units and no node", func() (bool, string) {
		u, nodes := c.units("slurmd"), c.nodeNames()
		return u == 0 && len(nodes) == 0, fmt.Sprintf("%d units, nodes %v", u, nodes)
	})
	if got := watch.most(); got != 2 {
		t.Errorf("peak %d units, want 2 (max 2, one 2-node job)", got)
	}
	if !as.said("more nodes: adding") {
		t.Error("no autoscaler status line says it added units")
	}
	t.Logf("handed back to the main scheduler by the autoscaler: %v", as.said("asked Slurm to schedule them again"))
}
