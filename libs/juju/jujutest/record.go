package jujutest

import (
	"context"
	"sync"

	"github.com/charmed-slurm/operators/libs/juju"
)

// Tools runs ev like Run and also returns the name of every hook tool h ran, in order: for
// tests of which tools a hook needs (a charm that keeps what it read runs fewer).
func Tools(t TB, in State, ev juju.Event, h juju.Handler) (State, []string, error) {
	t.Helper()
	rec := &recorder{}
	out, err := Run(t, in, ev, func(ctx context.Context, hc *juju.HookContext) error {
		rec.next = hc.Runner
		return h(ctx, juju.NewHookContext(hc.Event, rec))
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return out, rec.names, err
}

// recorder runs hook tools through next, noting their names; it is safe for concurrent use
// (a hook may run tools side by side: juju.Leadership.Ask).
type recorder struct {
	next  juju.Runner
	mu    sync.Mutex
	names []string
}

func (r *recorder) Run(ctx context.Context, cmd juju.Command) (juju.Result, error) {
	r.mu.Lock()
	r.names = append(r.names, cmd.Args[0])
	r.mu.Unlock()
	return r.next.Run(ctx, cmd)
}
