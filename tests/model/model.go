package model

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/charmed-slurm/operators/tests/model/wire"
)

// JujuVersion is the Juju version the model plays (JUJU_VERSION).
const JujuVersion = "3.6.4"

// Juju's retry strategy for failed hooks (apiserver/facades/agent/retrystrategy): the first
// retry after DefaultHookRetry, doubling up to MaxHookRetry.
const (
	DefaultHookRetry = 5 * time.Second
	MaxHookRetry     = 5 * time.Minute
)

// Options configure a model.
type Options struct {
	// Dir holds the state (state.json), the sockets and the unpacked charms. Required.
	Dir string
	// Name is the model name (JUJU_MODEL_NAME); default "local".
	Name string
	// Tools is the path of the hook tools binary (jujuc, tests/cmd/jujuc), installed under
	// every hook tool name. Required.
	Tools string
	// Machines provisions a machine per unit; default LocalMachines{Dir: Dir/machines}.
	Machines Provisioner
	// UpdateStatusInterval is the update-status period; default 5m as in Juju.
	UpdateStatusInterval time.Duration
	// HookRetry is the first delay of the automatic retry of a failed hook (Juju's model config
	// automatically-retry-hooks, on by default): the delay doubles after each failure up to
	// MaxHookRetry. Zero means Juju's DefaultHookRetry (5 s); a negative value turns automatic
	// retries off, leaving a failed unit in error until Resolve.
	HookRetry time.Duration
	// Log receives progress lines ("slurmd/1: running start hook") and debug-log lines.
	Log func(line string)
	// Referee is the referee binary (juju-referee, RefereeBeside): Juju 3.6's own hook-tool
	// code, which judges every tool call; Close returns the differences it found. Empty: no
	// referee.
	Referee string
}

// Model is a running local model: its state, its unit agents and the hook tool server.
type Model struct {
	opts     Options
	statePth string
	writer   *stateWriter
	toolsDir string
	sockPath string

	mu       sync.Mutex
	state    *State
	agents   map[string]*agent
	contexts map[string]*hookContext
	changed  chan struct{}
	subsMu   sync.Mutex // guards subs only; taken with or without mu
	subs     map[chan string]struct{}
	logLines []string
	closed   bool
	referee  *referee // nil without Options.Referee
	// machineLocks are the machines' hook locks (machineLock), under mu.
	machineLocks map[string]*sync.Mutex

	destroyReq  chan struct{}
	destroyOnce sync.Once

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ln     net.Listener
}

// New starts a model in opts.Dir: loads or creates its state and starts the hook tool server.
func New(ctx context.Context, opts Options) (*Model, error) {
	if opts.Dir == "" {
		return nil, errors.New("cannot start model: no directory given")
	}
	if opts.Tools == "" {
		return nil, errors.New("cannot start model: no hook tools binary given (Options.Tools: jujuc)")
	}
	if _, err := os.Stat(opts.Tools); err != nil {
		return nil, fmt.Errorf("cannot start model: %w", err)
	}
	if opts.Name == "" {
		opts.Name = "local"
	}
	if opts.HookRetry == 0 {
		opts.HookRetry = DefaultHookRetry
	}
	if opts.UpdateStatusInterval <= 0 {
		opts.UpdateStatusInterval = 5 * time.Minute
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("cannot start model: %w", err)
	}
	opts.Dir = dir
	if opts.Machines == nil {
		opts.Machines = LocalMachines{Dir: filepath.Join(dir, "machines")}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot start model: %w", err)
	}
	m := &Model{
		opts:     opts,
		statePth: filepath.Join(dir, "state.json"),
		writer:   newStateWriter(filepath.Join(dir, "state.json")),
		toolsDir: filepath.Join(dir, "tools"),
		sockPath: filepath.Join(dir, "agent.sock"),
		agents:   map[string]*agent{},
		contexts: map[string]*hookContext{},
		changed:  make(chan struct{}),
		subs:     map[chan string]struct{}{},

		destroyReq: make(chan struct{}),
	}
	if len(m.sockPath) >= 108 {
		return nil, fmt.Errorf("cannot start model: socket path %s is too long for a unix socket; use a shorter directory", m.sockPath)
	}
	st, err := loadState(m.statePth)
	if err != nil {
		return nil, err
	}
	if st != nil && len(st.Units) > 0 {
		return nil, fmt.Errorf("cannot start model: %s holds units of a model that is no longer running; destroy it first", dir)
	}
	if st == nil {
		st = newState(opts.Name, newUUID())
	}
	m.state = st
	if err := m.installTools(); err != nil {
		return nil, err
	}
	if opts.Referee != "" {
		if m.referee, err = startReferee(opts.Referee); err != nil {
			return nil, err
		}
	}
	os.Remove(m.sockPath)
	ln, err := net.Listen("unix", m.sockPath)
	if err != nil {
		return nil, fmt.Errorf("cannot start model: %w", err)
	}
	os.Chmod(m.sockPath, 0o666)
	m.ln = ln
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		wire.Serve(m.ctx, ln, m.runTool, &m.wg)
	}()
	if err := m.save(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// installTools makes Dir/tools: one symlink to the hook tools binary (jujuc) per hook tool name.
func (m *Model) installTools() error {
	tools, err := filepath.Abs(m.opts.Tools)
	if err != nil {
		return fmt.Errorf("cannot install hook tools: %w", err)
	}
	if err := installToolLinks(tools, m.toolsDir); err != nil {
		return fmt.Errorf("cannot install hook tools: %w", err)
	}
	return nil
}

// Dir is the model's directory.
func (m *Model) Dir() string { return m.opts.Dir }

// Close stops every unit agent, destroys every machine and stops the hook tool server. The
// state stays on disk.
func (m *Model) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	agents := make([]*agent, 0, len(m.agents))
	for _, a := range m.agents {
		agents = append(agents, a)
	}
	m.mu.Unlock()
	m.cancel()
	m.ln.Close()
	var errs []error
	for _, a := range agents {
		<-a.done
		m.mu.Lock()
		a.closeExec()
		m.mu.Unlock()
		if a.machine != nil && !a.shared {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := a.machine.Destroy(ctx); err != nil {
				errs = append(errs, err)
			}
			cancel()
		}
	}
	m.wg.Wait()
	if err := m.opts.Machines.Close(); err != nil {
		errs = append(errs, err)
	}
	os.Remove(m.sockPath)
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.state.Units {
		delete(m.state.Units, name)
	}
	m.state.Machines = map[string]*MachineState{}
	if err := m.save(); err != nil {
		errs = append(errs, err)
	}
	if m.referee != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		errs = append(errs, m.referee.close(ctx))
		cancel()
	}
	return errors.Join(errs...)
}

// save writes the state and returns once it is on disk; callers hold m.mu (or own m
// exclusively).
func (m *Model) save() error {
	data, err := m.state.encode()
	if err != nil {
		return err
	}
	return m.writer.wait(m.writer.put(data))
}

// saveLater queues the state to be written; callers hold m.mu. The unit agents save this way
// after each hook: the model's lock is not held while the file is written and synced, and a
// later save (or Close) waits for it.
func (m *Model) saveLater() {
	data, err := m.state.encode()
	if err != nil {
		m.progress("%v", err)
		return
	}
	m.writer.put(data)
}

// notify wakes every agent and waiter; callers hold m.mu.
func (m *Model) notify() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// logf records a progress line; callers may or may not hold m.mu (it takes no lock of m.mu).
func (m *Model) progress(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if m.opts.Log != nil {
		m.opts.Log(line)
	}
	m.broadcast(line)
}

func (m *Model) broadcast(line string) {
	m.subsMu.Lock()
	defer m.subsMu.Unlock()
	for ch := range m.subs {
		select {
		case ch <- line:
		default:
		}
	}
}

// Subscribe returns a channel of progress and log lines and a function that ends the
// subscription. Lines are dropped when the reader falls behind by more than 1000.
func (m *Model) Subscribe() (<-chan string, func()) {
	ch := make(chan string, 1000)
	m.subsMu.Lock()
	m.subs[ch] = struct{}{}
	m.subsMu.Unlock()
	return ch, func() {
		m.subsMu.Lock()
		delete(m.subs, ch)
		m.subsMu.Unlock()
	}
}

// appendLog adds a debug-log line; callers hold m.mu.
func (m *Model) appendLog(line string) {
	m.logLines = append(m.logLines, line)
	if f, err := os.OpenFile(filepath.Join(m.opts.Dir, "debug.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintln(f, line)
		f.Close()
	}
	if m.opts.Log != nil {
		m.opts.Log(line)
	}
	m.broadcast(line)
}

// DebugLog returns the juju-log lines and hook output logged so far, like `juju debug-log`.
func (m *Model) DebugLog() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.logLines...)
}

// State returns a copy of the whole model state.
func (m *Model) State() *State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state.clone()
}

// stageCharm unpacks a charm directory or .charm file into a new directory under Dir (the
// charm is in its "charm" subdirectory) and reads it; the caller removes the directory.
func (m *Model) stageCharm(path string) (string, *Charm, error) {
	src, err := filepath.Abs(path)
	if err != nil {
		return "", nil, err
	}
	fi, err := os.Stat(src)
	if err != nil {
		return "", nil, err
	}
	stage, err := os.MkdirTemp(m.opts.Dir, "charm-")
	if err != nil {
		return "", nil, err
	}
	if fi.IsDir() {
		// Not os.CopyFS: an executable written by this process cannot be run while a child
		// forked meanwhile holds its descriptor ("text file busy", hosts.CopyExecutable).
		var manifest []string
		if manifest, err = charmManifest(src); err == nil {
			err = copyCharm(src, filepath.Join(stage, "charm"), manifest)
		}
	} else {
		err = ExtractCharm(src, filepath.Join(stage, "charm"))
	}
	if err != nil {
		os.RemoveAll(stage)
		return "", nil, err
	}
	charm, err := ReadCharm(filepath.Join(stage, "charm"))
	if err != nil {
		os.RemoveAll(stage)
		return "", nil, err
	}
	return stage, charm, nil
}

// Refresh replaces app's charm with the charm at path (`juju refresh --path`): every unit gets
// the new charm's files, then runs upgrade-charm and config-changed. Config values of options
// the new charm no longer has are dropped; an endpoint in use must still exist, and its limit
// must allow the relations established on it.
func (m *Model) Refresh(ctx context.Context, app, path string) error {
	stage, charm, err := m.stageCharm(path)
	if err != nil {
		return fmt.Errorf("cannot refresh %s: %w", app, err)
	}
	defer os.RemoveAll(stage)
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.state.Applications[app]
	if !ok {
		return fmt.Errorf("cannot refresh: application %q not found", app)
	}
	if a.Dying {
		return fmt.Errorf("cannot refresh: application %q is being removed", app)
	}
	if charm.Name != a.Charm.Name {
		return fmt.Errorf("cannot refresh %s: charm %q is not charm %q", app, charm.Name, a.Charm.Name)
	}
	old := a.Charm
	a.Charm = charm
	for _, r := range m.state.Relations {
		e, ok := r.endpointOf(app)
		if !ok {
			continue
		}
		if _, _, ok := charm.endpoint(e.Name); !ok {
			a.Charm = old
			return fmt.Errorf("cannot refresh %s: endpoint %q is in use (relation %d) and the new charm has no such endpoint", app, e.Name, r.ID)
		}
		if err := m.checkLimit(app, e.Name, 0); err != nil {
			a.Charm = old
			return fmt.Errorf("cannot refresh %s: new charm version imposes a limit: %w", app, err)
		}
	}
	dir := filepath.Join(m.opts.Dir, "charms", fmt.Sprintf("%s-%d", app, a.CharmVersion+1))
	os.RemoveAll(dir)
	if err := os.Rename(filepath.Join(stage, "charm"), dir); err != nil {
		a.Charm = old
		return fmt.Errorf("cannot refresh %s: %w", app, err)
	}
	for k := range a.Config {
		if _, ok := charm.Options[k]; !ok {
			delete(a.Config, k)
		}
	}
	// The units' charm files are hard links: the old copy can go once they are replaced.
	a.CharmDir = dir
	a.CharmVersion++
	if err := m.save(); err != nil {
		return err
	}
	m.notify()
	m.progress("refreshed %s (charm %s, version %d)", app, charm.Name, a.CharmVersion)
	return nil
}

// DeployOptions say what Deploy deploys.
type DeployOptions struct {
	// Charm is a charm directory (with charmcraft.yaml or metadata.yaml, and dispatch) or a
	// packed .charm file.
	Charm string
	// Name is the application name; default the charm's name.
	Name string
	// Units is the number of units; default 1.
	Units int
	// Config sets options as `juju deploy --config key=value` does.
	Config map[string]string
	// Base places the units on machines of this base ("debian@12"), as `juju deploy --base`
	// does; it needs a BaseProvisioner offering it. Empty means the provisioner's default.
	Base string
}

// Deploy adds an application and its units, each on a new machine.
func (m *Model) Deploy(ctx context.Context, opts DeployOptions) ([]string, error) {
	if opts.Charm == "" {
		return nil, errors.New("cannot deploy: no charm given")
	}
	stage, charm, err := m.stageCharm(opts.Charm)
	if err != nil {
		return nil, fmt.Errorf("cannot deploy %s: %w", opts.Charm, err)
	}
	name := opts.Name
	if name == "" {
		name = charm.Name
	}
	if err := validAppName(name); err != nil {
		os.RemoveAll(stage)
		return nil, fmt.Errorf("cannot deploy: %w", err)
	}
	config := map[string]any{}
	for _, k := range sortedKeys(opts.Config) {
		v, err := charm.ParseOptionValue(k, opts.Config[k])
		if err != nil {
			os.RemoveAll(stage)
			return nil, fmt.Errorf("cannot deploy %s: %w", name, err)
		}
		config[k] = v
	}
	n := opts.Units
	if n == 0 && !charm.Subordinate {
		n = 1
	}
	if charm.Subordinate && n != 0 {
		os.RemoveAll(stage)
		return nil, fmt.Errorf("cannot deploy %s: subordinate application must be deployed without units", name)
	}
	if n < 0 {
		os.RemoveAll(stage)
		return nil, fmt.Errorf("cannot deploy %s: bad number of units %d", name, n)
	}
	if err := checkBase(m.opts.Machines, opts.Base); err != nil {
		os.RemoveAll(stage)
		return nil, fmt.Errorf("cannot deploy %s: %w", name, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		os.RemoveAll(stage)
		return nil, errors.New("cannot deploy: model is closed")
	}
	if _, ok := m.state.Applications[name]; ok {
		os.RemoveAll(stage)
		return nil, fmt.Errorf("cannot deploy: application %q already exists", name)
	}
	charmDir := filepath.Join(m.opts.Dir, "charms", name)
	os.RemoveAll(charmDir)
	os.MkdirAll(filepath.Dir(charmDir), 0o755)
	if err := os.Rename(filepath.Join(stage, "charm"), charmDir); err != nil {
		os.RemoveAll(stage)
		return nil, fmt.Errorf("cannot deploy: %w", err)
	}
	os.RemoveAll(stage)
	m.state.Applications[name] = &Application{
		Name: name, Charm: charm, CharmDir: charmDir, Config: config, ConfigVersion: 1, Base: opts.Base,
		Status: StatusInfo{Status: "unknown", Since: time.Now()},
	}
	for _, ep := range sortedKeys(charm.Peers) {
		id := m.state.NextRelation
		m.state.NextRelation++
		m.state.Relations[id] = &Relation{
			ID:        id,
			Endpoints: []RelationEndpoint{{App: name, Name: ep, Role: "peer", Interface: charm.Peers[ep].Interface}},
		}
	}
	m.state.fill()
	units := m.addUnits(name, n)
	if err := m.save(); err != nil {
		return nil, err
	}
	m.notify()
	m.progress("deployed %s (charm %s) with %d unit(s)", name, charm.Name, n)
	return units, nil
}

func validAppName(name string) error {
	if name == "" || strings.ContainsAny(name, "/: ") || name[0] < 'a' || name[0] > 'z' {
		return fmt.Errorf("invalid application name %q", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("invalid application name %q", name)
		}
	}
	return nil
}

// AddUnit adds n units to app, each on a new machine, and returns their names.
func (m *Model) AddUnit(ctx context.Context, app string, n int) ([]string, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cannot add units to %s: bad number of units %d", app, n)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.state.Applications[app]
	if !ok {
		return nil, fmt.Errorf("cannot add units: application %q not found", app)
	}
	if a.Dying {
		return nil, fmt.Errorf("cannot add units: application %q is being removed", app)
	}
	if a.Charm.Subordinate {
		return nil, fmt.Errorf("cannot add units to %s: a subordinate application's units come with its principal's", app)
	}
	units := m.addUnits(app, n)
	m.addSubordinates()
	if err := m.save(); err != nil {
		return nil, err
	}
	m.notify()
	return units, nil
}

// addSubordinates adds, for each live container-scoped relation between a principal and a
// subordinate application, a unit of the subordinate beside each live unit of the principal
// that has none yet, on the principal unit's machine (as Juju's state does when the relation
// enters scope); callers hold m.mu.
func (m *Model) addSubordinates() {
	for _, id := range slices.Sorted(maps.Keys(m.state.Relations)) {
		r := m.state.Relations[id]
		if r.Dying || r.isPeer() || !r.containerScoped() {
			continue
		}
		var sub, principal *Application
		for _, ep := range r.Endpoints {
			a := m.state.Applications[ep.App]
			if a == nil {
				continue
			}
			if a.Charm.Subordinate {
				sub = a
			} else {
				principal = a
			}
		}
		if sub == nil || principal == nil || sub.Dying {
			continue
		}
		for _, pname := range sortedKeys(m.state.Units) {
			p := m.state.Units[pname]
			if p.App != principal.Name || p.Dying {
				continue
			}
			has := false
			for _, u := range m.state.Units {
				if u.App == sub.Name && u.Principal == p.Name {
					has = true
				}
			}
			if !has {
				m.addUnit(sub.Name, p.Machine, p.Name)
			}
		}
	}
}

// subordinatesDie marks dying every subordinate unit that match selects; callers hold m.mu.
func (m *Model) subordinatesDie(match func(*Unit) bool) {
	for _, u := range m.state.Units {
		if u.Principal != "" && match(u) {
			u.Dying = true
		}
	}
}

// addUnits creates n units of app and starts their agents; callers hold m.mu.
func (m *Model) addUnits(app string, n int) []string {
	a := m.state.Applications[app]
	var names []string
	for i := 0; i < n; i++ {
		mid := strconv.Itoa(m.state.NextMachine)
		m.state.NextMachine++
		m.state.Machines[mid] = &MachineState{ID: mid, Unit: fmt.Sprintf("%s/%d", app, a.NextUnit), Status: "pending"}
		names = append(names, m.addUnit(app, mid, ""))
	}
	return names
}

// addUnit creates one unit of app on machine mid (a subordinate's principal is principal) and
// starts its agent; callers hold m.mu.
func (m *Model) addUnit(app, mid, principal string) string {
	a := m.state.Applications[app]
	now := time.Now()
	name := fmt.Sprintf("%s/%d", app, a.NextUnit)
	a.NextUnit++
	m.state.Units[name] = &Unit{
		Name: name, App: app, Machine: mid, Principal: principal,
		Workload: StatusInfo{Status: "waiting", Message: "waiting for machine", Since: now},
		Agent:    StatusInfo{Status: "allocating", Since: now},
		Seen:     UnitLocal{LeaderData: -1, Relations: map[int]*RelationLocal{}, Secrets: map[string]int{}, OwnerHooks: map[string]bool{}},
	}
	if a.Leader == "" {
		a.Leader = name
	}
	ag := newAgent(m, name, mid)
	m.agents[name] = ag
	go ag.run(m.ctx)
	return name
}

// RemoveUnit removes units: each leaves its relations, runs stop and remove, and its machine is
// destroyed.
func (m *Model) RemoveUnit(ctx context.Context, units ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range units {
		if _, ok := m.state.Units[name]; !ok {
			return fmt.Errorf("cannot remove unit: unit %q not found", name)
		}
	}
	for _, name := range units {
		m.state.Units[name].Dying = true
		m.subordinatesDie(func(sub *Unit) bool { return sub.Principal == name })
	}
	if err := m.save(); err != nil {
		return err
	}
	m.notify()
	return nil
}

// RemoveApplication removes app: its relations are broken on both sides and every unit is
// removed as RemoveUnit does.
func (m *Model) RemoveApplication(ctx context.Context, app string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.state.Applications[app]
	if !ok {
		return fmt.Errorf("cannot remove application: application %q not found", app)
	}
	a.Dying = true
	for _, u := range m.state.Units {
		if u.App == app {
			u.Dying = true
			m.subordinatesDie(func(sub *Unit) bool { return sub.Principal == u.Name })
		}
	}
	for _, r := range m.state.Relations {
		if _, ok := r.endpointOf(app); ok {
			r.Dying = true
		}
	}
	m.cleanup()
	if err := m.save(); err != nil {
		return err
	}
	m.notify()
	return nil
}

// Integrate relates two applications. Each argument is "app" or "app:endpoint"; endpoints are
// matched by interface, a provider with a requirer, as `juju integrate` does.
func (m *Model) Integrate(ctx context.Context, a, b string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	type cand struct {
		app, ep, role, iface, scope string
	}
	cands := func(arg string) ([]cand, error) {
		app, ep, _ := strings.Cut(arg, ":")
		ap, ok := m.state.Applications[app]
		if !ok {
			return nil, fmt.Errorf("application %q not found", app)
		}
		if ap.Dying {
			return nil, fmt.Errorf("application %q is being removed", app)
		}
		var out []cand
		for _, role := range []string{"provider", "requirer"} {
			eps := ap.Charm.Provides
			if role == "requirer" {
				eps = ap.Charm.Requires
			}
			for _, name := range sortedKeys(eps) {
				if ep == "" || ep == name {
					out = append(out, cand{app, name, role, eps[name].Interface, eps[name].Scope})
				}
			}
		}
		if ep != "" && len(out) == 0 {
			return nil, fmt.Errorf("application %q has no endpoint %q", app, ep)
		}
		return out, nil
	}
	ca, err := cands(a)
	if err != nil {
		return 0, fmt.Errorf("cannot integrate %s %s: %w", a, b, err)
	}
	cb, err := cands(b)
	if err != nil {
		return 0, fmt.Errorf("cannot integrate %s %s: %w", a, b, err)
	}
	var matches [][2]cand
	for _, x := range ca {
		for _, y := range cb {
			if x.iface == y.iface && x.role != y.role {
				matches = append(matches, [2]cand{x, y})
			}
		}
	}
	switch len(matches) {
	case 0:
		return 0, fmt.Errorf("cannot integrate %s %s: no relations found", a, b)
	case 1:
	default:
		var opts []string
		for _, p := range matches {
			opts = append(opts, p[0].app+":"+p[0].ep+" "+p[1].app+":"+p[1].ep)
		}
		return 0, fmt.Errorf("cannot integrate %s %s: ambiguous relation: could refer to %s", a, b, strings.Join(opts, "; "))
	}
	x, y := matches[0][0], matches[0][1]
	if x.app == y.app {
		return 0, fmt.Errorf("cannot integrate %s %s: an application cannot be related to itself (use a peer endpoint)", a, b)
	}
	if x.role == "requirer" {
		x, y = y, x
	}
	for _, r := range m.state.Relations {
		if len(r.Endpoints) == 2 && r.Endpoints[0].App == x.app && r.Endpoints[0].Name == x.ep && r.Endpoints[1].App == y.app && r.Endpoints[1].Name == y.ep && !r.Dying {
			return 0, fmt.Errorf("cannot integrate %s %s: relation %s already exists", a, b, r.key())
		}
	}
	for _, c := range []cand{x, y} {
		if err := m.checkLimit(c.app, c.ep, 1); err != nil {
			return 0, fmt.Errorf("cannot add relation \"%s:%s %s:%s\": %w", x.app, x.ep, y.app, y.ep, err)
		}
	}
	id := m.state.NextRelation
	m.state.NextRelation++
	m.state.Relations[id] = &Relation{
		ID: id,
		Endpoints: []RelationEndpoint{
			{App: x.app, Name: x.ep, Role: x.role, Interface: x.iface, Scope: x.scope},
			{App: y.app, Name: y.ep, Role: y.role, Interface: y.iface, Scope: y.scope},
		},
	}
	m.state.fill()
	m.addSubordinates()
	if err := m.save(); err != nil {
		return 0, err
	}
	m.notify()
	m.progress("integrated %s:%s %s:%s (relation %d)", x.app, x.ep, y.app, y.ep, id)
	return id, nil
}

// ErrQuotaLimitExceeded is wrapped by the error of an integrate that would exceed an
// endpoint's limit.
var ErrQuotaLimitExceeded = errors.New("quota limit exceeded")

// checkLimit refuses adding more relations on app's endpoint beyond its charm's limit, counting
// every relation on that endpoint, dying ones included, as Juju's state does
// (state/relation.go, establishedRelationCount); callers hold m.mu.
func (m *Model) checkLimit(app, endpoint string, adding int) error {
	a := m.state.Applications[app]
	ep, _, ok := a.Charm.endpoint(endpoint)
	if !ok || ep.Limit <= 0 {
		return nil
	}
	n := 0
	for _, r := range m.state.Relations {
		if e, ok := r.endpointOf(app); ok && e.Name == endpoint && !r.isPeer() {
			n++
		}
	}
	if n+adding > ep.Limit {
		return fmt.Errorf("establishing a new relation for %s:%s would exceed its maximum relation limit of %d (%w)", app, endpoint, ep.Limit, ErrQuotaLimitExceeded)
	}
	return nil
}

// RemoveRelation removes the relation between two applications (`juju remove-relation`).
func (m *Model) RemoveRelation(ctx context.Context, a, b string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	appA, epA, _ := strings.Cut(a, ":")
	appB, epB, _ := strings.Cut(b, ":")
	var found []*Relation
	for _, r := range m.state.Relations {
		if r.isPeer() || r.Dying {
			continue
		}
		ea, okA := r.endpointOf(appA)
		eb, okB := r.endpointOf(appB)
		if okA && okB && (epA == "" || epA == ea.Name) && (epB == "" || epB == eb.Name) {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		return fmt.Errorf("cannot remove relation %s %s: %d relations match", a, b, len(found))
	}
	found[0].Dying = true
	if r := found[0]; r.containerScoped() {
		// A subordinate unit lives by its container relation with its principal.
		m.subordinatesDie(func(sub *Unit) bool {
			_, ok := r.endpointOf(sub.App)
			p := m.state.Units[sub.Principal]
			if !ok || p == nil {
				return false
			}
			_, ok = r.endpointOf(p.App)
			return ok
		})
	}
	m.cleanup()
	if err := m.save(); err != nil {
		return err
	}
	m.notify()
	return nil
}

// ConfigValues returns app's effective config: set values and defaults (options with neither
// are left out).
func (m *Model) ConfigValues(app string) (map[string]any, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.state.Applications[app]
	if !ok {
		return nil, fmt.Errorf("application %q not found", app)
	}
	return effectiveConfig(a), nil
}

func effectiveConfig(a *Application) map[string]any {
	out := map[string]any{}
	for name, o := range a.Charm.Options {
		if v, ok := a.Config[name]; ok {
			out[name] = v
		} else if o.Default != nil {
			out[name] = o.Default
		}
	}
	return out
}

// SetConfig sets options (key=value strings converted to each option's type) and resets those
// in reset to their defaults; config-changed runs on every unit when anything changed.
func (m *Model) SetConfig(ctx context.Context, app string, set map[string]string, reset []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.state.Applications[app]
	if !ok {
		return fmt.Errorf("cannot set config: application %q not found", app)
	}
	before := fmt.Sprint(effectiveConfig(a))
	next := map[string]any{}
	for k, v := range a.Config {
		next[k] = v
	}
	for _, k := range reset {
		if _, ok := a.Charm.Options[k]; !ok {
			return fmt.Errorf("cannot reset config of %s: unknown option %q", app, k)
		}
		delete(next, k)
	}
	for _, k := range sortedKeys(set) {
		v, err := a.Charm.ParseOptionValue(k, set[k])
		if err != nil {
			return fmt.Errorf("cannot set config of %s: %w", app, err)
		}
		next[k] = v
	}
	a.Config = next
	if fmt.Sprint(effectiveConfig(a)) != before {
		a.ConfigVersion++
	}
	if err := m.save(); err != nil {
		return err
	}
	m.notify()
	return nil
}

// Resolve clears a unit's error; with retry the failed hook runs again, without it the hook is
// skipped (`juju resolve --no-retry`).
func (m *Model) Resolve(ctx context.Context, unit string, retry bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.state.Units[unit]
	if !ok {
		return fmt.Errorf("cannot resolve: unit %q not found", unit)
	}
	if u.Failed == nil {
		return fmt.Errorf("cannot resolve %s: unit is not in an error state", unit)
	}
	// The agent replays the hook at once (Juju's uniter, asked to retry-hooks); with no-hooks
	// it commits the hook without running it (a skip operation) and goes on.
	u.Resolved = "retry-hooks"
	a := m.agents[unit]
	if !retry {
		u.Resolved = "no-hooks"
		u.Failed.advance(m.state, u)
		u.Failed = nil
		if a != nil {
			u.Seen.UpdateStatus = a.ticks
		}
	}
	u.Agent = StatusInfo{Status: "idle", Since: time.Now()}
	if a != nil {
		a.retryDelay, a.retry = 0, nil
	}
	if err := m.save(); err != nil {
		return err
	}
	m.notify()
	return nil
}

// Exec runs argv on unit's machine (`juju exec --unit`), copying its output, and returns its
// exit code.
func (m *Model) Exec(ctx context.Context, unit string, argv []string, stdout, stderr io.Writer) (int, error) {
	if len(argv) == 0 {
		return 0, errors.New("cannot exec: no command given")
	}
	m.mu.Lock()
	a := m.agents[unit]
	var mach Machine
	if a != nil {
		mach = a.machine
	}
	m.mu.Unlock()
	if mach == nil {
		return 0, fmt.Errorf("cannot exec on %s: unit not found or its machine is not ready", unit)
	}
	cmd := mach.Command(ctx, "", argv)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) && ee.ExitCode() >= 0 {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("cannot exec on %s: %w", unit, err)
	}
	return 0, nil
}

// cleanup removes what is finished: dead relations (no unit still in them), and the grants made
// through them, and dying applications without units. Callers hold m.mu.
func (m *Model) cleanup() {
	for id, r := range m.state.Relations {
		if !r.Dying {
			continue
		}
		inUse := false
		for _, u := range m.state.Units {
			if rl := u.Seen.Relations[id]; rl != nil && !rl.Broken {
				inUse = true
			}
		}
		if inUse {
			continue
		}
		delete(m.state.Relations, id)
		for _, u := range m.state.Units {
			delete(u.Seen.Relations, id)
		}
		for _, sec := range m.state.Secrets {
			var keep []SecretGrant
			for _, g := range sec.Grants {
				if g.RelationID != id {
					keep = append(keep, g)
				}
			}
			sec.Grants = keep
		}
	}
	for name, a := range m.state.Applications {
		if !a.Dying {
			continue
		}
		left := false
		for _, u := range m.state.Units {
			if u.App == name {
				left = true
			}
		}
		if left {
			continue
		}
		stillRelated := false
		for _, r := range m.state.Relations {
			if _, ok := r.endpointOf(name); ok {
				stillRelated = true
			}
		}
		if !stillRelated {
			delete(m.state.Applications, name)
			os.RemoveAll(a.CharmDir)
			for id, sec := range m.state.Secrets {
				if sec.OwnerApp == name {
					delete(m.state.Secrets, id)
				}
			}
		}
	}
}

// MoveLeader gives unit's application leadership to unit, as Juju does when the leader's
// agent stops renewing its lease (its machine cut off, its agent restarted) and another unit
// claims it: the former leader resigns without a hook at its next resolver pass and gets
// leader-settings-changed like any other unit; unit accepts the leadership (leader-elected)
// once nothing is queued or failed.
func (m *Model) MoveLeader(ctx context.Context, unit string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.state.Units[unit]
	if !ok {
		return fmt.Errorf("cannot move leadership: unit %q not found", unit)
	}
	if u.Dying {
		return fmt.Errorf("cannot move leadership: unit %q is being removed", unit)
	}
	a := m.state.Applications[u.App]
	if a.Leader == unit {
		return nil
	}
	a.Leader = unit
	m.progress("%s: elected leader of %s (leadership moved)", unit, u.App)
	if err := m.save(); err != nil {
		return err
	}
	m.notify()
	return nil
}

// electLeader picks a new leader for app if it has none; callers hold m.mu.
func (m *Model) electLeader(app string) {
	a := m.state.Applications[app]
	if a == nil {
		return
	}
	if u, ok := m.state.Units[a.Leader]; ok && u.App == app {
		return
	}
	a.Leader = ""
	var cands []string
	for _, u := range m.state.Units {
		if u.App == app && !u.Dying {
			cands = append(cands, u.Name)
		}
	}
	sort.Slice(cands, func(i, j int) bool { return unitNumber(cands[i]) < unitNumber(cands[j]) })
	if len(cands) > 0 {
		a.Leader = cands[0]
		m.progress("%s: elected leader of %s", cands[0], app)
	}
}

func unitNumber(name string) int {
	_, n, _ := strings.Cut(name, "/")
	i, _ := strconv.Atoi(n)
	return i
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newSecretID returns "secret:" and 20 lowercase base32hex characters, like Juju's xid ids.
func newSecretID() string {
	var b [12]byte
	rand.Read(b[:])
	return "secret:" + strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

func randomSuffix() string {
	var b [4]byte
	rand.Read(b[:])
	return strconv.FormatUint(uint64(b[0])<<24|uint64(b[1])<<16|uint64(b[2])<<8|uint64(b[3]), 10)
}

func (m *Model) requestDestroy() { m.destroyOnce.Do(func() { close(m.destroyReq) }) }

type syncWaitGroup struct{ sync.WaitGroup }
