package main

import (
	"context"

	"github.com/charmed-slurm/operators/libs/slurm"
)

// authSlurm reports whether this node's Slurm authenticates with auth/slurm (23.11 and
// later). There a client command on a node authenticates through the sack socket that slurmd
// serves, so with slurmd stopped the node cannot delete its own record: the node is deleted
// (drained and idle) before slurmd stops. Slurm 24.11 deletes a node whose slurmd runs, and
// that slurmd does not register it again (tests/e2e on trixie machines).
func (h *hook) authSlurm(ctx context.Context) bool {
	v, err := h.version(ctx)
	return err == nil && !slurm.FeaturesOf(v).Munge
}
