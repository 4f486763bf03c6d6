package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/poll"
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
		if err := poll.Sleep(ctx, h.c.pollInterval()); err != nil {
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
		if err := poll.Sleep(ctx, h.c.pollInterval()); err != nil {
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
		if err := poll.Sleep(ctx, h.c.pollInterval()); err != nil {
			return err
		}
	}
}

// stopSlurmd stops slurmd if it was ever configured. A service manager that cannot be asked
// (the host's supervisor died) is no error when no slurmd runs: what stop wants holds.
func (h *hook) stopSlurmd(ctx context.Context) error {
	err := h.c.Services.Stop(ctx, SlurmdService)
	if err == nil || errors.Is(err, service.ErrUnknownService) {
		return nil
	}
	if !h.slurmdRunning() {
		h.logf(ctx, juju.LevelWarning, "cannot stop slurmd, which is not running: %v", err)
		return nil
	}
	return fmt.Errorf("cannot stop slurmd: %w", err)
}

// depart takes the node out of the cluster, once: drain, wait for its jobs, stop slurmd,
// delete the node (under auth/slurm delete, then stop: see authSlurm). With an unreachable controller the node stays drained (or as it is) for
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
	if v, _, err := h.facts(ctx); err == nil && slurm.FeaturesOf(v).Munge && !h.mungeAnswers(ctx) {
		// This host cannot authenticate to Slurm (its munged is gone): the controller drains
		// and deletes the node once Slurm has marked it down and its jobs are gone.
		if err := h.stopSlurmd(ctx); err != nil {
			return err
		}
		return h.departed(ctx, errors.New("munged down on this host"))
	}
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
	deleteFirst := err == nil && h.authSlurm(ctx)
	if deleteFirst {
		err = h.deleteNode(ctx)
		if err != nil && !unreachable(err) {
			return err
		}
	}
	if err := h.stopSlurmd(ctx); err != nil {
		return err
	}
	if err == nil && !deleteFirst {
		err = h.deleteNode(ctx)
		if err != nil && !unreachable(err) {
			return err
		}
	}
	return h.departed(ctx, err)
}

// departed records that the node left; err is why the node was left for the controller to
// delete (an unreachable controller, a dead munged), if it was.
func (h *hook) departed(ctx context.Context, err error) error {
	h.st.Departed = true
	h.st.Applied = nil
	h.st.DefaultPending = false
	if serr := h.saveState(ctx); serr != nil {
		return serr
	}
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "node %s left for the controller to delete: %v", h.node, err)
		msg := fmt.Sprintf("node %s left drained: controller unreachable", h.node)
		if !unreachable(err) {
			msg = fmt.Sprintf("node %s left for the controller to delete: %v", h.node, err)
		}
		return h.setStatus(ctx, juju.StatusMaintenance, msg)
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

// RefusedError is a new slurmd --conf that Slurm refused: slurmd did not start or exited,
// the node did not register in time, or it registered as INVALID_REG. Reason is Slurm's own
// (the node's Reason=, or slurmd's log).
type RefusedError struct {
	Node   string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("Slurm refused the new configuration of node %s: %s", e.Node, e.Reason)
}

// adminState is the state to give back to the node after a re-registration: the one saved
// by an interrupted re-registration, else the node's own. A drain Slurm set itself
// (INVALID_REG) or that an earlier re-registration set is not the operator's and is dropped.
func (h *hook) adminState(n slurm.Node) NodeAdmin {
	if h.st.Restore != nil {
		return *h.st.Restore
	}
	a := NodeAdmin{Drain: n.State.Drain(), Down: n.State.Down(), Reason: n.Reason}
	if n.State.Has(slurm.FlagInvalidReg) || a.Reason == h.reconfReason() {
		a = NodeAdmin{}
	}
	return a
}

func (h *hook) reconfReason() string { return "reconfiguring node " + h.node }

// reregister replaces the node's record with one registered by slurmd as spec runs it:
// remember the node's state (in the charm's state too, so that an interrupted run is
// repaired by the next), drain it, wait for its jobs (until deadline, if any; then the node is
// restored and a *JobsRemainError returned), stop slurmd, delete the node, start slurmd, wait
// for a valid registration and restore the state. When Slurm refuses spec (a *RefusedError)
// and old is set, the node is re-registered with old and its state restored before the
// *RefusedError is returned: nothing is left half-applied.
func (h *hook) reregister(ctx context.Context, spec service.Spec, old *service.Spec, deadline time.Time, progress func(int)) error {
	cl, err := h.ctl()
	var n slurm.Node
	if err == nil {
		n, err = cl.ShowNode(ctx, h.node)
	}
	known := err == nil
	if err != nil && !errors.Is(err, slurm.ErrUnknownNode) && !errors.Is(err, errNoConf) {
		return fmt.Errorf("cannot re-register node %s: %w", h.node, err)
	}
	prev := h.adminState(n)
	if known {
		drained := false
		if !n.State.Drain() && !n.State.Down() {
			if err := cl.Drain(ctx, h.node, h.reconfReason()); err != nil {
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
	h.st.Restore = &prev
	if err := h.saveState(ctx); err != nil {
		return err
	}
	err = h.replaceNode(ctx, spec, known)
	var refused *RefusedError
	if errors.As(err, &refused) && old != nil {
		h.logf(ctx, juju.LevelWarning, "%v: restoring the previous configuration", err)
		if rerr := h.replaceNode(ctx, *old, true); rerr != nil {
			return fmt.Errorf("%w; cannot restore the previous configuration: %v", err, rerr)
		}
	}
	if err != nil && refused == nil {
		return err
	}
	if rerr := h.restoreAdmin(ctx, prev); rerr != nil {
		return rerr
	}
	h.st.Restore = nil
	h.dirty = true
	return err
}

// replaceNode stops slurmd, deletes the node's record (when known), starts slurmd as spec
// says and waits for a valid registration; a refused one is a *RefusedError.
func (h *hook) replaceNode(ctx context.Context, spec service.Spec, known bool) error {
	deleteFirst := known && h.authSlurm(ctx)
	if deleteFirst {
		if err := h.deleteNode(ctx); err != nil {
			return err
		}
	}
	if err := h.stopSlurmd(ctx); err != nil {
		return err
	}
	if known && !deleteFirst {
		if err := h.deleteNode(ctx); err != nil {
			return err
		}
	}
	logStart := h.slurmdLogSize()
	var n slurm.Node
	err := h.startSlurmd(ctx, spec, true)
	if err == nil {
		n, err = h.waitRegistered(ctx, true)
	}
	if err == nil && !n.State.Has(slurm.FlagInvalidReg) {
		return nil
	}
	reason := n.Reason
	if err != nil {
		reason = err.Error()
	}
	if l := h.slurmdLogErrors(logStart); l != "" && (err != nil || reason == "") {
		reason += " (slurmd: " + l + ")"
	}
	return &RefusedError{Node: h.node, Reason: reason}
}

// restoreAdmin gives the node back its administrative state a.
func (h *hook) restoreAdmin(ctx context.Context, a NodeAdmin) error {
	cl, err := h.ctl()
	if err != nil {
		return err
	}
	switch {
	case a.Down:
		err = cl.UpdateNode(ctx, h.node, slurm.NodeUpdate{State: "down", Reason: orDefault(a.Reason, "restored after reconfiguration")})
	case a.Drain:
		err = cl.Drain(ctx, h.node, orDefault(a.Reason, "restored after reconfiguration"))
	default:
		// A fresh record is not drained, unless Slurm drained it itself.
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot restore the state of node %s: %w", h.node, err)
	}
	return nil
}

// slurmdLogSize is the size of slurmd's log now (0 when there is none).
func (h *hook) slurmdLogSize() int64 {
	fi, err := os.Stat(h.c.path(SlurmdLog))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// slurmdLogErrors returns the last error or fatal lines slurmd logged after offset, joined.
func (h *hook) slurmdLogErrors(offset int64) string {
	f, err := os.Open(h.c.path(SlurmdLog))
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if i := strings.Index(l, "fatal: "); i >= 0 {
			lines = append(lines, l[i:])
		} else if i := strings.Index(l, "error: "); i >= 0 {
			lines = append(lines, l[i:])
		}
	}
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, "; ")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
