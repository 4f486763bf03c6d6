package main

import (
	"context"
	"slices"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/hostlist"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// maxSteps bounds the node removals one pass steps (besides those it skips as still busy): a
// hook's cost must not grow with the number of units leaving at once. What is left goes to the
// next pass (the removal waiter's wake, another hook, update-status).
const maxSteps = 8

// passBudget bounds a pass's time the same way: once a pass has taken this long, it steps no
// further node (it always steps one). A Step costs a few Slurm commands, each 20-50 ms on a
// quiet machine but up to half a second on a loaded one, where eight Steps made an
// update-status hook of 4.6 s (make bench, part busy, at load 8-48). What is left goes to the
// next pass, as with maxSteps.
const passBudget = 400 * time.Millisecond

// nodeRemovals are the removals of departed units' nodes (the state's Pending), one pass at a
// time: the departing unit drains and deletes its own node; this is the safety net for when it
// could not.
type nodeRemovals struct{ h *hook }

// pass makes one pass over the pending node removals (drain → wait for its jobs →
// delete, slurm.Remover's Step, the Removal kept in the state); it never waits. A node with
// running jobs is never deleted; it stays pending. A node the hook's node list lacks is gone
// already (its unit deleted it) and needs no Step: node names are unit names, never used
// again. A drained node the list shows busy and squeue shows jobs on (one squeue for all such
// nodes) needs no Step either: it can only wait. At most maxSteps nodes are stepped, and none
// more once the pass has taken passBudget.
func (nr nodeRemovals) pass(ctx context.Context) {
	h := nr.h
	if len(h.st.Pending) == 0 {
		return
	}
	m := h.remover()
	nodes, listErr := h.nodes.list(ctx) // on error, each Step finds out for itself
	occupied := nr.occupied(ctx, nodes)
	steps, start := 0, h.c.Now()
	// One log line for the nodes gone in this pass: a juju-log per node would cost a tool
	// call each, after a busy scale-in's jobs end as many as units left.
	var gone []string
	defer func() {
		if len(gone) > 0 {
			h.logf(ctx, juju.LevelInfo, "deleted: the nodes %s of departed units", hostlist.CompressSorted(gone))
		}
	}()
	for _, node := range sortedKeys(h.st.Pending) {
		p := h.st.Pending[node]
		if listErr == nil && !slices.ContainsFunc(nodes, func(n slurm.Node) bool { return n.Name == node }) {
			gone = append(gone, node)
			delete(h.st.Pending, node)
			continue
		}
		if occupied[node] || nr.unitsTurn(ctx, nodes, node, p) || steps == maxSteps ||
			(steps > 0 && h.c.Now().Sub(start) >= passBudget) {
			continue
		}
		steps++
		r := &p.Removal
		if r.Node == "" {
			*r = slurm.Removal{Node: node, Reason: slurmd.RemovalReason(p.Unit)}
		}
		drained, stuck := r.Drained, r.Stuck
		done, err := m.Step(ctx, r)
		// A Step that drained, set down or deleted the node forgot the list (hook.client); one
		// that found the node drained already (by its unit) and counted its jobs changed
		// nothing in Slurm, and the status keeps using the list.
		if r.Drained && !drained {
			h.logf(ctx, juju.LevelInfo, "drained node %s: %s", node, r.Reason)
		}
		if r.Stuck && !stuck {
			h.logf(ctx, juju.LevelWarning, "node %s of departed unit %s stays busy with no job (Slurm bug 16434): setting it down to delete it", node, p.Unit)
		}
		switch {
		case err != nil:
			h.logf(ctx, juju.LevelWarning, "cannot remove node %s of departed unit %s yet: %v", node, p.Unit, err)
		case done:
			gone = append(gone, node)
			delete(h.st.Pending, node)
			continue
		}
		h.st.Pending[node] = p
	}
}

// unitsTurn reports whether pending node (p) is still its departing unit's to delete: the
// unit drained it (not this controller, drainedByUnit), no job is left, and the last ended
// less than unitGrace ago. The unit deletes it within a fraction of a second of that;
// the controller, the safety net, steps it after the grace (a pass that raced the unit would
// cost several Slurm commands for each such node).
func (nr nodeRemovals) unitsTurn(ctx context.Context, nodes []slurm.Node, node string, p pendingNode) bool {
	h := nr.h
	i := slices.IndexFunc(nodes, func(n slurm.Node) bool { return n.Name == node })
	if i < 0 || nodes[i].State.Busy() || !drainedByUnit(p.Removal, nodes[i]) {
		return false
	}
	last, ok, err := nodes[i].LastBusy(time.Local)
	return err == nil && ok && h.c.Now().Sub(last) < unitGrace
}

// drainedByUnit reports whether removal r's node (n, as listed) was drained by someone
// else than this controller, its departing unit, and waits for its jobs: r waits without
// having drained it, or has not started and the list shows the node drained. A Step of such
// a node changes nothing in Slurm while jobs run on it: it counts them.
func drainedByUnit(r slurm.Removal, n slurm.Node) bool {
	switch r.Phase {
	case slurm.RemovalWait:
		return !r.Drained
	case slurm.RemovalDrain:
		return n.State.Drain()
	}
	return false
}

// occupied are the pending nodes, waiting for their jobs (drained, counted), that nodes shows
// busy and that one squeue over all of them shows jobs on: a Step could only find them
// waiting. So are the nodes of units just departed that their units drained (drainedByUnit)
// and nodes shows busy: their first Step, which would read the node again and count its
// jobs, waits until the jobs end. A departure hook of a busy scale-in then runs one node
// list and one squeue, however many units leave at once (a first Step of the newly departed
// node and the node list read again after it made four: each took up to 0.6 s while 32
// units left at once on a loaded 2-core machine, and the first departure's hook 2.3 s, make
// bench part busy). On a failure to list their jobs none is (each Step finds out for
// itself).
func (nr nodeRemovals) occupied(ctx context.Context, nodes []slurm.Node) map[string]bool {
	h := nr.h
	var waiting []string
	for _, n := range nodes {
		p, ok := h.st.Pending[n.Name]
		if !ok || !n.State.Busy() {
			continue
		}
		if r := p.Removal; (r.Phase == slurm.RemovalWait && r.Counted) || (r.Phase == slurm.RemovalDrain && drainedByUnit(r, n)) {
			waiting = append(waiting, n.Name)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	jobs, err := h.client().JobsOnNodes(ctx, waiting)
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, j := range jobs {
		names, err := hostlist.Expand(j.Nodes)
		if err != nil {
			continue
		}
		for _, n := range names {
			if slices.Contains(waiting, n) {
				out[n] = true
			}
		}
	}
	return out
}
