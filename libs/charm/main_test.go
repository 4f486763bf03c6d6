package charm_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/auto"
)

// tools answers every hook tool with success.
type tools struct{ calls [][]string }

func (r *tools) Run(_ context.Context, c juju.Command) (juju.Result, error) {
	r.calls = append(r.calls, c.Args)
	return juju.Result{}, nil
}

func TestRun(t *testing.T) {
	t.Parallel()
	env := juju.Event{Kind: juju.Start, Name: "start", Unit: "c/0", App: "c", Model: "m", CharmDir: "/x", ContextID: "c/0-start-1"}.Env()
	boom := errors.New("boom")
	for _, tt := range []struct {
		name     string
		env      map[string]string
		setupErr error
		hookErr  error
		want     int
		released bool
	}{
		{name: "success", env: env, want: 0, released: true},
		{name: "hook error", env: env, hookErr: boom, want: 1, released: true},
		{name: "setup error", env: env, setupErr: boom, want: 1},
		{name: "no event", env: map[string]string{}, want: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			released := false
			var stderr bytes.Buffer
			code := charm.Run(context.Background(), juju.EnvMap(tt.env), &tools{}, &stderr, func(ev juju.Event) (juju.Handler, func(), error) {
				if tt.setupErr != nil {
					return nil, nil, tt.setupErr
				}
				return func(context.Context, *juju.HookContext) error { return tt.hookErr }, func() { released = true }, nil
			})
			if code != tt.want || released != tt.released {
				t.Errorf("code %d released %v, want %d %v (stderr %q)", code, released, tt.want, tt.released, stderr.String())
			}
		})
	}
}

// WithServices hands build the manager auto.Detect picks (Pebble, where a socket listens at
// the path the environment gives) and runs the handler build returns.
func TestWithServices(t *testing.T) {
	t.Parallel()
	socket := filepath.Join(t.TempDir(), ".pebble.socket")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	env := juju.Event{Kind: juju.Start, Name: "start", Unit: "c/0", App: "c", Model: "m", CharmDir: "/x", ContextID: "c/0-start-1"}.Env()
	env["PEBBLE_SOCKET"] = socket
	var got *auto.Manager
	ran := false
	setup := charm.WithServices(juju.EnvMap(env), func(ev juju.Event, services *auto.Manager) juju.Handler {
		got = services
		return func(context.Context, *juju.HookContext) error { ran = true; return nil }
	})
	var stderr bytes.Buffer
	if code := charm.Run(context.Background(), juju.EnvMap(env), &tools{}, &stderr, setup); code != 0 {
		t.Fatalf("exit code %d (stderr %q)", code, stderr.String())
	}
	if !ran {
		t.Error("the handler build returned did not run")
	}
	if got == nil || got.Backend != service.Pebble || got.Socket != socket {
		t.Errorf("build got %+v, want the Pebble manager on %s", got, socket)
	}
}
