// Package systemd implements service.Manager with systemd over D-Bus
// (github.com/coreos/go-systemd/v22/dbus).
//
// Configure writes two files, under Root (normally "/"):
//
//   - /etc/default/<name>: the service's environment, KEY="value" lines (the file the
//     Debian units already read through EnvironmentFile=-/etc/default/<name>);
//   - /etc/systemd/system/<name>.service.d/10-charm.conf: a drop-in that replaces the
//     packaged ExecStart with the spec's argv (quoted for systemd), sets Type=simple and
//     Restart=on-failure, clears the packaged ConditionPathExists (a configless slurmd
//     has no /etc/slurm/slurm.conf) and PIDFile, sets User= (root when the spec names no
//     user, whatever the packaged unit says) and resets Group=, and sets TimeoutStopSec= when
//     given and KillMode=control-group for a spec with KillAll;
//
// then runs daemon-reload. The argv goes into ExecStart rather than into a
// SLURMD_OPTIONS-style variable because systemd splits an unquoted $VAR at whitespace
// without honouring quotes, which would break `--conf "CPUs=2 Feature=x"`.
//
// The packaged unit (<name>.service) must exist: for an unknown unit every method returns
// an error wrapping service.ErrUnknownService. Start, stop and restart enqueue a job in
// "replace" mode and wait for its result; a result other than "done" is an error. With
// Type=simple the result comes once the process is forked, so Spawn and Respawn are Start
// and Restart.
//
// The few D-Bus calls used are behind the [Conn] interface, which *dbus.Conn satisfies.
package systemd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"

	"github.com/charmed-slurm/operators/libs/service"
)

// Conn is the part of *dbus.Conn the manager uses.
type Conn interface {
	ReloadContext(ctx context.Context) error
	EnableUnitFilesContext(ctx context.Context, files []string, runtime bool, force bool) (bool, []dbus.EnableUnitFileChange, error)
	DisableUnitFilesContext(ctx context.Context, files []string, runtime bool) ([]dbus.DisableUnitFileChange, error)
	StartUnitContext(ctx context.Context, name string, mode string, ch chan<- string) (int, error)
	StopUnitContext(ctx context.Context, name string, mode string, ch chan<- string) (int, error)
	RestartUnitContext(ctx context.Context, name string, mode string, ch chan<- string) (int, error)
	GetUnitPropertiesContext(ctx context.Context, unit string) (map[string]any, error)
	ResetFailedUnitContext(ctx context.Context, name string) error
}

var _ Conn = (*dbus.Conn)(nil)

// DropInName is the drop-in file Configure writes in <unit>.d/.
const DropInName = "10-charm.conf"

// Manager is a service.Manager backed by systemd.
type Manager struct {
	Conn Conn
	// Root prefixes every file path; empty means "/".
	Root string
}

var _ service.Manager = (*Manager)(nil)

// New connects to the system bus; ctx bounds the wait for the connection, not its life.
// Close the returned connection when done.
func New(ctx context.Context) (*Manager, *dbus.Conn, error) {
	type result struct {
		conn *dbus.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		// godbus closes a connection when the context it was made with ends: a connection
		// made with ctx itself would die with the caller's connect timeout.
		conn, err := dbus.NewSystemConnectionContext(context.WithoutCancel(ctx))
		ch <- result{conn, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, nil, fmt.Errorf("cannot connect to systemd: %w", r.err)
		}
		return &Manager{Conn: r.conn}, r.conn, nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.conn != nil {
				r.conn.Close()
			}
		}()
		return nil, nil, fmt.Errorf("cannot connect to systemd: %w", ctx.Err())
	}
}

func unit(name string) string { return name + ".service" }

func (m *Manager) path(p string) string {
	root := m.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(root, p)
}

// EnvironmentFile is the path (without Root) of name's environment file.
func EnvironmentFile(name string) string { return "/etc/default/" + name }

// DropInFile is the path (without Root) of name's drop-in.
func DropInFile(name string) string {
	return "/etc/systemd/system/" + unit(name) + ".d/" + DropInName
}

// Configure implements service.Manager. It writes the unit's environment file and drop-in and
// reloads systemd, unless both files hold already what spec gives and systemd has loaded them
// (the unit's NeedDaemonReload is false): a daemon-reload costs about 0.2 s on a machine.
func (m *Manager) Configure(ctx context.Context, spec service.Spec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	dropIn, err := DropIn(spec)
	if err != nil {
		return fmt.Errorf("cannot configure service %q: %w", spec.Name, err)
	}
	files := map[string]string{EnvironmentFile(spec.Name): EnvironmentFileContent(spec.Environment), DropInFile(spec.Name): dropIn}
	same := true
	for path, content := range files {
		if old, err := os.ReadFile(m.path(path)); err == nil && string(old) == content {
			continue
		}
		same = false
		if err := writeFile(m.path(path), []byte(content)); err != nil {
			return fmt.Errorf("cannot configure service %q: %w", spec.Name, err)
		}
	}
	if same {
		if p, err := m.props(ctx, spec.Name); err == nil {
			if need, _ := p["NeedDaemonReload"].(bool); !need {
				return nil
			}
		}
	}
	if err := m.Conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("cannot configure service %q: daemon-reload: %w", spec.Name, err)
	}
	if _, err := m.props(ctx, spec.Name); err != nil {
		return fmt.Errorf("cannot configure service %q: %w", spec.Name, err)
	}
	return nil
}

// EnvironmentFileContent renders env as an EnvironmentFile, sorted by name.
func EnvironmentFileContent(env map[string]string) string {
	var b strings.Builder
	b.WriteString("# Written by the charm; local changes are overwritten.\n")
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(env[k])
		fmt.Fprintf(&b, "%s=\"%s\"\n", k, v)
	}
	return b.String()
}

// DropIn renders the unit drop-in for spec.
func DropIn(spec service.Spec) (string, error) {
	if !filepath.IsAbs(spec.Command[0]) {
		return "", fmt.Errorf("command %q is not an absolute path", spec.Command[0])
	}
	var b strings.Builder
	b.WriteString("# Written by the charm; local changes are overwritten.\n")
	b.WriteString("[Unit]\nConditionPathExists=\n\n[Service]\nType=simple\nPIDFile=\n")
	fmt.Fprintf(&b, "EnvironmentFile=-%s\n", EnvironmentFile(spec.Name))
	b.WriteString("ExecStart=\nExecStart=" + ExecLine(spec.Command) + "\n")
	b.WriteString("Restart=on-failure\n")
	// The packaged unit may name its own user (Debian 13's slurmctld.service has User=slurm):
	// the spec decides, as under Pebble, root when it names none.
	if spec.User != "" {
		fmt.Fprintf(&b, "User=%s\nGroup=\n", spec.User)
	} else {
		b.WriteString("User=root\nGroup=root\n")
	}
	if spec.KillDelay > 0 {
		fmt.Fprintf(&b, "TimeoutStopSec=%dms\n", spec.KillDelay.Milliseconds())
	}
	if spec.KillAll {
		b.WriteString("KillMode=control-group\n")
	}
	return b.String(), nil
}

// ExecLine quotes argv for an ExecStart= line: words with anything but safe characters are
// double-quoted with '\' and '"' escaped, and '$' and '%' are doubled everywhere so systemd
// neither expands variables nor specifiers.
func ExecLine(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		a = strings.NewReplacer("$", "$$", "%", "%%").Replace(a)
		safe := a != "" && a != ";"
		for j := 0; j < len(a) && safe; j++ {
			c := a[j]
			safe = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_@%$+=:,./-", c) >= 0
		}
		if !safe {
			a = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(a) + `"`
		}
		words[i] = a
	}
	return strings.Join(words, " ")
}

// writeFile replaces path atomically (temp file, fsync, rename), creating directories.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Enable implements service.Manager.
func (m *Manager) Enable(ctx context.Context, name string) error {
	if _, err := m.props(ctx, name); err != nil {
		return fmt.Errorf("cannot enable service %q: %w", name, err)
	}
	_, changes, err := m.Conn.EnableUnitFilesContext(ctx, []string{unit(name)}, false, true)
	if err != nil {
		return fmt.Errorf("cannot enable service %q: %w", name, err)
	}
	if len(changes) == 0 {
		return nil // enabled already: no symlink changed
	}
	// As systemctl enable does: systemd caches a unit's UnitFileState until a reload.
	if err := m.Conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("cannot enable service %q: reload: %w", name, err)
	}
	return nil
}

// Disable implements service.Manager.
func (m *Manager) Disable(ctx context.Context, name string) error {
	if _, err := m.props(ctx, name); err != nil {
		return fmt.Errorf("cannot disable service %q: %w", name, err)
	}
	changes, err := m.Conn.DisableUnitFilesContext(ctx, []string{unit(name)}, false)
	if err != nil {
		return fmt.Errorf("cannot disable service %q: %w", name, err)
	}
	if len(changes) == 0 {
		return nil // disabled already
	}
	// As systemctl disable does: systemd caches a unit's UnitFileState until a reload.
	if err := m.Conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("cannot disable service %q: reload: %w", name, err)
	}
	return nil
}

// Start implements service.Manager.
func (m *Manager) Start(ctx context.Context, name string) error {
	return m.job(ctx, "start", name, m.Conn.StartUnitContext)
}

// Stop implements service.Manager.
func (m *Manager) Stop(ctx context.Context, name string) error {
	return m.job(ctx, "stop", name, m.Conn.StopUnitContext)
}

// Restart implements service.Manager.
func (m *Manager) Restart(ctx context.Context, name string) error {
	return m.job(ctx, "restart", name, m.Conn.RestartUnitContext)
}

// Spawn implements service.Manager. It is Start: the drop-in makes the unit Type=simple,
// whose start job is done once the process is forked, with no stay-up check.
func (m *Manager) Spawn(ctx context.Context, name string) error { return m.Start(ctx, name) }

// Respawn implements service.Manager. It is Restart (see Spawn).
func (m *Manager) Respawn(ctx context.Context, name string) error { return m.Restart(ctx, name) }

// job runs a start, stop or restart job of service name and waits for its result. Before a
// start or restart it resets the unit's start rate counter (systemctl reset-failed): systemd
// refuses a sixth start within 10 s (StartLimitBurst, StartLimitIntervalSec) as
// "start-limit-hit", a limit meant for a crash loop under Restart=on-failure, not for the
// starts a charm asks for one after another (a join, a key rotation, a re-registration).
func (m *Manager) job(ctx context.Context, verb, name string, do func(context.Context, string, string, chan<- string) (int, error)) error {
	if _, err := m.props(ctx, name); err != nil {
		return fmt.Errorf("cannot %s service %q: %w", verb, name, err)
	}
	if verb != "stop" {
		// A unit systemd has not loaded (never started since the last reload) has no count.
		if err := m.Conn.ResetFailedUnitContext(ctx, unit(name)); err != nil && !noSuchUnit(err) {
			return fmt.Errorf("cannot %s service %q: reset-failed: %w", verb, name, err)
		}
	}
	ch := make(chan string, 1) // buffered: go-systemd must not block if we stop waiting
	if _, err := do(ctx, unit(name), "replace", ch); err != nil {
		return fmt.Errorf("cannot %s service %q: %w", verb, name, err)
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("cannot %s service %q: job not finished: %w", verb, name, ctx.Err())
	case result := <-ch:
		if result != "done" {
			// The unit's Result says why ("exit-code", "start-limit-hit", "resources", ...).
			why := ""
			if p, err := m.props(ctx, name); err == nil {
				if r, _ := p["Result"].(string); r != "" && r != "success" {
					why = " (unit result " + strconv.Quote(r) + ")"
				}
			}
			return fmt.Errorf("cannot %s service %q: systemd job result %q%s", verb, name, result, why)
		}
	}
	return nil
}

// Status implements service.Manager.
func (m *Manager) Status(ctx context.Context, name string) (service.Status, error) {
	p, err := m.props(ctx, name)
	if err != nil {
		return service.Status{}, fmt.Errorf("cannot get status of service %q: %w", name, err)
	}
	st := service.Status{Name: name}
	active, _ := p["ActiveState"].(string)
	switch active {
	case "active", "reloading":
		st.State = service.StateActive
	case "inactive":
		st.State = service.StateInactive
	case "failed":
		st.State = service.StateFailed
	case "activating":
		st.State = service.StateActivating
	case "deactivating":
		st.State = service.StateDeactivating
	default:
		return service.Status{}, fmt.Errorf("cannot get status of service %q: unknown ActiveState %q", name, active)
	}
	if us, ok := p["StateChangeTimestamp"].(uint64); ok && us > 0 {
		st.Since = time.UnixMicro(int64(us))
	}
	fileState, _ := p["UnitFileState"].(string)
	st.Enabled = fileState == "enabled" || fileState == "enabled-runtime"
	return st, nil
}

// props returns the unit's properties, or ErrUnknownService when systemd has no such unit.
func (m *Manager) props(ctx context.Context, name string) (map[string]any, error) {
	if err := service.ValidateName(name); err != nil {
		return nil, err
	}
	if m.Conn == nil {
		return nil, errors.New("systemd manager has no D-Bus connection")
	}
	p, err := m.Conn.GetUnitPropertiesContext(ctx, unit(name))
	if err != nil {
		return nil, err
	}
	if load, _ := p["LoadState"].(string); load == "not-found" || load == "" {
		return nil, fmt.Errorf("%w: systemd unit %s not found", service.ErrUnknownService, unit(name))
	}
	return p, nil
}

// noSuchUnit reports whether err is systemd's "Unit ... not loaded" D-Bus error.
func noSuchUnit(err error) bool {
	var de godbus.Error
	return errors.As(err, &de) && de.Name == "org.freedesktop.systemd1.NoSuchUnit"
}
