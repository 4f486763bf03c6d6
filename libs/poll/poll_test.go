package poll_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/poll"
)

func TestUntil(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for _, tt := range []struct {
		name      string
		doneAfter int   // cond reports done on this call (1-based); 0 never
		failAt    int   // cond fails on this call; 0 never
		want      error // errors.Is
		calls     int
	}{
		{name: "done at once", doneAfter: 1, calls: 1},
		{name: "done on the third check", doneAfter: 3, calls: 3},
		{name: "condition error ends the wait", failAt: 2, want: boom, calls: 2},
		{name: "context ends the wait", want: context.DeadlineExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			calls := 0
			err := poll.Until(ctx, time.Millisecond, func(ctx context.Context) (bool, error) {
				calls++
				if calls == tt.failAt {
					return false, boom
				}
				return calls == tt.doneAfter, nil
			})
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
			if tt.calls > 0 && calls != tt.calls {
				t.Errorf("cond called %d times, want %d", calls, tt.calls)
			}
		})
	}
}

func TestUntilBackoffGrows(t *testing.T) {
	t.Parallel()
	var gaps []time.Duration
	last := time.Now()
	calls := 0
	err := poll.UntilBackoff(context.Background(), poll.Backoff{Start: time.Millisecond, Max: 4 * time.Millisecond}, func(context.Context) (bool, error) {
		now := time.Now()
		if calls > 0 {
			gaps = append(gaps, now.Sub(last).Round(time.Millisecond))
		}
		last = now
		calls++
		return calls == 5, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each gap is at least the interval asked for: 1, 2, 4, 4 ms.
	want := []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond}
	for i := range want {
		if gaps[i] < want[i] {
			t.Errorf("gaps %v, want at least %v", gaps, want)
			break
		}
	}
	if d := cmp.Diff(4, len(gaps)); d != "" {
		t.Error(d)
	}
}

func TestSleepCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := poll.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v", err)
	}
}
