package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/hostlist"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// slurmdRelation handles every hook of the slurmd endpoint through the interface's events.
func (h *hook) slurmdRelation(ctx context.Context) error {
	hc := h.hc
	ev, evErr := slurmd.Requirer{HookContext: hc, Keys: charm.ConfKeys(h.st.SlurmVersion)}.Event(ctx)
	if !h.leader {
		// Only the leader manages the cluster; a standby only reports.
		return h.setStatus(ctx)
	}
	var err error
	if ev != nil {
		// The record follows the relations as they come and go.
		if hc.Event.Kind == juju.RelationBroken {
			delete(h.pub.Relations, hc.Event.Relation)
		} else {
			h.pub.relation(hc.Event.Relation)
		}
	}
	switch ev := ev.(type) {
	case slurmd.SlurmdJoined:
		err = h.slurmdJoined(ctx, ev, evErr)
	case slurmd.SlurmdReady:
		err = h.slurmdReady(ctx, ev)
	case slurmd.SlurmdDeparted:
		err = h.slurmdDeparted(ctx, ev)
	case slurmd.SlurmdDisconnected:
		err = h.slurmdDisconnected(ctx, ev)
	default:
		err = evErr
	}
	if err != nil {
		return err
	}
	return h.setStatus(ctx)
}

// slurmdJoined grants the auth secret to the relation and publishes ControllerData. evErr is a
// decoding error of the application's data, shown as blocked naming the field.
func (h *hook) slurmdJoined(ctx context.Context, ev slurmd.SlurmdJoined, evErr error) error {
	if evErr != nil {
		var de *slurmd.DataError
		if !errors.As(evErr, &de) {
			return evErr
		}
		h.st.setProblem(ev.App, evErr.Error())
		h.logf(ctx, juju.LevelWarning, "refusing the partition of %s (previous partition kept): %v", ev.App, evErr)
	}
	if h.cfgErr != nil || h.clusterNameError() != nil {
		return nil
	}
	id, err := h.authSecret(ctx)
	if err != nil {
		return err
	}
	if err := h.grant(ctx, id, ev.Relation); err != nil {
		return err
	}
	return h.publish(ctx, ev.Relation)
}

// slurmdReady writes the application's partition and reconfigures once if it changed.
func (h *hook) slurmdReady(ctx context.Context, ev slurmd.SlurmdReady) error {
	if h.cfgErr != nil || h.clusterNameError() != nil {
		return nil
	}
	if err := h.publish(ctx, ev.Relation); err != nil {
		return err
	}
	known := slices.Contains(h.st.Apps, ev.App)
	_, wasRemoving := h.st.Removing[ev.App]
	prevGres := slices.Clone(h.st.GresTypes)
	delete(h.st.Problems, ev.App)
	delete(h.st.Removing, ev.App)
	h.st.addApp(ev.App)
	newGres := h.st.addGresTypes(ev.Data.GresTypes)
	changed, err := h.changeConf(ctx, func(ctx context.Context) (bool, error) {
		gresChanged := false
		if newGres {
			var err error
			if gresChanged, err = h.writeGresTypes(ctx); err != nil {
				return false, err
			}
		}
		partChanged, err := h.syncPartitions(ctx, map[string]slurmd.ComputeData{ev.App: ev.Data})
		return gresChanged || partChanged, err
	})
	var ce *slurm.ConfigError
	if errors.As(err, &ce) {
		// Slurm cannot read the partition: the previous one (or none) stays.
		h.st.GresTypes = prevGres
		if !known {
			h.st.dropApp(ev.App)
		} else if wasRemoving {
			h.st.Removing[ev.App] = removal{Jobs: -1}
		}
		h.st.setProblem(ev.App, "partition refused, previous one kept: "+refusal(ce))
		h.logf(ctx, juju.LevelWarning, "refusing the partition of %s (previous partition kept): %v", ev.App, err)
		return nil
	}
	if err != nil {
		h.st.GresTypes = prevGres
		return err
	}
	if !h.running(ctx) {
		return nil
	}
	if changed {
		h.logf(ctx, juju.LevelInfo, "partition %s changed: %s", ev.App, ev.Data.Partition)
	}
	restart := h.gresRestartNeeded()
	if err := h.apply(ctx, changed); err != nil {
		return err
	}
	if restart {
		// Only now may units start with the new names: publish them everywhere.
		return h.publishAll(ctx)
	}
	return nil
}

// slurmdDeparted records the departed unit's node and makes one pass of the removals of
// departed units' nodes: the unit drains and deletes its own node; this is the safety net
// for when it could not. A node with jobs stays pending: the removal waiter (waiter.go) or
// update-status finishes it, never a wait in this hook.
func (h *hook) slurmdDeparted(ctx context.Context, ev slurmd.SlurmdDeparted) error {
	if h.st.Pending == nil {
		h.st.Pending = map[string]pendingNode{}
	}
	h.st.Pending[ev.Node] = pendingNode{Unit: ev.Unit, App: ev.App}
	h.st.Reboots.drop(ev.Node) // a rolling reboot no longer waits for it
	h.logf(ctx, juju.LevelInfo, "unit %s left: its node %s is removed once it has no job", ev.Unit, ev.Node)
	h.reconcileNodes(ctx)
	return nil
}

// slurmdDisconnected starts removing a slurmd application's partition: State=INACTIVE now (no
// new jobs), removal once no job of the partition is left (job records included): in this
// hook when none is, else when the removal waiter or update-status finds none.
func (h *hook) slurmdDisconnected(ctx context.Context, ev slurmd.SlurmdDisconnected) error {
	apps, err := h.goneApps(ctx, ev.App)
	if err != nil {
		return err
	}
	for _, app := range apps {
		if h.st.Removing == nil {
			h.st.Removing = map[string]removal{}
		}
		if _, ok := h.st.Removing[app]; !ok {
			h.st.Removing[app] = removal{Jobs: -1}
		}
		h.logf(ctx, juju.LevelInfo, "slurmd application %s removed: partition %s set INACTIVE, removed once its jobs are gone", app, app)
	}
	if len(apps) == 0 {
		return nil
	}
	// The file says INACTIVE too, so that a reconfigure for another application keeps it so.
	if _, err := h.changeConf(ctx, func(ctx context.Context) (bool, error) { return h.syncPartitions(ctx, nil) }); err != nil {
		return err
	}
	for _, app := range apps {
		err := h.c.client().UpdatePartitionState(ctx, app, slurm.PartitionInactive)
		if err != nil && !errors.Is(err, slurm.ErrUnknownPartition) {
			return fmt.Errorf("cannot deactivate partition %s: %w", app, err)
		}
	}
	return h.finishRemovals(ctx)
}

// goneApps are the applications whose relation broke: app when known, else every application
// with a partition but no relation any more.
func (h *hook) goneApps(ctx context.Context, app string) ([]string, error) {
	if app != "" {
		if !slices.Contains(h.st.Apps, app) {
			delete(h.st.Problems, app)
			return nil, nil
		}
		return []string{app}, nil
	}
	rels, err := h.hc.Relations.IDs(ctx, slurmd.RequirerEndpoint)
	if err != nil {
		return nil, fmt.Errorf("cannot list slurmd relations: %w", err)
	}
	live := map[string]bool{}
	for _, rel := range rels {
		if rel == h.hc.Event.Relation {
			continue
		}
		a, err := h.hc.Relations.RemoteApp(ctx, rel)
		if err != nil {
			return nil, fmt.Errorf("cannot read relation %s: %w", rel, err)
		}
		live[a] = true
	}
	var gone []string
	for _, a := range h.st.Apps {
		if !live[a] {
			gone = append(gone, a)
		}
	}
	return gone, nil
}

// maxSteps bounds the node removals one pass steps (besides those it skips as still busy): a
// hook's cost must not grow with the number of units leaving at once. What is left goes to the
// next pass (the removal waiter's wake, another hook, update-status).
const maxSteps = 8

// reconcileNodes makes one pass over the pending node removals (drain → wait for its jobs →
// delete, slurm.Remover's Step, the Removal kept in the state); it never waits. A node with
// running jobs is never deleted; it stays pending. A node the hook's node list lacks is gone
// already (its unit deleted it) and needs no Step: node names are unit names, never used
// again. A drained node the list shows busy and squeue shows jobs on (one squeue for all such
// nodes) needs no Step either: it can only wait. At most maxSteps nodes are stepped.
func (h *hook) reconcileNodes(ctx context.Context) {
	if len(h.st.Pending) == 0 {
		return
	}
	m := h.c.remover()
	nodes, listErr := h.nodeList(ctx) // on error, each Step finds out for itself
	occupied := h.occupied(ctx, nodes)
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
		if occupied[node] || h.unitsTurn(ctx, nodes, node, p) || steps == maxSteps {
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
			h.forgetNodes() // the Step drained, set down or deleted the node
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
func (h *hook) unitsTurn(ctx context.Context, nodes []slurm.Node, node string, p pendingNode) bool {
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
func (h *hook) occupied(ctx context.Context, nodes []slurm.Node) map[string]bool {
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

// partitionJobs lists every job record slurmctld still holds in partition, in all states:
// finished jobs are kept for MinJobAge and hold a reference to the partition until then.
func (c *Charm) partitionJobs(ctx context.Context, partition string) ([]slurm.Job, error) {
	jobs, err := c.client().PartitionJobRecords(ctx, partition)
	if err != nil {
		return nil, fmt.Errorf("cannot list the jobs of partition %s: %w", partition, err)
	}
	return jobs, nil
}

// finishRemovals makes one pass over the partitions being removed: each whose jobs are all
// gone is removed, with one reconfigure after the pass if any was; it never waits.
func (h *hook) finishRemovals(ctx context.Context) error {
	removed := false
	for _, app := range sortedKeys(h.st.Removing) {
		done, err := h.finishRemoval(ctx, app)
		if err != nil {
			h.logf(ctx, juju.LevelWarning, "cannot remove partition %s yet: %v", app, err)
		}
		removed = removed || done
	}
	if removed && h.running(ctx) {
		return h.reconfigure(ctx)
	}
	return nil
}

// finishRemoval removes app's partition if no job of it is left, deleting the app's remaining
// idle node records first. It reports whether the partition is gone.
func (h *hook) finishRemoval(ctx context.Context, app string) (bool, error) {
	jobs, err := h.c.partitionJobs(ctx, app)
	if err != nil {
		return false, err
	}
	var pending []string
	for _, j := range jobs {
		if j.State == "PENDING" {
			pending = append(pending, j.ID)
		}
	}
	h.st.Removing[app] = removal{Jobs: len(jobs), Pending: pending}
	if len(jobs) > 0 {
		return false, nil
	}
	cl := h.c.client()
	nodes, err := h.nodeList(ctx)
	if err != nil {
		return false, err
	}
	left := 0
	for _, n := range nodes {
		// A node belongs to app by its name (the unit's), never by its features: node-config
		// may give a node any feature, and a node an administrator added by hand is not ours.
		if owner, ok := slurmd.NodeApp(n.Name); !ok || owner != app {
			continue
		}
		h.forgetNodes()
		err := cl.DeleteNode(ctx, n.Name)
		switch {
		case err == nil:
			h.logf(ctx, juju.LevelInfo, "deleted node %s of removed application %s", n.Name, app)
			delete(h.st.Pending, n.Name)
		case errors.Is(err, slurm.ErrUnknownNode):
			delete(h.st.Pending, n.Name)
		default:
			left++
			h.logf(ctx, juju.LevelWarning, "cannot delete node %s of removed application %s yet: %v", n.Name, app, err)
		}
	}
	if left > 0 {
		return false, nil
	}
	// A refused or failed candidate must leave the record as it was: the order of Apps decides
	// the default partition.
	apps, rm, problem, hadProblem := slices.Clone(h.st.Apps), h.st.Removing[app], h.st.Problems[app], h.st.Problems[app] != ""
	_, err = h.changeConf(ctx, func(ctx context.Context) (bool, error) {
		if err := h.removePartition(ctx, app); err != nil {
			return false, err
		}
		h.st.dropApp(app)
		// The default partition may move to another application.
		_, err := h.syncPartitions(ctx, nil)
		return true, err
	})
	if err != nil {
		h.st.Apps = apps
		h.st.Removing[app] = rm
		if hadProblem {
			h.st.setProblem(app, problem)
		}
		return false, err
	}
	h.logf(ctx, juju.LevelInfo, "removed partition %s", app)
	return true, nil
}

// updateStatus repeats the reconciles (one pass each) and refreshes the status. One node
// list (hook.nodeList) serves them all and the status, unless one of them changes Slurm.
func (h *hook) updateStatus(ctx context.Context) error {
	if h.leader {
		h.reconcileNodes(ctx)
		if err := h.finishRemovals(ctx); err != nil {
			return err
		}
		if h.running(ctx) {
			h.repairPartitions(ctx)
			if h.st.Reboots != nil {
				if _, err := h.advanceReboots(ctx); err != nil {
					h.logf(ctx, juju.LevelWarning, "rolling reboot: %v", err)
				}
				h.forgetNodes() // a reboot step changes node states
			}
		}
	}
	return h.setStatus(ctx)
}
