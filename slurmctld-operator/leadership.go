package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/interfaces/slurmdbd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// The leader's records, across a change of leader. Juju takes the leadership from a unit
// without a hook there (it learns it from is-leader in its next hook) and gives it to another
// with leader-elected, after the hooks already queued there (and an update-status its waiter
// asks for through juju-exec may run first). So every hook settles the leadership before
// anything else (begin → leadership.settle), with what it read from is-leader:
//
//   - A unit that does not lead holds no leader record: Pending, Removing, Reboots, Accounting
//     and Problems are dropped by its first hook as a follower, so that a former leader does
//     no leader work from then on (every handler of leader work asks h.leader as well, and
//     its waiter, watching nothing of a follower's but a restart, ends) and, should it lead
//     again, starts from what Slurm and the relations say then, not from its old term.
//   - A unit that leads, and did not in its last hook (Led unset), takes them over, each from
//     where the truth is (docs/ha.md, "The leadership moving"):
//     Removing from the relations: every application with a partition (the include in the
//     leader's slurm.conf, which every controller keeps: backup.adopt) and no slurmd relation
//     any more is being removed; its partition is set INACTIVE again and goes once no job
//     record of it is left, as under the former leader.
//     Pending from Slurm: a departed unit's node is drained by the unit or the leader with the
//     reason "unit <unit> removed" (slurmd-operator's depart, nodeRemovals.pass); every node
//     so drained whose unit is in no slurmd relation is pending again. Its removal starts
//     afresh (slurm.Removal): the node is drained already, so the removal waits for its jobs
//     and deletes it once none runs, never before.
//     Accounting from the slurmdbd relation (slurmdbd's data, checked as at relation-changed),
//     and what slurmctld runs with (AccountingRunning) from the live slurm.conf, the leader's
//     as a backup applied it: accounting stays configured and slurmctld is not restarted.
//     Reboots from the peer application bag ("reboots"): a rolling reboot has nodes queued
//     that Slurm knows nothing of, so the leader writes its plan there (publisher.peers); the
//     new leader goes on from the plan the former one last wrote, and asks no node Slurm
//     shows rebooting, or booted since the plan began (rollingReboot.advance).
//     Problems (an application's refused data) come back with that application's next
//     relation-changed; its previous partition is kept meanwhile.
//
// The record of what the leader published (Published) is started afresh by every new term
// (begin): a new leader writes its relation data once more, the same data, which Juju hands
// to no remote unit as a change.
type leadership struct{ h *hook }

// settle brings the leader's records in line with this hook's leadership.
func (l leadership) settle(ctx context.Context) error {
	h := l.h
	switch {
	case !h.leader:
		l.resign(ctx)
		return nil
	case !h.st.Led:
		return l.inherit(ctx)
	case h.st.AdoptNodes:
		l.adoptNodes(ctx)
	}
	return nil
}

// resign drops the leader's records on a unit that does not lead.
func (l leadership) resign(ctx context.Context) {
	st := l.h.st
	if st.Led || len(st.Pending) > 0 || len(st.Removing) > 0 || st.Reboots != nil || st.Accounting != nil {
		l.h.logf(ctx, juju.LevelInfo, "not the leader any more: the removals, the rolling reboot and accounting are the new leader's")
	}
	st.Led, st.AdoptNodes = false, false
	st.Pending, st.Removing, st.Reboots, st.Accounting, st.Problems = nil, nil, nil, nil, nil
}

// inherit takes the leader's records over on a unit that has just become the leader. What it
// cannot read is an error of the hook (Juju runs it again), but for Slurm's nodes, which the
// next hook that reaches Slurm reads (AdoptNodes).
func (l leadership) inherit(ctx context.Context) error {
	h := l.h
	apps, units, err := slurmdRelation{h}.related(ctx, true)
	if err != nil {
		return err
	}
	if err := l.adoptAccounting(ctx); err != nil {
		return err
	}
	if err := l.adoptReboots(ctx); err != nil {
		return err
	}
	l.adoptRemovals(ctx, apps)
	h.st.AdoptNodes = len(h.st.Apps) > 0
	h.st.Led = true
	if h.st.AdoptNodes {
		l.adoptNodesOf(ctx, units)
	}
	return nil
}

// adoptRemovals marks every application with a partition but no slurmd relation (apps are the
// related ones) as being removed, and makes sure Slurm has its partition INACTIVE.
func (l leadership) adoptRemovals(ctx context.Context, apps map[string]bool) {
	h := l.h
	for _, app := range h.st.Apps {
		if apps[app] {
			continue
		}
		if _, ok := h.st.Removing[app]; ok {
			continue
		}
		if h.st.Removing == nil {
			h.st.Removing = map[string]removal{}
		}
		h.st.Removing[app] = removal{Jobs: -1}
		h.logf(ctx, juju.LevelInfo, "new leader: partition %s of removed application %s is being removed, once its jobs are gone", app, app)
		err := h.client().UpdatePartitionState(ctx, app, slurm.PartitionInactive)
		if err != nil && !errors.Is(err, slurm.ErrUnknownPartition) {
			// The include says INACTIVE once this hook writes it (syncPartitions).
			h.logf(ctx, juju.LevelWarning, "cannot deactivate partition %s: %v", app, err)
		}
	}
}

// adoptNodes takes over the removals of departed units' nodes (AdoptNodes).
func (l leadership) adoptNodes(ctx context.Context) {
	h := l.h
	_, units, err := slurmdRelation{h}.related(ctx, true)
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "cannot list the slurmd units yet: %v", err)
		return
	}
	l.adoptNodesOf(ctx, units)
}

// adoptNodesOf adds to Pending every node Slurm shows drained with the reason a departing
// unit's removal gives ("unit <unit> removed"), whose unit is not among units (the related
// ones). On a failure to read the nodes, AdoptNodes stays set.
func (l leadership) adoptNodesOf(ctx context.Context, units map[string]bool) {
	h := l.h
	nodes, err := h.nodes.list(ctx)
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "new leader: cannot read the nodes yet to take over the removals of departed units' nodes: %v", err)
		return
	}
	h.st.AdoptNodes = false
	for _, n := range nodes {
		unit, ok := departedUnit(n)
		if !ok || units[unit] {
			continue
		}
		if _, known := h.st.Pending[n.Name]; known {
			continue
		}
		if h.st.Pending == nil {
			h.st.Pending = map[string]pendingNode{}
		}
		app, _ := slurmd.NodeApp(n.Name)
		h.st.Pending[n.Name] = pendingNode{Unit: unit, App: app}
		h.logf(ctx, juju.LevelInfo, "new leader: node %s of departed unit %s is removed once it has no job", n.Name, unit)
	}
}

// departedUnit is the unit whose node n is, when n is drained with the reason its removal
// gives ("unit <unit> removed", slurmd-operator's depart and nodeRemovals.pass).
func departedUnit(n slurm.Node) (string, bool) {
	app, ok := slurmd.NodeApp(n.Name)
	if !ok || !n.State.Drain() {
		return "", false
	}
	unit := app + "/" + n.Name[len(app)+1:]
	return unit, n.Reason == slurmd.RemovalReason(unit)
}

// adoptAccounting reads the slurmdbd relation into Accounting (unless this unit has a record
// of it already, leading before an upgrade), and AccountingRunning from the live slurm.conf
// when this unit ran the former leader's configuration as a backup.
func (l leadership) adoptAccounting(ctx context.Context) error {
	h := l.h
	if h.st.AppliedConf != "" {
		running, err := l.runningAccounting(ctx)
		if err != nil {
			return err
		}
		h.st.AccountingRunning = running
	}
	if h.st.Accounting != nil {
		return nil
	}
	r := slurmdbd.Requirer{HookContext: h.hc}
	rel, err := r.Relation(ctx)
	if err != nil {
		return fmt.Errorf("cannot list the slurmdbd relation: %w", err)
	}
	if ev := h.hc.Event; rel == "" || (ev.Kind == juju.RelationBroken && ev.Relation == rel) {
		return nil
	}
	app, d, err := r.Dbd(ctx, rel)
	var de *slurmdbd.DataError
	switch {
	case errors.Is(err, slurmdbd.ErrNotReady):
		h.st.Accounting = &accounting{Relation: rel, App: app}
	case errors.As(err, &de):
		h.st.Accounting = &accounting{Relation: rel, App: app, Refused: err.Error()}
	case err != nil:
		return fmt.Errorf("cannot read the slurmdbd relation %s: %w", rel, err)
	default:
		a := &accounting{Relation: rel, App: app}
		a.set(ctx, h, d)
		h.st.Accounting = a
	}
	a := h.st.Accounting
	switch {
	case a.Refused != "":
		h.logf(ctx, juju.LevelInfo, "new leader: accounting off: %s", a.Refused)
	case a.Host == "":
		h.logf(ctx, juju.LevelInfo, "new leader: accounting waits for slurmdbd")
	default:
		h.logf(ctx, juju.LevelInfo, "new leader: accounting via slurmdbd at %s", a.storage())
	}
	return nil
}

// runningAccounting is the accounting storage (host:port, "" for none) the live slurm.conf
// names.
func (l leadership) runningAccounting(ctx context.Context) (string, error) {
	doc, err := slurmconf.ReadFile(ctx, l.h.c.Path(confPath))
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", confPath, err)
	}
	if typ, _ := doc.Get("AccountingStorageType"); typ != "accounting_storage/slurmdbd" {
		return "", nil
	}
	host, _ := doc.Get("AccountingStorageHost")
	port, _ := doc.Get("AccountingStoragePort")
	return host + ":" + port, nil
}

// adoptReboots reads the rolling reboot the former leader last wrote in the peer application
// bag, unless this unit has one (leading before an upgrade).
func (l leadership) adoptReboots(ctx context.Context) error {
	h := l.h
	if h.st.Reboots != nil {
		return nil
	}
	rel, err := h.peerRelation(ctx)
	if err != nil || rel == "" {
		return err
	}
	bag, err := h.hc.Relations.AppData(ctx, rel, h.hc.Event.App)
	if err != nil {
		return fmt.Errorf("cannot read the peer application bag: %w", err)
	}
	plan, err := decodeRebootPlan(bag[peerKeyReboots])
	if err != nil {
		// Not taken over: the nodes it had queued are not rebooted.
		h.logf(ctx, juju.LevelWarning, "new leader: the rolling reboot is not taken over: %v", err)
		return nil
	}
	if plan != nil {
		h.st.Reboots = plan
		h.logf(ctx, juju.LevelInfo, "new leader: rolling reboot taken over (%d nodes asked, %d queued, %d done)", len(plan.Asked), len(plan.Queued), plan.Done)
	}
	return nil
}

// peerKeyReboots is the peer application bag's key for the rolling reboot under way (JSON, a
// rebootPlan; absent when there is none).
const peerKeyReboots = "reboots"

// maxRebootPlanSize bounds the rolling reboot's encoding in the peer application bag.
const maxRebootPlanSize = 1 << 20

// encodeRebootPlan is the peer bag's value for plan: "" (the key deleted) for none.
func encodeRebootPlan(plan *rebootPlan) (string, error) {
	if plan == nil {
		return "", nil
	}
	b, err := json.Marshal(plan)
	if err != nil {
		return "", err
	}
	if len(b) > maxRebootPlanSize {
		return "", fmt.Errorf("the rolling reboot's plan is over %d bytes", maxRebootPlanSize)
	}
	return string(b), nil
}

// decodeRebootPlan reads the rolling reboot from the peer bag; "" is none. Every node name
// is one Slurm takes (no separator, no blank, at most 128 bytes), Max at least 1.
func decodeRebootPlan(raw string) (*rebootPlan, error) {
	if raw == "" {
		return nil, nil
	}
	if len(raw) > maxRebootPlanSize {
		return nil, fmt.Errorf("invalid %q in peer data: over %d bytes", peerKeyReboots, maxRebootPlanSize)
	}
	var plan rebootPlan
	if err := decodePeerJSON(peerKeyReboots, raw, &plan); err != nil {
		return nil, err
	}
	if err := plan.check(); err != nil {
		return nil, fmt.Errorf("invalid %q in peer data: %w", peerKeyReboots, err)
	}
	return &plan, nil
}

// check validates a plan read from the peer bag.
func (r *rebootPlan) check() error {
	switch {
	case r.Max < 1:
		return fmt.Errorf("max-unavailable %d", r.Max)
	case r.Done < 0:
		return fmt.Errorf("done %d", r.Done)
	case r.Reason == "" || strings.ContainsAny(r.Reason, "\n\r\""):
		return fmt.Errorf("reason %q", trunc(r.Reason))
	case len(r.Queued)+len(r.Asked) > maxRebootNodes:
		return fmt.Errorf("%d nodes, at most %d", len(r.Queued)+len(r.Asked), maxRebootNodes)
	}
	seen := map[string]bool{}
	for _, n := range append(sortedKeys(r.Asked), r.Queued...) {
		if n == "" || len(n) > 128 || strings.ContainsAny(n, ",=[] \t\r\n\"") || seen[n] {
			return fmt.Errorf("node %q", trunc(n))
		}
		seen[n] = true
	}
	for n, bt := range r.Asked {
		if len(bt) > 64 || strings.ContainsAny(bt, " \t\r\n") {
			return fmt.Errorf("boot time %q of node %s", trunc(bt), n)
		}
	}
	return nil
}
