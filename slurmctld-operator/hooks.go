package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
	"github.com/charmed-slurm/operators/interfaces/mountinfo"
	"github.com/charmed-slurm/operators/interfaces/sackd"
	"github.com/charmed-slurm/operators/interfaces/slurmdbd"
	"github.com/charmed-slurm/operators/libs/apt"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
)

// Router routes every hook and action the charm handles. Every handler has one shape, a
// method of hook run as a charm.Func: the kit's handlers (Charm.handlers) run it with the
// state, the configuration and leadership read; stateless runs it with the hook context
// alone.
func (c *Charm) Router() *juju.Router {
	hs := c.handlers()
	r := juju.NewRouter()
	r.Handle(juju.Install, hs.Handle((*hook).install))
	for _, k := range []juju.Kind{juju.LeaderElected, juju.LeaderSettingsChanged, juju.ConfigChanged, juju.Start} {
		r.Handle(k, hs.Handle(unlessLeaving((*hook).configure)))
	}
	r.Handle(juju.UpgradeCharm, hs.Handle(unlessLeaving((*hook).upgradeCharm)))
	// High availability: the peers and the shared storage change the controllers.
	for _, k := range []juju.Kind{juju.RelationCreated, juju.RelationJoined, juju.RelationChanged, juju.RelationDeparted, juju.RelationBroken} {
		r.HandleRelation(peerEndpoint, k, hs.Handle(unlessLeaving((*hook).configure)))
		r.HandleRelation(mountinfo.EndpointName, k, hs.Handle(unlessLeaving((*hook).configure)))
	}
	r.Handle(juju.UpdateStatus, hs.Handle(unlessLeaving((*hook).updateStatus)))
	for _, k := range []juju.Kind{juju.RelationCreated, juju.RelationJoined, juju.RelationChanged, juju.RelationDeparted, juju.RelationBroken} {
		r.HandleRelation("slurmd", k, hs.Handle(unlessLeaving((*hook).slurmdRelation)))
		r.HandleRelation(sackd.RequirerEndpoint, k, hs.Handle(unlessLeaving((*hook).sackdRelation)))
		r.HandleRelation(slurmdbd.RequirerEndpoint, k, hs.Handle(unlessLeaving((*hook).slurmdbdRelation)))
		r.HandleRelation(cosagent.Endpoint, k, hs.Handle(unlessLeaving((*hook).cosAgentRelation)))
	}
	r.Handle(juju.Stop, c.stateless((*hook).stopWaiter))
	r.Handle(juju.Remove, c.stateless((*hook).stopWaiter))
	r.HandleAction("show-current-config", c.stateless((*hook).showCurrentConfig))
	r.HandleAction("set-node-state", hs.Handle(thenStatus((*hook).setNodeState)))
	r.HandleAction("drain", hs.Handle(thenStatus((*hook).drain)))
	r.HandleAction("resume", hs.Handle(thenStatus((*hook).resume)))
	r.HandleAction("delete-node", hs.Handle(thenStatus((*hook).deleteNode)))
	r.HandleAction("rotate-auth-key", hs.Handle((*hook).rotateAuthKey))
	r.HandleAction("settle-jobs", hs.Handle((*hook).settleJobs))
	r.HandleAction("reboot", hs.Handle((*hook).reboot))
	r.HandleAction("takeover", hs.Handle((*hook).takeover))
	return r
}

// handlers runs every handler in the lifecycle with the hook value built by begin; whatever
// the handler's outcome, the removals it leaves under way go to the waiter (watch); when it
// succeeds, the login nodes are brought up to date and the record of what the hook wrote to
// Juju replaces the saved one (finish).
func (c *Charm) handlers() charm.Handlers[charmState, *hook] {
	hs := charm.Handlers[charmState, *hook]{Lifecycle: c.lifecycle(), Begin: c.begin, After: (*hook).watch, End: (*hook).finish}
	if c.AskLeaderEarly {
		hs.AskLeader = asksLeader
	}
	if c.ReadAhead {
		hs.Begin = c.beginReadingAhead
		hs.After = func(h *hook, ctx context.Context) {
			h.waitAhead()
			h.watch(ctx)
		}
	}
	return hs
}

// finish ends a hook that succeeded: every unit's /etc/hosts and the leader's login
// relations follow the login units (loginNodes.sync), then the record of what the hook wrote
// to Juju replaces the saved one (end).
func (h *hook) finish(ctx context.Context) error {
	if err := (metricsGate{h}).sync(ctx); err != nil {
		return err
	}
	if err := (loginNodes{h}).sync(ctx); err != nil {
		return err
	}
	if err := (publisher{h}).share(ctx); err != nil {
		return err
	}
	return h.end(ctx)
}

// unlessLeaving runs fn unless this unit leaves the application (remove-unit, or the
// application removed): the first hook that says so, a relation-departed whose departing unit
// is this one, hands control to a backup (departure.handOver), and from then on no hook of
// the unit starts or restarts slurmctld, whatever the order of the hooks that follow (its
// shared storage going, its peers departing).
func unlessLeaving(fn charm.Func[*hook]) charm.Func[*hook] {
	return func(h *hook, ctx context.Context) error {
		if ev := h.hc.Event; ev.Kind == juju.RelationDeparted && ev.DepartingUnit == ev.Unit && !h.st.Leaving {
			if err := (departure{h}).handOver(ctx); err != nil {
				return err
			}
		}
		if h.st.Leaving {
			return h.report(ctx)
		}
		return fn(h, ctx)
	}
}

// thenStatus runs action, which changes nodes in Slurm, then sets the unit status again:
// its node counts are out of date now, and no hook may come to refresh them before the next
// update-status.
func thenStatus(action charm.Func[*hook]) charm.Func[*hook] {
	return func(h *hook, ctx context.Context) error {
		if err := action(h, ctx); err != nil {
			return err
		}
		return h.report(ctx)
	}
}

// stateless runs fn with the hook context alone, for the handlers that read and write no
// charm state (stop, remove, show-current-config): a hook that only ends the waiter or reads
// files must not fail on the state.
func (c *Charm) stateless(fn charm.Func[*hook]) juju.Handler {
	return func(ctx context.Context, hc *juju.HookContext) error {
		return fn(&hook{c: c, hc: hc}, ctx)
	}
}

// programs are the commands the charm needs and the Debian packages providing them.
var programs = []apt.Need{
	{Binary: "slurmctld", Package: "slurmctld"},
	{Binary: "scontrol", Package: "slurm-client"},
	{Binary: "squeue", Package: "slurm-client"},
	{Binary: "scancel", Package: "slurm-client"},
	{Binary: "munged", Package: "munge"},
}

// install installs Slurm and munge with apt when they are missing and creates the
// directories slurmctld needs.
func (h *hook) install(ctx context.Context) error {
	c := h.c
	pkgs, err := apt.Missing(c.LookPath, programs)
	if err != nil {
		return err
	}
	if len(pkgs) > 0 {
		if err := h.progress(ctx, "installing "+strings.Join(pkgs, " ")); err != nil {
			return err
		}
		if err := apt.Install(ctx, c.Slurm, pkgs); err != nil {
			return err
		}
	}
	if err := c.makeDirs(); err != nil {
		return err
	}
	return h.progress(ctx, "installed, waiting for leadership and configuration")
}

// makeDirs creates slurm.conf's directory, the state save location and the log directory,
// the last two owned by the slurm user.
func (c *Charm) makeDirs() error {
	uid, gid, err := c.UserIDs(slurmUser)
	if err != nil {
		return err
	}
	for _, d := range []struct {
		path  string
		mode  os.FileMode
		owned bool
	}{{confDir, 0o755, false}, {stateSaveDir, 0o750, true}, {logDir, 0o755, true}} {
		p := c.Path(d.path)
		if err := os.MkdirAll(p, d.mode); err != nil {
			return fmt.Errorf("cannot create %s: %w", d.path, err)
		}
		if d.owned {
			if err := os.Chown(p, uid, gid); err != nil {
				return fmt.Errorf("cannot give %s to user %s: %w", d.path, slurmUser, err)
			}
		}
	}
	return nil
}

// upgradeCharm ends the waiter, which runs the old charm's code (watch starts the new one),
// and configures.
func (h *hook) upgradeCharm(ctx context.Context) error {
	_ = h.stopWaiter(ctx)
	if err := (metricsGate{h}).rescan(ctx); err != nil {
		return err
	}
	return h.configure(ctx)
}

// configure brings the controller to its configured state: auth key, munged, slurm.conf,
// partitions, slurmctld running, port open, ControllerData published, the controllers and
// the configuration shared with the peers, and the cos_agent data (every unit). It runs on
// leader-elected, config-changed, start, upgrade-charm and the peer and mount relations'
// hooks; a unit that is not the leader configures as a backup controller (backup).
func (h *hook) configure(ctx context.Context) error {
	if h.configProblem() != nil {
		// Nothing is changed: a running slurmctld keeps its configuration.
		return h.report(ctx)
	}
	if err := h.configureController(ctx); err != nil {
		return err
	}
	if err := (cosAgent{h}).publish(ctx); err != nil {
		return err
	}
	if err := (rolling{h}).report(ctx); err != nil {
		return err
	}
	return h.report(ctx)
}

// configureController configures this unit's controller: the leader's, or a backup's.
func (h *hook) configureController(ctx context.Context) error {
	if !h.leader {
		return backup{h}.configure(ctx)
	}
	if err := (slurmctldDaemon{h}).ensure(ctx); err != nil {
		return err
	}
	if err := (publisher{h}).all(ctx); err != nil {
		return err
	}
	if err := (publisher{h}).peers(ctx); err != nil {
		return err
	}
	return (dbdRelation{h}).publish(ctx)
}

// updateStatus repeats the reconciles (one pass each) and refreshes the status. One node
// list (hook.nodes) serves them all and the status, unless one of them changes Slurm.
func (h *hook) updateStatus(ctx context.Context) error {
	if h.leader {
		nodeRemovals{h}.pass(ctx)
		if err := (partitionRemovals{h}).pass(ctx); err != nil {
			return err
		}
		if h.st.Restart == nil && h.c.running(ctx) {
			slurmctldDaemon{h}.repairPartitions(ctx)
			if h.st.Reboots != nil {
				if _, err := (rollingReboot{h}).advance(ctx); err != nil {
					h.logf(ctx, juju.LevelWarning, "rolling reboot: %v", err)
				}
			}
		}
		if err := (rolling{h}).advance(ctx); err != nil {
			return err
		}
	}
	if err := (rolling{h}).report(ctx); err != nil {
		return err
	}
	return h.report(ctx)
}

// slurmdRelation handles every hook of the slurmd endpoint (slurmdRelation.handle) and sets
// the status.
func (h *hook) slurmdRelation(ctx context.Context) error {
	if err := (slurmdRelation{h}).handle(ctx); err != nil {
		return err
	}
	return h.report(ctx)
}

// slurmdbdRelation handles every hook of the slurmdbd endpoint (dbdRelation.handle: accounting)
// and sets the status.
func (h *hook) slurmdbdRelation(ctx context.Context) error {
	if err := (dbdRelation{h}).handle(ctx); err != nil {
		return err
	}
	return h.report(ctx)
}

// cosAgentRelation handles every hook of the cos-agent endpoint: this unit's data is
// published (again) to every cos-agent relation (cosAgent.publish), and the status set.
func (h *hook) cosAgentRelation(ctx context.Context) error {
	if err := (cosAgent{h}).publish(ctx); err != nil {
		return err
	}
	return h.report(ctx)
}

// stopWaiter ends the unit's waiter: stop (a reboot or the unit's removal), remove and
// upgrade-charm. After a reboot, start and config-changed start a waiter again if removals are
// under way. A waiter that will not end is logged, not the hook's failure.
func (h *hook) stopWaiter(ctx context.Context) error {
	if h.c.Waiter == nil {
		return nil
	}
	if err := h.c.Waiter.Stop(ctx); err != nil {
		_ = h.hc.Log.Logf(ctx, juju.LevelWarning, "%v", err)
	}
	return nil
}
