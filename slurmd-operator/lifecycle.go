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
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

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

// removeNode runs r, this node's removal, to its end (slurm.Remover: drain → wait for the
// jobs → stop slurmd → delete), telling progress the number of jobs on the node. stopping,
// when set, runs first in the stop step: nothing is stopped or deleted before it. Under
// auth/slurm the node is deleted before slurmd stops (see authSlurm).
func (h *hook) removeNode(ctx context.Context, cl *slurm.Client, r *slurm.Removal, progress func(jobs int), stopping func(context.Context) error) error {
	deleteFirst := h.authSlurm(ctx)
	rm := h.c.remover(cl)
	rm.Stop = func(ctx context.Context, _ string) error {
		if stopping != nil {
			if err := stopping(ctx); err != nil {
				return err
			}
		}
		if deleteFirst {
			return nil
		}
		return h.stopSlurmd(ctx)
	}
	if progress != nil {
		rm.Progress = func(_ string, jobs int) { progress(jobs) }
	}
	if err := rm.Remove(ctx, r); err != nil {
		return err
	}
	if deleteFirst {
		return h.stopSlurmd(ctx)
	}
	return nil
}

// depart takes the node out of the cluster, once: drain, wait for its jobs, stop slurmd,
// delete the node (under auth/slurm delete, then stop: see authSlurm). With an unreachable
// controller the node stays drained (or as it is) for the controller's reconcile, and the
// hook succeeds.
func (h *hook) depart(ctx context.Context) error {
	if h.st.Departed {
		return nil
	}
	if h.st.Applied == nil {
		// slurmd never ran: nothing to remove.
		if err := h.stopSlurmd(ctx); err != nil {
			return err
		}
		h.st.Departed = true
		return nil
	}
	if v, err := h.version(ctx); err == nil && slurm.FeaturesOf(v).Munge && !h.mungeAnswers(ctx) {
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
	cl, err := h.c.ctl()
	if errors.Is(err, errNoConf) {
		// The node never registered: nothing to drain or delete.
		if err := h.stopSlurmd(ctx); err != nil {
			return err
		}
		return h.departed(ctx, nil)
	}
	r := slurm.Removal{Node: h.node, Reason: "unit " + h.hc.Event.Unit + " removed"}
	err = h.removeNode(ctx, cl, &r, func(n int) {
		if n > 0 {
			_ = h.setStatus(ctx, juju.StatusMaintenance, fmt.Sprintf("draining %s: waiting for %d jobs", h.node, n))
		}
	}, nil)
	switch {
	case err == nil:
		return h.departed(ctx, nil)
	case !unreachable(err):
		return err
	}
	if err := h.stopSlurmd(ctx); err != nil {
		return err
	}
	return h.departed(ctx, err)
}

// departed records that the node left, at once (a retried hook must not remove it again);
// err is why the node was left for the controller to delete (an unreachable controller, a
// dead munged), if it was.
func (h *hook) departed(ctx context.Context, err error) error {
	h.st.Departed = true
	h.st.Applied = nil
	h.st.DefaultPending = false
	h.st.StagedNodeConfig = "" // the node is gone: nothing to register after a boot
	if rerr := h.removeMarker(); rerr != nil {
		h.logf(ctx, juju.LevelWarning, "%v", rerr)
	}
	if serr := h.k.Checkpoint(ctx); serr != nil {
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

func (h *hook) reconfReason() string { return reconfReason(h.node) }

// reconfReason is the reason a re-registration drains (or, in RebootProgram, downs) node with.
func reconfReason(node string) string { return "reconfiguring node " + node }

// reregister replaces the node's record with one registered by slurmd as spec runs it:
// remember the node's state (in the charm's state too, so that an interrupted run is
// repaired by the next), remove the node (drain, wait for its jobs until deadline, if any,
// stop slurmd, delete; a wait that ends first resumes the node as it was and returns the
// *slurm.RemovalError), start slurmd, wait for a valid registration and restore the state.
// When Slurm refuses spec (a *RefusedError) and old is set, the node is re-registered with
// old and its state restored before the *RefusedError is returned: nothing is left
// half-applied.
func (h *hook) reregister(ctx context.Context, spec service.Spec, old *service.Spec, deadline time.Time, progress func(int)) error {
	cl, err := h.c.ctl()
	var n slurm.Node
	if err == nil {
		n, err = cl.ShowNode(ctx, h.node)
	}
	if err != nil && !errors.Is(err, slurm.ErrUnknownNode) && !errors.Is(err, errNoConf) {
		return fmt.Errorf("cannot re-register node %s: %w", h.node, err)
	}
	prev := h.adminState(n)
	remember := func(ctx context.Context) error {
		h.st.Restore = &prev
		return h.k.Checkpoint(ctx)
	}
	switch {
	case err == nil:
		if err := h.setStatus(ctx, juju.StatusMaintenance, "reconfiguring "+h.node); err != nil {
			return err
		}
		wctx := ctx
		if !deadline.IsZero() {
			var cancel context.CancelFunc
			wctx, cancel = context.WithDeadline(ctx, deadline)
			defer cancel()
		}
		r := slurm.Removal{Node: h.node, Reason: h.reconfReason()}
		if err := h.removeNode(wctx, cl, &r, progress, remember); err != nil {
			if r.Phase == slurm.RemovalDrain || r.Phase == slurm.RemovalWait {
				// Nothing stopped yet: the node goes back to what it was.
				if aerr := h.c.remover(cl).Abort(ctx, &r); aerr != nil {
					return fmt.Errorf("%w; %v", err, aerr)
				}
			}
			return err
		}
	default: // not registered
		if err := remember(ctx); err != nil {
			return err
		}
		if err := h.stopSlurmd(ctx); err != nil {
			return err
		}
	}
	err = h.startNode(ctx, spec)
	var refused *RefusedError
	if errors.As(err, &refused) && old != nil {
		h.logf(ctx, juju.LevelWarning, "%v: restoring the previous configuration", err)
		if rerr := h.replaceNode(ctx, *old); rerr != nil {
			return fmt.Errorf("%w; cannot restore the previous configuration: %v", err, rerr)
		}
	}
	if err != nil && refused == nil {
		return err
	}
	if prev.Drain || prev.Down {
		cl, cerr := h.c.ctl()
		if cerr == nil {
			cerr = h.c.remover(cl).Restore(ctx, &slurm.Removal{Node: h.node, WasDrain: prev.Drain, WasDown: prev.Down, PriorReason: prev.Reason})
		}
		if cerr != nil {
			return cerr
		}
	}
	h.st.Restore = nil
	return err
}

// replaceNode removes the node's current record (it has no jobs: it registered just now)
// and registers it again with slurmd as spec runs it.
func (h *hook) replaceNode(ctx context.Context, spec service.Spec) error {
	cl, err := h.c.ctl()
	switch {
	case err == nil:
		err = h.removeNode(ctx, cl, &slurm.Removal{Node: h.node, Jobs: slurm.RefuseJobs}, nil, nil)
	case errors.Is(err, errNoConf):
		err = h.stopSlurmd(ctx)
	}
	if err != nil {
		return err
	}
	return h.startNode(ctx, spec)
}

// startNode (re)starts slurmd as spec says and waits for a valid registration; a refused one
// is a *RefusedError.
func (h *hook) startNode(ctx context.Context, spec service.Spec) error {
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

// slurmdLogSize is the size of slurmd's log now (0 when there is none).
func (h *hook) slurmdLogSize() int64 {
	fi, err := os.Stat(h.c.Path(SlurmdLog))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// slurmdLogErrors returns the last error or fatal lines slurmd logged after offset, joined.
func (h *hook) slurmdLogErrors(offset int64) string {
	f, err := os.Open(h.c.Path(SlurmdLog))
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
