package pebble_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/pebble"
)

var pebbleBin string

// TestMain finds the pinned Pebble binary (build/bin/pebble from scripts/deps.sh) or
// builds it from the module version in go.mod.
func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	if p := os.Getenv("PEBBLE_BIN"); p != "" {
		pebbleBin = p
	} else if p, err := filepath.Abs("../../../build/bin/pebble"); err == nil && isExec(p) {
		pebbleBin = p
	} else {
		dir, err := os.MkdirTemp("", "pebble-bin-")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(dir)
		pebbleBin = filepath.Join(dir, "pebble")
		out, err := exec.Command("go", "build", "-o", pebbleBin, "github.com/canonical/pebble/cmd/pebble").CombinedOutput()
		if err != nil {
			return 0, fmt.Errorf("cannot build pebble: %v\n%s", err, out)
		}
	}
	return m.Run(), nil
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&0o111 != 0
}

// startPebble runs a real `pebble run --create-dirs` in a temp dir and stops it (by PID)
// when the test ends.
func startPebble(t *testing.T) (*pebble.Manager, string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(pebbleBin, "run", "--create-dirs")
	cmd.Env = append(os.Environ(), "PEBBLE="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	logf, err := os.Create(filepath.Join(dir, "pebble.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logf.Close()
		if t.Failed() {
			log, _ := os.ReadFile(logf.Name())
			t.Logf("pebble log:\n%s", log)
		}
	})
	socket := filepath.Join(dir, ".pebble.socket")
	m, err := pebble.New(socket)
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the API to answer: pebble creates its socket shortly after starting.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := m.Client.SysInfo(); err == nil {
			return m, dir
		}
		select {
		case <-exited:
			t.Fatal("pebble exited at start")
		case <-ctx.Done():
			t.Fatal("pebble API did not come up")
		case <-tick.C:
		}
	}
}

func TestCommandQuoting(t *testing.T) {
	for _, tt := range []struct {
		name    string
		argv    []string
		want    string
		wantErr bool
	}{
		{"plain", []string{"/usr/sbin/slurmd", "-D", "-N", "node-1"}, "/usr/sbin/slurmd -D -N node-1", false},
		{"spaces", []string{"slurmd", "--conf", "CPUs=2 Feature=a"}, "slurmd --conf 'CPUs=2 Feature=a'", false},
		{"quote", []string{"echo", "it's", ""}, `echo 'it'"'"'s' ''`, false},
		{"bracket", []string{"echo", "["}, "", true},
		{"empty", nil, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pebble.Command(tt.argv)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// argvRecorder is a service that writes its arguments and $FOO to file, then sleeps.
func argvRecorder(name, file string, args ...string) service.Spec {
	script := `printf '%s\n' "$@" "FOO=$FOO" > "$0.tmp" && mv "$0.tmp" "$0" && exec sleep 1000`
	return service.Spec{
		Name:        name,
		Summary:     "test service " + name,
		Command:     append([]string{"/bin/sh", "-c", script, file}, args...),
		Environment: map[string]string{"FOO": "foo bar"},
		KillDelay:   2 * time.Second,
	}
}

func TestLifecycle(t *testing.T) {
	m, dir := startPebble(t)
	ctx := context.Background()
	file := filepath.Join(dir, "argv")
	args := []string{"--conf", "RealMemory=1000 CPUs=1 Feature=ns1", "it's", "$HOME", ""}

	if err := m.Configure(ctx, argvRecorder("svc", file, args...)); err != nil {
		t.Fatal(err)
	}
	st, err := m.Status(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != service.StateInactive || st.Enabled {
		t.Errorf("after configure: %+v, want inactive and disabled", st)
	}

	if err := m.Start(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join(append(args, "FOO=foo bar"), "\n") + "\n"
	if d := cmp.Diff(want, string(got)); d != "" {
		t.Errorf("argv seen by the service (-want +got):\n%s", d)
	}
	st, err = m.Status(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != service.StateActive || st.Since.IsZero() {
		t.Errorf("after start: %+v, want active with a since time", st)
	}
	if err := m.Start(ctx, "svc"); err != nil {
		t.Errorf("starting a running service: %v", err)
	}

	// Enabled survives re-configuration; Restart applies the new command line.
	if err := m.Enable(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	if err := m.Configure(ctx, argvRecorder("svc", file, "second")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := m.Restart(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(file); err != nil || string(got) != "second\nFOO=foo bar\n" {
		t.Errorf("after restart the service saw %q, %v", got, err)
	}
	st, err = m.Status(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != service.StateActive || !st.Enabled {
		t.Errorf("after enable+configure+restart: %+v, want active and enabled", st)
	}
	plan, err := m.Client.PlanBytes(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"on-failure: restart", "startup: enabled", "kill-delay: 2s"} {
		if !strings.Contains(string(plan), s) {
			t.Errorf("plan lacks %q:\n%s", s, plan)
		}
	}

	if err := m.Stop(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	if st, err := m.Status(ctx, "svc"); err != nil || st.State != service.StateInactive {
		t.Errorf("after stop: %+v, %v", st, err)
	}
	if err := m.Stop(ctx, "svc"); err != nil {
		t.Errorf("stopping a stopped service: %v", err)
	}
	if err := m.Disable(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	if st, err := m.Status(ctx, "svc"); err != nil || st.Enabled {
		t.Errorf("after disable: %+v, %v", st, err)
	}
}

func TestFailingCommand(t *testing.T) {
	m, _ := startPebble(t)
	ctx := context.Background()
	if err := m.Configure(ctx, service.Spec{Name: "bad", Command: []string{"/bin/sh", "-c", "echo no >&2; exit 3"}}); err != nil {
		t.Fatal(err)
	}
	err := m.Start(ctx, "bad")
	if err == nil || !strings.Contains(err.Error(), `cannot start service "bad"`) {
		t.Fatalf("got %v, want a start error", err)
	}
	st, err := m.Status(ctx, "bad")
	if err != nil {
		t.Fatal(err)
	}
	if st.State == service.StateActive {
		t.Errorf("status %+v after a failed start", st)
	}
}

func TestErrors(t *testing.T) {
	m, _ := startPebble(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		call func() error
	}{
		{"start", func() error { return m.Start(ctx, "nope") }},
		{"stop", func() error { return m.Stop(ctx, "nope") }},
		{"restart", func() error { return m.Restart(ctx, "nope") }},
		{"enable", func() error { return m.Enable(ctx, "nope") }},
		{"status", func() error { _, err := m.Status(ctx, "nope"); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, service.ErrUnknownService) {
				t.Errorf("got %v, want ErrUnknownService", err)
			}
		})
	}
	t.Run("bad spec", func(t *testing.T) {
		for _, spec := range []service.Spec{
			{Name: "", Command: []string{"x"}},
			{Name: "a b", Command: []string{"x"}},
			{Name: "a"},
			{Name: "a", Command: []string{"x", "["}},
			{Name: "a", Command: []string{"x"}, Environment: map[string]string{"A=B": "x"}},
		} {
			if err := m.Configure(ctx, spec); err == nil {
				t.Errorf("Configure(%+v) succeeded", spec)
			}
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := m.Configure(cctx, service.Spec{Name: "a", Command: []string{"/bin/true"}}); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
}

func TestSpawn(t *testing.T) {
	m, dir := startPebble(t)
	ctx := context.Background()
	file := filepath.Join(dir, "argv")
	if err := m.Configure(ctx, argvRecorder("svc", file, "first")); err != nil {
		t.Fatal(err)
	}
	if err := m.Spawn(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	first, err := m.Status(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	if first.State != service.StateActive || first.Since.IsZero() {
		t.Fatalf("after spawn: %+v, want active with a since time", first)
	}
	if err := m.Spawn(ctx, "svc"); err != nil {
		t.Errorf("spawning a running service: %v", err)
	}
	if st, err := m.Status(ctx, "svc"); err != nil || !st.Since.Equal(first.Since) {
		t.Errorf("spawning a running service restarted it: %+v, %v (was %+v)", st, err, first)
	}

	// Respawn returns once the new process runs: its since is later, and it runs the
	// new command line.
	if err := m.Configure(ctx, argvRecorder("svc", file, "second")); err != nil {
		t.Fatal(err)
	}
	if err := m.Respawn(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	st, err := m.Status(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != service.StateActive || !st.Since.After(first.Since) {
		t.Errorf("after respawn: %+v, want active since after %v", st, first.Since)
	}
	// The new process writes its argv once it runs.
	if got := waitFile(t, file, "second\nFOO=foo bar\n"); got != "second\nFOO=foo bar\n" {
		t.Errorf("after respawn the service saw %q", got)
	}
	if err := m.Stop(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	// Respawn of a stopped service starts it.
	if err := m.Respawn(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	if st, err := m.Status(ctx, "svc"); err != nil || st.State != service.StateActive {
		t.Errorf("after respawn of a stopped service: %+v, %v", st, err)
	}
}

func TestSpawnErrors(t *testing.T) {
	m, dir := startPebble(t)
	ctx := context.Background()
	// A command that cannot be started fails the change before the service is active.
	if err := m.Configure(ctx, service.Spec{Name: "missing", Command: []string{filepath.Join(dir, "no-such-program")}}); err != nil {
		t.Fatal(err)
	}
	for verb, spawn := range map[string]func(context.Context, string) error{"start": m.Spawn, "restart": m.Respawn} {
		err := spawn(ctx, "missing")
		if err == nil || !strings.Contains(err.Error(), `cannot `+verb+` service "missing"`) {
			t.Errorf("%s: got %v, want an error naming the service", verb, err)
		}
		if err := spawn(ctx, "nope"); !errors.Is(err, service.ErrUnknownService) {
			t.Errorf("%s: got %v, want ErrUnknownService", verb, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.Configure(ctx, service.Spec{Name: "a", Command: []string{"/bin/sleep", "1000"}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Spawn(cctx, "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
}

// waitFile waits (up to 30 s) until file holds want and returns what it last held.
func waitFile(t *testing.T, file, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			got, _ := os.ReadFile(file)
			return string(got)
		case <-timer.C:
		}
		if got, err := os.ReadFile(file); err == nil && string(got) == want {
			return want
		}
		timer.Reset(5 * time.Millisecond)
	}
}

// TestStayStopped: a service whose spec says StayStopped stays stopped when its process
// exits with status 0 (on-success: ignore), and is restarted after a failure as any
// service; without it Pebble restarts a clean exit too (its default).
func TestStayStopped(t *testing.T) {
	m, dir := startPebble(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		stay    bool
		code    int
		restart bool
	}{
		{"stay-clean", true, 0, false},
		{"stay-failed", true, 3, true},
		{"default-clean", false, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The process exits with code once told to (a file appears), as slurmctld does when
			// a backup's takeover shuts it down; each start is counted.
			starts, told := filepath.Join(dir, tc.name+".starts"), filepath.Join(dir, tc.name+".exit")
			script := fmt.Sprintf("echo >>%s; while [ ! -e %s ]; do sleep 0.05; done; rm -f %s; exit %d", starts, told, told, tc.code)
			if err := m.Configure(ctx, service.Spec{Name: tc.name, Command: []string{"/bin/sh", "-c", script}, StayStopped: tc.stay}); err != nil {
				t.Fatal(err)
			}
			if err := m.Start(ctx, tc.name); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(told, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			// Pebble's first back-off is 0.5 s: 3 s is plenty for a restart to show.
			time.Sleep(3 * time.Second)
			data, err := os.ReadFile(starts)
			if err != nil {
				t.Fatal(err)
			}
			st, err := m.Status(ctx, tc.name)
			if err != nil {
				t.Fatal(err)
			}
			restarted := strings.Count(string(data), "\n") > 1
			if restarted != tc.restart {
				t.Errorf("restarted %v (%d starts, now %s), want %v", restarted, strings.Count(string(data), "\n"), st.State, tc.restart)
			}
			if !tc.restart && st.State != service.StateInactive {
				t.Errorf("state %s after a clean exit, want inactive", st.State)
			}
			if err := m.Stop(ctx, tc.name); err != nil {
				t.Fatal(err)
			}
		})
	}
}
