// Package auto gives an operator the host's service manager without choosing it: [Detect]
// finds the backend (service.Detect: a Pebble socket means Pebble, anything else systemd)
// and returns a [Manager] that connects to it on first use, so hooks that manage no
// service never pay for (or fail on) the connection.
//
//	m := auto.Detect(os.LookupEnv)
//	defer m.Close()
//	err := m.Configure(ctx, service.Spec{Name: "slurmd", Command: argv})
//	err = m.Spawn(ctx, "slurmd")
package auto

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/pebble"
	"github.com/charmed-slurm/operators/libs/service/systemd"
)

// ConnectTimeout bounds the connection to systemd's bus.
const ConnectTimeout = 30 * time.Second

// Manager is a service.Manager that connects to Backend on first use.
type Manager struct {
	// Backend is the service manager to use.
	Backend service.Backend
	// Socket is Pebble's socket (Backend Pebble).
	Socket string

	once    sync.Once
	m       service.Manager
	err     error
	closeFn func()
	// ahead is closed when the connection Connect started has been made or has failed.
	ahead chan struct{}
}

var (
	_ service.Manager = (*Manager)(nil)
	_ service.Definer = (*Manager)(nil)
)

// Detect returns a Manager for the backend service.Detect finds (lookupEnv is os.LookupEnv
// in production; files are checked with os.Stat).
func Detect(lookupEnv func(string) (string, bool)) *Manager {
	b, socket := service.Detect(lookupEnv, os.Stat)
	return &Manager{Backend: b, Socket: socket}
}

// Connect starts the connection to the service manager in the background, so that a hook
// that will manage a service can make it while it waits on something else (a new node's
// relation hook reads the relation and the key's secret first: on a machine the connection
// to systemd, a socket, its authentication and a Hello through dbus-daemon, is no longer
// on the join's path). The first method called waits for it; an error is that method's.
// Close waits for it too, so no connection is left being made when the hook ends. Call it
// at most once, before Close, from the goroutine that calls Close.
func (m *Manager) Connect(ctx context.Context) {
	if m.ahead != nil {
		return
	}
	m.ahead = make(chan struct{})
	go func() {
		defer close(m.ahead)
		m.get(ctx)
	}()
}

// Close closes the connection to systemd, if one was made.
func (m *Manager) Close() {
	if m.ahead != nil {
		<-m.ahead
	}
	if m.closeFn != nil {
		m.closeFn()
		m.closeFn = nil
	}
}

func (m *Manager) get(ctx context.Context) (service.Manager, error) {
	m.once.Do(func() {
		switch m.Backend {
		case service.Pebble:
			m.m, m.err = pebble.New(m.Socket)
		default:
			cctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
			defer cancel()
			sm, conn, err := systemd.New(cctx)
			if err == nil {
				m.m, m.closeFn = sm, conn.Close
			}
			m.err = err
		}
		if m.err != nil {
			m.err = fmt.Errorf("cannot connect to the service manager (%s): %w", m.Backend, m.err)
		}
	})
	return m.m, m.err
}

// do runs f with the connected manager.
func (m *Manager) do(ctx context.Context, f func(service.Manager) error) error {
	sm, err := m.get(ctx)
	if err != nil {
		return err
	}
	return f(sm)
}

// Configure implements service.Manager.
func (m *Manager) Configure(ctx context.Context, spec service.Spec) error {
	return m.do(ctx, func(sm service.Manager) error { return sm.Configure(ctx, spec) })
}

// Define implements service.Definer: the backend's Define, if it has one.
func (m *Manager) Define(ctx context.Context, spec service.Spec) error {
	return m.do(ctx, func(sm service.Manager) error { return service.Define(ctx, sm, spec) })
}

// Enable implements service.Manager.
func (m *Manager) Enable(ctx context.Context, name string) error {
	return m.do(ctx, func(sm service.Manager) error { return sm.Enable(ctx, name) })
}

// Disable implements service.Manager.
func (m *Manager) Disable(ctx context.Context, name string) error {
	return m.do(ctx, func(sm service.Manager) error { return sm.Disable(ctx, name) })
}

// Start implements service.Manager.
func (m *Manager) Start(ctx context.Context, name string) error {
	return m.do(ctx, func(sm service.Manager) error { return sm.Start(ctx, name) })
}

// Stop implements service.Manager.
func (m *Manager) Stop(ctx context.Context, name string) error {
	return m.do(ctx, func(sm service.Manager) error { return sm.Stop(ctx, name) })
}

// Restart implements service.Manager.
func (m *Manager) Restart(ctx context.Context, name string) error {
	return m.do(ctx, func(sm service.Manager) error { return sm.Restart(ctx, name) })
}

// Spawn implements service.Manager.
func (m *Manager) Spawn(ctx context.Context, name string) error {
	return m.do(ctx, func(sm service.Manager) error { return sm.Spawn(ctx, name) })
}

// Respawn implements service.Manager.
func (m *Manager) Respawn(ctx context.Context, name string) error {
	return m.do(ctx, func(sm service.Manager) error { return sm.Respawn(ctx, name) })
}

// Status implements service.Manager.
func (m *Manager) Status(ctx context.Context, name string) (service.Status, error) {
	var st service.Status
	err := m.do(ctx, func(sm service.Manager) (err error) { st, err = sm.Status(ctx, name); return err })
	return st, err
}
