package bench_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/pebble"
	"github.com/charmed-slurm/operators/tests/bench"
)

// TestFakePebble drives the fake with the real Pebble client the operators use.
func TestFakePebble(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "pebble.socket")
	p, err := bench.StartFakePebble(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m, err := pebble.New(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.Start(ctx, "slurmd"); !errors.Is(err, service.ErrUnknownService) {
		t.Errorf("Start of an unknown service: %v, want ErrUnknownService", err)
	}
	if err := m.Configure(ctx, service.Spec{Name: "slurmd", Command: []string{"slurmd", "-D"}}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func() error
		want service.Status
	}{
		{"configured", func() error { return nil }, service.Status{Name: "slurmd", State: service.StateInactive}},
		{"enabled", func() error { return m.Enable(ctx, "slurmd") }, service.Status{Name: "slurmd", State: service.StateInactive, Enabled: true}},
		{"started", func() error { return m.Start(ctx, "slurmd") }, service.Status{Name: "slurmd", State: service.StateActive, Enabled: true}},
		{"restarted", func() error { return m.Restart(ctx, "slurmd") }, service.Status{Name: "slurmd", State: service.StateActive, Enabled: true}},
		{"stopped", func() error { return m.Stop(ctx, "slurmd") }, service.Status{Name: "slurmd", State: service.StateInactive, Enabled: true}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		st, err := m.Status(ctx, "slurmd")
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		st.Since = st.Since.UTC().Truncate(0)
		if st.Name != s.want.Name || st.State != s.want.State || st.Enabled != s.want.Enabled || st.Since.IsZero() {
			t.Errorf("%s: status %+v, want %+v", s.name, st, s.want)
		}
	}
}
