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
// As systemd (TestRealNoReload), it holds a unit's definition (here: the Environment= lines
// of its drop-in under root) from the moment it loads it: a unit that runs, or that a target
// wanted at the last reload (enabled then), stays loaded and keeps its definition until a
// reload; any other unit is read from disk afresh whenever it is used. Its UnitFileState is
// read when it is loaded, likewise.
type fakeConn struct {
	mu        sync.Mutex
	root      string
	calls     []string
	installed map[string]bool   // unit names with a unit file
	active    map[string]string // ActiveState
	enabled   map[string]bool
	since     map[string]uint64
	clock     uint64
	// result is the job result for the next jobs ("" = "done"); hold keeps the job pending.
	result string
	hold   bool
	// loaded is what systemd holds of each unit it keeps loaded; wanted are the units
	// enabled at the last reload.
	loaded map[string]held
	wanted map[string]bool
	// starts counts each unit's starts since its last reset-failed: as systemd's default
	// StartLimitBurst (5 starts in StartLimitIntervalSec=10s, the fake's jobs all falling in
	// one interval), a sixth start fails with the unit's Result "start-limit-hit".
	starts     map[string]int
	unitResult map[string]string
	// envReads counts the reads of a unit's Environment (the check of the drop-in systemd
	// holds).
	envReads int
}

func newFakeConn(root string, units ...string) *fakeConn {
	f := &fakeConn{root: root, installed: map[string]bool{}, active: map[string]string{}, enabled: map[string]bool{}, since: map[string]uint64{},
		starts: map[string]int{}, unitResult: map[string]string{}, loaded: map[string]held{}, wanted: map[string]bool{},
		clock: 1_700_000_000_000_000}
	for _, u := range units {
		f.installed[u] = true
	}
	return f
}

// newManager returns a manager over a fake systemd with units installed, its files under
// a temporary root.
func newManager(t *testing.T, units ...string) (*systemd.Manager, *fakeConn) {
	root := t.TempDir()
	conn := newFakeConn(root, units...)
	return &systemd.Manager{Conn: conn, Root: root}, conn
}

// held is what systemd reads of a unit when it loads it: the values of its drop-in's
// Environment= lines and whether it is enabled.
type held struct {
	env     []string
	enabled bool
}

// read is the unit as on disk.
func (f *fakeConn) read(name string) held {
	data, _ := os.ReadFile(filepath.Join(f.root, "etc/systemd/system", name+".d", systemd.DropInName))
	h := held{enabled: f.enabled[name]}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			h.env = append(h.env, strings.Fields(v)...)
		}
	}
	return h
}

// held is what systemd holds of name: the loaded unit, else the one on disk.
func (f *fakeConn) held(name string) held {
	if h, ok := f.loaded[name]; ok {
		return h
	}
	return f.read(name)
}

// settle keeps name loaded while it runs or a target wants it, and lets it go otherwise.
func (f *fakeConn) settle(name string) {
	keep := f.active[name] == "active" || f.active[name] == "failed" || f.wanted[name]
	if _, ok := f.loaded[name]; keep && !ok {
		f.loaded[name] = f.read(name)
	} else if !keep {
		delete(f.loaded, name)
	}
}

func (f *fakeConn) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeConn) ReloadContext(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("reload")
	for u := range f.installed {
		delete(f.loaded, u)
		f.wanted[u] = f.enabled[u]
		f.settle(u)
	}
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
		return 0, godbus.Error{Name: "org.freedesktop.systemd1.NoSuchUnit", Body: []any{"Unit " + name + " not found."}}
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
	f.settle(name)
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
	f.settle(name)
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
	if f.held(name).enabled {
		file = "enabled"
	}
	result := f.unitResult[name]
	if result == "" {
		result = "success"
	}
	return map[string]any{"LoadState": "loaded", "ActiveState": active, "UnitFileState": file, "StateChangeTimestamp": f.since[name], "Result": result}, nil
}

func (f *fakeConn) ListUnitsByPatternsContext(ctx context.Context, states, patterns []string) ([]dbus.UnitStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []dbus.UnitStatus
	for _, p := range patterns {
		if _, ok := f.loaded[p]; ok {
			out = append(out, dbus.UnitStatus{Name: p, LoadState: "loaded", ActiveState: f.active[p]})
		}
	}
	return out, nil
}

func (f *fakeConn) GetUnitPropertyContext(ctx context.Context, name, property string) (*dbus.Property, error) {
	p, err := f.GetUnitPropertiesContext(ctx, name)
	if err != nil {
		return nil, err
	}
	v, ok := p[property]
	if !ok {
		return nil, fmt.Errorf("fake: property %s not served", property)
	}
	return &dbus.Property{Name: property, Value: godbus.MakeVariant(v)}, nil
}

func (f *fakeConn) GetServicePropertyContext(ctx context.Context, name, property string) (*dbus.Property, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if property != "Environment" {
		return nil, fmt.Errorf("fake: property %s not served", property)
	}
	f.envReads++
	var env []string
	if f.installed[name] {
		env = f.held(name).env
	}
	return &dbus.Property{Name: property, Value: godbus.MakeVariant(append([]string{}, env...))}, nil
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
	m, conn := newManager(t, "slurmd.service")
	if err := m.Configure(context.Background(), slurmdSpec()); err != nil {
		t.Fatal(err)
	}
	dropIn, err := os.ReadFile(filepath.Join(m.Root, "etc/systemd/system/slurmd.service.d/10-charm.conf"))
	if err != nil {
		t.Fatal(err)
	}
	wantDropIn := `# Written by the charm; local changes are overwritten. The charm reloads systemd when
# the unit it holds lacks this file's digest (CHARM_DROPIN, the last line).
[Unit]
ConditionPathExists=

[Service]
Type=simple
PIDFile=
EnvironmentFile=-/etc/default/slurmd
ExecStart=
ExecStart=/usr/sbin/slurmd $SLURMD_OPTIONS
Restart=on-failure
User=root
Group=
TimeoutStopSec=10000ms
Environment=CHARM_DROPIN=e7c95305446e28dd
`
	if d := cmp.Diff(wantDropIn, string(dropIn)); d != "" {
		t.Errorf("drop-in (-want +got):\n%s", d)
	}
	env, err := os.ReadFile(filepath.Join(m.Root, "etc/default/slurmd"))
	if err != nil {
		t.Fatal(err)
	}
	wantEnv := `# Written by the charm; local changes are overwritten.
SLURMD_DEBUG="2"
SLURMD_OPTIONS="-D -Z --conf \"RealMemory=1000 Feature=\\\"a\\\" 100%\" -N slurmd-0 --conf-server 10.0.0.1:6817 $HOME"
Z="quote \" and \\ back"
`
	if d := cmp.Diff(wantEnv, string(env)); d != "" {
		t.Errorf("environment file (-want +got):\n%s", d)
	}
	// A unit systemd has not loaded reads its new drop-in when first used: no reload.
	if d := cmp.Diff([]string(nil), conn.Calls()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	// Re-configuring replaces the files.
	spec := slurmdSpec()
	spec.Environment = nil
	if err := m.Configure(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	env, _ = os.ReadFile(filepath.Join(m.Root, "etc/default/slurmd"))
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

// TestSuccessSignals: a spec's success signals are the drop-in's SuccessExitStatus=; a spec
// without any writes none (its drop-in, and digest, stay as they were).
func TestSuccessSignals(t *testing.T) {
	spec := slurmdSpec()
	plain, err := systemd.DropIn(spec)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "SuccessExitStatus") {
		t.Errorf("drop-in without success signals says SuccessExitStatus:\n%s", plain)
	}
	spec.SuccessSignals = []string{"SIGUSR1", "SIGUSR2"}
	dropIn, err := systemd.DropIn(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dropIn, "\nSuccessExitStatus=SIGUSR1 SIGUSR2\n") {
		t.Errorf("drop-in lacks SuccessExitStatus=SIGUSR1 SIGUSR2:\n%s", dropIn)
	}
}

// TestReservedEnvironment: the spec's environment cannot set the variables the backend
// writes itself.
func TestReservedEnvironment(t *testing.T) {
	m, _ := newManager(t, "slurmd.service")
	for _, k := range []string{"SLURMD_OPTIONS", "CHARM_DROPIN"} {
		spec := slurmdSpec()
		spec.Environment = map[string]string{k: "x"}
		if err := m.Configure(context.Background(), spec); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("environment %s: got %v, want an error naming it", k, err)
		}
	}
}

func TestOptionsVar(t *testing.T) {
	for name, want := range map[string]string{
		"slurmd": "SLURMD_OPTIONS", "munge": "MUNGE_OPTIONS", "slurm-exporter": "SLURM_EXPORTER_OPTIONS",
		"a.b@c": "A_B_C_OPTIONS", "9lives": "_9LIVES_OPTIONS",
	} {
		if got := systemd.OptionsVar(name); got != want {
			t.Errorf("OptionsVar(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestLifecycle(t *testing.T) {
	m, conn := newManager(t, "slurmd.service")
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
		"enable [slurmd.service] runtime=false force=true",
		"reset-failed slurmd.service",
		"start slurmd.service replace",
		"reset-failed slurmd.service",
		"restart slurmd.service replace",
		"stop slurmd.service replace",
		"disable [slurmd.service] runtime=false",
	}
	if d := cmp.Diff(want, conn.Calls()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
}

// TestManyStarts: the starts a charm asks for are not counted against systemd's start rate
// limit (meant for crash loops under Restart=on-failure): ten restarts in a row succeed.
func TestManyStarts(t *testing.T) {
	m, _ := newManager(t, "slurmd.service")
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
		m, _ := newManager(t)
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
		m, conn := newManager(t, "slurmd.service")
		conn.result = "failed"
		err := m.Start(ctx, "slurmd")
		if err == nil || !strings.Contains(err.Error(), `systemd job result "failed"`) {
			t.Errorf("got %v", err)
		}
		if st, err := m.Status(ctx, "slurmd"); err != nil || st.State != service.StateFailed {
			t.Errorf("status %+v, %v; want failed", st, err)
		}
	})
	t.Run("cancelled while the job runs", func(t *testing.T) {
		m, conn := newManager(t, "slurmd.service")
		conn.hold = true
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := m.Restart(cctx, "slurmd"); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
	t.Run("relative command", func(t *testing.T) {
		m, _ := newManager(t, "slurmd.service")
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

func TestWords(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"-D", "-Z", "10.0.0.1:6817,10.0.0.2:6817"}, "-D -Z 10.0.0.1:6817,10.0.0.2:6817"},
		{[]string{"--conf", "CPUs=2 Feature=a,b"}, `--conf "CPUs=2 Feature=a,b"`},
		{[]string{"", ";", `x\y`, `"q"`, "'s'", "a\tb"}, `"" ";" "x\\y" "\"q\"" "'s'" "a` + "\t" + `b"`},
		{[]string{"$HOME", "100%", "${X}"}, `$HOME 100% "${X}"`},
	} {
		if got := systemd.Words(tt.args); got != tt.want {
			t.Errorf("Words(%q) = %q, want %q", tt.args, got, tt.want)
		}
		if got := readBack(t, tt.args); !slices.Equal(got, tt.args) && len(got)+len(tt.args) > 0 {
			t.Errorf("Words(%q) reads back as %q", tt.args, got)
		}
	}
}

// FuzzWords: any command line (no NUL, newline or CR: Spec.Validate refuses them) written
// to the environment file reads back word for word as systemd reads it (the rules of
// systemdSplit and envFileValue, checked against the real systemd by TestRealLifecycle).
func FuzzWords(f *testing.F) {
	f.Add("a", "b c", `"x\y"`)
	f.Add("", ";", "'s' $HOME %h")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		args := []string{a, b, c}
		if (service.Spec{Name: "x", Command: append([]string{"/bin/x"}, args...)}).Validate() != nil {
			return
		}
		if got := readBack(t, args); !slices.Equal(got, args) {
			t.Errorf("%q read back as %q", args, got)
		}
	})
}

// readBack writes args as the command's arguments of an environment file and reads them
// back as systemd does.
func readBack(t *testing.T, args []string) []string {
	t.Helper()
	content := systemd.EnvironmentFileContent(service.Spec{Name: "x", Command: append([]string{"/bin/x"}, args...)})
	for _, l := range strings.Split(content, "\n") {
		if v, ok := strings.CutPrefix(l, "X_OPTIONS="); ok {
			return systemdSplit(t, envFileValue(t, v))
		}
	}
	t.Fatalf("no X_OPTIONS in %q", content)
	return nil
}

// envFileValue reads a "value" of an environment file's KEY="value" line as systemd does:
// inside the double quotes a backslash escapes '"', '\', '`' and '$' and is kept before
// any other character.
func envFileValue(t *testing.T, quoted string) string {
	t.Helper()
	if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
		t.Fatalf("not a double-quoted value: %s", quoted)
	}
	s := quoted[1 : len(quoted)-1]
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\`$", s[i+1]) >= 0 {
			i++
		} else if s[i] == '"' {
			t.Fatalf("unescaped quote in %s", quoted)
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// systemdSplit splits a variable's value into words as systemd expands an unbraced $VAR
// (extract_first_word with EXTRACT_UNQUOTE|EXTRACT_RELAX): blanks separate words, single
// and double quotes group, a backslash takes the next character as it is.
func systemdSplit(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			in = true
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			w.WriteByte(c)
		case c == '"' || c == '\'':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("unterminated quote in %q", s)
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// TestReloadOnlyOnChange: a daemon-reload (about 0.1 s on a machine) only when what systemd
// holds is stale: never for new arguments or environment (the environment file is read at
// every start), never for a unit systemd has not loaded (read afresh when used), as on a
// new machine's join; a changed drop-in of a loaded unit (running, or enabled at the last
// reload), or one rewritten behind its back, reloads, and so does enabling or disabling a
// loaded unit (systemd keeps its UnitFileState until a reload).
func TestReloadOnlyOnChange(t *testing.T) {
	m, conn := newManager(t, "slurmd.service")
	ctx := context.Background()
	spec := slurmdSpec()
	withArgs := func(args ...string) service.Spec {
		s := spec
		s.Command = append(append([]string{}, spec.Command...), args...)
		return s
	}
	longer := spec
	longer.KillDelay = 20 * time.Second
	steps := []struct {
		name   string
		do     func() error
		reload bool
	}{
		{"configure a unit not loaded", func() error { return m.Configure(ctx, spec) }, false},
		{"start", func() error { return m.Start(ctx, "slurmd") }, false},
		{"configure the same", func() error { return m.Configure(ctx, spec) }, false},
		{"configure new arguments", func() error { return m.Configure(ctx, withArgs("-v")) }, false},
		{"configure new environment", func() error {
			s := withArgs("-v")
			s.Environment = map[string]string{"A": "b"}
			return m.Configure(ctx, s)
		}, false},
		{"restart", func() error { return m.Restart(ctx, "slurmd") }, false},
		{"configure a new drop-in, running", func() error { return m.Configure(ctx, longer) }, true},
		{"configure it again", func() error { return m.Configure(ctx, longer) }, false},
		{"drop-in rewritten behind its back, running", func() error {
			if err := os.WriteFile(filepath.Join(m.Root, systemd.DropInFile("slurmd")), []byte("[Service]\n"), 0o644); err != nil {
				return err
			}
			conn.mu.Lock()
			conn.loaded["slurmd.service"] = held{} // as if reloaded by someone else
			conn.mu.Unlock()
			return m.Configure(ctx, longer)
		}, true},
		{"stop", func() error { return m.Stop(ctx, "slurmd") }, false},
		{"configure a new drop-in, stopped, not loaded", func() error { return m.Configure(ctx, spec) }, false},
		{"enable a unit not loaded", func() error { return m.Enable(ctx, "slurmd") }, false},
		{"enable again", func() error { return m.Enable(ctx, "slurmd") }, false},
		{"disable a unit not loaded", func() error { return m.Disable(ctx, "slurmd") }, false},
		{"start again", func() error { return m.Start(ctx, "slurmd") }, false},
		{"enable a running unit (its file state is stale)", func() error { return m.Enable(ctx, "slurmd") }, true},
		{"stop again", func() error { return m.Stop(ctx, "slurmd") }, false},
		{"configure a new drop-in, stopped but wanted at the reload", func() error { return m.Configure(ctx, longer) }, true},
		{"disable a loaded unit", func() error { return m.Disable(ctx, "slurmd") }, true},
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
		// Whatever it took, systemd holds the drop-in on disk afterwards.
		drop, _ := os.ReadFile(filepath.Join(m.Root, systemd.DropInFile("slurmd")))
		conn.mu.Lock()
		h := conn.held("slurmd.service")
		conn.mu.Unlock()
		if !slices.ContainsFunc(h.env, func(kv string) bool { return strings.Contains(string(drop), "Environment="+kv+"\n") }) {
			t.Errorf("after %s: systemd holds %q, not the drop-in on disk", s.name, h.env)
		}
	}
}

// TestDefineAhead: Define holds the drop-in before the command's arguments are known (a new
// node's join defines slurmd while `slurmd -C` runs); Configure with them in the same
// process writes the environment file and asks systemd nothing; another process (the next
// hook) checks again; a changed drop-in of a running unit still reloads.
func TestDefineAhead(t *testing.T) {
	m, conn := newManager(t, "slurmd.service")
	ctx := context.Background()
	spec := slurmdSpec()
	bare := spec
	bare.Command = spec.Command[:1]
	envFile := filepath.Join(m.Root, systemd.EnvironmentFile("slurmd"))
	reads := func() int {
		conn.mu.Lock()
		defer conn.mu.Unlock()
		return conn.envReads
	}
	if err := m.Define(ctx, bare); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(envFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Define wrote the environment file (%v)", err)
	}
	drop, err := os.ReadFile(filepath.Join(m.Root, systemd.DropInFile("slurmd")))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := systemd.DropIn(spec)
	if string(drop) != want {
		t.Errorf("drop-in after Define:\n%s\nwant (Configure's, with the arguments):\n%s", drop, want)
	}
	if got := reads(); got != 1 {
		t.Errorf("Define read the unit's Environment %d times, want 1", got)
	}
	if err := m.Configure(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if got := reads(); got != 1 {
		t.Errorf("Configure after Define asked systemd again (%d reads)", got)
	}
	if env, _ := os.ReadFile(envFile); string(env) != systemd.EnvironmentFileContent(spec) {
		t.Errorf("environment file %q, want %q", env, systemd.EnvironmentFileContent(spec))
	}
	next := &systemd.Manager{Conn: conn, Root: m.Root}
	if err := next.Configure(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if got := reads(); got != 2 {
		t.Errorf("another Manager trusted the first one's check (%d reads, want 2)", got)
	}
	if err := next.Start(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	longer := bare
	longer.KillDelay = 20 * time.Second
	before := len(conn.Calls())
	if err := next.Define(ctx, longer); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(conn.Calls()[before:], "reload") {
		t.Errorf("a new drop-in of a running unit defined without a reload (calls %q)", conn.Calls()[before:])
	}
	if err := next.Define(ctx, service.Spec{Name: "slurmd", Command: []string{"slurmd"}}); err == nil {
		t.Error("Define with a relative command path: no error")
	}
}
