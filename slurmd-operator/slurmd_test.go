package main

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/servicetest"
)

// TestSlurmdStartEnablesBeforeReady: slurmd is defined and enabled at boot before the wait
// for what it needs (munged answering), so that enabling runs beside munged's start, and
// started only after it; a first start the wait refuses is not left enabled at boot, a
// restart's enabling is left alone, and nothing starts.
func TestSlurmdStartEnablesBeforeReady(t *testing.T) {
	t.Parallel()
	refused := errors.New("munged does not answer")
	for _, tt := range []struct {
		name     string
		restart  bool
		atBoot   bool
		readyErr error
		want     []string
	}{
		{name: "first start", atBoot: true,
			want: []string{"configure slurmd", "enable slurmd", "ready", "spawn slurmd"}},
		{name: "first start, staged node-config", atBoot: false,
			want: []string{"configure slurmd", "disable slurmd", "ready", "spawn slurmd"}},
		{name: "restart", restart: true, atBoot: true,
			want: []string{"configure slurmd", "enable slurmd", "ready", "respawn slurmd"}},
		{name: "first start, not ready: enabling undone", atBoot: true, readyErr: refused,
			want: []string{"configure slurmd", "enable slurmd", "ready", "disable slurmd"}},
		{name: "restart, not ready: enabling kept", restart: true, atBoot: true, readyErr: refused,
			want: []string{"configure slurmd", "enable slurmd", "ready"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := servicetest.New()
			var mu sync.Mutex
			var calls []string
			record := func() {
				mu.Lock()
				defer mu.Unlock()
				calls = append(svc.Calls(), "ready")
			}
			d := slurmdDaemon{c: &Charm{Services: svc}, node: node,
				logf:  func(context.Context, juju.LogLevel, string, ...any) {},
				ready: func() error { record(); return tt.readyErr }}
			spec := service.Spec{Name: SlurmdService, Command: []string{SlurmdPath, "-D"}}
			err := d.start(context.Background(), spec, tt.restart, tt.atBoot)
			if !errors.Is(err, tt.readyErr) {
				t.Fatalf("got %v, want %v", err, tt.readyErr)
			}
			mu.Lock()
			got := append(calls, svc.Calls()[len(calls)-1:]...)
			mu.Unlock()
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
			if tt.readyErr != nil && svc.Active(SlurmdService) {
				t.Error("slurmd started although not ready")
			}
		})
	}
}
