// Command bench runs the benchmarks of `make bench` (package tests/bench; docs/benchmarks.md).
//
//	go run ./tests/cmd/bench [-out build] [-only hooks,raw,join,leave,scale,autoscale,busy,accounting,failover,bookworm,bookworm-scale,trixie,trixie-scale,forky,forky-scale,reboot] [-samples 15] [-hook-runs 20] [-scale 8,32,256] [-busy-units 32] [-failover-samples 5] [-machine-samples 7] [-reboot-samples 5] [-machine-scale 8,32] [-reboot-on trixie]
//
// It prints one `name=value unit` line per figure (among them <part>.part_s, the wall time of
// each part and of the set-up parts share, and total_s), each progress line on stderr with the
// seconds since the start, and writes <out>/bench.json, <out>/bench.md
// (a table with each figure's spread), <out>/bench-join.svg (join latency against cluster
// size), <out>/bench-scale.svg (all-IDLE time against nodes added at once, operators and raw
// slurmd) and <out>/bench-trace.txt (where the time of a join and a leave goes; see
// bench.WriteFiles). For each Debian release machines boot (hoststest.Suites), the part
// named after it (bookworm, trixie) measures joins and leaves on systemd machines of that
// release beside the raw slurmd -Z join on the same kind of machine, and <suite>-scale the
// -machine-scale sizes of units added at once on new machines; reboot measures
// reboot-to-IDLE beside the machine's own boot time; busy the controller's hooks while busy
// units are removed and a removed partition waits for its job records. It needs root and
// network namespaces for every figure except hooks. Run it from the repository root.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/charmed-slurm/operators/tests/bench"
)

func main() {
	os.Exit(run())
}

// sizes parses a comma-separated list of positive numbers.
func sizes(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func run() int {
	var opts bench.RunOptions
	only := flag.String("only", strings.Join(bench.Parts(), ","), "comma-separated parts to run: "+strings.Join(bench.Parts(), ", "))
	flag.StringVar(&opts.Out, "out", "build", "directory for bench.json, bench.md, bench-join.svg and bench-trace.txt")
	flag.StringVar(&opts.PebbleBin, "pebble", "build/bin/pebble", "pebble binary for the hosts")
	flag.IntVar(&opts.Samples, "samples", 15, "joins and leaves measured per figure (raw and operator joins interleaved)")
	flag.IntVar(&opts.HookRuns, "hook-runs", 20, "runs per hook")
	hookWrap := flag.String("hook-wrap", "", `command line (split at spaces) each operator hook runs under, to find where its time goes, e.g. "strace -f -tt -T -o /tmp/st.{run}" ({run}: operator.hook.run); the hook figures are then the wrapper's`)
	flag.IntVar(&opts.FailoverSamples, "failover-samples", 5, "controllers added, then killed, by part failover")
	flag.IntVar(&opts.MachineSamples, "machine-samples", 7, "joins and leaves measured on systemd machines of each Debian release (parts bookworm, trixie, forky)")
	flag.IntVar(&opts.RebootSamples, "reboot-samples", 5, "reboots of each kind (part reboot)")
	flag.StringVar(&opts.RebootOn, "reboot-on", "trixie", "machines of the reboot part: trixie or bookworm")
	scales := flag.String("scale", "8,32,256", "comma-separated numbers of units added at once (then removed), one size after the other")
	machineScales := flag.String("machine-scale", "8,32", "comma-separated numbers of units added at once on new machines by each <suite>-scale part")
	flag.IntVar(&opts.BusyUnits, "busy-units", 32, "units removed at once while their jobs run (part busy)")
	timeout := flag.Duration("timeout", 60*time.Minute, "bound on the whole run")
	flag.Parse()
	opts.HookWrap = strings.Fields(*hookWrap)
	var err error
	if opts.Scales, err = sizes(*scales); err != nil {
		fmt.Fprintf(os.Stderr, "bench: -scale: %v\n", err)
		return 2
	}
	if opts.MachineScales, err = sizes(*machineScales); err != nil {
		fmt.Fprintf(os.Stderr, "bench: -machine-scale: %v\n", err)
		return 2
	}
	opts.Parts = strings.Split(*only, ",")
	opts.Command = "go run ./tests/cmd/bench " + strings.Join(os.Args[1:], " ")
	start := time.Now()
	opts.Progress = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "bench: %7.1fs "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, *timeout)
	defer cancelT()
	if abs, err := filepath.Abs(opts.PebbleBin); err == nil {
		opts.PebbleBin = abs
	}
	rep, err := bench.Run(ctx, opts)
	if rep != nil {
		if werr := rep.WriteLines(os.Stdout); werr != nil && err == nil {
			err = werr
		}
		if werr := bench.WriteFiles(rep, opts.Out); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}
