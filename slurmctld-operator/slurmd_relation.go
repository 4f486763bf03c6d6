package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// slurmdRelation is the controller's side of the slurmd relation (interfaces/slurmd): a slurmd
// application joins (the auth key granted, ControllerData published), brings its partition
// (written, the controller reconfigured), loses units (their nodes removed) and leaves (its
// partition removed).
type slurmdRelation struct{ h *hook }

// handle handles a hook of the slurmd endpoint through the interface's events. Only the
// leader manages the cluster: a standby only decodes the event.
func (sr slurmdRelation) handle(ctx context.Context) error {
	h := sr.h
	hc := h.hc
	ev, evErr := slurmd.Requirer{HookContext: hc, Keys: charm.ConfKeys(h.st.SlurmVersion)}.Event(ctx)
	metricsGate{h}.recordSlurmd(ctx, ev)
	if !h.leader {
		return nil
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
		err = sr.joined(ctx, ev, evErr)
	case slurmd.SlurmdReady:
		err = sr.ready(ctx, ev)
	case slurmd.SlurmdDeparted:
		err = sr.departed(ctx, ev)
	case slurmd.SlurmdDisconnected:
		err = sr.disconnected(ctx, ev)
	default:
		err = evErr
	}
	return err
}

// joined grants the auth secret to the relation and publishes ControllerData. evErr is a
// decoding error of the application's data, shown as blocked naming the field.
func (sr slurmdRelation) joined(ctx context.Context, ev slurmd.SlurmdJoined, evErr error) error {
	h := sr.h
	if evErr != nil {
		var de *slurmd.DataError
		if !errors.As(evErr, &de) {
			return evErr
		}
		h.st.setProblem(ev.App, evErr.Error())
		h.logf(ctx, juju.LevelWarning, "refusing the partition of %s (previous partition kept): %v", ev.App, evErr)
	}
	if h.configProblem() != nil {
		return nil
	}
	id, err := authKey{h}.secret(ctx)
	if err != nil {
		return err
	}
	if err := (publisher{h}).grant(ctx, id, ev.Relation); err != nil {
		return err
	}
	return publisher{h}.publish(ctx, ev.Relation)
}

// ready writes the application's partition and reconfigures once if it changed.
func (sr slurmdRelation) ready(ctx context.Context, ev slurmd.SlurmdReady) error {
	h := sr.h
	if h.configProblem() != nil {
		return nil
	}
	if err := (publisher{h}).publish(ctx, ev.Relation); err != nil {
		return err
	}
	known := slices.Contains(h.st.Apps, ev.App)
	_, wasRemoving := h.st.Removing[ev.App]
	prevGres := slices.Clone(h.st.GresTypes)
	delete(h.st.Problems, ev.App)
	delete(h.st.Removing, ev.App)
	h.st.addApp(ev.App)
	newGres := h.st.addGresTypes(ev.Data.GresTypes)
	changed, err := h.conf.change(ctx, func(ctx context.Context) (bool, error) {
		gresChanged := false
		if newGres {
			var err error
			if gresChanged, err = (slurmConf{h}).setGresTypes(ctx); err != nil {
				return false, err
			}
		}
		partChanged, err := slurmConf{h}.syncPartitions(ctx, map[string]slurmd.ComputeData{ev.App: ev.Data})
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
	// Nothing to apply (an application's data unchanged, as at every unit's join): whether
	// slurmctld runs is not asked (a service manager query, on systemd a D-Bus call).
	if ctl := (slurmctldDaemon{h}); !ctl.applies(changed) || !ctl.live(ctx) {
		return nil
	}
	if changed {
		h.logf(ctx, juju.LevelInfo, "partition %s changed: %s", ev.App, ev.Data.Partition)
	}
	// A new GresTypes name restarts slurmctld; the pass that finds it answering publishes the
	// names to every application (slurmctldDaemon.settle).
	return (slurmctldDaemon{h}).apply(ctx, changed)
}

// departed records the departed unit's node and starts its removal (nodeRemovals.departed):
// the unit drains and deletes its own node; this is the safety net for when it could not. A
// node with jobs stays pending: the removal waiter (waiter.go) or update-status finishes it,
// never a wait in this hook.
func (sr slurmdRelation) departed(ctx context.Context, ev slurmd.SlurmdDeparted) error {
	h := sr.h
	if h.st.Pending == nil {
		h.st.Pending = map[string]pendingNode{}
	}
	p := pendingNode{Unit: ev.Unit, App: ev.App}
	h.st.Pending[ev.Node] = p
	h.st.Reboots.drop(ev.Node) // a rolling reboot no longer waits for it
	nodeRemovals{h}.departed(ctx, ev.Node, p)
	return nil
}

// disconnected starts removing a slurmd application's partition: State=INACTIVE now (no
// new jobs), removal once no job of the partition is left (job records included): in this
// hook when none is, else when the removal waiter or update-status finds none.
func (sr slurmdRelation) disconnected(ctx context.Context, ev slurmd.SlurmdDisconnected) error {
	h := sr.h
	apps, err := sr.goneApps(ctx, ev.App)
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
	if _, err := h.conf.change(ctx, func(ctx context.Context) (bool, error) { return (slurmConf{h}).syncPartitions(ctx, nil) }); err != nil {
		return err
	}
	for _, app := range apps {
		err := h.client().UpdatePartitionState(ctx, app, slurm.PartitionInactive)
		if err != nil && !errors.Is(err, slurm.ErrUnknownPartition) {
			return fmt.Errorf("cannot deactivate partition %s: %w", app, err)
		}
	}
	return partitionRemovals{h}.pass(ctx)
}

// goneApps are the applications whose relation broke: app when known, else every application
// with a partition but no relation any more.
func (sr slurmdRelation) goneApps(ctx context.Context, app string) ([]string, error) {
	h := sr.h
	if app != "" {
		if !slices.Contains(h.st.Apps, app) {
			delete(h.st.Problems, app)
			return nil, nil
		}
		return []string{app}, nil
	}
	live, _, err := sr.related(ctx, false)
	if err != nil {
		return nil, err
	}
	var gone []string
	for _, a := range h.st.Apps {
		if !live[a] {
			gone = append(gone, a)
		}
	}
	return gone, nil
}

// related are the slurmd applications related and, withUnits, their units; the relation of
// this hook is left out when it breaks.
func (sr slurmdRelation) related(ctx context.Context, withUnits bool) (apps, units map[string]bool, err error) {
	hc := sr.h.hc
	rels, err := hc.Relations.IDs(ctx, slurmd.RequirerEndpoint)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot list slurmd relations: %w", err)
	}
	apps, units = map[string]bool{}, map[string]bool{}
	for _, rel := range rels {
		if hc.Event.Kind == juju.RelationBroken && rel == hc.Event.Relation {
			continue
		}
		a, err := hc.Relations.RemoteApp(ctx, rel)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot read relation %s: %w", rel, err)
		}
		apps[a] = true
		if !withUnits {
			continue
		}
		us, err := hc.Relations.Units(ctx, rel)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot list the units of relation %s: %w", rel, err)
		}
		for _, u := range us {
			units[u] = true
		}
	}
	return apps, units, nil
}
