package main

import (
	"context"
	"errors"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// nodeCounts are what the unit status tells of the node list (unitStatus).
type nodeCounts struct {
	Nodes    int `json:"nodes"`
	Idle     int `json:"idle,omitempty"`
	Alloc    int `json:"alloc,omitempty"`
	Draining int `json:"draining,omitempty"`
	Drained  int `json:"drained,omitempty"`
	Down     int `json:"down,omitempty"`
}

// countNodes counts nodes as the unit status tells them. FUTURE records (future-nodes) are
// no nodes: never up, never scheduled.
func countNodes(nodes []slurm.Node) nodeCounts {
	var c nodeCounts
	for _, n := range nodes {
		switch {
		case n.State.Base == slurm.StateFuture:
			continue
		case n.State.Draining():
			c.Draining++
		case n.State.Drain():
			c.Drained++
		case n.State.Down():
			c.Down++
		case n.State.Busy():
			c.Alloc++
		case n.State.Base == slurm.StateIdle:
			c.Idle++
		}
		c.Nodes++
	}
	return c
}

// joining reports whether this hook is a slurmd relation's joined or changed hook of a unit
// still joining: its application's charm publishes each unit's Slurm release (its leader
// published the application's), and this unit has not published its own. A slurmd unit
// publishes it at the end of its first relation hook, after it started slurmd and waited for
// its node's registration (or saw it fail): until then its node cannot be counted yet, or
// registers right now on the cores this hook runs on; the relation-changed of its
// publication follows.
func (h *hook) joining() bool {
	ev := h.hc.Event
	if ev.Endpoint != slurmd.RequirerEndpoint || ev.RemoteUnit == "" || (ev.Kind != juju.RelationJoined && ev.Kind != juju.RelationChanged) {
		return false
	}
	if app, ok := h.st.SlurmdReleases[ev.RemoteApp]; !ok || app.Version == "" {
		return false // an older slurmd charm: its units publish no release
	}
	_, published := h.st.SlurmdReleases[ev.RemoteUnit]
	return !published
}

// keepsCounts reports whether the status of this hook shows the node counts its unit last
// read (State.NodeCounts) instead of reading the node list (`scontrol show node`: a process,
// a credential and an RPC beside the joining node's registration): a hook of a unit still
// joining (joining) that changed nothing in Slurm (every change forgets the list, so no
// count is older than anything this hook did) and has read no list itself. The
// relation-changed that follows the unit's publication reads the list, with its node.
func (h *hook) keepsCounts() bool {
	return h.st.NodeCounts != nil && !h.nodes.read && !h.nodes.forgot && h.joining()
}

// nodeCounts are the counts the status shows: those kept (keepsCounts), else the node
// list's, which are kept for the next hooks.
func (h *hook) nodeCounts(ctx context.Context) (nodeCounts, error) {
	if h.keepsCounts() {
		return *h.st.NodeCounts, nil
	}
	nodes, err := h.nodes.list(ctx)
	if err != nil {
		h.st.NodeCounts = nil
		return nodeCounts{}, err
	}
	c := countNodes(nodes)
	h.st.NodeCounts = &c
	return c, nil
}

// aheadWhen is the condition under which begin reads the node list ahead (nodeCache.ahead):
// slurmctld runs (running), and, in the relation-changed of a unit that had not published its
// release before (joining), the unit's databag, read ahead beside (readAhead), still holds
// none: the status then keeps the counts (keepsCounts). It runs in the read's goroutine and
// reads nothing of the state.
func (h *hook) aheadWhen(running func(context.Context) bool) func(context.Context) bool {
	ev := h.hc.Event
	if ev.Kind != juju.RelationChanged || h.st.NodeCounts == nil || !h.joining() {
		return running
	}
	hc, rel, unit := h.hc, ev.Relation, ev.RemoteUnit
	return func(ctx context.Context) bool {
		_, err := slurmd.Requirer{HookContext: hc}.Unit(ctx, rel, unit)
		return !errors.Is(err, slurmd.ErrNotReady) && running(ctx)
	}
}
