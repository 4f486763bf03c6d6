package systemd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/systemd"
)

// fakeConn mimics systemd's D-Bus behaviour for the calls the manager makes: units known
// from "installed" (package unit files), jobs that change ActiveState and report a result.
type fakeConn struct {
	mu        sync.Mutex
	calls     []string
	installed map[string]bool   // unit names with a unit file
	active    map[string]string // ActiveState
	enabled   map[string]bool
	since     map[string]uint64
	clock     uint64
	// result is the job result for the next jobs ("" = "done"); hold keeps the job pending.
	result string
	hold   bool
	// needReload is every unit's NeedDaemonReload (its files changed since the last reload).
	needReload bool
	// starts counts each unit's starts since its last reset-failed: as systemd's default
	// StartLimitBurst (5 starts in StartLimitIntervalSec=10s, the fake's jobs all falling in
	// one interval), a sixth start fails with the unit's Result "start-limit-hit".
	starts     map[string]int
	unitResult map[string]string
}

func newFakeConn(units ...string) *fakeConn {
	f := &fakeConn{installed: map[string]bool{}, active: map[string]string{}, enabled: map[string]bool{}, since: map[string]uint64{},
		starts: map[string]int{}, unitResult: map[string]string{}, clock: 1_700_000_000_000_000}
	for _, u := range units {
		f.installed[u] = true
	}
	return f
}

func (f *fakeConn) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeConn) ReloadContext(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("reload")
	return ctx.Err()
}

func (f *fakeConn) EnableUnitFilesContext(ctx context.Context, files []string, runtime, force bool) (bool, []dbus.EnableUnitFileChange, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("enable %v runtime=%v force=%v", files, runtime, force)
	var changes []dbus.EnableUnitFileChange
	for _, u := range files {
		if !f.installed[u] {
			return false, nil, fmt.Errorf("Unit file %s does not exist.", u)
		}
		if !f.enabled[u] { // as systemd: a symlink made, reported as a change
			changes = append(changes, dbus.EnableUnitFileChange{Type: "symlink", Filename: "/etc/systemd/system/multi-user.target.wants/" + u, Destination: "/lib/systemd/system/" + u})
		}
		f.enabled[u] = true
	}
	return true, changes, nil
}

func (f *fakeConn) DisableUnitFilesContext(ctx context.Context, files []string, runtime bool) ([]dbus.DisableUnitFileChange, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("disable %v runtime=%v", files, runtime)
	var changes []dbus.DisableUnitFileChange
	for _, u := range files {
		if f.enabled[u] {
			changes = append(changes, dbus.DisableUnitFileChange{Type: "unlink", Filename: "/etc/systemd/system/multi-user.target.wants/" + u})
		}
		f.enabled[u] = false
	}
	return changes, nil
}

func (f *fakeConn) job(verb, name, mode string, ch chan<- string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("%s %s %s", verb, name, mode)
	if !f.installed[name] {
		return 0, fmt.Errorf("Unit %s not found.", name)
	}
	if f.hold {
		return 1, nil
	}
	result := f.result
	if result == "" {
		result = "done"
	}
	if verb != "stop" {
		if f.starts[name]++; f.starts[name] > 5 {
			result, f.unitResult[name] = "failed", "start-limit-hit"
		}
	}
	f.clock++
	f.since[name] = f.clock
	switch {
	case result != "done":
		f.active[name] = "failed"
	case verb == "stop":
		f.active[name] = "inactive"
	default:
		f.active[name] = "active"
	}
	ch <- result
	return 1, nil
}

func (f *fakeConn) StartUnitContext(ctx context.Context, name, mode string, ch chan<- string) (int, error) {
	return f.job("start", name, mode, ch)
}

func (f *fakeConn) StopUnitContext(ctx context.Context, name, mode string, ch chan<- string) (int, error) {
	return f.job("stop", name, mode, ch)
}

func (f *fakeConn) RestartUnitContext(ctx context.Context, name, mode string, ch chan<- string) (int, error) {
	return f.job("restart", name, mode, ch)
}

func (f *fakeConn) ResetFailedUnitContext(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("reset-failed %s", name)
	if !f.installed[name] || f.active[name] == "" {
		// Not loaded: no unit file, or no job since (systemd unloads an idle unit).
		return godbus.Error{Name: "org.freedesktop.systemd1.NoSuchUnit", Body: []any{"Unit " + name + " not loaded."}}
	}
	f.starts[name] = 0
	delete(f.unitResult, name)
	if f.active[name] == "failed" {
		f.active[name] = "inactive"
	}
	return nil
}

func (f *fakeConn) GetUnitPropertiesContext(ctx context.Context, name string) (map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.installed[name] {
		return map[string]any{"LoadState": "not-found", "ActiveState": "inactive", "UnitFileState": ""}, nil
	}
	active := f.active[name]
	if active == "" {
		active = "inactive"
	}
	file := "disabled"
	if f.enabled[name] {
		file = "enabled"
	}
	result := f.unitResult[name]
	if result == "" {
		result = "success"
	}
	return map[string]any{"LoadState": "loaded", "ActiveState": active, "UnitFileState": file, "StateChangeTimestamp": f.since[name], "NeedDaemonReload": f.needReload, "Result": result}, nil
}

func (f *fakeConn) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func slurmdSpec() service.Spec {
	return service.Spec{
		Name:        "slurmd",
		Command:     []string{"/usr/sbin/slurmd", "-D", "-Z", "--conf", `RealMemory=1000 Feature="a" 100%`, "-N", "slurmd-0", "--conf-server", "10.0.0.1:6817", "$HOME"},
		Environment: map[string]string{"SLURMD_DEBUG": "2", "Z": `quote " and \ back`},
		User:        "root",
		KillDelay:   10 * time.Second,
	}
}

func TestConfigure(t *testing.T) {
	root := t.TempDir()
	conn := newFakeConn("slurmd.service")
	m := &systemd.Manager{Conn: conn, Root: root}
	if err := m.Configure(context.Background(), slurmdSpec()); err != nil {
		t.Fatal(err)
	}
	dropIn, err := os.ReadFile(filepath.Join(root, "etc/systemd/system/slurmd.service.d/10-charm.conf"))
	if err != nil {
		t.Fatal(err)
	}
	wantDropIn := `# Written by the charm; local changes are overwritten.
[Unit]
ConditionPathExists=

[Service]
Type=simple
PIDFile=
EnvironmentFile=-/etc/default/slurmd
ExecStart=
ExecStart=/usr/sbin/slurmd -D -Z --conf "RealMemory=1000 Feature=\"a\" 100%%" -N slurmd-0 --conf-server 10.0.0.1:6817 $$HOME
Restart=on-failure
User=root
Group=
TimeoutStopSec=10000ms
`
	if d := cmp.Diff(wantDropIn, string(dropIn)); d != "" {
		t.Errorf("drop-in (-want +got):\n%s", d)
	}
	env, err := os.ReadFile(filepath.Join(root, "etc/default/slurmd"))
	if err != nil {
		t.Fatal(err)
	}
	wantEnv := "# Written by the charm; local changes are overwritten.\nSLURMD_DEBUG=\"2\"\nZ=\"quote \\\" and \\\\ back\"\n"
	if d := cmp.Diff(wantEnv, string(env)); d != "" {
		t.Errorf("environment file (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"reload"}, conn.Calls()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	// Re-configuring replaces the files.
	spec := slurmdSpec()
	spec.Environment = nil
	if err := m.Configure(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	env, _ = os.ReadFile(filepath.Join(root, "etc/default/slurmd"))
	if strings.Contains(string(env), "SLURMD_DEBUG") {
		t.Errorf("old environment kept: %q", env)
	}
}

// TestKillAll: a spec with KillAll stops every process of the unit (the packaged units say
// KillMode=process); one without keeps the packaged mode.
func TestKillAll(t *testing.T) {
	for _, all := range []bool{false, true} {
		spec := slurmdSpec()
		spec.KillAll = all
		dropIn, err := systemd.DropIn(spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(dropIn, "\nKillMode=control-group\n"); got != all {
			t.Errorf("KillAll=%v: drop-in says KillMode=control-group: %v:\n%s", all, got, dropIn)
		}
		if strings.Count(dropIn, "KillMode=") > 1 || (!all && strings.Contains(dropIn, "KillMode=")) {
			t.Errorf("KillAll=%v: drop-in:\n%s", all, dropIn)
		}
	}
}

func TestLifecycle(t *testing.T) {
	conn := newFakeConn("slurmd.service")
	m := &systemd.Manager{Conn: conn, Root: t.TempDir()}
	ctx := context.Background()
	steps := []struct {
		name string
		do   func() error
		want service.State
		en   bool
	}{
		{"configure", func() error { return m.Configure(ctx, slurmdSpec()) }, service.StateInactive, false},
		{"enable", func() error { return m.Enable(ctx, "slurmd") }, service.StateInactive, true},
		{"start", func() error { return m.Start(ctx, "slurmd") }, service.StateActive, true},
		{"restart", func() error { return m.Restart(ctx, "slurmd") }, service.StateActive, true},
		{"stop", func() error { return m.Stop(ctx, "slurmd") }, service.StateInactive, true},
		{"disable", func() error { return m.Disable(ctx, "slurmd") }, service.StateInactive, false},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		st, err := m.Status(ctx, "slurmd")
		if err != nil {
			t.Fatalf("%s: status: %v", s.name, err)
		}
		if st.State != s.want || st.Enabled != s.en || st.Name != "slurmd" {
			t.Errorf("after %s: %+v, want state %s enabled %v", s.name, st, s.want, s.en)
		}
		if s.name == "start" && st.Since.IsZero() {
			t.Errorf("after start: no since time")
		}
	}
	want := []string{
		"reload",
		"enable [slurmd.service] runtime=false force=true",
		"reload",
		"reset-failed slurmd.service",
		"start slurmd.service replace",
		"reset-failed slurmd.service",
		"restart slurmd.service replace",
		"stop slurmd.service replace",
		"disable [slurmd.service] runtime=false",
		"reload",
	}
	if d := cmp.Diff(want, conn.Calls()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
}

// TestManyStarts: the starts a charm asks for are not counted against systemd's start rate
// limit (meant for crash loops under Restart=on-failure): ten restarts in a row succeed.
func TestManyStarts(t *testing.T) {
	conn := newFakeConn("slurmd.service")
	m := &systemd.Manager{Conn: conn, Root: t.TempDir()}
	ctx := context.Background()
	if err := m.Configure(ctx, slurmdSpec()); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := m.Restart(ctx, "slurmd"); err != nil {
			t.Fatalf("restart %d: %v", i+1, err)
		}
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("unknown unit", func(t *testing.T) {
		m := &systemd.Manager{Conn: newFakeConn(), Root: t.TempDir()}
		for verb, call := range map[string]func() error{
			"configure": func() error { return m.Configure(ctx, slurmdSpec()) },
			"start":     func() error { return m.Start(ctx, "slurmd") },
			"stop":      func() error { return m.Stop(ctx, "slurmd") },
			"enable":    func() error { return m.Enable(ctx, "slurmd") },
			"status":    func() error { _, err := m.Status(ctx, "slurmd"); return err },
		} {
			if err := call(); !errors.Is(err, service.ErrUnknownService) {
				t.Errorf("%s: got %v, want ErrUnknownService", verb, err)
			}
		}
	})
	t.Run("job failed", func(t *testing.T) {
		conn := newFakeConn("slurmd.service")
		conn.result = "failed"
		m := &systemd.Manager{Conn: conn, Root: t.TempDir()}
		err := m.Start(ctx, "slurmd")
		if err == nil || !strings.Contains(err.Error(), `systemd job result "failed"`) {
			t.Errorf("got %v", err)
		}
		if st, err := m.Status(ctx, "slurmd"); err != nil || st.State != service.StateFailed {
			t.Errorf("status %+v, %v; want failed", st, err)
		}
	})
	t.Run("cancelled while the job runs", func(t *testing.T) {
		conn := newFakeConn("slurmd.service")
		conn.hold = true
		m := &systemd.Manager{Conn: conn, Root: t.TempDir()}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := m.Restart(cctx, "slurmd"); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
	t.Run("relative command", func(t *testing.T) {
		m := &systemd.Manager{Conn: newFakeConn("slurmd.service"), Root: t.TempDir()}
		spec := slurmdSpec()
		spec.Command[0] = "slurmd"
		if err := m.Configure(ctx, spec); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
			t.Errorf("got %v", err)
		}
	})
}

func TestExecLine(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want string
	}{
		{[]string{"/bin/a", "b"}, "/bin/a b"},
		{[]string{"/bin/a", "", ";", `x\y`}, `/bin/a "" ";" "x\\y"`},
		{[]string{"/bin/a", "%n", "${X}"}, `/bin/a %%n "$${X}"`},
	} {
		if got := systemd.ExecLine(tt.argv); got != tt.want {
			t.Errorf("ExecLine(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}

// TestReloadOnlyOnChange: a daemon-reload (about 0.2 s on a machine) only when a file systemd
// reads changed: configuring the same spec again, enabling an enabled unit and disabling a
// disabled one reload nothing; a changed spec, or unchanged files systemd has not loaded yet
// (NeedDaemonReload), reload.
func TestReloadOnlyOnChange(t *testing.T) {
	conn := newFakeConn("slurmd.service")
	m := &systemd.Manager{Conn: conn, Root: t.TempDir()}
	ctx := context.Background()
	changed := slurmdSpec()
	changed.Command = append(changed.Command, "-v")
	steps := []struct {
		name   string
		do     func() error
		reload bool
	}{
		{"configure", func() error { return m.Configure(ctx, slurmdSpec()) }, true},
		{"configure the same", func() error { return m.Configure(ctx, slurmdSpec()) }, false},
		{"configure changed", func() error { return m.Configure(ctx, changed) }, true},
		{"configure the same, not loaded", func() error {
			conn.needReload = true
			defer func() { conn.needReload = false }()
			return m.Configure(ctx, changed)
		}, true},
		{"enable", func() error { return m.Enable(ctx, "slurmd") }, true},
		{"enable again", func() error { return m.Enable(ctx, "slurmd") }, false},
		{"disable", func() error { return m.Disable(ctx, "slurmd") }, true},
		{"disable again", func() error { return m.Disable(ctx, "slurmd") }, false},
	}
	for _, s := range steps {
		before := len(conn.Calls())
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := slices.Contains(conn.Calls()[before:], "reload"); got != s.reload {
			t.Errorf("%s: reloaded %v, want %v (calls %q)", s.name, got, s.reload, conn.Calls()[before:])
		}
	}
}
