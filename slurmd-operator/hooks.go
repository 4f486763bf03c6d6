package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/apt"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// Router routes every hook and action the charm handles. Each handler is a method of hook
// (charm.Func), run in the kit's lifecycle (Charm.handlers).
func (c *Charm) Router() *juju.Router {
	hs := c.handlers()
	handle := func(fn charm.Func[*hook]) juju.Handler { return hs.Handle(readingFacts(fn)) }
	r := juju.NewRouter()
	r.Handle(juju.Install, c.installHandler())
	r.Handle(juju.UpgradeCharm, handle((*hook).upgrade))
	r.Handle(juju.ConfigChanged, handle((*hook).configChanged))
	r.Handle(juju.LeaderElected, handle((*hook).configChanged))
	r.Handle(juju.Start, handle((*hook).start))
	r.Handle(juju.UpdateStatus, handle((*hook).updateStatus))
	r.Handle(juju.Stop, handle((*hook).stop))
	r.Handle(juju.SecretChanged, handle((*hook).relation))
	for _, k := range []juju.Kind{juju.RelationCreated, juju.RelationJoined, juju.RelationChanged, juju.RelationDeparted, juju.RelationBroken} {
		r.HandleRelation(slurmd.ProviderEndpoint, k, handle((*hook).relation))
		r.HandleRelation(cosagent.Endpoint, k, hs.Handle((*hook).cosAgentRelation))
	}
	r.HandleAction("node-config", handle((*hook).nodeConfig))
	r.HandleAction("detect-gres", handle((*hook).detectGres))
	return r
}

// packages are the apt packages that provide the programs the charm runs.
var packages = []apt.Need{
	{Binary: "slurmd", Package: "slurmd"},
	{Binary: "munged", Package: "munge"},
}

// installHandler runs install with the machine's Slurm version (slurmd -V) read, and
// RebootProgram written, from the hook's start, beside its tool calls: nothing in install
// waits on them until its end. When the packages are missing that reading fails (no slurmd
// yet) and install reads it again after apt. `slurmd -C`, ten times longer, is left to the
// next hook (the relation hook that starts slurmd, on a new unit's join), which reads it
// beside its own work (readingFacts).
func (c *Charm) installHandler() juju.Handler {
	return func(ctx context.Context, hc *juju.HookContext) error {
		version := c.startVersion(ctx)
		defer version.Wait() // no command left running when the hook ends
		node := slurmd.NodeName(hc.Event.Unit)
		reboot := charm.Start(func() (struct{}, error) { return struct{}{}, c.installRebootProgram(ctx, node) })
		defer reboot.Wait()
		return c.handlers().Handle(func(h *hook, ctx context.Context) error { return h.install(ctx, version, reboot) })(ctx, hc)
	}
}

// startVersion reads `slurmd -V` in the background.
func (c *Charm) startVersion(ctx context.Context) *charm.Pending[slurm.Version] {
	cl := c.slurm()
	return charm.Start(func() (slurm.Version, error) { return cl.SlurmdVersion(ctx) })
}

// install installs the missing packages, records the machine's Slurm version (read
// meanwhile), checks RebootProgram's write (meanwhile too) and waits for the controller. The
// version is shown with the next status.
func (h *hook) install(ctx context.Context, version *charm.Pending[slurm.Version], reboot *charm.Pending[struct{}]) error {
	missing, err := apt.Missing(h.c.LookPath, packages)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		if err := h.progress(ctx, "installing "+strings.Join(missing, ", ")); err != nil {
			return err
		}
		if err := apt.Install(ctx, h.c.Slurm, missing); err != nil {
			return err
		}
		// What was read before the packages were there is of no use: read it again.
		version.Wait()
		version = h.c.startVersion(ctx)
		defer version.Wait()
	}
	// The version, read since the hook's start (a few ms, as long as config-get), decides
	// the gres.conf lines (GPU autodetection from 26.05): written once here, not again by
	// the join before slurmd's start. The state takes it after the status, which shows it
	// with the next one.
	v, verr := version.Wait()
	var release string
	if verr == nil {
		release = v.String()
	}
	if err := (genericResources{h}).redetect(ctx, release); err != nil {
		return err
	}
	if _, err := reboot.Wait(); err != nil {
		return err
	}
	statusErr := h.report(ctx, observed{installed: true})
	if verr != nil {
		return fmt.Errorf("cannot find the Slurm version: %w", verr)
	}
	h.st.Facts = &Facts{Version: release}
	return statusErr
}

// start runs after install and whenever the machine has booted again. A node that was
// running before is checked and repaired against the controller's current data (auth key,
// munged, --conf-server, slurmd running and registered) as a relation hook would apply it,
// and a node Slurm set DOWN for its unexpected reboot is resumed; an administrator's drain or
// down, with its reason, is kept. A node-config staged for this boot is registered.
func (h *hook) start(ctx context.Context) error {
	if err := h.c.installRebootProgram(ctx, h.node); err != nil {
		return err
	}
	if h.st.Applied == nil || h.st.Departed {
		return h.refresh(ctx)
	}
	h.logf(ctx, juju.LevelInfo, "start with node %s configured (install's first start, or the machine booted again): checking it", h.node)
	reg := newRegistrar(h)
	if h.st.StagedNodeConfig != "" && (stagedMarker{h.c}).recordDeleted() {
		// Slurm rebooted the node for its staged node-config: slurmd did not start at boot
		// and the record is gone; this is the boot's one registration.
		if err := reg.registerStaged(ctx); err != nil {
			return err
		}
	}
	if err := (slurmctldRelation{h}).reapply(ctx); err != nil {
		return err
	}
	if h.st.StagedNodeConfig != "" {
		// Still staged: the record was not deleted before this boot.
		if err := reg.applyStaged(ctx); err != nil {
			return err
		}
		if err := h.refresh(ctx); err != nil {
			return err
		}
	}
	return reg.resumeRebooted(ctx)
}

// stop runs when the machine shuts down or reboots (Juju >= 2.8), and last when the unit is
// removed. A removal is recognised from what only a removal produces: the unit's own
// relation-departed or relation-broken, which ran the departure before. A bare stop leaves
// the node's record and its state alone (slurmd is enabled at boot; start repairs what
// changed while the machine was down); after a departure it stops munged.
func (h *hook) stop(ctx context.Context) error {
	if !h.st.Departed {
		if h.st.Applied == nil {
			return nil
		}
		h.logf(ctx, juju.LevelInfo, "stop without departure (machine shutdown or reboot): node %s kept", h.node)
		return h.report(ctx, observed{goingDown: true})
	}
	err := h.c.Services.Stop(ctx, h.c.munged().Service())
	if err == nil || errors.Is(err, service.ErrUnknownService) {
		return nil
	}
	if !h.c.mungeAnswers(ctx) {
		h.logf(ctx, juju.LevelWarning, "cannot stop munged, which does not answer: %v", err)
		return nil
	}
	return fmt.Errorf("cannot stop munged: %w", err)
}

// upgrade (upgrade-charm) re-reads the machine's Slurm facts (a new package, new hardware)
// and, when slurmd runs and the controller's data is there, applies them as a relation hook
// would (a changed --conf re-registers the node); otherwise it reports the status.
func (h *hook) upgrade(ctx context.Context) error {
	h.st.Facts = nil
	if _, _, err := h.facts(ctx); err != nil {
		return err
	}
	if err := (genericResources{h}).redetect(ctx, h.st.Facts.Version); err != nil {
		return err
	}
	if err := h.c.installRebootProgram(ctx, h.node); err != nil {
		return err
	}
	if h.st.Applied == nil || h.st.Departed {
		return h.refresh(ctx)
	}
	return (slurmctldRelation{h}).reapply(ctx)
}

// configChanged (also leader-elected): the leader publishes the partition; a changed
// generic-resources re-registers the node (once its jobs end); a new default-node-state
// applies to nodes that join later.
func (h *hook) configChanged(ctx context.Context) error {
	if err := (slurmctldRelation{h}).publish(ctx); err != nil {
		return err
	}
	changed, err := newRegistrar(h).gresChanged(ctx)
	if err != nil {
		return err
	}
	if changed {
		return (slurmctldRelation{h}).reapply(ctx)
	}
	return h.refresh(ctx)
}

// updateStatus publishes the partition (leader), registers a node whose record RebootProgram
// deleted for a reboot that did not happen, and reports the node's state (applying a
// default-node-state still pending).
func (h *hook) updateStatus(ctx context.Context) error {
	if err := (slurmctldRelation{h}).publish(ctx); err != nil {
		return err
	}
	if !h.st.Departed && h.st.Applied != nil && h.st.StagedNodeConfig != "" && (stagedMarker{h.c}).rebootFailed() {
		// RebootProgram deleted the record, but the machine did not go down (its reboot
		// failed): the node registers with the staged node-config now.
		h.logf(ctx, juju.LevelWarning, "node %s's record was deleted for a reboot that did not happen", h.node)
		if err := newRegistrar(h).registerStaged(ctx); err != nil {
			return err
		}
	}
	return h.refresh(ctx)
}
