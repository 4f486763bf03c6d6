package main

import (
	"context"
	"slices"
	"time"

	"github.com/charmed-slurm/operators/libs/hostlist"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// maxSteps bounds the node removals one pass steps (besides those it skips as still busy): a
// hook's cost must not grow with the number of units leaving at once. What is left goes to the
// next pass (the removal waiter's wake, another hook, update-status).
const maxSteps = 8

// nodeRemovals are the removals of departed units' nodes (the state's Pending), one pass at a
// time: the departing unit drains and deletes its own node; this is the safety net for when it
// could not.
type nodeRemovals struct{ h *hook }

// pass makes one pass over the pending node removals (drain → wait for its jobs →
// delete, slurm.Remover's Step, the Removal kept in the state); it never waits. A node with
// running jobs is never deleted; it stays pending. A node the hook's node list lacks is gone
// already (its unit deleted it) and needs no Step: node names are unit names, never used
// again. A drained node the list shows busy and squeue shows jobs on (one squeue for all such
// nodes) needs no Step either: it can only wait. At most maxSteps nodes are stepped.
func (nr nodeRemovals) pass(ctx context.Context) {
	h := nr.h
	if len(h.st.Pending) == 0 {
		return
	}
	m := h.c.remover()
	nodes, listErr := h.nodes.list(ctx) // on error, each Step finds out for itself
	occupied := nr.occupied(ctx, nodes)
	steps := 0
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
		if occupied[node] || nr.unitsTurn(ctx, nodes, node, p) || steps == maxSteps {
			continue
		}
		steps++
		r := &p.Removal
		if r.Node == "" {
			*r = slurm.Removal{Node: node, Reason: "unit " + p.Unit + " removed"}
		}
		before := *r
		drained, stuck := r.Drained, r.Stuck
		done, err := m.Step(ctx, r)
		if r.Phase != before.Phase || r.Drained != before.Drained || r.Downed != before.Downed {
			h.nodes.forget() // the Step drained, set down or deleted the node
		}
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
// unit drained it (not this controller), it waits for its jobs, none is left, and the last
// ended less than unitGrace ago. The unit deletes it within a fraction of a second of that;
// the controller, the safety net, steps it after the grace (a pass that raced the unit would
// cost several Slurm commands for each such node).
func (nr nodeRemovals) unitsTurn(ctx context.Context, nodes []slurm.Node, node string, p pendingNode) bool {
	h := nr.h
	r := p.Removal
	if r.Phase != slurm.RemovalWait || r.Drained {
		return false
	}
	i := slices.IndexFunc(nodes, func(n slurm.Node) bool { return n.Name == node })
	if i < 0 || nodes[i].State.Busy() {
		return false
	}
	last, ok, err := nodes[i].LastBusy(time.Local)
	return err == nil && ok && h.c.Now().Sub(last) < unitGrace
}

// occupied are the pending nodes, waiting for their jobs (drained, counted), that nodes shows
// busy and that one squeue over all of them shows jobs on: a Step could only find them
// waiting. On a failure to list their jobs none is (each Step finds out for itself).
func (nr nodeRemovals) occupied(ctx context.Context, nodes []slurm.Node) map[string]bool {
	h := nr.h
	var waiting []string
	for _, n := range nodes {
		if p, ok := h.st.Pending[n.Name]; ok && p.Removal.Phase == slurm.RemovalWait && p.Removal.Counted && n.State.Busy() {
			waiting = append(waiting, n.Name)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	jobs, err := h.c.client().JobsOnNodes(ctx, waiting)
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
