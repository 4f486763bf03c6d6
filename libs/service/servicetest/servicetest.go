// Package servicetest is a service.Manager in memory for unit tests of code that runs
// daemons through package service (both charms).
//
// [Manager] behaves as the Pebble backend does: every method but Configure needs the
// service configured first (else an error wrapping service.ErrUnknownService); Start of a
// running service and Stop of a stopped one change nothing; Restart and Respawn stop a
// running service and start it again. It records every call but Status as "verb name"
// ("configure munged", "respawn slurmd"), in order. A test gives the daemons their effect
// with OnStart and OnStop (a started slurmd registers its node with a fake controller),
// makes starts fail (FailStarts), a process exit (Exit) or the supervisor die (Kill):
//
//	m := servicetest.New()
//	m.OnStart(func(spec service.Spec) (bool, error) { return true, cluster.Register(...) })
//	c := &Charm{Services: m}
//	... run a hook ...
//	if d := cmp.Diff([]string{"configure slurmd", "enable slurmd", "spawn slurmd"}, m.Calls()); d != "" { ... }
package servicetest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/charmed-slurm/operators/libs/service"
)

// Manager is a service.Manager in memory. Safe for concurrent use.
type Manager struct {
	mu      sync.Mutex
	specs   map[string]service.Spec
	active  map[string]bool
	enabled map[string]bool
	calls   []string
	onStart func(spec service.Spec) (bool, error)
	onStop  func(spec service.Spec)
	// startErr fails every start; dead fails every call (the supervisor is gone).
	startErr, dead error
}

var _ service.Manager = (*Manager)(nil)

// New returns a manager with no service.
func New() *Manager {
	return &Manager{specs: map[string]service.Spec{}, active: map[string]bool{}, enabled: map[string]bool{}}
}

// OnStart sets what starting a service does besides marking it active: f gets the
// service's definition and reports whether its process keeps running (false: it exits
// right after a start the supervisor reported done) or the error the start fails with. f
// runs with the manager locked: it must not call the manager.
func (m *Manager) OnStart(f func(spec service.Spec) (running bool, err error)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onStart = f
}

// OnStop sets what stopping a running service (or its process exiting, Exit) does; f runs
// with the manager locked.
func (m *Manager) OnStop(f func(spec service.Spec)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onStop = f
}

// FailStarts makes every start fail with err (a process that exits at once); nil lets
// starts succeed again.
func (m *Manager) FailStarts(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.startErr = err
}

// Kill makes the supervisor unreachable: every call, Configure included, fails with err
// (nil brings it back). The services' processes are left as they were.
func (m *Manager) Kill(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dead = err
}

// Exit ends service name's process, as a crash or a reboot does: the service is inactive,
// OnStop runs; the definition stays.
func (m *Manager) Exit(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stop(name)
}

// Calls are the calls made so far ("verb name"), in order.
func (m *Manager) Calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// ResetCalls forgets the calls made so far.
func (m *Manager) ResetCalls() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = nil
}

// Count is the number of calls equal to call ("restart munged").
func (m *Manager) Count(call string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.calls {
		if c == call {
			n++
		}
	}
	return n
}

// Active reports whether service name runs.
func (m *Manager) Active(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.active[name]
}

// Command is service name's command as last configured.
func (m *Manager) Command(name string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.specs[name].Command)
}

// record records the call and checks that the supervisor answers and knows name.
func (m *Manager) record(verb, name string) error {
	m.calls = append(m.calls, verb+" "+name)
	if m.dead != nil {
		return m.dead
	}
	if _, ok := m.specs[name]; !ok {
		return fmt.Errorf("cannot %s %q: %w", verb, name, service.ErrUnknownService)
	}
	return nil
}

func (m *Manager) start(name string) error {
	if m.startErr != nil {
		return m.startErr
	}
	running := true
	if m.onStart != nil {
		var err error
		if running, err = m.onStart(m.specs[name]); err != nil {
			return err
		}
	}
	m.active[name] = running
	return nil
}

func (m *Manager) stop(name string) {
	if m.active[name] && m.onStop != nil {
		m.onStop(m.specs[name])
	}
	m.active[name] = false
}

// Configure implements service.Manager.
func (m *Manager) Configure(ctx context.Context, spec service.Spec) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, "configure "+spec.Name)
	if m.dead != nil {
		return m.dead
	}
	if err := spec.Validate(); err != nil {
		return err
	}
	m.specs[spec.Name] = spec
	return nil
}

// Enable implements service.Manager.
func (m *Manager) Enable(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.record("enable", name); err != nil {
		return err
	}
	m.enabled[name] = true
	return nil
}

// Disable implements service.Manager.
func (m *Manager) Disable(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.record("disable", name); err != nil {
		return err
	}
	m.enabled[name] = false
	return nil
}

// Start implements service.Manager.
func (m *Manager) Start(ctx context.Context, name string) error { return m.startOnce(name, "start") }

// Spawn implements service.Manager: Start, as the fake has no stay-up check to skip.
func (m *Manager) Spawn(ctx context.Context, name string) error { return m.startOnce(name, "spawn") }

// Restart implements service.Manager.
func (m *Manager) Restart(ctx context.Context, name string) error { return m.restart(name, "restart") }

// Respawn implements service.Manager: Restart (see Spawn).
func (m *Manager) Respawn(ctx context.Context, name string) error { return m.restart(name, "respawn") }

func (m *Manager) startOnce(name, verb string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.record(verb, name); err != nil {
		return err
	}
	if m.active[name] {
		return nil
	}
	return m.start(name)
}

func (m *Manager) restart(name, verb string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.record(verb, name); err != nil {
		return err
	}
	m.stop(name)
	return m.start(name)
}

// Stop implements service.Manager.
func (m *Manager) Stop(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.record("stop", name); err != nil {
		return err
	}
	m.stop(name)
	return nil
}

// Status implements service.Manager; it is not recorded.
func (m *Manager) Status(ctx context.Context, name string) (service.Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead != nil {
		return service.Status{}, m.dead
	}
	if _, ok := m.specs[name]; !ok {
		return service.Status{}, fmt.Errorf("cannot get status of %q: %w", name, service.ErrUnknownService)
	}
	st := service.StateInactive
	if m.active[name] {
		st = service.StateActive
	}
	return service.Status{Name: name, State: st, Enabled: m.enabled[name]}, nil
}
