package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

// buildBinaries builds the operators' dispatch binaries and the fake tool into dir and returns
// them by name (slurmctld, slurmd, faketool); a failed build is left out and its error returned.
func buildBinaries(ctx context.Context, root, dir string) (map[string]string, []error) {
	out := map[string]string{}
	var errs []error
	for name, pkg := range map[string]string{"slurmctld": "./slurmctld-operator", "slurmd": "./slurmd-operator", "faketool": "./tests/cmd/bench/faketool"} {
		bin := filepath.Join(dir, name+"-bin")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if o, err := cmd.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("cannot build %s: %v\n%s", pkg, err, o))
			continue
		}
		out[name] = bin
	}
	return out, errs
}

func runHooks(ctx context.Context, opts *RunOptions, rep *Report, root, scratch string) error {
	bins, errs := buildBinaries(ctx, root, scratch)
	for _, err := range errs {
		rep.Notes = append(rep.Notes, "hooks: "+err.Error())
	}
	tool, ok := bins["faketool"]
	if !ok {
		return fmt.Errorf("no fake tool")
	}
	delete(bins, "faketool")
	ops, err := OperatorHooks(root, bins)
	if err != nil {
		return err
	}
	results, err := HookBench(ctx, HookOptions{
		Dir: filepath.Join(scratch, "hooks"), FakeTool: tool, Operators: ops, Runs: opts.HookRuns, Wrap: opts.HookWrap,
		Floors: map[string][]string{
			"interpreter_floor": {"python3", "-c", "import json, subprocess"},
			"exec_floor":        {"/bin/true"},
			"fake_tool_floor":   {"is-leader", "--format=json"},
		},
	})
	if err != nil {
		return err
	}
	var medians []float64
	var slowest Figure
	maxRSS := map[string]float64{}
	for _, r := range results {
		w, c, m := Summarize(r.Wall()), Summarize(r.CPU()), Summarize(r.RSS())
		if r.Operator == "floor" && r.Failed == len(r.Runs) {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s not measured: %s", r.Hook, truncate(r.FirstFailure, 200)))
			continue
		}
		if r.Operator == "floor" {
			note := map[string]string{
				"interpreter_floor": `python3 -c "import json, subprocess", run the same way: the floor under any Python hook`,
				"exec_floor":        "true(1) run the same way: the cost of starting any process; its RSS is the launcher's floor under every memory figure",
				"fake_tool_floor":   "one fake hook-tool call (tests/cmd/bench/faketool) run the same way: each hook pays about this minus exec_floor per tool call",
			}[r.Hook]
			if r.Failed > 0 {
				note = fmt.Sprintf("%d/%d runs FAILED (%s); ", r.Failed, len(r.Runs), truncate(r.FirstFailure, 200)) + note
			}
			rep.Add(Figure{Name: r.Hook + "_ms", Value: w.Median, Unit: "ms", Samples: w.N, Values: r.Wall(), Note: note},
				Figure{Name: r.Hook + "_cpu_ms", Value: c.Median, Unit: "ms", Samples: c.N},
				Figure{Name: r.Hook + "_rss_kib", Value: m.Max, Unit: "KiB", Samples: m.N})
			continue
		}
		note := fmt.Sprintf("p90 %s ms; %d hook-tool + %d stubbed calls: %s", FormatValue(w.P90), r.ToolCalls, r.SlurmCalls, r.CallSummary())
		if r.Failed > 0 {
			note = fmt.Sprintf("%d/%d runs FAILED (%s); ", r.Failed, len(r.Runs), truncate(r.FirstFailure, 200)) + note
		}
		base := "hook_ms." + r.Operator + "." + r.Hook
		rep.Add(Figure{Name: base, Value: w.Median, Unit: "ms", Samples: w.N, Values: r.Wall(), Target: Max(20), Note: note},
			Figure{Name: "hook_cpu_ms." + r.Operator + "." + r.Hook, Value: c.Median, Unit: "ms", Samples: c.N, Values: r.CPU()})
		medians = append(medians, w.Median)
		if w.Median > slowest.Value {
			slowest = Figure{Name: "hook_ms.slowest", Value: w.Median, Unit: "ms", Samples: w.N, Values: r.Wall(), Target: Max(20),
				Note: fmt.Sprintf("%s %s: %s", r.Operator, r.Hook, note)}
		}
		if m.Max > maxRSS[r.Operator] {
			maxRSS[r.Operator] = m.Max
		}
	}
	if len(medians) > 0 {
		rep.Add(Figure{Name: "hook_ms", Value: Median(medians), Unit: "ms", Samples: len(medians), Values: medians, Target: Max(10),
			Note: "median over every operator hook of its median wall time (spread: of the hooks' medians)"}, slowest)
	}
	names := make([]string, 0, len(maxRSS))
	for n := range maxRSS {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rep.Add(Figure{Name: "memory_kib." + n, Value: maxRSS[n], Unit: "KiB",
			Note: "peak RSS over its hooks (rusage maxrss: the operator binary, or a hook tool it waited for if larger)"})
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
