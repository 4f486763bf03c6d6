package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/hostlist"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// departed is the departure hook's pass: the departed unit's node (p, just added to the
// pending removals) is drained unless the hook's node list shows it drained already, from
// that list (no `scontrol show node` of it), and nothing more is asked of Slurm while the
// list shows it busy: its jobs can only end, the removal waiter wakes the charm when they
// have (or at its refresh, which counts them), and the unit deletes its own node. The other
// pending removals are the waiter's and update-status's too, except that the nodes the list
// lacks (gone: their units deleted them) are dropped, which costs no command. A node the list
// shows idle gets the full pass (nodeRemovals.pass), as does every node when the list cannot
// be read. It writes at most one log line, what was done.
//
// A busy scale-in's departure hook thus runs one node list, plus one drain and one log line
// when the hook comes before its unit's own drain: a full pass's first Step read the node
// again, drained it, counted its jobs (squeue) and the status read the list again, five Slurm
// commands and two log lines, each up to 0.45 s while 32 departing units start their own
// hooks on a loaded 2-core machine (the first departure's hook 1.4-2.6 s, make bench part
// busy).
func (nr nodeRemovals) departed(ctx context.Context, node string, p pendingNode) {
	h := nr.h
	// One log line, and only when the hook acted on Slurm or saw nodes gone: the status says
	// the node is removed once idle, and a line per departure was a hook-tool call per unit
	// leaving (each up to 0.3 s while 32 units leave at once on a loaded 2-core machine).
	var notes []string
	defer func() {
		if len(notes) > 0 {
			h.logf(ctx, juju.LevelInfo, "unit %s left: %s", p.Unit, strings.Join(notes, "; "))
		}
	}()
	nodes, err := h.nodes.list(ctx)
	if err != nil {
		nr.pass(ctx)
		return
	}
	if gone := nr.dropGone(nodes); len(gone) > 0 {
		notes = append(notes, fmt.Sprintf("deleted: the nodes %s of departed units", hostlist.CompressSorted(gone)))
	}
	i := slices.IndexFunc(nodes, func(n slurm.Node) bool { return n.Name == node })
	if i < 0 {
		return // gone already (its unit deleted it): dropped above
	}
	n := nodes[i]
	if !n.State.Drain() {
		r := &p.Removal
		*r = slurm.Removal{Node: node, Reason: slurmd.RemovalReason(p.Unit)}
		done, err := h.remover().DrainListed(ctx, r, n)
		switch {
		case err != nil:
			h.logf(ctx, juju.LevelWarning, "cannot remove node %s of departed unit %s yet: %v", node, p.Unit, err)
		case done:
			delete(h.st.Pending, node)
			notes = append(notes, fmt.Sprintf("deleted: the nodes %s of departed units", node))
			return
		case r.Drained:
			h.nodes.drained(nodes, node, r.Reason)
			notes = append(notes, fmt.Sprintf("drained node %s: %s", node, r.Reason))
		}
		h.st.Pending[node] = p
	}
	if !n.State.Busy() {
		nr.pass(ctx)
	}
}

// dropGone drops the pending removals whose node the list (nodes) lacks, and returns their
// nodes: their units deleted them (node names are unit names, never used again).
func (nr nodeRemovals) dropGone(nodes []slurm.Node) []string {
	h := nr.h
	var gone []string
	for _, node := range sortedKeys(h.st.Pending) {
		if !slices.ContainsFunc(nodes, func(n slurm.Node) bool { return n.Name == node }) {
			gone = append(gone, node)
			delete(h.st.Pending, node)
		}
	}
	return gone
}
