package servicetest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/servicetest"
)

// TestManager: the fake keeps the Manager contract as the Pebble backend does (unknown
// services, idempotent start and stop, restart of a running service) and runs the test's
// start and stop effects.
func TestManager(t *testing.T) {
	ctx := context.Background()
	spec := service.Spec{Name: "d", Command: []string{"/usr/sbin/d", "-D"}}
	tests := []struct {
		name       string
		do         func(m *servicetest.Manager) error
		wantErr    error // errors.Is
		wantActive bool
		wantCalls  []string
		wantEvents []string
	}{{
		name:      "unknown service",
		do:        func(m *servicetest.Manager) error { return m.Start(ctx, "d") },
		wantErr:   service.ErrUnknownService,
		wantCalls: []string{"start d"},
	}, {
		name: "start twice starts once",
		do: func(m *servicetest.Manager) error {
			_ = m.Configure(ctx, spec)
			_ = m.Spawn(ctx, "d")
			return m.Start(ctx, "d")
		},
		wantActive: true,
		wantCalls:  []string{"configure d", "spawn d", "start d"},
		wantEvents: []string{"start /usr/sbin/d"},
	}, {
		name: "respawn stops then starts",
		do: func(m *servicetest.Manager) error {
			_ = m.Configure(ctx, spec)
			_ = m.Start(ctx, "d")
			return m.Respawn(ctx, "d")
		},
		wantActive: true,
		wantCalls:  []string{"configure d", "start d", "respawn d"},
		wantEvents: []string{"start /usr/sbin/d", "stop /usr/sbin/d", "start /usr/sbin/d"},
	}, {
		name: "failing start",
		do: func(m *servicetest.Manager) error {
			_ = m.Configure(ctx, spec)
			m.FailStarts(errBoom)
			return m.Restart(ctx, "d")
		},
		wantErr:   errBoom,
		wantCalls: []string{"configure d", "restart d"},
	}, {
		name: "dead supervisor",
		do: func(m *servicetest.Manager) error {
			_ = m.Configure(ctx, spec)
			_ = m.Start(ctx, "d")
			m.Kill(errBoom)
			if _, err := m.Status(ctx, "d"); !errors.Is(err, errBoom) {
				return err
			}
			return m.Stop(ctx, "d")
		},
		wantErr:    errBoom,
		wantActive: true,
		wantCalls:  []string{"configure d", "start d", "stop d"},
		wantEvents: []string{"start /usr/sbin/d"},
	}, {
		name: "process exits",
		do: func(m *servicetest.Manager) error {
			_ = m.Configure(ctx, spec)
			_ = m.Start(ctx, "d")
			m.Exit("d")
			st, err := m.Status(ctx, "d")
			if st.State != service.StateInactive {
				return errors.New("still active")
			}
			return err
		},
		wantCalls:  []string{"configure d", "start d"},
		wantEvents: []string{"start /usr/sbin/d", "stop /usr/sbin/d"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := servicetest.New()
			var events []string
			m.OnStart(func(s service.Spec) (bool, error) { events = append(events, "start "+s.Command[0]); return true, nil })
			m.OnStop(func(s service.Spec) { events = append(events, "stop "+s.Command[0]) })
			err := tt.do(m)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if m.Active("d") != tt.wantActive {
				t.Errorf("active %v, want %v", m.Active("d"), tt.wantActive)
			}
			if d := cmp.Diff(tt.wantCalls, m.Calls()); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantEvents, events); d != "" {
				t.Errorf("start/stop effects (-want +got):\n%s", d)
			}
		})
	}
}

// A start whose process exits at once leaves the service inactive without an error.
func TestManagerProcessExitsAfterStart(t *testing.T) {
	ctx := context.Background()
	m := servicetest.New()
	m.OnStart(func(service.Spec) (bool, error) { return false, nil })
	if err := m.Configure(ctx, service.Spec{Name: "d", Command: []string{"/bin/false"}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Spawn(ctx, "d"); err != nil || m.Active("d") || m.Count("spawn d") != 1 {
		t.Errorf("spawn: %v, active %v, calls %q", err, m.Active("d"), m.Calls())
	}
}

var errBoom = errors.New("boom")
