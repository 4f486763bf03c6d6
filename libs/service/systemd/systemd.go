// Package systemd implements service.Manager with systemd over D-Bus
// (github.com/coreos/go-systemd/v22/dbus).
//
// Configure writes two files, under Root (normally "/"):
//
//   - /etc/default/<name>: the service's environment, KEY="value" lines (the file the
//     Debian units already read through EnvironmentFile=-/etc/default/<name>), and the
//     command's arguments in <NAME>_OPTIONS (OptionsVar: SLURMD_OPTIONS for slurmd, the
//     variable Debian's slurmd.service passes to slurmd), each word quoted (Words);
//   - /etc/systemd/system/<name>.service.d/10-charm.conf: a drop-in that replaces the
//     packaged ExecStart with "<command path> $<NAME>_OPTIONS", sets Type=simple and
//     Restart=on-failure, clears the packaged ConditionPathExists (a configless slurmd
//     has no /etc/slurm/slurm.conf) and PIDFile, sets User= (root when the spec names no
//     user, whatever the packaged unit says) and resets Group=, sets TimeoutStopSec= when
//     given and KillMode=control-group for a spec with KillAll, and names its own content by
//     a digest in Environment=CHARM_DROPIN=.
//
// systemd splits an unbraced $VAR at whitespace and removes the quotes of each word (the
// rule of ExecStart= lines), so `--conf "CPUs=2 Feature=x"` reaches the process as two
// arguments, byte for byte (TestRealLifecycle checks it on each Debian release). systemd
// reads the environment file at every start: a new command line needs no daemon-reload.
// Only a changed drop-in does (about 0.1 s on a machine, more than Slurm's own node
// registration), and Configure reloads only when the definition systemd holds lacks the
// drop-in's digest: a unit systemd has not loaded (inactive and not enabled since boot, as
// on a new machine) is read from disk on its next use, new drop-in included, and needs no
// reload either.
//
// The packaged unit (<name>.service) must exist: for an unknown unit every method returns
// an error wrapping service.ErrUnknownService. Start, stop and restart enqueue a job in
// "replace" mode and wait for its result; a result other than "done" is an error. With
// Type=simple the result comes once the process is forked, so Spawn and Respawn are Start
// and Restart. Enable and Disable change the unit's [Install] links and reload systemd only
// when it reports a stale UnitFileState (a unit it had loaded before the change): the boot
// reads the links from disk. (systemd >= 256 then flags every unit NeedDaemonReload until
// the next reload, which `systemctl status` shows as a warning; nothing depends on it.)
//
// The few D-Bus calls used are behind the [Conn] interface, which *dbus.Conn satisfies.
package systemd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"

	"github.com/charmed-slurm/operators/libs/atomicfile"
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
	GetUnitPropertyContext(ctx context.Context, unit string, propertyName string) (*dbus.Property, error)
	ListUnitsByPatternsContext(ctx context.Context, states []string, patterns []string) ([]dbus.UnitStatus, error)
	GetServicePropertyContext(ctx context.Context, service string, propertyName string) (*dbus.Property, error)
	ResetFailedUnitContext(ctx context.Context, name string) error
}

var _ Conn = (*dbus.Conn)(nil)

// DropInName is the drop-in file Configure writes in <unit>.d/.
const DropInName = "10-charm.conf"

// DigestVar is the variable the drop-in sets (Environment=) to the digest of its own
// content: systemd shows it in the unit's Environment property once it has loaded the file.
const DigestVar = "CHARM_DROPIN"

// Manager is a service.Manager backed by systemd.
type Manager struct {
	Conn Conn
	// Root prefixes every file path; empty means "/".
	Root string

	mu sync.Mutex
	// held maps a unit's name to the digest of the drop-in this Manager saw systemd hold
	// (or made it hold): a later definition with the same drop-in in the same process (a
	// hook: Define, then Configure) asks systemd no more.
	held map[string]string
}

var (
	_ service.Manager = (*Manager)(nil)
	_ service.Definer = (*Manager)(nil)
)

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
		conn, err := dbus.NewConnection(oneConnection(context.WithoutCancel(ctx)))
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

// oneConnection is a dial function for dbus.NewConnection that connects to the system bus
// once and returns that connection every time it is called. go-systemd dials twice, one
// connection for calls and one for signals (NewSystemConnectionContext): each costs a
// socket, the EXTERNAL authentication and a Hello round trip through dbus-daemon (8-17 ms
// each in a machine's hook under load, on every join's path). One connection carries both:
// the job-removed signals go-systemd matches (AddMatch) arrive on it as they would on a
// second one, its dispatcher reads them from a buffered channel, and a job's listener is
// registered under the lock that its completion takes (startJob), so a job that ends
// before its call's reply is read is still reported. Closing the go-systemd Conn closes
// the connection twice; godbus ignores the second.
func oneConnection(ctx context.Context) func() (*godbus.Conn, error) {
	var conn *godbus.Conn
	return func() (*godbus.Conn, error) {
		if conn != nil {
			return conn, nil
		}
		c, err := godbus.SystemBusPrivate(godbus.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		// EXTERNAL with the uid as a number, as go-systemd does (no user name lookup).
		if err := c.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
			c.Close()
			return nil, err
		}
		if err := c.Hello(); err != nil {
			c.Close()
			return nil, err
		}
		conn = c
		return c, nil
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

// Configure implements service.Manager. It writes the unit's environment file (the spec's
// environment and its command's arguments) and its drop-in, and reloads systemd only when
// the definition systemd holds is not the drop-in's (see the package documentation).
func (m *Manager) Configure(ctx context.Context, spec service.Spec) error {
	dropIn, digest, err := m.check(spec)
	if err != nil {
		return err
	}
	if _, err := m.write(ctx, EnvironmentFile(spec.Name), EnvironmentFileContent(spec)); err != nil {
		return fmt.Errorf("cannot configure service %q: %w", spec.Name, err)
	}
	return m.define(ctx, spec.Name, dropIn, digest)
}

// Define implements service.Definer: it writes spec's drop-in, which names the command's
// path and not its arguments (they are in the environment file), and makes systemd hold it
// (define), so that Configure with the same command path writes the environment file and
// nothing else.
func (m *Manager) Define(ctx context.Context, spec service.Spec) error {
	dropIn, digest, err := m.check(spec)
	if err != nil {
		return err
	}
	return m.define(ctx, spec.Name, dropIn, digest)
}

// check validates spec for this backend and renders its drop-in and the drop-in's digest.
func (m *Manager) check(spec service.Spec) (dropIn, digest string, err error) {
	if err := spec.Validate(); err != nil {
		return "", "", err
	}
	for _, k := range []string{OptionsVar(spec.Name), DigestVar} {
		if _, ok := spec.Environment[k]; ok {
			return "", "", fmt.Errorf("invalid service %q: environment variable %s is the systemd backend's own", spec.Name, k)
		}
	}
	dropIn, digest, err = renderDropIn(spec)
	if err != nil {
		return "", "", fmt.Errorf("cannot configure service %q: %w", spec.Name, err)
	}
	return dropIn, digest, nil
}

// define makes systemd hold dropIn as name's drop-in. When the file holds it already,
// nothing unless the definition systemd holds lacks its digest; else the file is written
// first, and systemd then reloaded unless it shows the digest (a unit it has not loaded is
// read from disk afresh when it is looked at). Written before anything loads the unit, a
// new drop-in of a unit nothing uses needs no reload.
func (m *Manager) define(ctx context.Context, name, dropIn, digest string) error {
	want := DigestVar + "=" + digest
	wrote, err := m.write(ctx, DropInFile(name), dropIn)
	if err != nil {
		return fmt.Errorf("cannot configure service %q: %w", name, err)
	}
	if !wrote && m.saw(name, digest) || m.holds(ctx, name, want) {
		m.see(name, digest)
		return nil
	}
	if err := m.Conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("cannot configure service %q: daemon-reload: %w", name, err)
	}
	if _, err := m.props(ctx, name); err != nil {
		return fmt.Errorf("cannot configure service %q: %w", name, err)
	}
	m.see(name, digest)
	return nil
}

// saw reports whether this Manager saw systemd hold name's drop-in with digest (define
// asks only when it found the file holding it: a file rewritten meanwhile, by anyone, is
// checked again).
func (m *Manager) saw(name, digest string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held[name] == digest
}

// see records that systemd holds name's drop-in with digest.
func (m *Manager) see(name, digest string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held == nil {
		m.held = map[string]string{}
	}
	m.held[name] = digest
}

// holds reports whether the definition systemd holds for name sets the environment
// assignment kv (reading the unit's Environment loads a unit not loaded yet from disk).
func (m *Manager) holds(ctx context.Context, name, kv string) bool {
	if m.Conn == nil || service.ValidateName(name) != nil {
		return false
	}
	p, err := m.Conn.GetServicePropertyContext(ctx, unit(name), "Environment")
	if err != nil || p == nil {
		return false
	}
	env, _ := p.Value.Value().([]string)
	for _, e := range env {
		if e == kv {
			return true
		}
	}
	return false
}

// OptionsVar is the variable of name's environment file that holds the command's
// arguments: the name in upper case, other characters than letters and digits as '_', and
// "_OPTIONS" ("slurmd" → SLURMD_OPTIONS, as Debian's slurmd.service names it).
func OptionsVar(name string) string {
	b := []byte(strings.ToUpper(name))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) > 0 && b[0] >= '0' && b[0] <= '9' {
		b = append([]byte{'_'}, b...)
	}
	return string(b) + "_OPTIONS"
}

// Words quotes args as systemd splits an unbraced $VAR of an ExecStart= line: words with
// anything but safe characters are double-quoted with '\' and '"' escaped. '$' and '%'
// need nothing: systemd expands neither in a variable's value.
func Words(args []string) string {
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = quoteWord(a)
	}
	return strings.Join(words, " ")
}

// quoteWord double-quotes a unless it is made of safe characters only.
func quoteWord(a string) string {
	safe := a != "" && a != ";"
	for j := 0; j < len(a) && safe; j++ {
		c := a[j]
		safe = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_@%$+=:,./-", c) >= 0
	}
	if safe {
		return a
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(a) + `"`
}

// EnvironmentFileContent renders spec's environment file: spec.Environment and the
// command's arguments (OptionsVar), sorted by name.
func EnvironmentFileContent(spec service.Spec) string {
	env := make(map[string]string, len(spec.Environment)+1)
	for k, v := range spec.Environment {
		env[k] = v
	}
	env[OptionsVar(spec.Name)] = Words(spec.Command[1:])
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

// DropIn renders the unit drop-in for spec. Of the command it holds the path only.
func DropIn(spec service.Spec) (string, error) {
	dropIn, _, err := renderDropIn(spec)
	return dropIn, err
}

// renderDropIn renders spec's drop-in and its digest: the first 16 hex digits of the
// SHA-256 of the lines the digest's own line follows.
func renderDropIn(spec service.Spec) (dropIn, digest string, err error) {
	if !filepath.IsAbs(spec.Command[0]) {
		return "", "", fmt.Errorf("command %q is not an absolute path", spec.Command[0])
	}
	var b strings.Builder
	b.WriteString("# Written by the charm; local changes are overwritten. The charm reloads systemd when\n")
	b.WriteString("# the unit it holds lacks this file's digest (" + DigestVar + ", the last line).\n")
	b.WriteString("[Unit]\nConditionPathExists=\n\n[Service]\nType=simple\nPIDFile=\n")
	fmt.Fprintf(&b, "EnvironmentFile=-%s\n", EnvironmentFile(spec.Name))
	b.WriteString("ExecStart=\nExecStart=" + ExecLine(spec.Command[:1]) + " $" + OptionsVar(spec.Name) + "\n")
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
	if len(spec.SuccessSignals) > 0 {
		b.WriteString("SuccessExitStatus=" + strings.Join(spec.SuccessSignals, " ") + "\n")
	}
	sum := sha256.Sum256([]byte(b.String()))
	digest = hex.EncodeToString(sum[:8])
	return b.String() + "Environment=" + DigestVar + "=" + digest + "\n", digest, nil
}

// ExecLine quotes argv for an ExecStart= line: words with anything but safe characters are
// double-quoted with '\' and '"' escaped, and '$' and '%' are doubled everywhere so systemd
// neither expands variables nor specifiers.
func ExecLine(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = quoteWord(strings.NewReplacer("$", "$$", "%", "%%").Replace(a))
	}
	return strings.Join(words, " ")
}

// write replaces path (without Root) with content unless it holds it already: atomically
// (libs/atomicfile), mode 0644 even when it had another, creating missing directories. It
// reports whether it wrote.
func (m *Manager) write(ctx context.Context, path, content string) (bool, error) {
	if old, err := os.ReadFile(m.path(path)); err == nil && string(old) == content {
		return false, nil
	}
	return true, atomicfile.Write(ctx, m.path(path), []byte(content), atomicfile.Options{Mode: 0o644, Reset: true, MkdirMode: 0o755})
}

// Enable implements service.Manager.
func (m *Manager) Enable(ctx context.Context, name string) error {
	if err := m.usable(name); err != nil {
		return fmt.Errorf("cannot enable service %q: %w", name, err)
	}
	wasLoaded := m.isLoaded(ctx, name)
	_, changes, err := m.Conn.EnableUnitFilesContext(ctx, []string{unit(name)}, false, true)
	if err != nil {
		return fmt.Errorf("cannot enable service %q: %w", name, m.why(ctx, name, err))
	}
	if len(changes) == 0 || !wasLoaded {
		return nil // enabled already, or systemd reads the state afresh when it loads the unit
	}
	return m.linked(ctx, "enable", name, true)
}

// Disable implements service.Manager.
func (m *Manager) Disable(ctx context.Context, name string) error {
	// systemd disables a unit with no unit file without an error: ask first.
	if _, err := m.props(ctx, name); err != nil {
		return fmt.Errorf("cannot disable service %q: %w", name, err)
	}
	wasLoaded := m.isLoaded(ctx, name)
	changes, err := m.Conn.DisableUnitFilesContext(ctx, []string{unit(name)}, false)
	if err != nil {
		return fmt.Errorf("cannot disable service %q: %w", name, err)
	}
	if len(changes) == 0 || !wasLoaded {
		return nil // disabled already, or systemd reads the state afresh when it loads the unit
	}
	return m.linked(ctx, "disable", name, false)
}

// why is err of a call about name, or ErrUnknownService when name has no unit file.
func (m *Manager) why(ctx context.Context, name string, err error) error {
	if _, perr := m.props(ctx, name); errors.Is(perr, service.ErrUnknownService) {
		return fmt.Errorf("%w (%v)", perr, err)
	}
	return err
}

// isLoaded reports whether systemd holds name's unit loaded now (ListUnitsByPatterns lists
// the loaded units and loads none: about 1 ms, where a property read of a unit not loaded
// loads it and a UnitFileState scans the unit directories, 4-8 ms). On an error it says
// loaded, which costs a check, not a wrong answer.
func (m *Manager) isLoaded(ctx context.Context, name string) bool {
	us, err := m.Conn.ListUnitsByPatternsContext(ctx, nil, []string{unit(name)})
	return err != nil || len(us) > 0
}

// linked follows a change of the [Install] links of name, loaded before the change. The next
// boot reads them from disk and needs no reload; but systemd keeps the UnitFileState a
// loaded unit (a running one) had when it was loaded until a reload, so only when the state
// systemd reports is not the new one is it reloaded, as `systemctl enable` always does. A
// unit systemd has not loaded (a new machine's) reads its state afresh when it loads it.
func (m *Manager) linked(ctx context.Context, verb, name string, enabled bool) error {
	if p, err := m.Conn.GetUnitPropertyContext(ctx, unit(name), "UnitFileState"); err == nil {
		if s, _ := p.Value.Value().(string); enabledState(s) == enabled {
			return nil
		}
	}
	if err := m.Conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("cannot %s service %q: reload: %w", verb, name, err)
	}
	return nil
}

// enabledState reports whether a UnitFileState means the unit starts at boot.
func enabledState(s string) bool { return s == "enabled" || s == "enabled-runtime" }

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
//
// It reads no property first (each read of a unit systemd has not loaded costs a load and
// its UnitFileState, a few ms): systemd refuses a job of a unit with no unit file as
// NoSuchUnit, which is reported as service.ErrUnknownService.
func (m *Manager) job(ctx context.Context, verb, name string, do func(context.Context, string, string, chan<- string) (int, error)) error {
	if err := m.usable(name); err != nil {
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
		if noSuchUnit(err) {
			err = fmt.Errorf("%w: systemd unit %s not found (%v)", service.ErrUnknownService, unit(name), err)
		}
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
	st.Enabled = enabledState(fileState)
	return st, nil
}

// usable checks name and that the manager has a connection.
func (m *Manager) usable(name string) error {
	if err := service.ValidateName(name); err != nil {
		return err
	}
	if m.Conn == nil {
		return errors.New("systemd manager has no D-Bus connection")
	}
	return nil
}

// props returns the unit's properties, or ErrUnknownService when systemd has no such unit.
func (m *Manager) props(ctx context.Context, name string) (map[string]any, error) {
	if err := m.usable(name); err != nil {
		return nil, err
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
