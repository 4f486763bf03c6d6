package main

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/poll"
)

// handOverWait bounds the leaving hook's wait for its slurmctld to end after the takeover
// request (departure.handOver): the controller in control saves its whole state and exits
// as it gives up control, within a second or two; one still running after this is stopped.
// This is the one wait of a leaving unit's hook, and it ends with the unit's slurmctld gone.
const handOverWait = 10 * time.Second

// takeoverRequestWait bounds the leaving hook's `scontrol takeover`: the backup answers after
// its 2 s SHUTDOWN_WAIT; one that is down refuses at once, or scontrol gives up after
// MessageTimeout (10 s by default).
const takeoverRequestWait = 20 * time.Second

// handOverPoll is how often that wait looks at the service: often enough to stop a
// supervisor's restart of the exited slurmctld (Pebble's first back-off is 0.5 s) before it
// starts.
const handOverPoll = 100 * time.Millisecond

// departure is this unit leaving the application: its slurmctld stops for good, and when it
// was the controller in control, the first other backup takes control at once with Slurm's
// own protocol instead of after SlurmctldTimeout.
type departure struct{ h *hook }

// handOver hands control over and stops slurmctld; it records that the unit leaves
// (charmState.Leaving), so that no later hook starts slurmctld again.
//
// The controller in control is not stopped first: a slurmctld stopped by its supervisor
// while it accepted jobs was seen to end without its shutdown save (docs/ha.md). Instead the
// first backup is asked to take control (`scontrol takeover <index>`, REQUEST_TAKEOVER):
// the backup sends the controllers before it REQUEST_SHUTDOWN (backup.c,
// _shutdown_primary_controller), on which this slurmctld waits for its RPCs under way,
// saves all its state ("Saving all slurm state") and exits with status 0 (controller.c:
// the primary never resumes backup mode); the backup waits 2 s (SHUTDOWN_WAIT), then takes
// control once this one stops answering its pings. The hook waits for this slurmctld to be
// gone (bounded by handOverWait), then stops the service whatever it found: that is the
// whole of the old path when the takeover failed or timed out, and a supervisor that would
// start the exited slurmctld again (Pebble's on-success: restart, for a slurmctld started
// before the charm set on-success: ignore; stopSlurmctld's back-off) is told to stop.
//
// A unit not in control just stops (nothing to hand over; its takeover request would shut
// down the controllers before the one asked). With no backup left to hand to, or a backup
// that refuses or does not answer, it stops as before: the backups take control after
// SlurmctldTimeout, from the state saved at the stop.
func (d departure) handOver(ctx context.Context) error {
	h := d.h
	h.st.Leaving = true
	h.st.Restart = nil // its slurmctld stops for good: no restart left to finish
	if !h.c.running(ctx) {
		return nil
	}
	if h.ctls == nil {
		h.ctls = h.st.Controllers
	}
	// The primary hands over whatever the heartbeat says: its subordinate may have unmounted
	// the shared storage already (Juju orders the two units' departures in no way), and a
	// backup already in control skips the request ("already in controller mode"). A backup
	// hands over only when the heartbeat says it is in control.
	primary := len(h.ctls) > 1 && h.ctls[0].Unit == h.hc.Event.Unit
	if !primary && !h.isActive() {
		if err := d.stop(ctx); err != nil {
			return err
		}
		h.logf(ctx, juju.LevelInfo, "leaving: slurmctld stopped (it was not in control)")
		return nil
	}
	i := d.successor()
	if i < 0 {
		if err := d.stop(ctx); err != nil {
			return err
		}
		h.logf(ctx, juju.LevelWarning, "leaving: slurmctld stopped; no backup controller to hand control to")
		return nil
	}
	next := h.ctls[i].Unit
	if err := h.progress(ctx, fmt.Sprintf("leaving: handing control to %s (scontrol takeover %d)", next, i)); err != nil {
		return err
	}
	asked := h.c.Now()
	tctx, cancel := context.WithTimeout(ctx, takeoverRequestWait)
	err := h.client().Takeover(tctx, i)
	cancel()
	if err != nil {
		if err := d.stop(ctx); err != nil {
			return err
		}
		h.logf(ctx, juju.LevelWarning, "leaving: %s (backup %d) did not take control: %v; slurmctld stopped, the backups take control after SlurmctldTimeout", next, i, err)
		return nil
	}
	ended := d.waitEnded(ctx)
	if err := d.stop(ctx); err != nil {
		return err
	}
	h.st.HandedTo = next
	if ended {
		h.logf(ctx, juju.LevelInfo, "leaving: control handed to %s (backup %d): slurmctld saved its state and ended %.1f s after the takeover request", next, i, h.c.Now().Sub(asked).Seconds())
	} else {
		h.logf(ctx, juju.LevelWarning, "leaving: slurmctld still ran %s after asking %s (backup %d) to take control: stopped it", cmp.Or(h.c.ControlWait, handOverWait), next, i)
	}
	return nil
}

// successor is the index of the first backup that is not this unit and did not leave
// (`scontrol takeover i` shuts down the controllers before i and makes i take control), or
// -1. Index 0, the primary, takes no takeover.
func (d departure) successor() int {
	h := d.h
	for j := 1; j < len(h.ctls); j++ {
		if h.ctls[j].Unit != h.hc.Event.Unit && !h.ctls[j].Gone {
			return j
		}
	}
	return -1
}

// waitEnded waits, at most handOverWait, until this unit's slurmctld no longer runs, and
// reports whether it ended.
func (d departure) waitEnded(ctx context.Context) bool {
	c := d.h.c
	wctx, cancel := context.WithTimeout(ctx, cmp.Or(c.ControlWait, handOverWait))
	defer cancel()
	err := poll.Until(wctx, min(c.poll(), handOverPoll), func(ctx context.Context) (bool, error) {
		return !c.running(ctx), nil
	})
	return err == nil || !c.running(ctx)
}

// stop stops slurmctld through its supervisor (a stopped one stays stopped, a restart the
// supervisor scheduled is cancelled).
func (d departure) stop(ctx context.Context) error {
	if err := d.h.progress(ctx, "leaving: stopping slurmctld"); err != nil {
		return err
	}
	if err := d.h.services().Stop(ctx, svcSlurmctld); err != nil {
		return fmt.Errorf("cannot stop slurmctld: %w", err)
	}
	return nil
}
