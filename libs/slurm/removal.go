package slurm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/poll"
)

// Defaults of a Remover's zero bounds.
const (
	// DefaultUnreachableFor is how long Remove retries an unreachable controller.
	DefaultUnreachableFor = 30 * time.Second
	// DefaultBusyFor is how long Remove retries a delete that Slurm refuses as busy once
	// the node's jobs are gone (a job record still completing).
	DefaultBusyFor = time.Minute
	// DefaultStuckFor is how long a node may stay busy with no job before a removal sets
	// it DOWN to delete it (Slurm 22.05 bug 16434, see Remover.StuckFor).
	DefaultStuckFor = 10 * time.Second
)

// RemovalPhase is where a node's removal stands. The phases run in this order (with
// Remover.DeleteFirst, RemovalDelete before RemovalStop); a removal whose node turns out
// unknown stops the daemon and skips to RemovalDone.
type RemovalPhase string

const (
	// RemovalDrain (the zero phase): the node is drained with the removal's reason.
	RemovalDrain RemovalPhase = ""
	// RemovalWait: waiting until no job runs or completes on the node.
	RemovalWait RemovalPhase = "wait"
	// RemovalStop: the node's daemon is stopped (Remover.Stop), so that it cannot
	// re-create the node record (with Remover.DeleteFirst: once the record is deleted).
	RemovalStop RemovalPhase = "stop"
	// RemovalDelete: `scontrol delete`, retried while Slurm answers busy.
	RemovalDelete RemovalPhase = "delete"
	// RemovalDone: the node record is gone.
	RemovalDone RemovalPhase = "done"
)

// JobPolicy is what a removal does about the jobs on its node.
type JobPolicy string

const (
	// WaitForJobs (the zero policy) waits until the jobs end: no running job is lost.
	WaitForJobs JobPolicy = ""
	// CancelJobs cancels the jobs (scancel) and waits until they are gone: the explicit
	// force path, which reports the jobs it cancelled in Removal.Cancelled.
	CancelJobs JobPolicy = "cancel"
	// RefuseJobs fails the removal with a *BusyError naming the jobs.
	RefuseJobs JobPolicy = "refuse"
)

// Removal is one node's removal: drain → wait for its jobs → stop its daemon → delete its
// record. It is plain data (JSON-encodable) so that a charm can keep it in its state and
// advance it across hooks with Remover.Step; Remover.Remove advances it to the end.
type Removal struct {
	// Node is the Slurm node name.
	Node string `json:"node"`
	// Reason is the drain reason; empty means the node is not drained first (only
	// sensible with RefuseJobs: a node without jobs is deleted at once).
	Reason string `json:"reason,omitempty"`
	// Jobs says what to do about the node's jobs.
	Jobs JobPolicy `json:"jobs,omitempty"`

	// Phase is where the removal stands.
	Phase RemovalPhase `json:"phase,omitempty"`
	// Drained: this removal drained the node (Abort resumes it).
	Drained bool `json:"drained,omitempty"`
	// WasDrain, WasDown and PriorReason are the node's administrative state before the
	// removal, for Restore.
	WasDrain    bool   `json:"was-drain,omitempty"`
	WasDown     bool   `json:"was-down,omitempty"`
	PriorReason string `json:"prior-reason,omitempty"`
	// JobCount is the number of jobs last seen on the node; Counted is false before the
	// first count.
	JobCount int  `json:"job-count,omitempty"`
	Counted  bool `json:"counted,omitempty"`
	// Cancelled are the jobs cancelled under CancelJobs.
	Cancelled []string `json:"cancelled,omitempty"`
	// IdleBusySince is when the node was first seen busy with no job on it, in a row
	// (zero when it was not): measured across Steps for Remover.StuckFor.
	IdleBusySince time.Time `json:"idle-busy-since,omitzero"`
	// Stuck: the node stayed busy with no job for StuckFor; it is set DOWN before the
	// delete. Downed: that was done.
	Stuck  bool `json:"stuck,omitempty"`
	Downed bool `json:"downed,omitempty"`
}

// Done reports whether the node is gone.
func (r *Removal) Done() bool { return r.Phase == RemovalDone }

// BusyError is a removal refused (RefuseJobs) because jobs run on the node. It unwraps to
// ErrNodeBusy.
type BusyError struct {
	Node string
	Jobs []Job
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("node %s has running jobs %s", e.Node, strings.Join(JobIDs(e.Jobs), ","))
}

// Unwrap returns ErrNodeBusy.
func (e *BusyError) Unwrap() error { return ErrNodeBusy }

// RemovalError is a removal that Remove gave up: at Phase, with Jobs jobs last seen on the
// node, because of Err (an unreachable controller past UnreachableFor, a delete refused as
// busy past BusyFor, the context's end, or another failure).
type RemovalError struct {
	Node  string
	Phase RemovalPhase
	Jobs  int
	Err   error
}

func (e *RemovalError) Error() string {
	if e.Phase == RemovalWait && e.Jobs > 0 {
		return fmt.Sprintf("%d jobs still running on node %s: %v", e.Jobs, e.Node, e.Err)
	}
	return fmt.Sprintf("cannot remove node %s: %v", e.Node, e.Err)
}

func (e *RemovalError) Unwrap() error { return e.Err }

// JobIDs are the ids of jobs.
func JobIDs(jobs []Job) []string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

// Remover runs node removals through Client. One protocol serves every caller: a departing
// unit's hook (Remove, Stop set to stop its slurmd), a controller's reconcile (one Step per
// hook, the Removal kept in the charm's state), an action (Remove with CancelJobs or
// RefuseJobs), and a node's re-registration (Remove, then Restore on the new record or
// Abort when the wait ends first).
type Remover struct {
	// Client runs the Slurm commands (required).
	Client *Client
	// Stop stops the node's daemon; it runs once, before the delete (after it with
	// DeleteFirst, or when the node turns out unknown). Nil: nothing to stop (the daemon
	// runs elsewhere or is gone).
	Stop func(ctx context.Context, node string) error
	// DeleteFirst deletes the node's record before its daemon stops: under auth/slurm
	// (23.11 and later) a client command on the node authenticates through the socket its
	// slurmd serves, so the node cannot delete its own record once slurmd is stopped; a
	// slurmd whose record is deleted does not register it again (24.11).
	DeleteFirst bool
	// Committing, when set, runs once the node has no job, before its daemon is stopped or
	// its record deleted: the last moment the removal can be given up (Abort). A caller
	// keeps there what it needs to finish an interrupted removal. An error leaves the
	// removal where it was.
	Committing func(ctx context.Context, node string) error
	// Progress is told the number of jobs on the node whenever it changes (the first
	// count included).
	Progress func(node string, jobs int)
	// Cancelling is told the jobs a CancelJobs removal is about to cancel (an action logs
	// them).
	Cancelling func(node string, jobs []string)
	// Interval is the pause between steps in Remove; zero means Client.PollInterval, or
	// DefaultPollInterval.
	Interval time.Duration
	// MaxInterval, when above Interval, lets the pause grow while Remove waits for jobs:
	// doubling from Interval after each check that finds the node still running jobs, up to
	// MaxInterval, and back to Interval once the removal moves on. A node's jobs end in
	// minutes or hours, and many nodes waiting at once must not keep the controller busy
	// answering squeue (32 units polling every 100 ms starved a 2-core controller).
	MaxInterval time.Duration
	// UnreachableFor bounds how long Remove retries an unreachable controller; zero means
	// DefaultUnreachableFor, negative no retry.
	UnreachableFor time.Duration
	// BusyFor bounds how long Remove retries a delete refused as busy; zero means
	// DefaultBusyFor, negative no retry.
	BusyFor time.Duration
	// StuckFor is how long a node may stay busy while squeue shows no job on it before the
	// removal treats it as stuck: on Slurm 22.05 a dynamic node that ran a job during a
	// reconfigure counts that job twice and stays ALLOCATED after it ends, and
	// `scontrol delete` refuses it as busy for ever (SchedMD bug 16434, fixed in 23.02.3).
	// A stuck node's daemon is stopped, the node set DOWN (no job to kill; the reason
	// names the removal) and deleted. Measured across Steps (Removal.IdleBusySince) with
	// Now; zero means DefaultStuckFor, negative never.
	StuckFor time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DrainListed makes r's drain phase (RemovalDrain) with its node as n, which the caller read
// a moment before (a hook's node list) instead of Step reading it again: the node's prior
// drain, down state and reason are recorded, the node drained unless n shows it drained
// already, and r moves to RemovalWait. It reports whether the node turned out gone (as
// Step does). A caller that knows the node busy (n) may stop there: a Step of the wait
// phase could only count its jobs.
func (m *Remover) DrainListed(ctx context.Context, r *Removal, n Node) (bool, error) {
	if r.Phase != RemovalDrain {
		return false, fmt.Errorf("cannot drain node %s for its removal: removal in phase %q", r.Node, r.Phase)
	}
	r.WasDrain, r.WasDown, r.PriorReason = n.State.Drain(), n.State.Down(), n.Reason
	if r.Reason != "" && !n.State.Drain() {
		err := m.Client.Drain(ctx, r.Node, r.Reason)
		switch {
		case errors.Is(err, ErrUnknownNode):
			return m.gone(ctx, r)
		case err == nil:
			r.Drained = true
		case !errors.Is(err, ErrInvalidNodeState):
			return false, err
		}
	}
	r.Phase = RemovalWait
	return false, nil
}

// Step advances r as far as it can go without waiting, and reports whether the node is
// gone. It returns nil with r not done when the removal has to wait: jobs still run on the
// node, or the delete was refused as busy (r.Phase is then RemovalDelete). Errors leave
// r.Phase where it was, so the next Step retries; an unreachable controller gives an error
// wrapping ErrControllerUnreachable.
func (m *Remover) Step(ctx context.Context, r *Removal) (bool, error) {
	c := m.Client
	for {
		switch r.Phase {
		case RemovalDone:
			return true, nil
		case RemovalDrain:
			n, err := c.ShowNode(ctx, r.Node)
			if errors.Is(err, ErrUnknownNode) {
				return m.gone(ctx, r)
			}
			if err != nil {
				return false, err
			}
			if done, err := m.DrainListed(ctx, r, n); done || err != nil {
				return done, err
			}
		case RemovalWait:
			jobs, err := c.JobsOnNode(ctx, r.Node)
			if errors.Is(err, ErrUnknownNode) {
				return m.gone(ctx, r)
			}
			if err != nil {
				return false, err
			}
			if !r.Counted || len(jobs) != r.JobCount {
				r.Counted, r.JobCount = true, len(jobs)
				if m.Progress != nil {
					m.Progress(r.Node, len(jobs))
				}
			}
			if len(jobs) > 0 {
				r.IdleBusySince = time.Time{}
				return false, m.jobs(ctx, r, jobs)
			}
			n, err := c.ShowNode(ctx, r.Node)
			if errors.Is(err, ErrUnknownNode) {
				return m.gone(ctx, r)
			}
			if err != nil {
				return false, err
			}
			if n.State.Busy() && !m.stuck(r) {
				return false, nil // a job still completing
			}
			r.IdleBusySince = time.Time{}
			if err := m.commit(ctx, r); err != nil {
				return false, err
			}
			r.Phase = RemovalStop
			if m.DeleteFirst {
				r.Phase = RemovalDelete
			}
		case RemovalStop:
			if err := m.stop(ctx, r); err != nil {
				return false, err
			}
			r.Phase = RemovalDelete
			if m.DeleteFirst {
				r.Phase = RemovalDone
			}
		case RemovalDelete:
			if r.Stuck && !r.Downed {
				err := c.UpdateNode(ctx, r.Node, NodeUpdate{State: "down", Reason: r.stuckReason()})
				switch {
				case errors.Is(err, ErrUnknownNode):
					r.Phase = m.deleted()
					continue
				case err != nil:
					return false, err
				}
				r.Downed = true
			}
			err := c.DeleteNode(ctx, r.Node)
			switch {
			case err == nil, errors.Is(err, ErrUnknownNode):
				r.Phase = m.deleted()
			case errors.Is(err, ErrNodeBusy):
				return false, m.busyDelete(ctx, r)
			default:
				return false, err
			}
		default:
			return false, fmt.Errorf("cannot remove node %s: unknown phase %q", r.Node, r.Phase)
		}
	}
}

// stuck reports whether r's node, busy with no job on it, has been so for StuckFor (and
// marks r Stuck then); the first sighting starts the clock.
func (m *Remover) stuck(r *Removal) bool {
	if m.StuckFor < 0 {
		return false
	}
	now := m.now()
	if r.IdleBusySince.IsZero() {
		r.IdleBusySince = now
	}
	if now.Sub(r.IdleBusySince) < bound(m.StuckFor, DefaultStuckFor) {
		return false
	}
	r.Stuck = true
	return true
}

// busyDelete handles a delete refused as busy: when no job runs on the node, the refusal
// counts towards StuckFor (the next Step sets the node DOWN once it is reached); a job
// on it restarts the clock.
func (m *Remover) busyDelete(ctx context.Context, r *Removal) error {
	if r.Stuck {
		return nil
	}
	jobs, err := m.Client.JobsOnNode(ctx, r.Node)
	switch {
	case errors.Is(err, ErrUnknownNode):
		return nil // the next Step's delete ends it
	case err != nil:
		return err
	case len(jobs) > 0:
		r.IdleBusySince = time.Time{}
		return nil
	}
	m.stuck(r)
	return nil
}

// stuckReason is the DOWN reason of a stuck node: the removal's reason with the cause.
func (r *Removal) stuckReason() string {
	reason := r.Reason
	if reason == "" {
		reason = "node removal"
	}
	return reason + ": busy with no job (Slurm bug 16434), set down to delete it"
}

// jobs applies r's policy to the jobs found on its node.
func (m *Remover) jobs(ctx context.Context, r *Removal, jobs []Job) error {
	switch r.Jobs {
	case RefuseJobs:
		return &BusyError{Node: r.Node, Jobs: jobs}
	case CancelJobs:
		var ids []string
		for _, id := range JobIDs(jobs) {
			if !slices.Contains(r.Cancelled, id) {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		if m.Cancelling != nil {
			m.Cancelling(r.Node, ids)
		}
		if err := m.Client.CancelJobs(ctx, ids...); err != nil {
			return fmt.Errorf("cannot cancel jobs %s on node %s: %w", strings.Join(ids, ","), r.Node, err)
		}
		r.Cancelled = append(r.Cancelled, ids...)
	}
	return nil
}

// deleted is the phase after the node's record is gone: its daemon's stop with DeleteFirst,
// else the end.
func (m *Remover) deleted() RemovalPhase {
	if m.DeleteFirst {
		return RemovalStop
	}
	return RemovalDone
}

// gone ends a removal (draining or waiting) whose node is unknown: the daemon is still
// stopped (a running dynamic slurmd would register the node again).
func (m *Remover) gone(ctx context.Context, r *Removal) (bool, error) {
	if err := m.commit(ctx, r); err != nil {
		return false, err
	}
	if err := m.stop(ctx, r); err != nil {
		return false, err
	}
	r.Phase = RemovalDone
	return true, nil
}

func (m *Remover) commit(ctx context.Context, r *Removal) error {
	if m.Committing == nil {
		return nil
	}
	return m.Committing(ctx, r.Node)
}

func (m *Remover) stop(ctx context.Context, r *Removal) error {
	if m.Stop == nil {
		return nil
	}
	if err := m.Stop(ctx, r.Node); err != nil {
		return fmt.Errorf("cannot stop node %s: %w", r.Node, err)
	}
	return nil
}

// Remove runs Step until the node is gone, pausing Interval between steps. It retries an
// unreachable controller for UnreachableFor and a delete refused as busy for BusyFor (each
// measured from the first failure in a row); jobs are waited for as long as ctx allows. It
// returns a *RemovalError when it gives up: errors.Is tells an unreachable controller
// (ErrControllerUnreachable), a busy node (ErrNodeBusy) and the context's end apart.
func (m *Remover) Remove(ctx context.Context, r *Removal) error {
	var downSince, busySince time.Time
	pause := m.interval()
	fail := func(err error) error {
		return &RemovalError{Node: r.Node, Phase: r.Phase, Jobs: r.JobCount, Err: err}
	}
	for {
		done, err := m.Step(ctx, r)
		now := m.now()
		switch {
		case done:
			return nil
		case ctx.Err() != nil:
			return fail(ctx.Err())
		case errors.Is(err, ErrControllerUnreachable):
			if downSince.IsZero() {
				downSince = now
			}
			if now.Sub(downSince) >= bound(m.UnreachableFor, DefaultUnreachableFor) {
				return fail(err)
			}
		case err != nil:
			return fail(err)
		default:
			downSince = time.Time{}
			if r.Phase == RemovalDelete {
				if busySince.IsZero() {
					busySince = now
				}
				if now.Sub(busySince) >= bound(m.BusyFor, DefaultBusyFor) {
					return fail(fmt.Errorf("delete refused for %s: %w", now.Sub(busySince), ErrNodeBusy))
				}
			}
		}
		if err := poll.Sleep(ctx, pause); err != nil {
			return fail(err)
		}
		pause = m.nextPause(pause, r)
	}
}

// nextPause is Remove's pause after prev: longer while r waits for jobs (MaxInterval),
// Interval otherwise.
func (m *Remover) nextPause(prev time.Duration, r *Removal) time.Duration {
	if r.Phase != RemovalWait || m.MaxInterval <= m.interval() {
		return m.interval()
	}
	return min(2*prev, m.MaxInterval)
}

// Abort undoes a removal that is given up before its node was stopped: a node this removal
// drained is resumed, then its prior state restored (Restore).
func (m *Remover) Abort(ctx context.Context, r *Removal) error {
	if !r.Drained {
		return nil
	}
	if err := m.Client.Resume(ctx, r.Node); err != nil {
		return fmt.Errorf("cannot resume node %s: %w", r.Node, err)
	}
	r.Drained = false
	return m.Restore(ctx, r)
}

// Restore gives the node (a new record, after a re-registration) the administrative state
// it had before the removal: down or drained, with its reason (or "restored after
// reconfiguration" when it had none).
func (m *Remover) Restore(ctx context.Context, r *Removal) error {
	reason := r.PriorReason
	if reason == "" {
		reason = "restored after reconfiguration"
	}
	var err error
	switch {
	case r.WasDown:
		err = m.Client.UpdateNode(ctx, r.Node, NodeUpdate{State: "down", Reason: reason})
	case r.WasDrain:
		err = m.Client.Drain(ctx, r.Node, reason)
	}
	if err != nil {
		return fmt.Errorf("cannot restore the state of node %s: %w", r.Node, err)
	}
	return nil
}

func (m *Remover) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Remover) interval() time.Duration {
	switch {
	case m.Interval > 0:
		return m.Interval
	case m.Client != nil && m.Client.PollInterval > 0:
		return m.Client.PollInterval
	}
	return DefaultPollInterval
}

// bound is d, def when d is zero, and zero (no retry) when d is negative.
func bound(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}
