package e2e_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/model"
)

// TestControllerNeverWaits: the controller never waits inside a hook. update-status runs every
// 30 minutes here, so it finishes nothing during the test: what the hooks leave is finished by
// the slurmctld charm's removal waiter (juju-exec).
//
//   - Scale-in of three units whose nodes each run a job: the controller's relation-departed
//     hooks have all ended while every job still runs (the test holds the jobs until then), an
//     action on the controller completes meanwhile, and once the jobs end the controller's
//     status drops the nodes, woken by the waiter.
//   - remove-application while a job runs in its partition, with job records kept 5 s
//     (MinJobAge): the controller's relation-broken has ended while the job runs, an action
//     completes meanwhile, and the partition goes once the job's record has, woken by the
//     waiter.
//
// The hooks' durations, the longest controller hook and the delay from the last job record's
// end to the partition's removal are logged (docs/benchmarks.md has the bench's figures).
func TestControllerNeverWaits(t *testing.T) {
	t.Parallel()
	controllerNeverWaits(t, "")
}

// TestControllerNeverWaitsBookworm is TestControllerNeverWaits on Debian 12 machines booted by
// systemd: the waiter runs in the controller machine's PID namespace, under its systemd.
func TestControllerNeverWaitsBookworm(t *testing.T) {
	t.Parallel()
	controllerNeverWaits(t, model.BaseBookworm)
}

// controllerNeverWaits is TestControllerNeverWaits with every unit on machines of base (Pebble
// hosts for "").
func controllerNeverWaits(t *testing.T, base string) {
	c := newClusterFrom(t, clusterOptions{base: base, units: 4, ctlConfig: map[string]string{"slurm-conf-parameters": "MinJobAge=5"}, updateStatus: 30 * time.Minute})
	c.deploy(slurmdPath, "gpu", 1, nil)
	c.integrate("slurmctld", "gpu")
	c.waitActive()
	c.eventually(time.Minute, "5 idle nodes", func() (bool, string) {
		idle, seen := c.idleNodes()
		return idle == 5, seen
	})
	start := time.Now()

	// Scale-in of three busy units.
	release := filepath.Join(t.TempDir(), "release")
	hold := "while [ ! -e " + release + " ]; do sleep 0.1; done"
	busy := []string{"slurmd/0", "slurmd/1", "slurmd/2"}
	var jobs []string
	for _, u := range busy {
		jobs = append(jobs, c.sbatch("slurmd", "-w", strings.ReplaceAll(u, "/", "-"), "--wrap", hold))
	}
	for _, j := range jobs {
		c.waitJobState(j, "RUNNING", 30*time.Second)
	}
	t0 := time.Now()
	ctx, cancel := c.ctx(2 * time.Minute)
	if err := c.m.RemoveUnit(ctx, busy...); err != nil {
		t.Fatal(err)
	}
	cancel()
	c.eventually(2*time.Minute, "the controller's relation-departed hooks of the three units ended", func() (bool, string) {
		runs := ended(c.hookRuns("slurmctld/0", t0), "slurmd-relation-departed")
		return len(runs) == 3, fmt.Sprint(runs)
	})
	for _, j := range jobs {
		if s := c.jobState(j); s != "RUNNING" {
			t.Errorf("job %s is %s once the controller's relation-departed hooks ended, want RUNNING (still held by the test)", j, s)
		}
	}
	c.actionDuringRemovals("the departed units' jobs run", jobs)
	c.eventually(time.Minute, "slurmctld's status naming the nodes being removed", func() (bool, string) {
		_, msg := c.unitStatus("slurmctld/0")
		return strings.Contains(msg, "removing slurmd-[0-2] once idle"), msg
	})
	for _, u := range busy {
		c.exec(u, "install", "-D", "-m", "0644", "/dev/null", release)
	}
	for _, j := range jobs {
		c.waitJobState(j, "COMPLETED", time.Minute)
	}
	c.eventually(time.Minute, "the departed units' nodes deleted", func() (bool, string) {
		names := c.nodeNames()
		return !slices.ContainsFunc(names, func(n string) bool { return slices.Contains([]string{"slurmd-0", "slurmd-1", "slurmd-2"}, n) }), fmt.Sprint(names)
	})
	gone := time.Now()
	c.eventually(time.Minute, "slurmctld's status without the departed nodes", func() (bool, string) {
		_, msg := c.unitStatus("slurmctld/0")
		return strings.HasPrefix(msg, "slurmctld up, 2 nodes") && !strings.Contains(msg, "removing"), msg
	})
	t.Logf("scale-in of 3 busy units: nodes deleted → slurmctld's status without them: %.2f s", time.Since(gone).Seconds())
	c.logRuns("scale-in", t0)

	// remove-application while a job runs and its record is kept.
	releaseGPU := filepath.Join(t.TempDir(), "release-gpu")
	job := c.sbatch("gpu", "--wrap", "while [ ! -e "+releaseGPU+" ]; do sleep 0.1; done")
	c.waitJobState(job, "RUNNING", 30*time.Second)
	t1 := time.Now()
	removed := make(chan error, 1)
	go func() {
		ctx, cancel := c.ctx(5 * time.Minute)
		defer cancel()
		removed <- c.m.RemoveApplication(ctx, "gpu")
	}()
	c.eventually(2*time.Minute, "the controller's relation-broken for gpu ended", func() (bool, string) {
		runs := ended(c.hookRuns("slurmctld/0", t1), "slurmd-relation-broken")
		return len(runs) == 1, fmt.Sprint(runs)
	})
	if s := c.jobState(job); s != "RUNNING" {
		t.Errorf("job %s is %s once the controller's relation-broken ended, want RUNNING (still held by the test)", job, s)
	}
	if p := c.partition("gpu"); field(p, "State") != "INACTIVE" {
		t.Errorf("partition gpu while its job runs: %q, want it INACTIVE", p)
	}
	c.actionDuringRemovals("partition gpu's job runs", []string{job})
	c.exec("gpu/0", "install", "-D", "-m", "0644", "/dev/null", releaseGPU)
	c.waitJobState(job, "COMPLETED", time.Minute)
	var recordsGone, partitionGone time.Time
	c.eventually(3*time.Minute, "partition gpu gone", func() (bool, string) {
		out, code, _ := c.tryExec("slurmctld/0", "env", "SLURM_CONF="+ctlConf, "squeue", "-h", "-t", "all", "-p", "gpu")
		if recordsGone.IsZero() && (code != 0 || strings.TrimSpace(out) == "") {
			recordsGone = time.Now()
		}
		if p := c.partition("gpu"); p != "" {
			return false, p
		}
		partitionGone = time.Now()
		return true, ""
	})
	t.Logf("remove-application: the last job record gone → partition gpu gone: %.2f s (the test polls squeue and scontrol, ~0.1 s apart)", partitionGone.Sub(recordsGone).Seconds())
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	c.waitIdle()
	c.logRuns("remove-application", t1)

	// Neither removal was finished by update-status: by the waiter's juju-exec.
	runs := c.hookRuns("slurmctld/0", start)
	if us := ended(runs, "update-status"); len(us) > 0 {
		t.Errorf("update-status ran on the controller (every 30 min here): %v; the removals must not need it", us)
	}
	if wakes := ended(runs, model.JujuExec); len(wakes) == 0 {
		t.Errorf("no juju-exec run on the controller: who finished the removals?")
	}
	t.Log("removal waiter's log:\n" + c.exec("slurmctld/0", "cat", ctlWaiterLog))
}

// ended are the runs of hook (or model.JujuExec) that have ended.
func ended(runs []model.HookRun, hook string) []model.HookRun {
	var out []model.HookRun
	for _, r := range runs {
		if r.Hook == hook && !r.End.IsZero() {
			out = append(out, r)
		}
	}
	return out
}

// actionDuringRemovals runs an action on the controller while removals wait for jobs, which
// must still run when it has completed: no hook holds the machine lock waiting for them.
func (c *cluster) actionDuringRemovals(what string, jobs []string) {
	c.t.Helper()
	t0 := time.Now()
	run, err := c.m.Run(c.bg(), "slurmctld/0", "show-current-config", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	if run.Status != "completed" {
		c.t.Errorf("show-current-config while %s: %s %q", what, run.Status, run.Message)
	}
	for _, j := range jobs {
		if s := c.jobState(j); s != "RUNNING" {
			c.t.Errorf("job %s is %s once an action on the controller completed, want RUNNING", j, s)
		}
	}
	c.t.Logf("an action on the controller while %s: completed in %.2f s", what, time.Since(t0).Seconds())
}

// logRuns logs the controller's hooks and juju-exec runs since t0 with their durations, and
// the longest.
func (c *cluster) logRuns(what string, t0 time.Time) {
	var longest model.HookRun
	var lines []string
	for _, r := range c.hookRuns("slurmctld/0", t0) {
		d := fmt.Sprintf("%.3fs", r.Duration().Seconds())
		if r.End.IsZero() {
			d = "running"
		}
		lines = append(lines, fmt.Sprintf("+%.2fs %s %s", r.Start.Sub(t0).Seconds(), r.Hook, d))
		if r.Duration() > longest.Duration() {
			longest = r
		}
	}
	c.t.Logf("%s: controller hooks and juju-exec runs: %s", what, strings.Join(lines, ", "))
	c.t.Logf("%s: longest controller hook: %s, %.3f s", what, longest.Hook, longest.Duration().Seconds())
}

// TestControllerNeverWaitsForRestarts: the controller's hooks that restart slurmctld (the
// slurmdbd relation turning accounting on, then its removal turning it off) return without
// waiting for slurmctld to answer, while a job runs: each restart is finished (slurmctld
// found answering, logged, the status back to active) by a later run of the charm, which with
// update-status every 30 minutes is the waiter's juju-exec (or another of the relation's
// hooks, which settles it first). The restarting hooks' durations are logged.
func TestControllerNeverWaitsForRestarts(t *testing.T) {
	t.Parallel()
	c := newClusterFrom(t, clusterOptions{units: 1, updateStatus: 30 * time.Minute})
	start := time.Now()
	release := filepath.Join(t.TempDir(), "release")
	job := c.sbatch("slurmd", "--wrap", "while [ ! -e "+release+" ]; do sleep 0.1; done")
	c.waitJobState(job, "RUNNING", 30*time.Second)
	c.deploy(mariadbPath, "mariadb", 1, nil)
	c.deploy(slurmdbdPath, "slurmdbd", 1, nil)
	c.integrate("slurmdbd", "mariadb")

	t0 := time.Now()
	c.integrate("slurmctld", "slurmdbd")
	c.waitActive()
	c.restartFinishedLater(t0, "turn accounting on")
	c.eventually(time.Minute, "slurmctld active with accounting", func() (bool, string) {
		st, msg := c.unitStatus("slurmctld/0")
		return st == "active" && strings.Contains(msg, "; accounting via slurmdbd"), st + ": " + msg
	})
	if s := c.jobState(job); s != "RUNNING" {
		t.Errorf("job %s is %s after the restart that turned accounting on, want RUNNING (held by the test)", job, s)
	}

	t1 := time.Now()
	if err := c.m.RemoveRelation(c.bg(), "slurmctld", "slurmdbd"); err != nil {
		t.Fatal(err)
	}
	c.restartFinishedLater(t1, "turn accounting off")
	c.eventually(time.Minute, "slurmctld active without accounting", func() (bool, string) {
		st, msg := c.unitStatus("slurmctld/0")
		return st == "active" && !strings.Contains(msg, "accounting"), st + ": " + msg
	})
	if s := c.jobState(job); s != "RUNNING" {
		t.Errorf("job %s is %s after the restart that turned accounting off, want RUNNING (held by the test)", job, s)
	}
	c.exec("slurmd/0", "install", "-D", "-m", "0644", "/dev/null", release)
	c.waitJobState(job, "COMPLETED", time.Minute)
	if us := ended(c.hookRuns("slurmctld/0", start), "update-status"); len(us) > 0 {
		t.Errorf("update-status ran on the controller (every 30 min here): %v; the restarts must not need it", us)
	}
	t.Log("waiter's log:\n" + c.exec("slurmctld/0", "cat", ctlWaiterLog))
}

// restartFinishedLater checks, from the model's lines since t0, that the controller's hook
// that restarted slurmctld to what had ended before a later run found slurmctld answering
// and finished the restart, and that this run is no update-status; it logs both runs.
func (c *cluster) restartFinishedLater(t0 time.Time, what string) {
	c.t.Helper()
	var restarting, restarted time.Time
	var restarter, finisher model.HookRun
	c.eventually(2*time.Minute, "the controller's restart to "+what+" and the run that finished it", func() (bool, string) {
		restarting = c.loggedAt(t0, "slurmctld/0", "restarting slurmctld to "+what)
		restarted = c.loggedAt(t0, "slurmctld/0", "restarted slurmctld to "+what)
		if restarting.IsZero() || restarted.IsZero() {
			return false, fmt.Sprintf("log lines at %v and %v", restarting, restarted)
		}
		runs := c.hookRuns("slurmctld/0", t0)
		var ok1, ok2 bool
		restarter, ok1 = runAt(runs, restarting)
		finisher, ok2 = runAt(runs, restarted)
		return ok1 && ok2 && !restarter.End.IsZero() && !finisher.End.IsZero(), fmt.Sprint(runs)
	})
	if restarter.End.After(restarted) || restarter == finisher {
		c.t.Errorf("the controller's %s that restarted slurmctld to %s (%v → %v) was still running when slurmctld answered (%v): it waited",
			restarter.Hook, what, restarter.Start, restarter.End, restarted)
	}
	if finisher.Hook == "update-status" {
		c.t.Errorf("the restart to %s was finished by update-status, not by the waiter's wake or a later hook", what)
	}
	c.t.Logf("restart to %s: %s restarted slurmctld and took %.3f s; %s %.2f s later found it answering and finished it (took %.3f s)",
		what, restarter.Hook, restarter.Duration().Seconds(), finisher.Hook, finisher.Start.Sub(restarter.End).Seconds(), finisher.Duration().Seconds())
}

// loggedAt is when unit first logged (juju-log) a line containing msg since t0; zero if it
// has not.
func (c *cluster) loggedAt(t0 time.Time, unit, msg string) time.Time {
	c.trace.mu.Lock()
	defer c.trace.mu.Unlock()
	for _, l := range c.trace.lines {
		if !l.At.Before(t0) && strings.Contains(l.Text, " unit."+unit+".juju-log ") && strings.Contains(l.Text, msg) {
			return l.At
		}
	}
	return time.Time{}
}

// runAt is the run of runs under way at at.
func runAt(runs []model.HookRun, at time.Time) (model.HookRun, bool) {
	for _, r := range runs {
		if !r.Start.After(at) && (r.End.IsZero() || !r.End.Before(at)) {
			return r, true
		}
	}
	return model.HookRun{}, false
}
