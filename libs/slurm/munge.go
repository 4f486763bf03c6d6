package slurm

import (
	"context"
	"time"

	"github.com/charmed-slurm/operators/libs/munge"
)

// MungePath is where Debian's munge package installs the munge client.
//
// Deprecated: use munge.ClientPath.
const MungePath = munge.ClientPath

// WaitMunge returns once munged answers on this host.
//
// Deprecated: use munge.Wait (the same function) or munge.Daemon.Ensure.
func WaitMunge(ctx context.Context, r Runner, maxEvery time.Duration) error {
	if maxEvery <= 0 {
		maxEvery = DefaultPollInterval
	}
	return munge.Wait(ctx, r, maxEvery)
}
