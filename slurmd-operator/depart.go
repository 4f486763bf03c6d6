package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// removal takes the node out of Slurm: for good when the unit leaves (depart), or for a
// moment when the registrar replaces its record (remove).
type removal struct{ h *hook }

// remove runs r, this node's removal, to its end (slurm.Remover: drain → wait for the jobs
// → stop slurmd → delete; under auth/slurm delete, then stop, see authSlurm), telling
// progress the number of jobs on the node. committing, when set, runs once the jobs are
// gone: nothing is stopped or deleted before it.
func (m removal) remove(ctx context.Context, cl *slurm.Client, r *slurm.Removal, progress func(jobs int), committing func(context.Context) error) error {
	h := m.h
	rm := h.c.remover(cl)
	rm.DeleteFirst = m.authSlurm(ctx)
	rm.Stop = func(ctx context.Context, _ string) error { return h.slurmd().stop(ctx) }
	if committing != nil {
		rm.Committing = func(ctx context.Context, _ string) error { return committing(ctx) }
	}
	if progress != nil {
		rm.Progress = func(_ string, jobs int) { progress(jobs) }
	}
	return rm.Remove(ctx, r)
}

// authSlurm reports whether this node's Slurm authenticates with auth/slurm (23.11 and
// later). There a client command on a node authenticates through the sack socket that slurmd
// serves, so with slurmd stopped the node cannot delete its own record: the node is deleted
// (drained and idle) before slurmd stops (slurm.Remover.DeleteFirst). Slurm 24.11 deletes a
// node whose slurmd runs, and that slurmd does not register it again (tests/e2e on trixie
// machines).
func (m removal) authSlurm(ctx context.Context) bool {
	v, err := m.h.version(ctx)
	return err == nil && !slurm.FeaturesOf(v).Munge
}

// depart takes the node out of the cluster, once: drain, wait for its jobs, stop slurmd,
// delete the node (under auth/slurm delete, then stop). With an unreachable controller the
// node stays drained (or as it is) for the controller's reconcile, and the hook succeeds.
func (m removal) depart(ctx context.Context) error {
	h := m.h
	if h.st.Departed {
		return nil
	}
	if h.st.Applied == nil {
		// slurmd never ran: nothing to remove.
		if err := h.slurmd().stop(ctx); err != nil {
			return err
		}
		h.st.Departed = true
		return nil
	}
	if v, err := h.version(ctx); err == nil && slurm.FeaturesOf(v).Munge && !h.c.mungeAnswers(ctx) {
		// This host cannot authenticate to Slurm (its munged is gone): the controller drains
		// and deletes the node once Slurm has marked it down and its jobs are gone.
		if err := h.slurmd().stop(ctx); err != nil {
			return err
		}
		return m.departed(ctx, errors.New("munged down on this host"))
	}
	if err := h.progress(ctx, "draining "+h.node); err != nil {
		return err
	}
	cl, err := h.c.ctl()
	if errors.Is(err, errNoConf) {
		// The node never registered: nothing to drain or delete.
		if err := h.slurmd().stop(ctx); err != nil {
			return err
		}
		return m.departed(ctx, nil)
	}
	r := slurm.Removal{Node: h.node, Reason: slurmd.RemovalReason(h.hc.Event.Unit)}
	err = m.remove(ctx, cl, &r, func(n int) {
		if n > 0 {
			_ = h.progress(ctx, fmt.Sprintf("draining %s: waiting for %d jobs", h.node, n))
		}
	}, nil)
	switch {
	case err == nil:
		return m.departed(ctx, nil)
	case !unreachable(err):
		return err
	}
	if err := h.slurmd().stop(ctx); err != nil {
		return err
	}
	return m.departed(ctx, err)
}

// departed records that the node left, at once (a retried hook must not remove it again);
// err is why the node was left for the controller to delete (an unreachable controller, a
// dead munged), if it was.
func (m removal) departed(ctx context.Context, err error) error {
	h := m.h
	h.st.Departed = true
	h.st.Applied = nil
	h.st.DefaultPending = false
	h.st.StagedNodeConfig = "" // the node is gone: nothing to register after a boot
	if rerr := (stagedMarker{h.c}).clear(); rerr != nil {
		h.logf(ctx, juju.LevelWarning, "%v", rerr)
	}
	if serr := h.k.Checkpoint(ctx); serr != nil {
		return serr
	}
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "node %s left for the controller to delete: %v", h.node, err)
	} else {
		h.logf(ctx, juju.LevelInfo, "node %s removed from the cluster", h.node)
	}
	return h.report(ctx, observed{left: err})
}

// disconnected: the relation is gone; the node has left (depart ran, or runs now) and slurmd
// stops.
func (m removal) disconnected(ctx context.Context) error {
	if err := m.depart(ctx); err != nil {
		return err
	}
	if err := m.h.slurmd().stop(ctx); err != nil {
		return err
	}
	return m.h.report(ctx, observed{noRelation: true})
}
