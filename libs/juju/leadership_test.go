package juju_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/charmed-slurm/operators/libs/juju"
)

// TestLeadershipAsk: after Ask, IsLeader on the value and on copies made after Ask gives the
// answer of the one is-leader Ask started, its error too; a second Ask runs nothing; Wait
// returns once the tool ended; without Ask, each IsLeader runs is-leader.
func TestLeadershipAsk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		res    juju.Result
		err    error
		leader bool
		fail   bool
	}{
		{name: "leader", res: juju.Result{Stdout: []byte("true\n")}, leader: true},
		{name: "not leader", res: juju.Result{Stdout: []byte("false\n")}},
		{name: "tool fails", res: juju.Result{ExitCode: 1, Stderr: []byte("ERROR no agent\n")}, fail: true},
		{name: "runner fails", err: errors.New("cannot start"), fail: true},
		{name: "bad output", res: juju.Result{Stdout: []byte("maybe\n")}, fail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var runs atomic.Int32
			release := make(chan struct{})
			r := runnerFunc(func(_ context.Context, c juju.Command) (juju.Result, error) {
				if c.Args[0] != "is-leader" {
					t.Errorf("ran %q", c.Args)
				}
				runs.Add(1)
				<-release
				return tc.res, tc.err
			})
			hc := juju.NewHookContext(juju.Event{Kind: juju.UpdateStatus}, r)
			hc.Leadership.Ask(context.Background())
			hc.Leadership.Ask(context.Background())
			cp := hc.Leadership
			close(release)
			var wg sync.WaitGroup
			for _, l := range []juju.Leadership{hc.Leadership, cp, hc.Leadership} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					leader, err := l.IsLeader(context.Background())
					if (err != nil) != tc.fail || leader != tc.leader {
						t.Errorf("IsLeader = %v, %v; want %v, failure %v", leader, err, tc.leader, tc.fail)
					}
				}()
			}
			wg.Wait()
			hc.Leadership.Wait()
			if n := runs.Load(); n != 1 {
				t.Errorf("is-leader ran %d times, want 1", n)
			}
		})
	}
	t.Run("without ask", func(t *testing.T) {
		t.Parallel()
		var runs atomic.Int32
		r := runnerFunc(func(context.Context, juju.Command) (juju.Result, error) {
			runs.Add(1)
			return juju.Result{Stdout: []byte("true")}, nil
		})
		l := juju.Leadership{Runner: r}
		l.Wait()
		for range 2 {
			if leader, err := l.IsLeader(context.Background()); !leader || err != nil {
				t.Errorf("IsLeader = %v, %v", leader, err)
			}
		}
		if n := runs.Load(); n != 2 {
			t.Errorf("is-leader ran %d times, want 2", n)
		}
	})
	t.Run("context ends", func(t *testing.T) {
		t.Parallel()
		block := make(chan struct{})
		r := runnerFunc(func(ctx context.Context, _ juju.Command) (juju.Result, error) {
			<-block
			return juju.Result{Stdout: []byte("true")}, nil
		})
		l := juju.Leadership{Runner: r}
		l.Ask(context.Background())
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := l.IsLeader(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("IsLeader after the context ended: %v", err)
		}
		close(block)
		l.Wait()
	})
}
