package slurm

import (
	"bytes"
	"context"
	"fmt"
	"time"
)

// MungePath is where Debian's munge package installs the munge client.
const MungePath = "/usr/bin/munge"

// WaitMunge returns once munged answers on this host: `munge -n` gets a credential encoded by
// munged, so its socket accepts requests and its key is loaded. Polls start 2 ms apart and
// double up to maxEvery (DefaultPollInterval when zero) until ctx ends; the error then names
// the last failure. Bound the wait with ctx.
func WaitMunge(ctx context.Context, r Runner, maxEvery time.Duration) error {
	if maxEvery <= 0 {
		maxEvery = DefaultPollInterval
	}
	every := min(2*time.Millisecond, maxEvery)
	for {
		out, err := r.Run(ctx, []string{MungePath, "-n"}, nil)
		if err == nil && out.ExitCode == 0 {
			return nil
		}
		last := err
		if err == nil {
			last = fmt.Errorf("munge -n exited %d: %s", out.ExitCode, bytes.TrimSpace(out.Stderr))
		}
		timer := time.NewTimer(every)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("cannot wait for munged to answer: %w (last: %v)", ctx.Err(), last)
		case <-timer.C:
		}
		every = min(2*every, maxEvery)
	}
}
