package slurm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

// hanging is a runner whose commands hang until their context ends, as Slurm's clients do
// with an unreachable controller; its error is command.Exec's for a cancelled command.
type hanging struct{}

func (hanging) Run(ctx context.Context, argv, env []string) (command.Output, error) {
	<-ctx.Done()
	return command.Output{}, ctx.Err()
}

// TestCommandTimeout: every command carries the client's timeout; a controller command that
// times out is an unreachable controller, a local one a plain timeout; the caller's own
// cancellation is neither.
func TestCommandTimeout(t *testing.T) {
	t.Parallel()
	c := &slurm.Client{Runner: hanging{}, Conf: conf, Timeout: 5 * time.Millisecond}
	ctx := context.Background()
	for _, tt := range []struct {
		name        string
		call        func(context.Context) error
		unreachable bool
	}{
		{"show node", func(ctx context.Context) error { _, err := c.ShowNode(ctx, "node1"); return err }, true},
		{"ping", func(ctx context.Context) error { _, err := c.Ping(ctx); return err }, true},
		{"delete", func(ctx context.Context) error { return c.DeleteNode(ctx, "node1") }, true},
		{"slurmd -V", func(ctx context.Context) error { _, err := c.SlurmdVersion(ctx); return err }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.call(ctx)
			if !errors.Is(err, command.ErrTimeout) || errors.Is(err, slurm.ErrControllerUnreachable) != tt.unreachable {
				t.Errorf("got %v, want a timeout (unreachable controller: %v)", err, tt.unreachable)
			}
		})
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.ShowNode(cancelled, "node1"); !errors.Is(err, context.Canceled) || errors.Is(err, command.ErrTimeout) {
		t.Errorf("cancelled by the caller: %v", err)
	}
}

// TestDefaultTimeout: a zero Timeout still bounds commands (DefaultTimeout), passed to the
// runner as the context's deadline.
func TestDefaultTimeout(t *testing.T) {
	t.Parallel()
	var deadline time.Time
	r := &slurmtest.Runner{}
	r.Expect(slurmtest.Real("reconfigure"))
	c := &slurm.Client{Runner: runnerFunc(func(ctx context.Context, argv, env []string) (command.Output, error) {
		deadline, _ = ctx.Deadline()
		return r.Run(ctx, argv, env)
	}), Conf: conf}
	start := time.Now()
	if err := c.Reconfigure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if deadline.IsZero() || deadline.Sub(start) > slurm.DefaultTimeout+time.Second {
		t.Errorf("deadline %v after start, want about %v", deadline.Sub(start), slurm.DefaultTimeout)
	}
}

type runnerFunc func(ctx context.Context, argv, env []string) (command.Output, error)

func (f runnerFunc) Run(ctx context.Context, argv, env []string) (command.Output, error) {
	return f(ctx, argv, env)
}
