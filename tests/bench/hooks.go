package bench

import (
	"github.com/charmed-slurm/operators/tests/bench/fake"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts"
)

// Sandbox is a private mount namespace for running operator binaries on this machine without
// touching it: /etc and /var are overlays whose writes go to a tmpfs, /run is a tmpfs, and
// Slurm's, munge's and apt's programs in /usr/bin and /usr/sbin are replaced by FakeTool.
// The network and everything else are the machine's.
type Sandbox struct {
	dir    string
	holder *exec.Cmd
}

// NewSandbox creates the namespace, with its scratch files in dir (which must exist); stub is
// the binary bind-mounted over each of fake.SlurmCommands (the bench binary itself, which acts as
// FakeTool when called under those names).
func NewSandbox(ctx context.Context, dir, stub string) (*Sandbox, error) {
	holder := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sleep", "infinity")
	holder.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := holder.Start(); err != nil {
		return nil, fmt.Errorf("cannot create sandbox: %w", err)
	}
	s := &Sandbox{dir: dir, holder: holder}
	ovl := filepath.Join(dir, "ovl")
	if err := os.MkdirAll(ovl, 0o755); err != nil {
		s.Close()
		return nil, err
	}
	// unshare execs sleep in the new namespace once it is set up: wait until the holder's mount
	// namespace differs from ours.
	if err := Poll(ctx, 5*time.Millisecond, func() (bool, string) {
		a, _ := os.Readlink("/proc/self/ns/mnt")
		b, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", holder.Process.Pid))
		return err == nil && a != b, b
	}); err != nil {
		s.Close()
		return nil, fmt.Errorf("cannot create sandbox: %w", err)
	}
	steps := [][]string{{"mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", ovl}}
	for _, d := range []string{"etc", "var"} {
		up, work := filepath.Join(ovl, d, "upper"), filepath.Join(ovl, d, "work")
		steps = append(steps, []string{"mkdir", "-p", up, work},
			[]string{"mount", "-t", "overlay", "overlay", "-o", "lowerdir=/" + d + ",upperdir=" + up + ",workdir=" + work, "/" + d})
	}
	steps = append(steps, []string{"mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/run"})
	for _, name := range fake.SlurmCommands {
		for _, d := range []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
			if fi, err := os.Lstat(filepath.Join(d, name)); err == nil && fi.Mode().IsRegular() {
				steps = append(steps, []string{"mount", "--bind", stub, filepath.Join(d, name)})
			}
		}
	}
	for _, st := range steps {
		if out, err := s.Command(ctx, st, nil).CombinedOutput(); err != nil {
			s.Close()
			return nil, &hosts.CommandError{Argv: st, Output: out, Err: err}
		}
	}
	return s, nil
}

// Command returns a command running argv inside the sandbox with exactly env.
func (s *Sandbox) Command(ctx context.Context, argv, env []string) *exec.Cmd {
	args := append([]string{"-t", strconv.Itoa(s.holder.Process.Pid), "--mount", "--"}, argv...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.Env = env
	cmd.Dir = "/"
	return cmd
}

// WriteFile writes a file at path inside the sandbox, creating its directory.
func (s *Sandbox) WriteFile(ctx context.Context, path string, data []byte) error {
	tmp, err := os.CreateTemp(s.dir, "file")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	for _, argv := range [][]string{{"mkdir", "-p", filepath.Dir(path)}, {"cp", tmp.Name(), path}} {
		if out, err := s.Command(ctx, argv, []string{"PATH=" + hosts.DefaultPath}).CombinedOutput(); err != nil {
			return &hosts.CommandError{Argv: argv, Output: out, Err: err}
		}
	}
	return nil
}

// Close kills the namespace's holder; the namespace and its mounts go with it.
func (s *Sandbox) Close() error {
	if s.holder.Process == nil {
		return nil
	}
	s.holder.Process.Kill()
	s.holder.Wait()
	return nil
}

// Sample is one timed run of a command.
type Sample struct {
	Wall, CPU time.Duration
	// MaxRSSKiB is the peak resident set of the process (and of any child it waited for).
	MaxRSSKiB int64
	ExitCode  int
	Output    string
}

// Measure runs cmd and times it: wall clock from start to exit, user+system CPU time and peak
// RSS from the kernel's rusage.
func Measure(cmd *exec.Cmd) (Sample, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return Sample{}, err
	}
	ps := cmd.ProcessState
	r := Sample{Wall: wall, CPU: ps.UserTime() + ps.SystemTime(), ExitCode: ps.ExitCode(), Output: out.String()}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSSKiB = ru.Maxrss
	}
	return r, nil
}

// Hook is one hook of one operator, as HookBench runs it.
type Hook struct {
	// Name is the hook's name: install, slurmd-relation-changed, ...
	Name string
	// Env adds to Juju's environment (JUJU_RELATION, JUJU_REMOTE_UNIT, ...).
	Env map[string]string
}

// Operator is an operator binary and the hooks to time.
type Operator struct {
	// Name is the charm's name; Unit the unit the hooks run as ("slurmd/0").
	Name, Unit string
	// Dispatch is the operator's dispatch binary.
	Dispatch string
	Fixture  fake.Fixture
	Hooks    []Hook
	// Files are written in the sandbox before the hooks run (path inside → content): what the
	// stubbed daemons would have left, such as the configless slurm.conf a started slurmd
	// fetched.
	Files map[string]string
}

// HookOptions configure HookBench.
type HookOptions struct {
	// Dir is a scratch directory (created; removed by HookBench). Required.
	Dir string
	// FakeTool is the faketool binary (tests/cmd/bench/faketool): it answers as the hook tools
	// and Slurm commands.
	FakeTool  string
	Operators []Operator
	// Runs per hook after one warm-up run; default 20.
	Runs int
	// Floors are extra commands run the same way for comparison, by name
	// (e.g. "interpreter_floor": python3 -c "import json, subprocess").
	Floors map[string][]string
	// Wrap, when set, is a command line each operator hook runs under (not the floors), to find
	// where its time goes: "{run}" in an argument becomes "<operator>.<hook>.<run>" (run 0 is
	// the warm-up), e.g. strace -f -tt -T -o /tmp/st.{run}. The figures are then the wrapper's.
	Wrap []string
}

// HookResult is the timing of one hook (or floor command).
type HookResult struct {
	Operator, Hook string
	Runs           []Sample
	// ToolCalls and SlurmCalls count the fake hook-tool and stubbed-command calls of one run;
	// Calls counts them by program name.
	ToolCalls, SlurmCalls int
	Calls                 map[string]int
	// Failed counts non-zero exits; FirstFailure is the output of the first one.
	Failed       int
	FirstFailure string
}

// Wall, CPU and RSS return the samples of r.
func (r HookResult) Wall() []float64 {
	return millisOf(r.Runs, func(x Sample) time.Duration { return x.Wall })
}
func (r HookResult) CPU() []float64 {
	return millisOf(r.Runs, func(x Sample) time.Duration { return x.CPU })
}
func (r HookResult) RSS() []float64 {
	out := make([]float64, len(r.Runs))
	for i, x := range r.Runs {
		out[i] = float64(x.MaxRSSKiB)
	}
	return out
}

func millisOf(rs []Sample, f func(Sample) time.Duration) []float64 {
	ds := make([]time.Duration, len(rs))
	for i, r := range rs {
		ds[i] = f(r)
	}
	return Millis(ds)
}

// HookBench runs every hook of every operator opts.Runs times inside a Sandbox, with Juju's
// environment, the hook tools answered by FakeTool from the operator's fake.Fixture, Slurm's
// commands stubbed and Pebble faked (FakePebble), and returns the timings. Floor commands run
// the same way. Files the hooks write persist from one run to the next, as on a real unit.
func HookBench(ctx context.Context, opts HookOptions) ([]HookResult, error) {
	if opts.Runs <= 0 {
		opts.Runs = 20
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(opts.Dir)
	tools := filepath.Join(opts.Dir, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		return nil, err
	}
	for _, name := range append(append([]string{fake.MeasureName}, fake.HookTools...), fake.SlurmCommands...) {
		if err := os.Symlink(opts.FakeTool, filepath.Join(tools, name)); err != nil {
			return nil, err
		}
	}
	sb, err := NewSandbox(ctx, opts.Dir, opts.FakeTool)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	socket := filepath.Join(opts.Dir, "pebble.socket")
	pb, err := StartFakePebble(socket)
	if err != nil {
		return nil, err
	}
	defer pb.Close()

	logPath := filepath.Join(opts.Dir, "calls.log")
	var results []HookResult
	for _, op := range opts.Operators {
		charmDir := filepath.Join(opts.Dir, "charm-"+op.Name)
		if err := os.MkdirAll(charmDir, 0o755); err != nil {
			return nil, err
		}
		fixture := filepath.Join(opts.Dir, op.Name+"-fixture.json")
		data, err := json.Marshal(op.Fixture)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(fixture, data, 0o644); err != nil {
			return nil, err
		}
		for path, content := range op.Files {
			if err := sb.WriteFile(ctx, path, []byte(content)); err != nil {
				return nil, err
			}
		}
		app, _, _ := strings.Cut(op.Unit, "/")
		for _, h := range op.Hooks {
			env := map[string]string{
				"PATH":                      tools + ":" + hosts.DefaultPath,
				"HOME":                      "/root",
				"LANG":                      "C.UTF-8",
				"PEBBLE_SOCKET":             socket,
				fake.FixtureEnv:             fixture,
				fake.LogEnv:                 logPath,
				"JUJU_DISPATCH_PATH":        "hooks/" + h.Name,
				"JUJU_HOOK_NAME":            h.Name,
				"JUJU_UNIT_NAME":            op.Unit,
				"JUJU_MODEL_NAME":           "bench",
				"JUJU_MODEL_UUID":           "6c1f3b0e-1d2c-4b8e-9a55-bench0000001",
				"JUJU_CHARM_DIR":            charmDir,
				"JUJU_CONTEXT_ID":           op.Unit + "-" + h.Name + "-1",
				"JUJU_AGENT_SOCKET_ADDRESS": "@/var/lib/juju/agents/unit-" + app + "-0/agent.socket",
				"JUJU_AGENT_SOCKET_NETWORK": "unix",
				"JUJU_VERSION":              "3.6.4",
				"JUJU_MACHINE_ID":           "0",
			}
			for k, v := range h.Env {
				env[k] = v
			}
			var envList []string
			for k, v := range env {
				envList = append(envList, k+"="+v)
			}
			res, err := runTimed(ctx, sb, tools, []string{op.Dispatch}, envList, opts.Runs, logPath, wrapper(opts.Wrap, op.Name+"."+h.Name))
			if err != nil {
				return results, fmt.Errorf("cannot run %s hook %s: %w", op.Name, h.Name, err)
			}
			res.Operator, res.Hook = op.Name, h.Name
			results = append(results, res)
		}
	}
	floors := make([]string, 0, len(opts.Floors))
	for name := range opts.Floors {
		floors = append(floors, name)
	}
	sort.Strings(floors)
	for _, name := range floors {
		argv := opts.Floors[name]
		env := []string{"PATH=" + tools + ":" + hosts.DefaultPath, "HOME=/root", "LANG=C.UTF-8", fake.LogEnv + "=" + logPath}
		res, err := runTimed(ctx, sb, tools, argv, env, opts.Runs, logPath, nil)
		if err != nil {
			return results, fmt.Errorf("cannot run floor %s: %w", name, err)
		}
		res.Operator, res.Hook = "floor", name
		results = append(results, res)
	}
	return results, nil
}

// wrapper returns the argv prefix of HookOptions.Wrap for run i of the hook named name (nil
// without a Wrap).
func wrapper(wrap []string, name string) func(i int) []string {
	if len(wrap) == 0 {
		return nil
	}
	return func(i int) []string {
		out := make([]string, len(wrap))
		for j, a := range wrap {
			out[j] = strings.ReplaceAll(a, "{run}", name+"."+strconv.Itoa(i))
		}
		return out
	}
}

// runTimed runs argv once to warm up, then runs times, each through the bench-measure launcher
// (fake.MeasureName), counting the fake calls of the last run; wrap, if not nil, gives each
// run's wrapper command (HookOptions.Wrap).
func runTimed(ctx context.Context, sb *Sandbox, tools string, argv, env []string, runs int, logPath string, wrap func(int) []string) (HookResult, error) {
	var res HookResult
	out := filepath.Join(filepath.Dir(logPath), "measure.json")
	env = append(append([]string(nil), env...), fake.MeasureOutEnv+"="+out)
	for i := 0; i <= runs; i++ {
		os.Remove(logPath)
		os.Remove(out)
		run := argv
		if wrap != nil {
			run = append(wrap(i), argv...)
		}
		run = append([]string{filepath.Join(tools, fake.MeasureName)}, run...)
		outer, err := Measure(sb.Command(ctx, run, env))
		if err != nil {
			return res, err
		}
		data, err := os.ReadFile(out)
		if err != nil {
			return res, fmt.Errorf("no measurement of %q: %v (output: %s)", run, err, outer.Output)
		}
		var m fake.Measurement
		if err := json.Unmarshal(data, &m); err != nil {
			return res, fmt.Errorf("bad measurement of %q: %w", run, err)
		}
		if i == 0 {
			continue
		}
		r := Sample{Wall: time.Duration(m.WallNS), CPU: time.Duration(m.UserNS + m.SysNS), MaxRSSKiB: m.MaxRSSKiB, ExitCode: m.Exit, Output: outer.Output}
		if r.ExitCode != 0 {
			if res.Failed == 0 {
				res.FirstFailure = strings.TrimSpace(r.Output)
			}
			res.Failed++
		}
		res.Runs = append(res.Runs, r)
	}
	calls, _ := os.ReadFile(logPath)
	res.Calls = map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
		name, _, _ := strings.Cut(line, " ")
		if name != "" {
			res.Calls[name]++
		}
		switch {
		case name == "":
		case fake.Answers(name) && !isSlurm(name):
			res.ToolCalls++
		default:
			res.SlurmCalls++
		}
	}
	return res, nil
}

func isSlurm(name string) bool { return slices.Contains(fake.SlurmCommands, name) }

// CallSummary renders r.Calls as "config-get×1 is-leader×2", sorted by name.
func (r HookResult) CallSummary() string {
	names := make([]string, 0, len(r.Calls))
	for n := range r.Calls {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s×%d", n, r.Calls[n])
	}
	return strings.Join(parts, " ")
}
