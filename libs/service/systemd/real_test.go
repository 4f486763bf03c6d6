package systemd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/systemd"
)

// RealEnv, set to 1, runs the Real tests: the fake-conn tests' counterparts against the real
// systemd and D-Bus of the machine the test binary runs on. tests/machines builds this test
// binary and runs it so on systemd-nspawn machines of each Debian image; elsewhere the tests
// skip, because changing this host's units is not theirs to do.
const RealEnv = "SYSTEMD_REAL_TEST"

func realManager(t *testing.T) *systemd.Manager {
	t.Helper()
	if os.Getenv(RealEnv) != "1" {
		t.Skipf("needs a systemd machine it may change (%s=1); run by tests/machines", RealEnv)
	}
	// The connect context ends right after New, as auto.Manager's connect timeout does: the
	// connection must outlive it (godbus ties a connection to its context).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, conn, err := systemd.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return m
}

func systemctl(t *testing.T, args ...string) string {
	t.Helper()
	out, _ := exec.Command("systemctl", args...).Output()
	return strings.TrimSpace(string(out))
}

// mainPID is the unit's main process, from systemd.
func mainPID(t *testing.T, unit string) int {
	t.Helper()
	pid, err := strconv.Atoi(systemctl(t, "show", "-p", "MainPID", "--value", unit))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// trickyArgs are arguments a command line must carry byte for byte through the environment
// file and systemd's splitting of $<NAME>_OPTIONS.
var trickyArgs = []string{`RealMemory=1000 Feature="a" 100% $HOME`, "", ";", `back\slash\`, "'single'", "tab\tx", "`date`", "${HOME}", "%h", `\"`}

// argvFile is where argvCommand writes its arguments.
const argvFile = "/run/systemd-real-test.argv"

// argvCommand is a command that writes its argv ("sh" and args), one argument a line, to
// argvFile and then runs sleep in its place: one process, whatever the unit's KillMode
// (the packaged slurmd.service's is "process", which would leave a child behind at a stop).
func argvCommand(args ...string) []string {
	script := `printf '%s\n' "$0" "$@" >` + argvFile + `.tmp && mv ` + argvFile + `.tmp ` + argvFile + ` && exec /usr/bin/sleep infinity`
	return append([]string{"/bin/sh", "-c", script, "sh"}, args...)
}

// startedWith runs start (a start or restart of unit) and waits until the new process has
// written its argv and runs sleep; the argv must be cmd's.
func startedWith(ctx context.Context, t *testing.T, unit string, cmd []string, start func() error) {
	t.Helper()
	if err := os.Remove(argvFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := start(); err != nil {
		t.Fatal(err)
	}
	want := strings.Join(cmd[3:], "\n") + "\n"
	eventually(ctx, t, "the argv of "+unit+"'s process", func() (bool, string) {
		got, _ := os.ReadFile(argvFile)
		return string(got) == want, fmt.Sprintf("%q, want %q", got, want)
	})
	waitComm(ctx, t, mainPID(t, unit), "sleep")
}

// TestRealNoReload: what needs no daemon-reload gets none, and what does gets one. A
// sentinel tells: slurmctld runs (so systemd keeps it loaded) with a second drop-in written
// behind systemd's back, which systemd reads only on a reload. Then, with no reload, as on a
// new machine's join: a slurmd unit systemd has not loaded is configured for the first
// time, enabled, and runs the command; new arguments and a new environment take effect at
// a restart. Last, a changed drop-in of the running slurmd reloads, and the sentinel shows
// it; disabling the running unit reloads too (its UnitFileState was loaded with it).
func TestRealNoReload(t *testing.T) {
	m := realManager(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	probe := "/etc/systemd/system/slurmctld.service.d/99-probe.conf"
	t.Cleanup(func() {
		ctx := context.Background()
		m.Stop(ctx, "slurmd")
		m.Stop(ctx, "slurmctld")
		m.Disable(ctx, "slurmd")
		for _, f := range []string{systemd.DropInFile("slurmd"), systemd.EnvironmentFile("slurmd"), systemd.DropInFile("slurmctld"), probe} {
			os.Remove(f)
		}
		systemctl(t, "daemon-reload")
	})
	if err := m.Configure(ctx, service.Spec{Name: "slurmctld", Command: []string{"/usr/bin/sleep", "infinity"}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx, "slurmctld"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(probe, []byte("[Service]\nEnvironment=RELOADED=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reloaded := func() bool {
		return strings.Contains(systemctl(t, "show", "-p", "Environment", "--value", "slurmctld.service"), "RELOADED=1")
	}
	if reloaded() {
		t.Fatal("the sentinel shows a reload before any")
	}
	// As on a new machine, systemd has not loaded slurmd.service: this test runs first, for
	// systemd 257 keeps a stopped slurmd.service loaded on these machines (its delegated
	// cgroup stays). list-units lists the loaded units and loads none.
	if got := systemctl(t, "list-units", "--all", "--plain", "--no-legend", "slurmd.service"); got != "" {
		t.Fatalf("slurmd.service is loaded already (%s): run this test first on a new machine", got)
	}
	first := service.Spec{Name: "slurmd", Command: argvCommand("first", "--conf", "CPUs=1 Feature=a")}
	second := service.Spec{Name: "slurmd", Command: argvCommand("second", "--conf", "CPUs=2 Feature=b"), Environment: map[string]string{"SECOND": "yes"}}
	for _, s := range []struct {
		name string
		do   func() error
		argv []string // the command the step starts
	}{
		{"configure a unit not loaded", func() error { return m.Configure(ctx, first) }, nil},
		{"enable a unit not loaded", func() error { return m.Enable(ctx, "slurmd") }, nil},
		{"start", func() error { return m.Start(ctx, "slurmd") }, first.Command},
		{"configure new arguments and environment", func() error { return m.Configure(ctx, second) }, nil},
		{"restart", func() error { return m.Restart(ctx, "slurmd") }, second.Command},
	} {
		if s.argv != nil {
			startedWith(ctx, t, "slurmd.service", s.argv, s.do)
		} else if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if reloaded() {
			t.Fatalf("%s: systemd was reloaded", s.name)
		}
	}
	if st, err := m.Status(ctx, "slurmd"); err != nil || !st.Enabled {
		t.Errorf("status after enable: %+v, %v; want enabled", st, err)
	}
	environ, _ := os.ReadFile("/proc/" + strconv.Itoa(mainPID(t, "slurmd.service")) + "/environ")
	if !strings.Contains("\x00"+string(environ), "\x00SECOND=yes\x00") {
		t.Errorf("the restarted slurmd lacks the new environment: %q", environ)
	}
	longer := second
	longer.KillDelay = 7 * time.Second
	if err := m.Configure(ctx, longer); err != nil {
		t.Fatal(err)
	}
	if !reloaded() {
		t.Error("a new drop-in of a running unit was not loaded by a reload")
	}
	if got := systemctl(t, "show", "-p", "TimeoutStopUSec", "--value", "slurmd.service"); got != "7s" {
		t.Errorf("TimeoutStopUSec = %q, want 7s", got)
	}
	if err := m.Disable(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	if st, err := m.Status(ctx, "slurmd"); err != nil || st.Enabled {
		t.Errorf("status after disable: %+v, %v; want disabled", st, err)
	}
}

// TestRealLifecycle is TestLifecycle against the real systemd, with the packaged slurmd unit
// (its ExecStart, ConditionPathExists and PIDFile replaced by the drop-in): the argv and the
// environment file reach the process byte for byte, and every step shows in systemctl.
func TestRealLifecycle(t *testing.T) {
	m := realManager(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec := service.Spec{
		Name:        "slurmd",
		Command:     argvCommand(trickyArgs...),
		Environment: map[string]string{"SLURMD_DEBUG": "2", "Z": `quote " and \ back`},
		KillDelay:   5 * time.Second,
	}
	t.Cleanup(func() {
		ctx := context.Background()
		m.Stop(ctx, "slurmd")
		m.Disable(ctx, "slurmd")
		os.Remove(systemd.DropInFile("slurmd"))
		os.Remove(systemd.EnvironmentFile("slurmd"))
		systemctl(t, "daemon-reload")
	})
	if err := m.Configure(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if got := systemctl(t, "show", "-p", "TimeoutStopUSec", "--value", "slurmd.service"); got != "5s" {
		t.Errorf("TimeoutStopUSec = %q, want 5s", got)
	}
	steps := []struct {
		name    string
		do      func() error
		want    service.State
		enabled string
	}{
		{"enable", func() error { return m.Enable(ctx, "slurmd") }, service.StateInactive, "enabled"},
		{"start", func() error { return m.Start(ctx, "slurmd") }, service.StateActive, "enabled"},
		{"restart", func() error { return m.Restart(ctx, "slurmd") }, service.StateActive, "enabled"},
		{"stop", func() error { return m.Stop(ctx, "slurmd") }, service.StateInactive, "enabled"},
		{"disable", func() error { return m.Disable(ctx, "slurmd") }, service.StateInactive, "disabled"},
	}
	var pids []int
	var since time.Time
	for _, s := range steps {
		if s.want == service.StateActive {
			startedWith(ctx, t, "slurmd.service", spec.Command, s.do)
		} else if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		st, err := m.Status(ctx, "slurmd")
		if err != nil {
			t.Fatalf("%s: status: %v", s.name, err)
		}
		if st.State != s.want || st.Name != "slurmd" || st.Enabled != (s.enabled == "enabled") {
			t.Errorf("after %s: %+v, want state %s enabled %s", s.name, st, s.want, s.enabled)
		}
		if got := systemctl(t, "is-enabled", "slurmd.service"); got != s.enabled {
			t.Errorf("after %s: systemctl is-enabled = %q, want %q", s.name, got, s.enabled)
		}
		if s.want != service.StateActive {
			continue
		}
		if !st.Since.After(since) {
			t.Errorf("after %s: since %v, not after the previous %v", s.name, st.Since, since)
		}
		since = st.Since
		pid := mainPID(t, "slurmd.service")
		pids = append(pids, pid)
		environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, kv := range strings.Split(string(environ), "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		got := map[string]string{"SLURMD_DEBUG": env["SLURMD_DEBUG"], "Z": env["Z"]}
		want := map[string]string{"SLURMD_DEBUG": "2", "Z": `quote " and \ back`}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("after %s: the process's environment (-want +got):\n%s", s.name, d)
		}
	}
	if len(pids) != 2 || pids[0] == pids[1] {
		t.Errorf("main PIDs after start and restart: %v, want two different processes", pids)
	}
	// The starts a charm asks for one after another are not a crash loop: eight restarts in a
	// row pass systemd's start rate limit (5 in 10 s by default).
	for i := range 8 {
		if err := m.Restart(ctx, "slurmd"); err != nil {
			t.Fatalf("restart %d in a row: %v", i+1, err)
		}
	}
}

// eventually polls cond until it holds, failing the test with what cond last saw when ctx
// ends.
func eventually(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, seen := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v; last seen: %s", what, ctx.Err(), seen)
		case <-tick.C:
		}
	}
}

// waitComm waits until process pid runs the command named comm.
func waitComm(ctx context.Context, t *testing.T, pid int, comm string) {
	t.Helper()
	eventually(ctx, t, fmt.Sprintf("process %d running %s", pid, comm), func() (bool, string) {
		got, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		return strings.TrimSpace(string(got)) == comm, string(got)
	})
}

// TestRealRestartOnFailure checks the drop-in's Restart=on-failure: a killed daemon comes
// back as a new process without the charm doing anything.
func TestRealRestartOnFailure(t *testing.T) {
	m := realManager(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		m.Stop(context.Background(), "slurmctld")
		os.Remove(systemd.DropInFile("slurmctld"))
		systemctl(t, "daemon-reload")
	})
	if err := m.Configure(ctx, service.Spec{Name: "slurmctld", Command: []string{"/usr/bin/sleep", "infinity"}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Spawn(ctx, "slurmctld"); err != nil {
		t.Fatal(err)
	}
	first := mainPID(t, "slurmctld.service")
	waitComm(ctx, t, first, "sleep")
	// Debian 13's packaged slurmctld.service says User=slurm: the spec names no user, so root.
	status, err := os.ReadFile("/proc/" + strconv.Itoa(first) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "Uid:") || strings.HasPrefix(line, "Gid:") {
			if f := strings.Fields(line); len(f) < 2 || f[1] != "0" {
				t.Errorf("slurmctld runs with %q, want root", line)
			}
		}
	}
	if err := exec.Command("kill", "-KILL", strconv.Itoa(first)).Run(); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, "slurmctld restarted after SIGKILL", func() (bool, string) {
		st, err := m.Status(ctx, "slurmctld")
		pid := mainPID(t, "slurmctld.service")
		return err == nil && st.State == service.StateActive && pid != 0 && pid != first, systemctl(t, "status", "slurmctld.service")
	})
}

// TestRealKillAll runs a daemon that forks a child under the packaged slurmd unit (which
// says KillMode=process), as sackd forks one to fetch the configuration: without KillAll the
// child outlives a stop, as Debian's unit wants for slurmd's job steps; with KillAll the stop
// ends it too.
func TestRealKillAll(t *testing.T) {
	m := realManager(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		m.Stop(context.Background(), "slurmd")
		os.Remove(systemd.DropInFile("slurmd"))
		systemctl(t, "daemon-reload")
	})
	for _, all := range []bool{false, true} {
		// The child's pid goes to a file the test reads; the main process waits.
		pidFile := fmt.Sprintf("/run/killall-child-%v", all)
		os.Remove(pidFile)
		spec := service.Spec{Name: "slurmd", KillAll: all, Command: []string{"/bin/sh", "-c",
			"sleep infinity & echo $! > " + pidFile + "; exec sleep infinity"}}
		if err := m.Configure(ctx, spec); err != nil {
			t.Fatal(err)
		}
		if err := m.Start(ctx, "slurmd"); err != nil {
			t.Fatal(err)
		}
		var child int
		eventually(ctx, t, "the child's pid file", func() (bool, string) {
			data, err := os.ReadFile(pidFile)
			child, _ = strconv.Atoi(strings.TrimSpace(string(data)))
			return err == nil && child > 0, string(data)
		})
		waitComm(ctx, t, child, "sleep")
		if err := m.Stop(ctx, "slurmd"); err != nil {
			t.Fatal(err)
		}
		// A killed child may show for a moment as a zombie until PID 1 reaps it (systemd 252
		// on cgroup v1 ends the stop job as the main process exits).
		alive := true
		for deadline := time.Now().Add(3 * time.Second); alive && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			stat, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
			_, rest, _ := strings.Cut(string(stat), ") ")
			alive = err == nil && !strings.HasPrefix(rest, "Z")
		}
		if alive {
			exec.Command("kill", "-KILL", strconv.Itoa(child)).Run()
		}
		// systemd 252 under nspawn on this cgroup v1 host (Debian 12 machines) cannot signal
		// a control group at all ("Failed to kill control group ... Input/output error"):
		// there no KillMode reaches a child, and systemd says so.
		if all && alive && strings.Contains(journal(t, "slurmd.service"), "Failed to kill control group") {
			ver, _, _ := strings.Cut(systemctl(t, "--version"), "\n")
			t.Logf("KillAll=true: %s cannot kill control groups here (its journal says so): not checked", ver)
			continue
		}
		if alive == all {
			t.Errorf("KillAll=%v: the child outlived the stop: %v, want %v (KillMode %s)", all, alive, !all,
				systemctl(t, "show", "-p", "KillMode", "--value", "slurmd.service"))
		}
	}
}

// TestRealSuccessSignals runs, under the packaged slurmd unit, a daemon that dies by SIGUSR1
// when asked to stop (as slurmdbd 26.05 now and then does): without SuccessSignals the stop
// leaves the unit failed, with SIGUSR1 among them inactive.
func TestRealSuccessSignals(t *testing.T) {
	m := realManager(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		m.Stop(context.Background(), "slurmd")
		os.Remove(systemd.DropInFile("slurmd"))
		systemctl(t, "daemon-reload")
		systemctl(t, "reset-failed", "slurmd.service")
	})
	// On SIGTERM the daemon (perl: Debian's perl-base is essential) sends itself SIGUSR1,
	// whose action is the default one: it dies by it.
	// It says it is ready (its handler set) in a file, which the test waits for.
	const ready = "/run/success-signals-ready"
	script := `$SIG{TERM} = sub { $SIG{USR1} = "DEFAULT"; kill "USR1", $$; sleep 5; exit 3 }; open(my $f, ">", "` + ready + `") or die; close $f; sleep 1 while 1`
	for _, signals := range [][]string{nil, {"SIGUSR1"}} {
		os.Remove(ready)
		spec := service.Spec{Name: "slurmd", SuccessSignals: signals, Command: []string{"/usr/bin/perl", "-e", script}}
		if err := m.Configure(ctx, spec); err != nil {
			t.Fatal(err)
		}
		if err := m.Start(ctx, "slurmd"); err != nil {
			t.Fatal(err)
		}
		eventually(ctx, t, "the daemon's ready file", func() (bool, string) {
			_, err := os.Stat(ready)
			return err == nil, systemctl(t, "status", "slurmd.service")
		})
		if err := m.Stop(ctx, "slurmd"); err != nil {
			t.Fatal(err)
		}
		st, err := m.Status(ctx, "slurmd")
		if err != nil {
			t.Fatal(err)
		}
		want := service.StateFailed
		if len(signals) > 0 {
			want = service.StateInactive
		}
		if st.State != want {
			t.Errorf("success signals %v: after a stop ended by SIGUSR1 the unit is %v, want %v (%s)", signals, st.State, want,
				systemctl(t, "show", "-p", "Result,ExecMainStatus,SuccessExitStatus", "slurmd.service"))
		}
	}
}

// journal is what systemd logged about unit.
func journal(t *testing.T, unit string) string {
	t.Helper()
	out, _ := exec.Command("journalctl", "--no-pager", "-u", unit).CombinedOutput()
	return string(out)
}

// TestRealMunge runs munged the way the charms do under systemd (the packaged munge unit with
// the charm's drop-in) and checks that a credential round-trips.
func TestRealMunge(t *testing.T) {
	m := realManager(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		m.Stop(context.Background(), "munge")
		os.Remove(systemd.DropInFile("munge"))
		systemctl(t, "daemon-reload")
	})
	if err := m.Configure(ctx, service.Spec{Name: "munge", Command: []string{"/usr/sbin/munged", "-F"}, User: "munge"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Spawn(ctx, "munge"); err != nil {
		t.Fatal(err)
	}
	var cred []byte
	eventually(ctx, t, "munged answering", func() (bool, string) {
		var err error
		cred, err = exec.CommandContext(ctx, "munge", "-n").Output()
		return err == nil, systemctl(t, "status", "munge.service")
	})
	cmd := exec.CommandContext(ctx, "unmunge")
	cmd.Stdin = strings.NewReader(string(cred))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "STATUS:          Success (0)") {
		t.Fatalf("unmunge: %v: %s", err, out)
	}
}

// TestRealUnknownUnit is TestErrors' unknown unit against the real systemd.
func TestRealUnknownUnit(t *testing.T) {
	m := realManager(t)
	ctx := context.Background()
	spec := service.Spec{Name: "no-such-daemon", Command: []string{"/usr/bin/true"}}
	t.Cleanup(func() {
		os.RemoveAll("/etc/systemd/system/no-such-daemon.service.d")
		os.Remove(systemd.EnvironmentFile("no-such-daemon"))
		systemctl(t, "daemon-reload")
	})
	for verb, call := range map[string]func() error{
		"configure": func() error { return m.Configure(ctx, spec) },
		"start":     func() error { return m.Start(ctx, spec.Name) },
		"stop":      func() error { return m.Stop(ctx, spec.Name) },
		"enable":    func() error { return m.Enable(ctx, spec.Name) },
		"status":    func() error { _, err := m.Status(ctx, spec.Name); return err },
	} {
		if err := call(); !errors.Is(err, service.ErrUnknownService) {
			t.Errorf("%s: got %v, want ErrUnknownService", verb, err)
		}
	}
}
