package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/tests/model"
)

// busyJob is the job the bench holds on a node until it cancels it: it costs nothing while it
// runs (a job polling for a file forks a sleep many times a second, and 32 of them starve a
// small machine of the CPU the hooks measured here need).
const busyJob = "exec sleep 3600"

// timed are the model's progress lines with their times.
func (t *tracer) timed() []model.TimedLine {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]model.TimedLine, len(t.lines))
	for i, l := range t.lines {
		out[i] = model.TimedLine{At: l.at, Text: l.text}
	}
	return out
}

// ctlRuns are the controller's hooks and juju-exec runs that started in [t0, t1).
func (c *opCluster) ctlRuns(t0, t1 time.Time) []model.HookRun {
	var out []model.HookRun
	for _, r := range model.HookRuns(c.trace.timed()) {
		if r.Unit == "slurmctld/0" && !r.Start.Before(t0) && r.Start.Before(t1) {
			out = append(out, r)
		}
	}
	return out
}

// ctlHookFigures adds prefix.ctl_hook_max_ms (target: at most 1 s, the controller never waits
// in a hook), prefix.ctl_hook_median_ms, prefix.ctl_hooks and prefix.ctl_wakes for runs, and
// returns the longest.
func ctlHookFigures(rep *Report, prefix, what string, runs []model.HookRun) model.HookRun {
	var longest model.HookRun
	var ms []float64
	wakes, open := 0, 0
	kinds := map[string]int{}
	for _, r := range runs {
		if r.End.IsZero() {
			open++
			continue
		}
		if r.Hook == model.JujuExec {
			wakes++
		}
		kinds[r.Hook]++
		ms = append(ms, float64(r.Duration())/float64(time.Millisecond))
		if r.Duration() > longest.Duration() {
			longest = r
		}
	}
	var counts []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		counts = append(counts, fmt.Sprintf("%d %s", kinds[k], k))
	}
	note := fmt.Sprintf("the longest hook (or juju-exec run) of slurmctld/0 %s, from the model's progress lines (running … → ran …): %s; %s", what, longest.Hook, strings.Join(counts, ", "))
	if open > 0 {
		note += fmt.Sprintf("; %d NOT ENDED", open)
	}
	s := Summarize(ms)
	rep.Add(
		Figure{Name: prefix + ".ctl_hook_max_ms", Value: s.Max, Unit: "ms", Samples: s.N, Values: ms, Target: Max(1000), Note: note},
		Figure{Name: prefix + ".ctl_hook_median_ms", Value: s.Median, Unit: "ms", Samples: s.N},
		Figure{Name: prefix + ".ctl_hooks", Value: float64(len(runs)), Unit: "count", Note: "controller hooks and juju-exec runs " + what},
		Figure{Name: prefix + ".ctl_wakes", Value: float64(wakes), Unit: "count", Note: "juju-exec runs of the removal waiter " + what},
	)
	return longest
}

// busy is part "busy": the controller's hooks while removals wait for jobs.
//
//   - busy.<n>: n units added at once; one job held on each node; the n units removed at once
//     while every job runs: the controller's hooks and juju-exec runs from the removal until the
//     model settles after the jobs are cancelled (ctl_hook_max_ms, target ≤ 1 s); cancelled → every node
//     record gone (gone_s); the last record gone → the controller's status without the nodes
//     (status_s: the waiter's wake).
//   - busy.partition: an application with one unit and a held job is removed; the controller's
//     hooks until it settles; the job cancelled, its record kept for MinJobAge (2 s here) →
//     removed_after_records_s: the last job record gone → the partition gone (the waiter's
//     wake), sampled.
//
// The controller's MinJobAge is set to 2 s first (one reconfigure), so the part runs after the
// others.
func (c *opCluster) busy(ctx context.Context, opts *RunOptions, rep *Report, slurmdCharm string) error {
	opts.progress("busy: MinJobAge=2 on the controller")
	if err := c.m.SetConfig(ctx, "slurmctld", map[string]string{"slurm-conf-parameters": "MinJobAge=2"}, nil); err != nil {
		return err
	}
	if err := c.wait(ctx, 2*time.Minute, model.AllActive); err != nil {
		return err
	}
	if err := c.busyScaleIn(ctx, opts, rep, opts.BusyUnits); err != nil {
		return err
	}
	return c.busyPartition(ctx, opts, rep, slurmdCharm, min(opts.Samples, 5))
}

// holdJobs submits one held job on each node, waits until all run and returns their ids.
func (c *opCluster) holdJobs(ctx context.Context, partition string, nodes []string) ([]string, error) {
	var ids []string
	for _, node := range nodes {
		out, err := c.ctl.RunEnv(ctx, []string{"SLURM_CONF=" + ControllerConf}, "sbatch", "--parsable", "-p", partition, "-w", node,
			"-o", "/dev/null", "--wrap", busyJob)
		if err != nil {
			return nil, fmt.Errorf("cannot submit a job to %s: %w", node, err)
		}
		ids = append(ids, strings.TrimSpace(string(out)))
	}
	return ids, Poll(withTimeout(ctx, 2*time.Minute), c.poll, func() (bool, string) {
		jobs, err := c.sc.JobsInPartition(ctx, partition)
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, j := range jobs {
			if j.State == "RUNNING" {
				running++
			}
		}
		return running >= len(nodes), fmt.Sprintf("%d/%d running", running, len(nodes))
	})
}

// release ends the held jobs (one scancel).
func (c *opCluster) release(ctx context.Context, jobs []string) error {
	return c.sc.CancelJobs(ctx, jobs...)
}

func (c *opCluster) busyScaleIn(ctx context.Context, opts *RunOptions, rep *Report, n int) error {
	prefix := fmt.Sprintf("busy.%d", n)
	opts.progress("busy: %d units added, a job held on each", n)
	units, err := c.m.AddUnit(ctx, "slurmd", n)
	if err != nil {
		return err
	}
	var nodes []string
	for _, u := range units {
		nodes = append(nodes, slurmd.NodeName(u))
	}
	if err := Poll(withTimeout(ctx, scaleBound(n)), 100*time.Millisecond, func() (bool, string) {
		all, err := c.sc.Nodes(ctx)
		if err != nil {
			return false, err.Error()
		}
		idle := 0
		for _, nd := range all {
			if slices.Contains(nodes, nd.Name) && nd.State.Base == slurm.StateIdle && !nd.State.NotResponding() {
				idle++
			}
		}
		return idle == n, fmt.Sprintf("%d/%d idle", idle, n)
	}); err != nil {
		return err
	}
	if err := c.wait(ctx, scaleBound(n), nil); err != nil {
		return err
	}
	jobs, err := c.holdJobs(ctx, "slurmd", nodes)
	if err != nil {
		return err
	}

	opts.progress("busy: removing the %d units while their jobs run", n)
	t0 := time.Now()
	if err := c.m.RemoveUnit(ctx, units...); err != nil {
		return err
	}
	// Every departure reaches the controller while the jobs are held (the bound is generous:
	// on a loaded machine each hook's processes wait for a CPU).
	derr := Poll(withTimeout(ctx, scaleBound(n)+time.Duration(n)*20*time.Second), 100*time.Millisecond, func() (bool, string) {
		done := 0
		for _, r := range c.ctlRuns(t0, time.Now()) {
			if r.Hook == "slurmd-relation-departed" && !r.End.IsZero() {
				done++
			}
		}
		return done >= n, fmt.Sprintf("%d/%d controller relation-departed hooks ended", done, n)
	})
	held, err := c.sc.JobsInPartition(ctx, "slurmd")
	if err != nil {
		return errors.Join(derr, err)
	}
	t1 := time.Now()
	if err := c.release(ctx, jobs); err != nil {
		return err
	}
	var lastGone time.Time
	gerr := Poll(withTimeout(ctx, scaleBound(n)), 50*time.Millisecond, func() (bool, string) {
		all, err := c.sc.Nodes(ctx)
		if err != nil {
			return false, err.Error()
		}
		left := slices.ContainsFunc(all, func(nd slurm.Node) bool { return slices.Contains(nodes, nd.Name) })
		lastGone = time.Now()
		return !left, "nodes left"
	})
	gone := time.Since(t1)
	serr := Poll(withTimeout(ctx, 2*time.Minute), 50*time.Millisecond, func() (bool, string) {
		msg := c.ctlStatus()
		return !strings.Contains(msg, "removing"), msg
	})
	status := time.Since(lastGone)
	werr := c.wait(ctx, scaleBound(n), nil)
	longest := ctlHookFigures(rep, prefix, fmt.Sprintf("from removing %d busy units at once until every node is gone and the model settled", n), c.ctlRuns(t0, time.Now()))
	rep.Add(
		Figure{Name: prefix + ".held_jobs", Value: float64(len(held)), Unit: "count",
			Note: "jobs still held in the partition once the controller had run every unit's relation-departed (all of them: no departure waited for its jobs)"},
		Figure{Name: prefix + ".gone_s", Value: gone.Seconds(), Unit: "s", Note: "the jobs cancelled (one scancel) → every node record gone (the units delete their nodes)"},
		Figure{Name: prefix + ".status_s", Value: status.Seconds(), Unit: "s",
			Note: "the last node record gone → the controller's status drops its removals (the removal waiter's juju-exec; update-status every minute here)"},
	)
	rep.Traces = appendTrace(rep.Traces, fmt.Sprintf("busy scale-in of %d: slurmctld/0 (longest hook %s %.0f ms)", n, longest.Hook, float64(longest.Duration())/float64(time.Millisecond)),
		c.trace.since(t0, subjects("slurmctld/0")...))
	for _, node := range nodes {
		c.checkGone(ctx, rep, node, "a busy scale-in")
	}
	return errors.Join(derr, gerr, serr, werr)
}

// ctlStatus is the controller's workload status message.
func (c *opCluster) ctlStatus() string {
	st := c.m.Status(context.Background())
	if a, ok := st.Applications["slurmctld"]; ok {
		if u, ok := a.Units["slurmctld/0"]; ok {
			return u.WorkloadStatus.Message
		}
	}
	return ""
}

func (c *opCluster) busyPartition(ctx context.Context, opts *RunOptions, rep *Report, slurmdCharm string, samples int) error {
	var delays []float64
	var runs []model.HookRun
	for i := 0; i < samples; i++ {
		app := fmt.Sprintf("busy%d", i)
		opts.progress("busy: remove-application %s with a held job (%d/%d)", app, i+1, samples)
		if _, err := c.m.Deploy(ctx, model.DeployOptions{Charm: slurmdCharm, Name: app}); err != nil {
			return err
		}
		if _, err := c.m.Integrate(ctx, "slurmctld", app); err != nil {
			return err
		}
		node := app + "-0"
		if err := c.wait(ctx, 2*time.Minute, model.AllActive); err != nil {
			return err
		}
		if err := c.waitIdle(withTimeout(ctx, time.Minute), node); err != nil {
			return err
		}
		jobs, err := c.holdJobs(ctx, app, []string{node})
		if err != nil {
			return err
		}
		t0 := time.Now()
		if err := c.m.RemoveApplication(ctx, app); err != nil {
			return err
		}
		if err := Poll(withTimeout(ctx, time.Minute), c.poll, func() (bool, string) {
			for _, r := range c.ctlRuns(t0, time.Now()) {
				if r.Hook == "slurmd-relation-broken" && !r.End.IsZero() {
					return true, ""
				}
			}
			return false, "relation-broken not ended"
		}); err != nil {
			return err
		}
		if err := c.release(ctx, jobs); err != nil {
			return err
		}
		var recordsGone, partGone time.Time
		if err := Poll(withTimeout(ctx, 3*time.Minute), 20*time.Millisecond, func() (bool, string) {
			if recordsGone.IsZero() {
				if jobs, err := c.sc.PartitionJobRecords(ctx, app); err == nil && len(jobs) == 0 {
					recordsGone = time.Now()
				}
			}
			_, err := c.sc.ShowPartition(ctx, app)
			if errors.Is(err, slurm.ErrUnknownPartition) {
				partGone = time.Now()
				return true, ""
			}
			return false, fmt.Sprint(err)
		}); err != nil {
			return err
		}
		if recordsGone.IsZero() {
			recordsGone = partGone
		}
		delays = append(delays, partGone.Sub(recordsGone).Seconds())
		if err := c.wait(ctx, 2*time.Minute, nil); err != nil {
			return err
		}
		runs = append(runs, c.ctlRuns(t0, time.Now())...)
		if i == 0 {
			rep.Traces = appendTrace(rep.Traces, "busy: remove-application with a held job: slurmctld/0", c.trace.since(t0, subjects("slurmctld/0")...))
		}
	}
	s := Summarize(delays)
	rep.Add(Figure{Name: "busy.partition.removed_after_records_s", Value: s.Median, Unit: "s", Samples: s.N, Values: delays,
		Note: "the removed application's last job record gone (squeue -t all -p, polled every 20 ms) → its partition gone (the removal waiter polls every second, then juju-exec, one pass, one reconfigure)"})
	ctlHookFigures(rep, "busy.partition", "from remove-application of an application with a held job until the model settled", runs)
	return nil
}
