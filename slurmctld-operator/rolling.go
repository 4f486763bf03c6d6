package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/juju"
)

// Rolling restarts for a change of the controller set. SlurmctldHost is read at start only,
// so every controller restarts when a controller is added or leaves the middle of the list:
// one at a time, so that a controller is always in control, the one in control last.
//
// The leader hands out the turn in the peer application bag ("restart-turn": the
// SlurmctldHost list the controllers restart for, whose turn it is and since when); every
// unit says in its unit bag which list its slurmctld runs with and answers ("runs-with",
// empty while it does not run or a restart is under way). A unit restarts for a new list only
// in its turn (a unit whose slurmctld does not run yet starts at once: a controller starting
// takes nobody's place); the leader moves the turn on when the unit's report shows the new
// list (its relation-changed), when the unit left the relation, or, after turnWait, to the
// next one (the unit is blocked by its own restart's deadline; the leader's waiter wakes it
// for that deadline). The turn lives in the application bag, so a new leader carries it on.
//
// The order (nextTurn): the controllers not in control, in SlurmctldHost order; the one in
// control (the heartbeat's) last. Without a fresh heartbeat (a single controller growing to
// two: Slurm writes none for one controller) the first controller running goes first: the
// new backups cannot stand by before it writes one (26.05's run_backup answers no RPC until
// the heartbeat file exists), and nobody could take control from it anyway. The
// primary in control restarts in place: a takeover would cost more, not less, time without a
// controller in control. A backup's REQUEST_TAKEOVER handler (backup.c,
// _background_process_msg) shuts down the controllers before it, then sleeps SHUTDOWN_WAIT
// (2 s) before it even starts to take control (run_backup pings once a second and loads the
// whole state with read_slurm_conf), and the primary takes control back as it starts again
// (controller.c: it asks every backup to relinquish), which is a second gap; a restart in
// place is one: the primary's save, exit, start and state load (1.3 s measured, part
// failover of the bench; 1-2 s with two backups, TestAddControllerRolling). A backup in
// control (the primary away) hands control first to the lowest-index controller already
// running with the new list (`scontrol takeover`): restarted in place, it would come back in
// standby and wait 5 s and SlurmctldTimeout for a primary that does not answer. (A target
// after it in the list holds control only until the restarted backup, which pings only the
// controllers before it, takes it back SlurmctldTimeout later: docs/ha.md.)
// A primary that is not in control (its slurmctld was not running) restarts before the
// backup in control, and takes control as it starts.
const (
	peerKeyTurn     = "restart-turn"
	peerKeyRunsWith = "runs-with"
)

// turnWait bounds a unit's turn: its slurmctld has startWait to answer after its restart, the
// rest is for the hooks on either side (the unit's relation-changed, the leader's).
const turnWait = startWait + 15*time.Second

// restartTurn is the leader's record of the rolling restart under way, in the peer
// application bag.
type restartTurn struct {
	// Hosts is the SlurmctldHost list the controllers restart for.
	Hosts []string `json:"hosts"`
	// Unit is whose turn it is ("" when every unit left ran out of time); Since when the turn
	// was given.
	Unit  string    `json:"unit,omitempty"`
	Since time.Time `json:"since,omitzero"`
	// HandTo is the SlurmctldHost index of the controller the unit in control hands control
	// to (`scontrol takeover`) before it restarts; 0 for none (the primary restarts in place).
	HandTo int `json:"hand-to,omitempty"`
	// Skipped are the units whose turn ran out for these Hosts: they are not given another.
	Skipped []string `json:"skipped,omitempty"`
}

// decodeTurn reads the leader's turn record; "" is none.
func decodeTurn(raw string) (*restartTurn, error) {
	if raw == "" {
		return nil, nil
	}
	var t restartTurn
	if err := decodePeerJSON(peerKeyTurn, raw, &t); err != nil {
		return nil, err
	}
	if err := t.check(); err != nil {
		return nil, fmt.Errorf("invalid %q in peer data: %w", peerKeyTurn, err)
	}
	return &t, nil
}

func (t *restartTurn) check() error {
	if len(t.Hosts) == 0 || len(t.Hosts) > maxControllers || len(t.Skipped) > maxControllers {
		return fmt.Errorf("%d hosts and %d skipped units, want 1 to %d", len(t.Hosts), len(t.Skipped), maxControllers)
	}
	for _, u := range append([]string{t.Unit}, t.Skipped...) {
		if u != "" && (!unitRE.MatchString(u) || len(u) > 128) {
			return fmt.Errorf("%q is not a unit name", trunc(u))
		}
	}
	if t.HandTo < 0 || t.HandTo >= len(t.Hosts) {
		return fmt.Errorf("hand-to %d is not a backup's index", t.HandTo)
	}
	return nil
}

// encodeTurn is the bag value of t: "" for none (which deletes the key).
func encodeTurn(t *restartTurn) (string, error) {
	if t == nil {
		return "", nil
	}
	if err := t.check(); err != nil {
		return "", err
	}
	b, err := json.Marshal(t)
	return string(b), err
}

// turnView is what the leader knows when it hands out the turn.
type turnView struct {
	// Ctls are the controllers in SlurmctldHost order (those that left marked Gone).
	Ctls []controller
	// Runs is each unit's report: the SlurmctldHost list its slurmctld runs with and answers,
	// comma-joined; "" while it does not run or restarts.
	Runs map[string]string
	// Active is the unit in control by a fresh heartbeat, "" when unknown.
	Active string
	Now    time.Time
}

// nextTurn is the turn after prev for view: nil once every controller that did not leave
// runs with the list; else prev, while its unit has not finished and its time has not run
// out, or the next unit's turn. ranOut is the unit whose turn ran out in this step ("" for
// none). Order and reasons: the package comment above.
func nextTurn(prev *restartTurn, v turnView) (next *restartTurn, ranOut string) {
	target := hostsOf(v.Ctls)
	key := strings.Join(target, ",")
	var todo []controller
	for _, c := range live(v.Ctls) {
		if v.Runs[c.Unit] != key {
			todo = append(todo, c)
		}
	}
	if len(todo) == 0 {
		return nil, ""
	}
	t := &restartTurn{Hosts: target}
	if prev != nil && slices.Equal(prev.Hosts, target) {
		t = &restartTurn{Hosts: target, Unit: prev.Unit, Since: prev.Since, HandTo: prev.HandTo, Skipped: slices.Clone(prev.Skipped)}
	}
	isTodo := func(u string) bool { return slices.ContainsFunc(todo, func(c controller) bool { return c.Unit == u }) }
	if t.Unit != "" {
		if isTodo(t.Unit) && v.Now.Before(t.Since.Add(turnWait)) {
			return t, ""
		}
		if isTodo(t.Unit) {
			ranOut = t.Unit
			t.Skipped = append(t.Skipped, t.Unit)
		}
		t.Unit, t.Since, t.HandTo = "", time.Time{}, 0
	}
	active := v.Active
	first := func(ok func(controller) bool) *controller {
		i := slices.IndexFunc(todo, func(c controller) bool { return !slices.Contains(t.Skipped, c.Unit) && ok(c) })
		if i < 0 {
			return nil
		}
		return &todo[i]
	}
	var pick *controller
	if active == "" {
		// No fresh heartbeat: the controller in control runs alone (Slurm writes none for a
		// single controller) or its heartbeat is not seen. The first controller running is
		// taken for it, and goes first: the backups cannot stand by before it writes a
		// heartbeat (26.05's run_backup answers no RPC until the file exists), and none
		// could take control from it anyway.
		pick = first(func(c controller) bool { return v.Runs[c.Unit] != "" })
	}
	if pick == nil {
		// The controllers standing by, in SlurmctldHost order; the one in control last.
		pick = first(func(c controller) bool { return c.Unit != active })
	}
	if pick == nil {
		pick = first(func(c controller) bool { return c.Unit == active })
	}
	if pick == nil {
		return t, ranOut
	}
	t.Unit, t.Since = pick.Unit, v.Now
	if idx := slices.IndexFunc(v.Ctls, func(c controller) bool { return c.Unit == pick.Unit }); pick.Unit == active && idx > 0 {
		// A backup in control: control goes first to the first other controller running
		// with the new list (`scontrol takeover` of that index).
		for i, c := range v.Ctls {
			if i > 0 && c.Unit != pick.Unit && !c.Gone && v.Runs[c.Unit] == key {
				t.HandTo = i
				break
			}
		}
	}
	return t, ranOut
}

// turnNote is the part of a unit's status about the rolling restart: for the leader the
// turn under way and the units whose turn ran out, for another unit that it waits for its
// turn; "" when there is none.
func turnNote(t *restartTurn, unit string, leader bool) string {
	if t == nil {
		return ""
	}
	var parts []string
	if leader && t.Unit != "" {
		parts = append(parts, fmt.Sprintf("controllers restarting one at a time for the new SlurmctldHost list (%s's turn)", t.Unit))
	}
	if !leader && t.Unit != unit {
		who := t.Unit
		if who == "" {
			who = "none"
		}
		parts = append(parts, fmt.Sprintf("restart for the new SlurmctldHost list waits for this unit's turn (now: %s)", who))
	}
	if leader && len(t.Skipped) > 0 {
		parts = append(parts, fmt.Sprintf("%s did not finish its restart turn within %s (see its status; remove-unit a lost unit)", strings.Join(t.Skipped, ", "), turnWait))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

// rolling is the rolling restart as one hook sees it.
type rolling struct{ h *hook }

// runsWith is this unit's report: the SlurmctldHost list its slurmctld runs with and has
// answered with since its last start or restart, comma-joined, or, standing down, the one
// it will start with; "" otherwise.
func (r rolling) runsWith(ctx context.Context) string {
	h := r.h
	if h.st.StoodDown != nil && len(h.st.RunningHosts) > 0 {
		// Standing down: stopped, its files naming these controllers, it starts with them
		// when takeover is run on it; no restart turn is its to take.
		return strings.Join(h.st.RunningHosts, ",")
	}
	if h.st.Restart != nil || len(h.st.RunningHosts) == 0 || !h.c.running(ctx) {
		return ""
	}
	return strings.Join(h.st.RunningHosts, ",")
}

// report writes this unit's runs-with in its peer unit bag when it changed since the last
// write (charmState.RunsWith), which the leader's relation-changed reads.
func (r rolling) report(ctx context.Context) error {
	h := r.h
	ctls := h.ctls
	if ctls == nil {
		ctls = h.st.Controllers
	}
	if len(live(ctls)) < 2 && h.st.RunsWith == "" {
		return nil // a single controller: no peer asks
	}
	v := r.runsWith(ctx)
	if v == h.st.RunsWith {
		return nil
	}
	rel, err := h.peerRelation(ctx)
	if err != nil || rel == "" {
		return err
	}
	val := v
	if val == "" {
		val = "none" // an empty value would delete the key, which reads the same
	}
	if err := h.hc.Relations.SetUnitData(ctx, rel, map[string]string{peerKeyRunsWith: val}); err != nil {
		return fmt.Errorf("cannot tell the peers which controllers slurmctld runs with: %w", err)
	}
	h.st.RunsWith = v
	return nil
}

// plan is the leader's turn for this hook's controllers (h.ctls): read from the application
// bag, moved on (nextTurn) from the peers' reports and its own, kept in h.turn for
// publisher.peers, its deadline for the waiter and its note for the status.
func (r rolling) plan(ctx context.Context) error {
	h := r.h
	rel, err := h.peerRelation(ctx)
	if err != nil {
		return err
	}
	h.turn = nil
	if rel == "" || len(live(h.ctls)) < 2 && h.st.Turn == "" {
		h.st.TurnDeadline, h.st.TurnNote = time.Time{}, ""
		return nil
	}
	app, err := h.hc.Relations.AppData(ctx, rel, h.hc.Event.App)
	if err != nil {
		return err
	}
	prev, err := decodeTurn(app[peerKeyTurn])
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "%v: handing out the turns again", err)
		prev = nil
	}
	me := h.hc.Event.Unit
	runs := map[string]string{me: r.runsWith(ctx)}
	for _, c := range live(h.ctls) {
		if c.Unit == me {
			continue
		}
		bag, err := h.hc.Relations.UnitData(ctx, rel, c.Unit)
		if err != nil {
			return err
		}
		runs[c.Unit] = bag[peerKeyRunsWith]
	}
	v := turnView{Ctls: h.ctls, Runs: runs, Now: h.c.Now()}
	if act, ok := h.activeController(); ok {
		v.Active = act.Unit
	}
	next, ranOut := nextTurn(prev, v)
	if ranOut != "" {
		h.logf(ctx, juju.LevelWarning, "%s did not finish its restart turn within %s: the turn moves on", ranOut, turnWait)
	}
	if next != nil && next.Unit != "" && (prev == nil || prev.Unit != next.Unit) {
		h.logf(ctx, juju.LevelInfo, "restart turn for the controllers %s: %s (hand-to %d)", strings.Join(next.Hosts, ","), next.Unit, next.HandTo)
	}
	h.turn = next
	if h.st.Turn, err = encodeTurn(next); err != nil {
		return err
	}
	h.st.TurnDeadline = time.Time{}
	if next != nil && next.Unit != "" {
		h.st.TurnDeadline = next.Since.Add(turnWait)
	}
	h.st.TurnNote = turnNote(next, me, true)
	return nil
}

// mine reports whether this hook's turn lets this unit restart for the controllers hosts.
func (r rolling) mine(hosts []string) bool {
	t := r.h.turn
	return t != nil && t.Unit == r.h.hc.Event.Unit && slices.Equal(t.Hosts, hosts)
}

// restartSelf restarts this unit's slurmctld for the controllers hosts in its turn: a backup
// in control first hands control to the turn's HandTo (`scontrol takeover`, which returns
// once that controller has asked this one to relinquish and waited SHUTDOWN_WAIT); a
// takeover Slurm refuses is logged, and the restart goes on (the backups take control after
// SlurmctldTimeout).
func (r rolling) restartSelf(ctx context.Context, hosts []string) error {
	h := r.h
	t := h.turn
	if t != nil && t.HandTo > 0 && h.ctls[0].Unit != h.hc.Event.Unit && h.isActive() {
		if err := h.progress(ctx, fmt.Sprintf("handing control to %s before restarting for the new controllers", h.ctls[t.HandTo].Unit)); err != nil {
			return err
		}
		if err := h.client().Takeover(ctx, t.HandTo); err != nil {
			h.logf(ctx, juju.LevelWarning, "%s (index %d) did not take control: %v; restarting anyway", h.ctls[t.HandTo].Unit, t.HandTo, err)
		} else {
			h.logf(ctx, juju.LevelInfo, "control handed to %s (index %d) before the restart for the new controllers", h.ctls[t.HandTo].Unit, t.HandTo)
		}
	}
	return slurmctldDaemon{h}.restartForControllers(ctx, hosts, false)
}

// advance moves the turn on in a leader's hook that does not plan the controllers
// (update-status, woken by the waiter when this unit's restart answers or the turn's time
// runs out): the controllers of the last plan, the turn written back to the application bag
// when it changed, and this unit restarted when the turn is its own.
func (r rolling) advance(ctx context.Context) error {
	h := r.h
	if h.st.Turn == "" {
		return nil
	}
	if h.ctls == nil {
		h.ctls = h.st.Controllers
	}
	old := h.st.Turn
	if err := r.plan(ctx); err != nil {
		return err
	}
	if h.st.Turn != old {
		rel, err := h.peerRelation(ctx)
		if err != nil {
			return err
		}
		if err := h.hc.Relations.SetAppData(ctx, rel, map[string]string{peerKeyTurn: h.st.Turn}); err != nil {
			return fmt.Errorf("cannot publish the restart turn to the peers: %w", err)
		}
		if h.pub.Peers != nil {
			h.pub.Peers[peerKeyTurn] = h.st.Turn
		}
	}
	hosts := hostsOf(h.ctls)
	if r.mine(hosts) && h.st.Restart == nil && !slices.Equal(h.st.RunningHosts, hosts) && h.c.running(ctx) {
		if err := r.restartSelf(ctx, hosts); err != nil {
			return err
		}
		h.st.RunningHosts = hosts
	}
	return nil
}
