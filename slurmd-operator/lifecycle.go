package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// JobsRemainError is a wait for a node's jobs that ended (timeout) with jobs still running.
type JobsRemainError struct {
	Node string
	Jobs int
	Err  error
}

func (e *JobsRemainError) Error() string {
	return fmt.Sprintf("%d jobs still running on node %s: %v", e.Jobs, e.Node, e.Err)
}

func (e *JobsRemainError) Unwrap() error { return e.Err }

// waitJobs waits until no job occupies the node: it polls the node's jobs, calling progress
// whenever their number changes, then confirms with slurm.WaitDrained (no job left completing).
// An unreachable controller is retried for UnreachableTimeout. When ctx ends first it returns
// a *JobsRemainError.
func (h *hook) waitJobs(ctx context.Context, progress func(jobs int)) error {
	cl, err := h.ctl()
	if err != nil {
		return err
	}
	last := -1
	var down time.Time // since when the controller is unreachable
	for {
		jobs, err := cl.JobsOnNode(ctx, h.node)
		switch {
		case err == nil:
			down = time.Time{}
			if len(jobs) != last && progress != nil {
				progress(len(jobs))
			}
			last = len(jobs)
			if len(jobs) == 0 {
				err := cl.WaitDrained(ctx, h.node)
				if err == nil || errors.Is(err, slurm.ErrUnknownNode) {
					return nil
				}
				if ctx.Err() != nil {
					return &JobsRemainError{Node: h.node, Jobs: 0, Err: ctx.Err()}
				}
				if !unreachable(err) {
					return err
				}
			}
		case errors.Is(err, slurm.ErrUnknownNode):
			return nil
		case unreachable(err):
			if down.IsZero() {
				down = time.Now()
			} else if time.Since(down) >= h.c.unreachableTimeout() {
				return err
			}
		case ctx.Err() != nil:
		default:
			return err
		}
		if err := sleep(ctx, h.c.pollInterval()); err != nil {
			return &JobsRemainError{Node: h.node, Jobs: max(last, 0), Err: err}
		}
	}
}

// deleteNode deletes the node record, retrying while the node is busy or the controller
// unreachable (for UnreachableTimeout). An unknown node is already gone.
func (h *hook) deleteNode(ctx context.Context) error {
	cl, err := h.ctl()
	if err != nil {
		return err
	}
	var down time.Time
	for {
		err := cl.DeleteNode(ctx, h.node)
		switch {
		case err == nil, errors.Is(err, slurm.ErrUnknownNode):
			return nil
		case errors.Is(err, slurm.ErrNodeBusy):
			down = time.Time{}
		case unreachable(err):
			if down.IsZero() {
				down = time.Now()
			} else if time.Since(down) >= h.c.unreachableTimeout() {
				return err
			}
		default:
			return fmt.Errorf("cannot delete node %s: %w", h.node, err)
		}
		if err := sleep(ctx, h.c.pollInterval()); err != nil {
			return fmt.Errorf("cannot delete node %s: %w", h.node, err)
		}
	}
}

// drain drains the node with reason, retrying an unreachable controller for UnreachableTimeout.
func (h *hook) drain(ctx context.Context, reason string) error {
	cl, err := h.ctl()
	if err != nil {
		return err
	}
	start := time.Now()
	for {
		err := cl.Drain(ctx, h.node, reason)
		if err == nil || !unreachable(err) || time.Since(start) >= h.c.unreachableTimeout() {
			return err
		}
		if err := sleep(ctx, h.c.pollInterval()); err != nil {
			return err
		}
	}
}

// stopSlurmd stops slurmd if it was ever configured.
func (h *hook) stopSlurmd(ctx context.Context) error {
	err := h.c.Services.Stop(ctx, SlurmdService)
	if err != nil && !errors.Is(err, service.ErrUnknownService) {
		return fmt.Errorf("cannot stop slurmd: %w", err)
	}
	return nil
}

// depart takes the node out of the cluster, once: drain, wait for its jobs, stop slurmd,
// delete the node. With an unreachable controller the node stays drained (or as it is) for
// the controller's reconcile, and the hook succeeds.
func (h *hook) depart(ctx context.Context) error {
	if h.st.Departed {
		return nil
	}
	if h.st.Applied == nil {
		// slurmd never ran: nothing to remove.
		h.st.Departed = true
		if err := h.stopSlurmd(ctx); err != nil {
			return err
		}
		return h.saveState(ctx)
	}
	unit := h.hc.Event.Unit
	if err := h.setStatus(ctx, juju.StatusMaintenance, "draining "+h.node); err != nil {
		return err
	}
	err := h.drain(ctx, "unit "+unit+" removed")
	switch {
	case err == nil:
		err = h.waitJobs(ctx, func(n int) {
			if n > 0 {
				_ = h.setStatus(ctx, juju.StatusMaintenance, fmt.Sprintf("draining %s: waiting for %d jobs", h.node, n))
			}
		})
	case errors.Is(err, slurm.ErrUnknownNode), errors.Is(err, errNoConf):
		// The node never registered (or is gone already): nothing to drain or delete.
		if err := h.stopSlurmd(ctx); err != nil {
			return err
		}
		return h.departed(ctx, nil)
	}
	if err != nil && !unreachable(err) {
		return fmt.Errorf("cannot remove node %s: %w", h.node, err)
	}
	if err := h.stopSlurmd(ctx); err != nil {
		return err
	}
	if err == nil {
		err = h.deleteNode(ctx)
		if err != nil && !unreachable(err) {
			return err
		}
	}
	return h.departed(ctx, err)
}

// departed records that the node left; err is the unreachable controller that left the node
// drained, if any.
func (h *hook) departed(ctx context.Context, err error) error {
	h.st.Departed = true
	h.st.Applied = nil
	h.st.DefaultPending = false
	if serr := h.saveState(ctx); serr != nil {
		return serr
	}
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "controller unreachable: node %s left for the controller to delete: %v", h.node, err)
		return h.setStatus(ctx, juju.StatusMaintenance, fmt.Sprintf("node %s left drained: controller unreachable", h.node))
	}
	h.logf(ctx, juju.LevelInfo, "node %s removed from the cluster", h.node)
	return h.setStatus(ctx, juju.StatusMaintenance, "node "+h.node+" removed")
}

// disconnected: the relation is gone; the node has left (depart ran, or runs now) and slurmd
// stops.
func (h *hook) disconnected(ctx context.Context) error {
	if err := h.depart(ctx); err != nil {
		return err
	}
	if err := h.stopSlurmd(ctx); err != nil {
		return err
	}
	return h.setStatus(ctx, juju.StatusBlocked, "waiting for slurmctld relation")
}

// stop: the unit is going away; the node leaves if it has not yet, then the daemons stop.
func (h *hook) stop(ctx context.Context) error {
	if err := h.depart(ctx); err != nil {
		return err
	}
	if err := h.c.Services.Stop(ctx, h.c.mungeService()); err != nil && !errors.Is(err, service.ErrUnknownService) {
		return fmt.Errorf("cannot stop munged: %w", err)
	}
	return nil
}

// prevState is the node's administrative state before a re-registration.
type prevState struct {
	drain, down bool
	reason      string
}

// reregister replaces the node's record with one registered by slurmd as spec runs it:
// remember the node's state, drain it, wait for its jobs (until wait's deadline, if any; then
// the node is restored and a *JobsRemainError returned), stop slurmd, delete the node, start
// slurmd, wait for the registration and restore the state.
func (h *hook) reregister(ctx context.Context, spec service.Spec, deadline time.Time, progress func(int)) error {
	cl, err := h.ctl()
	var n slurm.Node
	if err == nil {
		n, err = cl.ShowNode(ctx, h.node)
	}
	known := err == nil
	if err != nil && !errors.Is(err, slurm.ErrUnknownNode) && !errors.Is(err, errNoConf) {
		return fmt.Errorf("cannot re-register node %s: %w", h.node, err)
	}
	var prev prevState
	if known {
		prev = prevState{drain: n.State.Drain(), down: n.State.Down(), reason: n.Reason}
		drained := false
		if !prev.drain && !prev.down {
			if err := cl.Drain(ctx, h.node, "reconfiguring node "+h.node); err != nil {
				return fmt.Errorf("cannot re-register node %s: %w", h.node, err)
			}
			drained = true
		}
		if err := h.setStatus(ctx, juju.StatusMaintenance, "reconfiguring "+h.node); err != nil {
			return err
		}
		wctx := ctx
		if !deadline.IsZero() {
			var cancel context.CancelFunc
			wctx, cancel = context.WithDeadline(ctx, deadline)
			defer cancel()
		}
		if err := h.waitJobs(wctx, progress); err != nil {
			if drained {
				if rerr := cl.Resume(ctx, h.node); rerr != nil {
					return fmt.Errorf("%w; cannot resume node %s: %v", err, h.node, rerr)
				}
			}
			return err
		}
	}
	if err := h.stopSlurmd(ctx); err != nil {
		return err
	}
	if known {
		if err := h.deleteNode(ctx); err != nil {
			return err
		}
	}
	if err := h.startSlurmd(ctx, spec, true); err != nil {
		return err
	}
	if _, err := h.waitRegistered(ctx); err != nil {
		return err
	}
	if cl, err = h.ctl(); err != nil {
		return err
	}
	switch {
	case prev.down:
		err = cl.UpdateNode(ctx, h.node, slurm.NodeUpdate{State: "down", Reason: orDefault(prev.reason, "restored after reconfiguration")})
	case prev.drain:
		err = cl.Drain(ctx, h.node, orDefault(prev.reason, "restored after reconfiguration"))
	}
	if err != nil {
		return fmt.Errorf("cannot restore the state of node %s: %w", h.node, err)
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
