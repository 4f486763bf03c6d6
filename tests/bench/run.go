package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
)

// RunOptions configure Run.
type RunOptions struct {
	// Parts to run: "raw", "hooks", "join", "scale", "leave", "autoscale", "busy", "accounting"
	// (job throughput with and without slurmdbd), and on systemd machines, for each Debian
	// release machines boot (hoststest.Suites: "bookworm", "trixie", "forky"), "<suite>" (raw
	// and operator joins interleaved, idle leaves) and "<suite>-scale" (MachineScales), and
	// "reboot" (on machines of RebootOn); empty means all.
	Parts []string
	// Out is where WriteFiles puts the files (used for scratch only by Run: nothing).
	Out string
	// PebbleBin is the pebble binary for the hosts.
	PebbleBin string
	// Samples per join/leave figure (default 15); HookRuns per hook (default 20).
	Samples, HookRuns int
	// HookWrap, for finding where a hook's time goes, runs each operator hook under this
	// command line (HookOptions.Wrap: "strace -f -tt -T -o /tmp/st.{run}"); its figures are then
	// the wrapper's, not the hook's alone.
	HookWrap []string
	// FailoverSamples is how many controllers part "failover" (controller HA: add a
	// controller, kill the primary's host) adds and kills (default 5).
	FailoverSamples int
	// MachineSamples per figure of the machine parts: joins and leaves (default 7: each
	// sample creates, boots and destroys two machines, 3-8 s on this machine kind, and the
	// part runs for every Debian release; the IQR is reported).
	MachineSamples int
	// RebootSamples are the reboots of each kind (default 5: the reboot's ratios to the boot
	// spread by about ±1.5 % (IQR) over 7 or 15 samples; each takes about 5.5 s).
	RebootSamples int
	// RebootOn is the suite of the reboot part's machines: "trixie" (default) or "bookworm".
	RebootOn string
	// Scales are the numbers of units added at once, then removed, one size after the other
	// (default 8, 32, 256: the figures are all IDLE at 256 and time per node at 256
	// against 32; a 128 step cost about 100 s of the run).
	Scales []int
	// MachineScales are the numbers of units added at once on new machines by each
	// "<suite>-scale" part (default 8, 32).
	MachineScales []int
	// BusyUnits is the number of busy units part "busy" removes at once (default 32).
	BusyUnits int
	// Command is the command line recorded in the report.
	Command string
	// Progress receives progress lines; nil discards them.
	Progress func(format string, args ...any)
	// now is the clock of the parts' wall times (nil: time.Now).
	now func() time.Time
	// built are the model's parts once built (modelParts): one build serves every part.
	built *modelParts
}

func (o *RunOptions) clock() time.Time {
	if o.now != nil {
		return o.now()
	}
	return time.Now()
}

func (o *RunOptions) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(format, args...)
	}
}

// Parts returns the parts Run knows, in the order it runs them (all of them by default):
// the machine parts follow hoststest.Suites, so a new Debian release there is measured
// here too.
func Parts() []string {
	parts := []string{"hooks", "raw", "join", "leave", "scale", "autoscale", "busy", "accounting", "failover"}
	for _, s := range hoststest.Suites {
		parts = append(parts, s, s+"-scale")
	}
	return append(parts, "reboot")
}

// machinePart reports whether any machine part is asked for.
func (o *RunOptions) machinePart() bool {
	for _, s := range hoststest.Suites {
		if o.part(s) || o.part(s+"-scale") {
			return true
		}
	}
	return o.part("reboot")
}

// timed runs f as part name (a part of Parts, or a set-up of several), adds its wall time to
// rep (Report.AddPartTime) and says it in the progress, also when f fails.
func (o *RunOptions) timed(rep *Report, name string, f func() error) error {
	t0 := o.clock()
	err := f()
	d := o.clock().Sub(t0)
	rep.AddPartTime(name, d)
	o.progress("%s: %.1f s", name, d.Seconds())
	return err
}

// setup runs f, which times the parts it holds itself (timed), and adds the rest of its wall
// time (the set-up those parts share and its teardown) as part name: the parts' times add up
// to the run's.
func (o *RunOptions) setup(rep *Report, name string, f func() error) error {
	before := partSeconds(rep)
	t0 := o.clock()
	err := f()
	inner := time.Duration((partSeconds(rep) - before) * float64(time.Second))
	d := o.clock().Sub(t0) - inner
	rep.AddPartTime(name, d)
	o.progress("%s: %.1f s (set-up and teardown of its parts)", name, d.Seconds())
	return err
}

// partSeconds is the sum of the parts' wall times in rep so far.
func partSeconds(rep *Report) float64 {
	var sum float64
	for _, f := range rep.PartTimes() {
		sum += f.Value
	}
	return sum
}

func (o *RunOptions) part(name string) bool {
	return len(o.Parts) == 0 || slices.Contains(o.Parts, name)
}

// Run runs the benchmarks and returns the report. A part that fails is recorded in the
// report's notes and the other parts still run; the error then names every failed part.
func Run(ctx context.Context, opts RunOptions) (*Report, error) {
	if opts.Samples <= 0 {
		opts.Samples = 15
	}
	if opts.HookRuns <= 0 {
		opts.HookRuns = 20
	}
	if len(opts.Scales) == 0 {
		opts.Scales = []int{8, 32, 256}
	}
	if len(opts.MachineScales) == 0 {
		opts.MachineScales = []int{8, 32}
	}
	if opts.BusyUnits <= 0 {
		opts.BusyUnits = 32
	}
	if opts.FailoverSamples <= 0 {
		opts.FailoverSamples = 5
	}
	if opts.MachineSamples <= 0 {
		opts.MachineSamples = 7
	}
	if opts.RebootSamples <= 0 {
		opts.RebootSamples = 5
	}
	if opts.RebootOn == "" {
		opts.RebootOn = "trixie"
	}
	if !slices.Contains(hoststest.Suites, opts.RebootOn) {
		return nil, fmt.Errorf("no machines of %q to reboot (want %s)", opts.RebootOn, strings.Join(hoststest.Suites, " or "))
	}
	for _, p := range opts.Parts {
		if !slices.Contains(Parts(), p) {
			return nil, fmt.Errorf("unknown part %q (want one of %s)", p, strings.Join(Parts(), ", "))
		}
	}
	root, err := hoststest.RepoRoot()
	if err != nil {
		return nil, err
	}
	rep := &Report{Started: time.Now(), Command: opts.Command, Machine: DescribeMachine(ctx)}
	scratch, err := os.MkdirTemp("", "bench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	// What the parts leave up for later parts (the raw cluster's network), closed at the end.
	var closers []func() error
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	var failed []string
	fail := func(part string, err error) {
		failed = append(failed, part)
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s: FAILED: %v", part, err))
		opts.progress("%s failed: %v", part, err)
	}
	if opts.part("hooks") {
		opts.progress("hooks: %d runs each", opts.HookRuns)
		if err := opts.timed(rep, "hooks", func() error { return runHooks(ctx, &opts, rep, root, scratch) }); err != nil {
			fail("hooks", err)
		}
	}
	// The raw cluster lives beside the operators' model: its joins and scale-outs are
	// interleaved with theirs.
	var raw *RawCluster
	if opts.part("raw") {
		opts.progress("raw: controller up")
		err := opts.timed(rep, "raw", func() error {
			n, err := newNetwork(ctx, &opts, scratch, "raw")
			if err != nil {
				return err
			}
			closers = append(closers, n.Close)
			raw, err = NewRawCluster(ctx, RawOptions{Network: n})
			return err
		})
		if err != nil {
			fail("raw", err)
		}
	}
	if raw != nil && !opts.part("join") && !opts.part("leave") {
		opts.progress("raw join: %d nodes, one after the other", opts.Samples)
		if err := opts.timed(rep, "raw", func() error { return runRaw(ctx, &opts, rep, raw) }); err != nil {
			fail("raw", err)
		}
	}
	if opts.part("join") || opts.part("scale") || opts.part("leave") || opts.part("autoscale") || opts.part("busy") {
		if err := opts.setup(rep, "operators-setup", func() error { return runOperators(ctx, &opts, rep, root, scratch, raw) }); err != nil {
			fail("operators", err)
		}
	}
	if opts.part("accounting") {
		if err := opts.timed(rep, "accounting", func() error { return runAccounting(ctx, &opts, rep, root, scratch) }); err != nil {
			fail("accounting", err)
		}
	}
	if opts.part("failover") {
		if err := opts.timed(rep, "failover", func() error { return runFailover(ctx, &opts, rep, root, scratch) }); err != nil {
			fail("failover", err)
		}
	}
	if opts.machinePart() {
		if err := runMachines(ctx, &opts, rep, root, scratch); err != nil {
			fail("machines", err)
		}
	}
	derive(rep)
	rep.Duration = time.Since(rep.Started)
	rep.Add(Figure{Name: "total_s", Value: rep.Duration.Seconds(), Unit: "s",
		Note: "the run's wall time: every part (*.part_s) and its set-up, until the figures are derived"})
	if len(failed) > 0 {
		return rep, fmt.Errorf("failed parts: %s", strings.Join(failed, ", "))
	}
	return rep, nil
}

// derive adds figures computed from others: join_ratio on Pebble hosts and on each kind of
// machine (per interleaved pair of samples when there are as many raw samples as operator
// samples, else of the medians) and the scale ratios.
func derive(rep *Report) {
	deriveJoinRatio(rep, "")
	for _, s := range hoststest.Suites {
		deriveJoinRatio(rep, s+".")
		deriveMachineScale(rep, s+".")
	}
	deriveScale(rep)
}

// deriveJoinRatio adds prefix+"join_ratio" from prefix+"raw_join_s" and prefix+"join_s.median".
func deriveJoinRatio(rep *Report, prefix string) {
	raw, ok1 := rep.Figure(prefix + "raw_join_s")
	join, ok2 := rep.Figure(prefix + "join_s.median")
	if ok1 && ok2 && raw.Value > 0 {
		f := Figure{Name: prefix + "join_ratio", Value: join.Value / raw.Value, Unit: "ratio", Target: Max(1.5),
			Note: "join_s.median / raw_join_s"}
		if len(raw.Values) == len(join.Values) && len(raw.Values) > 1 {
			ratios := PairRatios(join.Values, raw.Values)
			f.Value, f.Values, f.Samples = Median(ratios), ratios, len(ratios)
			f.Note = "median over interleaved pairs of join_s / raw_join_s (each operator join right after a raw one)"
		}
		rep.Add(f)
	}
}

// newNetwork creates a hosts network for the benchmarks under scratch.
func newNetwork(ctx context.Context, opts *RunOptions, scratch, name string) (*hosts.Network, error) {
	if why := hoststest.Unavailable(); why != "" {
		return nil, errors.New(why)
	}
	return hosts.NewNetwork(ctx, hosts.NetworkOptions{Prefix: "bench", Dir: filepath.Join(scratch, name), PebbleBin: opts.PebbleBin})
}

// runRaw measures opts.Samples raw joins on their own (when no operator joins run to interleave
// them with).
func runRaw(ctx context.Context, opts *RunOptions, rep *Report, raw *RawCluster) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var joins, hostsC []time.Duration
	defer func() { addRawJoins(rep, "", joins, hostsC) }()
	for range opts.Samples {
		d, hc, err := raw.Join(ctx)
		if err != nil {
			return err
		}
		joins, hostsC = append(joins, d), append(hostsC, hc)
	}
	return nil
}

// addRawJoins adds the raw join figures and series; prefix starts their names ("" for Pebble
// hosts, "trixie." for trixie machines).
func addRawJoins(rep *Report, prefix string, joins, hostsC []time.Duration) {
	how, series, prep := "slurmd -Z started through Pebble on a prepared host → IDLE (median)", "raw slurmd -Z",
		"host creation + munged start (not part of raw_join_s)"
	if prefix != "" {
		suite := strings.TrimSuffix(prefix, ".")
		how = "slurmd -Z started through systemd (systemctl start) on a prepared " + suite + " machine → IDLE (median)"
		series = "raw slurmd -Z (" + suite + " machines)"
		prep = "machine creation and boot + auth key (+ munged) + slurmd unit drop-in (not part of raw_join_s)"
	}
	if len(joins) > 0 {
		s := Summarize(Seconds(joins))
		rep.Add(Figure{Name: prefix + "raw_join_s", Value: s.Median, Unit: "s", Samples: s.N, Values: Seconds(joins), Note: how},
			Figure{Name: prefix + "raw_join_s.p90", Value: s.P90, Unit: "s", Samples: s.N})
		var pts []Point
		for i, d := range joins {
			pts = append(pts, Point{Nodes: i + 1, Seconds: d.Seconds()})
		}
		rep.Series = append(rep.Series, Series{Name: series, Points: pts})
	}
	if len(hostsC) > 0 {
		s := Summarize(Seconds(hostsC))
		rep.Add(Figure{Name: prefix + "raw_host_prepare_s", Value: s.Median, Unit: "s", Samples: s.N, Values: Seconds(hostsC), Note: prep})
	}
}

// DescribeMachine reads the machine's CPUs, memory, kernel, OS and Slurm version.
func DescribeMachine(ctx context.Context) Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kib int64
		fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(data), "\n", 2)[0], "MemTotal:"), "%d", &kib)
		m.MemoryMiB = kib / 1024
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	if f, err := os.Open("/etc/os-release"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
				m.OS = strings.Trim(v, `"`)
			}
		}
		f.Close()
	}
	if out, err := exec.CommandContext(ctx, "slurmd", "-V").Output(); err == nil {
		m.Slurm = strings.TrimSpace(string(out))
	}
	return m
}

// WriteFiles writes rep to dir as bench.json, bench.md, bench-join.svg, bench-scale.svg and
// bench-trace.txt.
func WriteFiles(rep *Report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, write := range map[string]func(*os.File) error{
		"bench.json":      func(f *os.File) error { return rep.WriteJSON(f) },
		"bench.md":        func(f *os.File) error { return rep.WriteTable(f) },
		"bench-trace.txt": func(f *os.File) error { return rep.WriteTraces(f) },
		"bench-join.svg": func(f *os.File) error {
			return Chart{Title: "Node join latency against cluster size", XLabel: "nodes in the cluster after the join",
				YLabel: "seconds to IDLE", Series: rep.Series}.WriteSVG(f)
		},
		"bench-scale.svg": func(f *os.File) error {
			return Chart{Title: "Scale-out: N nodes added at once", XLabel: "nodes added at once",
				YLabel: "seconds until all are IDLE", Series: rep.ScaleSeries}.WriteSVG(f)
		},
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("cannot write %s: %w", name, err)
		}
	}
	return nil
}
