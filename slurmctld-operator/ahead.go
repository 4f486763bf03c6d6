package main

import (
	"context"
	"slices"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
)

// beginReadingAhead is begin with the hook's relation reads started first (readAhead), so
// that their tools run beside is-leader (asked before the state loaded) and the rest of
// begin. The hook waits for them before it ends: in After when begin succeeds (waitAhead),
// here when it fails.
func (c *Charm) beginReadingAhead(ctx context.Context, k *charm.Hook[charmState]) (*hook, error) {
	wait := readAhead(ctx, k.HookContext, &k.State)
	h, err := c.begin(ctx, k)
	if err != nil {
		wait()
		return nil, err
	}
	h.ahead = wait
	return h, nil
}

// waitAhead waits for the reads begin started, if any, and drops the node list read ahead
// that the hook did not take: no tool or command runs past the hook.
func (h *hook) waitAhead() {
	if h.ahead != nil {
		h.ahead()
	}
	h.nodes.drop()
	h.addrAhead.Wait()
}

// readsIngress reports whether the hook will read the ingress address (hook.ingress: once per
// configure hook), leader being the unit's leadership: the leader's configure
// (configureController: slurmctldDaemon.ensure plans the controllers, itself first) on
// leader-elected, config-changed, start and upgrade-charm, unless a configuration problem
// stops it or the unit leaves. begin then reads it (network-get) from the moment the
// configuration is known, beside is-leader and the handler's work before the address
// (features, the auth key, the shared storage), taking the unit's leadership in its last hook
// (State.Led) for the answer is-leader will give (leader-elected says it by itself). The
// address is the unit's, whatever the hook does; a unit that no longer leads (the first hook
// after the leadership moved) leaves it unread: one network-get more, waited for when the
// hook ends.
func (h *hook) readsIngress(leader bool) bool {
	switch h.hc.Event.Kind {
	case juju.LeaderElected, juju.ConfigChanged, juju.Start, juju.UpgradeCharm:
	default:
		return false
	}
	return leader && !h.st.Leaving && h.configProblem() == nil
}

// listsNodes reports whether the hook's status will read the node list, leader being the
// unit's leadership (unitStatus: the leader's, with no problem to show and no restart under
// way, while slurmctld runs, which the read ahead checks first), in a hook whose handler,
// before the status, reads the list itself, changes nothing in Slurm, or forgets the list
// when it does (nodeCache.forget, which the hook's client and services call: before slurmctld
// starts, stops or restarts, after a reconfigure, a repair, a drain or a removal):
// update-status, the slurmd relation's created, joined and changed (but for a unit still
// joining, whose status keeps the counts the last status read, hook.keepsCounts: its
// relation-joined reads no list, and its relation-changed reads it only once the unit's
// databag, read ahead beside, shows the unit's release,
// hook.aheadWhen), and the leader's configure hooks (leader-elected, config-changed,
// start, upgrade-charm). begin then reads the list ahead (nodeCache.ahead), beside is-leader
// and the handler's own work, once the configuration's problem and the restart under way are
// known, taking the unit's leadership in its last hook (State.Led) for the answer is-leader
// will give (leader-elected says it by itself). A handler that changes Slurm (a partition
// written, a reconfigure, a restart) forgets the read, which cancels it, and its status reads
// the list again, as in turn; a unit that no longer leads (the first hook after the
// leadership moved) or a handler that finds a new problem leaves it unread, and begin or the
// hook's end cancels it. Before slurmctld runs (its first start) nothing is read.
func (h *hook) listsNodes(leader bool) bool {
	ev := h.hc.Event
	switch {
	case ev.Kind == juju.UpdateStatus, slices.Contains(configureHooks, ev.Kind) && ev.Kind != juju.LeaderSettingsChanged:
	case ev.Endpoint == slurmd.RequirerEndpoint && ev.Kind == juju.RelationJoined && h.keepsCounts():
		return false // the status keeps the counts of a joining unit's hook
	case ev.Endpoint == slurmd.RequirerEndpoint && (ev.Kind == juju.RelationCreated || ev.Kind == juju.RelationJoined || ev.Kind == juju.RelationChanged):
	default:
		return false
	}
	st := h.st
	return leader && !st.Leaving && h.configProblem() == nil && st.ConfRefused == "" && st.StoodDown == nil &&
		len(st.Problems) == 0 && st.Restart == nil
}

// readAhead starts the reads of the hook of hc that its handler makes whatever leadership
// says, in the order the tools answer, not the handler's: the relation's memo holds them
// (juju.Relations.Ahead), and the handler's own reads wait for their answers. Only reads the
// handler makes in every case are started, so that the hook runs the same tools, as many
// times each, as when it reads in turn:
//
//   - slurmd-relation-changed of a unit that is not leaving: the requirer's event reads the
//     application at the other end (relation-list --app) and its databag (slurmd.Requirer's
//     Compute, which the event names: Juju's JUJU_REMOTE_APP is relation-list --app's answer
//     in a hook of that relation), and the metrics gate the changed unit's databag
//     (metricsGate.recordSlurmd), the leader and the others alike, before any relation-set.
//
// A unit that is leaving (unlessLeaving) reads nothing. The returned wait waits for them all.
func readAhead(ctx context.Context, hc *juju.HookContext, st *charmState) (wait func()) {
	ev := hc.Event
	if st.Leaving || ev.Kind != juju.RelationChanged || ev.Endpoint != slurmd.RequirerEndpoint || ev.Relation == "" {
		return func() {}
	}
	rel := ev.Relation
	reads := []func(context.Context, juju.Relations) error{
		func(ctx context.Context, r juju.Relations) error { _, err := r.RemoteApp(ctx, rel); return err },
	}
	if app := ev.RemoteApp; app != "" {
		reads = append(reads, func(ctx context.Context, r juju.Relations) error { _, err := r.AppData(ctx, rel, app); return err })
	}
	if unit := ev.RemoteUnit; unit != "" {
		reads = append(reads, func(ctx context.Context, r juju.Relations) error { _, err := r.UnitData(ctx, rel, unit); return err })
	}
	return hc.Relations.Ahead(ctx, reads...)
}
