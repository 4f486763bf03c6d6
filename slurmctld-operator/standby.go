package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/poll"
	"github.com/charmed-slurm/operators/libs/service"
)

// A lasting takeover. The takeover action on a backup asks Slurm to hand it control
// (`scontrol takeover <index>`): the backup shuts down the controllers listed before it
// (REQUEST_SHUTDOWN, backup.c _shutdown_primary_controller), which save their state and exit
// with status 0, and takes control. A primary whose slurmctld starts again takes control
// back at once (controller.c), so the hand-over lasts only while those controllers stay
// down: their supervisor does not restart a clean exit (service.Spec.StayStopped), and their
// hooks must not start them either. A unit's action cannot run anything on another unit, so
// the taking unit writes a record in its own peer bag naming the units its takeover shut
// down; each of those reads it in its next hooks (the peer relation-changed the record
// fires) and stands down: slurmctld stopped and disabled (no start at boot), the shared
// configuration still written to its files, until takeover is run on that unit, which starts
// its slurmctld again (a primary takes control back; a backup then asks for control too) and
// remembers the record it took back from.

// peerKeyTookControl is a unit's takeover record in its peer bag (controlRecord, JSON).
const peerKeyTookControl = "took-control"

// takeoverWait bounds the takeover action's wait for the heartbeat to name this unit's
// slurmctld in control, for its result; Slurm's takeover takes 2 to 4 s.
const takeoverWait = 15 * time.Second

// reclaimWait bounds the same wait when the action started this unit's slurmctld to take
// control back (a unit that stood down): the starting slurmctld asks the controller in control
// to give it up (REQUEST_CONTROL) and waits for its answer, which comes when that one is back
// in standby or after CONTROL_TIMEOUT − 1 = 29 s (proc_req.c, Slurm 22.05 to 26.05); after a
// takeover it is the 29 s, on 22.05 too (docs/ha.md). Then the state load and the first
// heartbeat.
const reclaimWait = 30*time.Second + takeoverWait

// controlRecord is the record of a takeover action: ID names it (the unit and the time:
// one per action), From are the units whose controllers it shut down.
type controlRecord struct {
	ID   string   `json:"id"`
	From []string `json:"from"`
}

// maxRecordSize bounds a takeover record read from a peer.
const maxRecordSize = 4096

// decodeControlRecord reads a peer's takeover record, refusing what no charm writes.
func decodeControlRecord(raw string) (controlRecord, error) {
	var r controlRecord
	if len(raw) > maxRecordSize {
		return r, fmt.Errorf("invalid %q in peer data: %d bytes, at most %d", peerKeyTookControl, len(raw), maxRecordSize)
	}
	if err := decodePeerJSON(peerKeyTookControl, raw, &r); err != nil {
		return r, err
	}
	if r.ID == "" || len(r.ID) > 200 || strings.ContainsAny(r.ID, "\x00\n\r") {
		return r, fmt.Errorf("invalid %q in peer data: bad id %q", peerKeyTookControl, trunc(r.ID))
	}
	if len(r.From) > maxControllers {
		return r, fmt.Errorf("invalid %q in peer data: %d units, at most %d", peerKeyTookControl, len(r.From), maxControllers)
	}
	for _, u := range r.From {
		if !unitRE.MatchString(u) || len(u) > 128 {
			return r, fmt.Errorf("invalid %q in peer data: %q is not a unit name", peerKeyTookControl, trunc(u))
		}
	}
	return r, nil
}

// standby is this unit's part in a lasting takeover.
type standby struct{ h *hook }

// refresh reads the peers' takeover records and sets charmState.StoodDown to the first (in
// unit order) that names this unit and that this unit has not taken back from, nil when
// none does; records that are gone are forgotten from charmState.TookBack. A record a peer
// departing in this hook wrote counts no more (its unit leaves: the units it stood down
// start again). A record no charm writes is logged and ignored.
func (s standby) refresh(ctx context.Context) error {
	h := s.h
	me := h.hc.Event.Unit
	rel, err := h.peerRelation(ctx)
	if err != nil {
		return err
	}
	var found *stoodDown
	var live []string
	if rel != "" {
		units, err := h.hc.Relations.Units(ctx, rel)
		if err != nil {
			return err
		}
		if ev := h.hc.Event; ev.Kind == juju.RelationDeparted && ev.Endpoint == peerEndpoint {
			units = slices.DeleteFunc(units, func(u string) bool { return u == ev.RemoteUnit })
		}
		slices.SortFunc(units, func(a, b string) int { return unitNumber(a) - unitNumber(b) })
		for _, u := range units {
			bag, err := h.hc.Relations.UnitData(ctx, rel, u)
			if err != nil {
				return err
			}
			raw := bag[peerKeyTookControl]
			if raw == "" {
				continue
			}
			r, err := decodeControlRecord(raw)
			if err != nil {
				h.logf(ctx, juju.LevelWarning, "%s: %v", u, err)
				continue
			}
			live = append(live, r.ID)
			if found == nil && slices.Contains(r.From, me) && !slices.Contains(h.st.TookBack, r.ID) {
				found = &stoodDown{By: u, Record: r.ID}
			}
		}
	}
	h.st.TookBack = slices.DeleteFunc(h.st.TookBack, func(id string) bool { return !slices.Contains(live, id) })
	if len(h.st.TookBack) == 0 {
		h.st.TookBack = nil
	}
	was := h.st.StoodDown
	switch {
	case found != nil && (was == nil || *was != *found):
		h.logf(ctx, juju.LevelInfo, "standing down: %s took control by its takeover action (%s); slurmctld stays stopped until takeover is run on this unit", found.By, found.Record)
	case found == nil && was != nil:
		h.logf(ctx, juju.LevelInfo, "no longer standing down: the takeover record of %s is gone (%s left or its record was replaced)", was.By, was.By)
	}
	h.st.StoodDown = found
	return nil
}

// hold is a configure hook's part for slurmctld while this unit stands down (after the
// configuration files were written): slurmctld stopped if it runs (a supervisor that
// restarted it, or a hook that started it before the record arrived) and disabled, so
// that neither a hook nor the machine's boot starts it; no restart is left under way.
func (s standby) hold(ctx context.Context) error {
	h := s.h
	st, err := h.c.Services.Status(ctx, svcSlurmctld)
	if err != nil && !errors.Is(err, service.ErrUnknownService) {
		return fmt.Errorf("cannot get slurmctld's status: %w", err)
	}
	h.st.Restart = nil
	if err != nil {
		return nil // never configured: nothing runs
	}
	if st.State == service.StateActive || st.State == service.StateActivating {
		if err := h.services().Stop(ctx, svcSlurmctld); err != nil {
			return fmt.Errorf("cannot stop slurmctld: %w", err)
		}
		h.logf(ctx, juju.LevelInfo, "standing down: stopped slurmctld (control handed to %s by its takeover action)", h.st.StoodDown.By)
	}
	if st.Enabled {
		if err := h.services().Disable(ctx, svcSlurmctld); err != nil {
			return fmt.Errorf("cannot disable slurmctld: %w", err)
		}
	}
	return nil
}

// waitInControl waits, at most wait, until the heartbeat names this unit in control, and
// returns the controller it names last.
func (s standby) waitInControl(ctx context.Context, wait time.Duration) (controller, bool) {
	h := s.h
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var act controller
	var ok bool
	_ = poll.Until(wctx, min(h.c.poll(), 250*time.Millisecond), func(context.Context) (bool, error) {
		act, ok = h.activeController()
		return ok && act.Unit == h.hc.Event.Unit, nil
	})
	return act, ok
}
