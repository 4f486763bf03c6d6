// Package poll waits for conditions the context-aware way: every wait selects on the
// context and a timer, never a bare time.Sleep, so a hook or action that is cancelled (Juju
// kills a hook, a SIGTERM reaches the charm) stops waiting at once.
//
// [Until] checks a condition at once, then every interval until it holds, fails, or ctx
// ends; bound it with a context deadline:
//
//	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
//	defer cancel()
//	err := poll.Until(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
//		n, err := client.ShowNode(ctx, "slurmd-0")
//		return err == nil && n.Version != "", nil
//	})
//
// [Sleep] is one such wait. [Backoff] grows an interval (doubling up to a ceiling) for
// waits whose condition usually holds within milliseconds.
package poll

import (
	"context"
	"fmt"
	"time"
)

// Sleep waits for d or until ctx ends, and returns ctx's error in the latter case.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Until calls cond at once and then every interval until it reports done or an error, or
// ctx ends. It returns cond's error as is, or, when ctx ends first, an error wrapping ctx's
// error. A condition that wants its last failed check named in that error keeps it itself
// (a variable the closure sets) and the caller adds it.
func Until(ctx context.Context, interval time.Duration, cond func(ctx context.Context) (bool, error)) error {
	return UntilBackoff(ctx, Backoff{Max: interval}, cond)
}

// Backoff is a growing poll interval: the first wait is Start (Max when zero), each next one
// twice the last, at most Max.
type Backoff struct {
	Start time.Duration
	Max   time.Duration
}

// UntilBackoff is [Until] with intervals growing as b says.
func UntilBackoff(ctx context.Context, b Backoff, cond func(ctx context.Context) (bool, error)) error {
	every := b.Start
	if every <= 0 || every > b.Max {
		every = b.Max
	}
	for {
		done, err := cond(ctx)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if err := Sleep(ctx, every); err != nil {
			return fmt.Errorf("stopped waiting: %w", err)
		}
		every = min(2*every, b.Max)
	}
}
