package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// ControllerPIDFile is where slurmctld writes its PID on a controller host (the operator's and
// RawConf's SlurmctldPidFile).
const ControllerPIDFile = "/run/slurmctld.pid"

// phase is what one scale step cost, read before and after it.
type phase struct {
	t0                time.Time
	ev                slurm.ControllerEvents
	pid               string
	ctlCPU            time.Duration // slurmctld's own CPU (its /proc stat)
	selfCPU, childCPU time.Duration // the model (this process) and everything it ran
	hooksAt           int           // controller hook lines in the trace so far
}

func rusageCPU(who int) time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// begin resets the peak RSS of the model and of slurmctld and reads the counters.
func (c *opCluster) begin() phase {
	ev, pid := c.ctlEvents()
	p := phase{t0: time.Now(), ev: ev, pid: pid, selfCPU: rusageCPU(syscall.RUSAGE_SELF),
		childCPU: rusageCPU(syscall.RUSAGE_CHILDREN), hooksAt: c.trace.count(ctlHookLine)}
	// "5" resets the peak RSS (VmHWM) to the current RSS (proc(5), clear_refs).
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	if pid != "" {
		os.WriteFile(c.ctl.ProcPath("/proc/"+pid+"/clear_refs"), []byte("5"), 0)
		if stat, err := os.ReadFile(c.ctl.ProcPath("/proc/" + pid + "/stat")); err == nil {
			p.ctlCPU, _ = ParseProcStatCPU(stat)
		}
	}
	return p
}

// ctlHookLine matches the model's line for a hook starting on the controller.
func ctlHookLine(line string) bool {
	return strings.HasPrefix(line, "slurmctld/0: running ") && strings.HasSuffix(line, " hook")
}

// end adds the figures of a phase that handled n units, named prefix.*.
func (c *opCluster) end(rep *Report, p phase, prefix string, n int) (hooks int, restarts int, ev slurm.ControllerEvents) {
	after, pid := c.ctlEvents()
	ev = after.Sub(p.ev)
	restarts = ev.Starts
	// The charm runs slurmctld attached (-D) under Pebble and under systemd alike: a
	// reconfigure keeps its PID on every release (slurm.Features.ReconfigureKeepsPID), so a new
	// PID the log does not explain is a restart.
	if pid != p.pid && restarts == 0 {
		restarts = 1
	}
	hooks = c.trace.count(ctlHookLine) - p.hooksAt
	var ctlCPU time.Duration
	var ctlPeak int64
	if pid != "" {
		if stat, err := os.ReadFile(c.ctl.ProcPath("/proc/" + pid + "/stat")); err == nil {
			cpu, _ := ParseProcStatCPU(stat)
			if pid == p.pid {
				ctlCPU = cpu - p.ctlCPU
			} else {
				ctlCPU = cpu
			}
		}
		if status, err := os.ReadFile(c.ctl.ProcPath("/proc/" + pid + "/status")); err == nil {
			ctlPeak, _ = ParseVmHWM(status)
		}
	}
	var modelPeak int64
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		modelPeak, _ = ParseVmHWM(status)
	}
	per := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(n) }
	// The controller runs its hooks one after the other: while its queue is full, the gap from
	// one hook's start to the next is that hook's cost (plus the model's dispatch).
	var gaps []float64
	starts := c.trace.times(p.t0, ctlHookLine)
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, float64(starts[i].Sub(starts[i-1]))/float64(time.Millisecond))
	}
	if len(gaps) > 0 {
		g := Summarize(gaps)
		rep.Add(Figure{Name: prefix + ".ctl_hook_gap_ms", Value: g.Median, Unit: "ms", Samples: g.N, Values: gaps,
			Note: "median gap between the starts of successive controller hooks (a hook's wall time plus dispatch while hooks queue): flat when no controller hook grows with the number of units"})
	}
	rep.Add(
		Figure{Name: prefix + ".ctl_hooks", Value: float64(hooks), Unit: "count",
			Note: fmt.Sprintf("hooks the controller (slurmctld/0) ran: %.2f per unit", float64(hooks)/float64(n))},
		Figure{Name: prefix + ".ctl_hooks_per_unit", Value: float64(hooks) / float64(n), Unit: "ratio"},
		Figure{Name: prefix + ".slurmctld_cpu_ms_per_unit", Value: per(ctlCPU), Unit: "ms",
			Note: "slurmctld's own CPU (user+system, /proc/<pid from its PID file>/stat) per unit"},
		Figure{Name: prefix + ".model_cpu_ms_per_unit", Value: per(rusageCPU(syscall.RUSAGE_SELF) - p.selfCPU), Unit: "ms",
			Note: "the local model's own CPU (this process) per unit"},
		Figure{Name: prefix + ".hooks_cpu_ms_per_unit", Value: per(rusageCPU(syscall.RUSAGE_CHILDREN) - p.childCPU), Unit: "ms",
			Note: "CPU of every process the model and the bench ran and waited for (hooks of every unit with their tools, host set-up, the bench's sinfo polls) per unit"},
		Figure{Name: prefix + ".reconfigures", Value: float64(ev.Reconfigures), Unit: "count", Target: Max(0),
			Note: "`_slurm_rpc_reconfigure_controller: completed` lines in the controller's slurmctld.log"},
		Figure{Name: prefix + ".restarts", Value: float64(restarts), Unit: "count", Target: Max(0),
			Note: fmt.Sprintf("slurmctld starts in its slurmctld.log (PID file: %s → %s)", p.pid, pid)},
		Figure{Name: prefix + ".model_peak_kib", Value: float64(modelPeak), Unit: "KiB",
			Note: "peak RSS (VmHWM, reset at the start) of the local model (the bench process)"},
		Figure{Name: prefix + ".slurmctld_peak_kib", Value: float64(ctlPeak), Unit: "KiB",
			Note: "peak RSS (VmHWM, reset at the start) of slurmctld"},
	)
	return hooks, restarts, ev
}

// scaleBound bounds each wait of a scale step of n units (a loaded 2-core machine creates a
// host in about a second).
func scaleBound(n int) time.Duration { return 2*time.Minute + time.Duration(n)*2*time.Second }

// scale runs every size of opts.Scales: a raw scale-out of that many nodes (when raw is
// set), then the operators' scale-out of that many units added at once, then their removal.
func (c *opCluster) scale(ctx context.Context, opts *RunOptions, rep *Report, raw *RawCluster) error {
	var rawPts, outPts []Point
	defer func() {
		if len(outPts) > 0 {
			rep.ScaleSeries = append(rep.ScaleSeries, Series{Name: "operators: add-unit -n N → all IDLE (hosts included)", Points: outPts})
		}
		if len(rawPts) > 0 {
			rep.ScaleSeries = append(rep.ScaleSeries, Series{Name: "raw slurmd -Z: N started at once → all IDLE", Points: rawPts})
		}
	}()
	for _, n := range opts.Scales {
		if raw != nil {
			opts.progress("raw: scale-out of %d nodes at once", n)
			sctx, cancel := context.WithTimeout(ctx, scaleBound(n))
			res, err := raw.Scale(sctx, n)
			cancel()
			if err != nil {
				return err
			}
			rep.Add(Figure{Name: fmt.Sprintf("scale.%d.raw_s", n), Value: res.Idle.Seconds(), Unit: "s", Samples: n,
				Note: fmt.Sprintf("%d prepared hosts (munged running; %.1fs to prepare, not counted) start slurmd -Z at once → all IDLE", n, res.Prepare.Seconds())},
				Figure{Name: fmt.Sprintf("scale.%d.raw_per_node_s", n), Value: res.Idle.Seconds() / float64(n), Unit: "s"})
			rawPts = append(rawPts, Point{Nodes: n, Seconds: res.Idle.Seconds()})
		}
		out, err := c.scaleOut(ctx, opts, rep, n)
		if out > 0 {
			outPts = append(outPts, Point{Nodes: n, Seconds: out.Seconds()})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// scaleOut adds n units at once, times until all are IDLE and the model has settled, then
// removes them all at once and times until every node record is gone and the model settled.
func (c *opCluster) scaleOut(ctx context.Context, opts *RunOptions, rep *Report, n int) (time.Duration, error) {
	opts.progress("operators: scale-out of %d units at once", n)
	prefix := fmt.Sprintf("scale.%d.out", n)
	p := c.begin()
	units, err := c.m.AddUnit(ctx, "slurmd", n)
	if err != nil {
		return 0, err
	}
	idleAt := map[string]time.Duration{}
	sctx, cancel := context.WithTimeout(ctx, scaleBound(n))
	defer cancel()
	werr := Poll(sctx, 100*time.Millisecond, func() (bool, string) {
		nodes, err := c.sc.Nodes(sctx)
		if err != nil {
			return false, err.Error()
		}
		for _, nd := range nodes {
			if nd.State.Base == slurm.StateIdle && !nd.State.NotResponding() {
				if _, ok := idleAt[nd.Name]; !ok {
					idleAt[nd.Name] = time.Since(p.t0)
				}
			}
		}
		done := 0
		for _, u := range units {
			if _, ok := idleAt[slurmd.NodeName(u)]; ok {
				done++
			}
		}
		return done == len(units), fmt.Sprintf("%d/%d idle", done, len(units))
	})
	total := time.Since(p.t0)
	settleErr := c.wait(ctx, scaleBound(n), nil)
	settle := time.Since(p.t0)
	var lastHost time.Time
	done := 0
	for _, u := range units {
		if _, ok := idleAt[slurmd.NodeName(u)]; ok {
			done++
		}
		if _, at, ok := c.prov.Created(u); ok && at.After(lastHost) {
			lastHost = at
		}
	}
	f := Figure{Name: prefix + "_s", Value: total.Seconds(), Unit: "s", Samples: done,
		Note: fmt.Sprintf("%d units added at once → all IDLE, host creation included (all hosts up after %.1fs); %d/%d idle",
			n, lastHost.Sub(p.t0).Seconds(), done, n)}
	if n == 256 {
		f.Target = Max(30)
	}
	if werr != nil {
		f.Note = fmt.Sprintf("NOT ALL IDLE within the bound: %v; ", werr) + f.Note
	}
	settleNote := "add-unit → every hook of the scale-out has run (the model is idle)"
	if settleErr != nil {
		settleNote = fmt.Sprintf("NOT SETTLED: %v", settleErr)
	}
	rep.Add(f,
		Figure{Name: prefix + "_per_node_s", Value: total.Seconds() / float64(n), Unit: "s", Note: "all IDLE time / units"},
		Figure{Name: prefix + "_hosts_s", Value: lastHost.Sub(p.t0).Seconds(), Unit: "s", Note: "add-unit → the last host is up"},
		Figure{Name: prefix + "_settle_s", Value: settle.Seconds(), Unit: "s", Note: settleNote})
	c.end(rep, p, prefix, n)
	rep.Traces = appendTrace(rep.Traces, fmt.Sprintf("scale-out of %d: slurmctld/0 until settled", n), c.trace.since(p.t0, subjects("slurmctld/0")...))
	if werr != nil || settleErr != nil {
		return total, errors.Join(werr, settleErr)
	}

	opts.progress("operators: removing the %d units at once", n)
	prefix = fmt.Sprintf("scale.%d.in", n)
	p = c.begin()
	gerr, err := c.removeAtOnce(ctx, units, scaleBound(n))
	if err != nil {
		return total, err
	}
	gone := time.Since(p.t0)
	settleErr = c.wait(ctx, scaleBound(n), nil)
	settle = time.Since(p.t0)
	f = Figure{Name: prefix + "_s", Value: gone.Seconds(), Unit: "s", Note: fmt.Sprintf("remove-unit of the %d units → every node record gone", n)}
	if gerr != nil {
		f.Note = fmt.Sprintf("NOT ALL GONE within the bound: %v; ", gerr) + f.Note
	}
	settleNote = "remove-unit → every hook has run and every machine is gone (the model is idle)"
	if settleErr != nil {
		settleNote = fmt.Sprintf("NOT SETTLED: %v", settleErr)
	}
	rep.Add(f,
		Figure{Name: prefix + "_per_node_s", Value: gone.Seconds() / float64(n), Unit: "s", Note: "all gone time / units"},
		Figure{Name: prefix + "_settle_s", Value: settle.Seconds(), Unit: "s", Note: settleNote})
	c.end(rep, p, prefix, n)
	for _, u := range units {
		c.checkGone(ctx, rep, slurmd.NodeName(u), "a scale-in")
	}
	return total, errors.Join(gerr, settleErr)
}

// deriveScale adds the ratio of time per node between the largest size and 32 units.
func deriveScale(rep *Report) {
	small, ok1 := rep.Figure("scale.32.out_per_node_s")
	var sizes []int
	for _, f := range rep.Figures {
		var n int
		if _, err := fmt.Sscanf(f.Name, "scale.%d.out_per_node_s", &n); err == nil {
			sizes = append(sizes, n)
		}
	}
	if !ok1 || len(sizes) == 0 || small.Value <= 0 {
		return
	}
	big := slices.Max(sizes)
	if big == 32 {
		return
	}
	f, _ := rep.Figure(fmt.Sprintf("scale.%d.out_per_node_s", big))
	rep.Add(Figure{Name: fmt.Sprintf("scale.per_node_ratio_%d_32", big), Value: f.Value / small.Value, Unit: "ratio", Target: Max(1.25),
		Note: fmt.Sprintf("time per node at %d units / at 32 units", big)})
}

// ParseProcStatCPU returns the user+system CPU time in /proc/<pid>/stat (fields 14 and 15,
// in clock ticks of 1/100 s).
func ParseProcStatCPU(stat []byte) (time.Duration, error) {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("cannot parse /proc stat: no ')'")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("cannot parse /proc stat: %d fields after the command", len(f))
	}
	var ticks int64
	for _, x := range f[11:13] {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("cannot parse /proc stat: bad CPU field %q", x)
		}
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// ParseVmHWM returns the peak RSS in KiB from /proc/<pid>/status.
func ParseVmHWM(status []byte) (int64, error) {
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("cannot parse VmHWM line %q", line)
			}
			v, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("cannot parse VmHWM line %q", line)
			}
			return v, nil
		}
	}
	return 0, errors.New("no VmHWM line")
}

// removeAtOnce removes units at once and polls, within bound, until none of their nodes has a
// record left: err is a remove-unit that failed, gone the wait's end before that.
func (c *opCluster) removeAtOnce(ctx context.Context, units []string, bound time.Duration) (gone, err error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for _, u := range units {
		if err := c.m.RemoveUnit(ctx, u); err != nil {
			return nil, err
		}
	}
	return Poll(ctx, 100*time.Millisecond, func() (bool, string) {
		nodes, err := c.sc.Nodes(ctx)
		if err != nil {
			return false, err.Error()
		}
		left := 0
		for _, nd := range nodes {
			if slices.ContainsFunc(units, func(u string) bool { return slurmd.NodeName(u) == nd.Name }) {
				left++
			}
		}
		return left == 0, fmt.Sprintf("%d/%d nodes left", left, len(units))
	}), nil
}
