package main

import (
	"context"
	"strings"

	"github.com/charmed-slurm/operators/libs/apt"
	"github.com/charmed-slurm/operators/libs/juju"
)

// packages are the apt packages that provide the programs the charm runs.
var packages = []apt.Need{
	{Binary: "slurmd", Package: "slurmd"},
	{Binary: "munged", Package: "munge"},
}

// installHandler runs install with the machine's Slurm facts (slurmd -V, slurmd -C) read from
// the hook's start, beside its tool calls: nothing in install waits on them until its end, and
// on a new unit's join the hook that starts slurmd comes right after it (the relation hooks
// then need not read them). When the packages are missing that reading fails (no slurmd yet)
// and install reads the facts again after apt.
func (c *Charm) installHandler() juju.Handler {
	return func(ctx context.Context, hc *juju.HookContext) error {
		facts := startFacts(ctx, c.slurm())
		defer facts.wait() // no command left running when the hook ends
		return c.handler(func(ctx context.Context, h *hook) error { return h.install(ctx, facts) })(ctx, hc)
	}
}

// install installs the missing packages, records the machine's facts (read meanwhile) and
// waits for the controller. The version is shown with the next status (setStatus).
func (h *hook) install(ctx context.Context, facts *pendingFacts) error {
	missing, err := apt.Missing(h.c.LookPath, packages)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		if err := h.k.SetUnitStatus(ctx, juju.StatusMaintenance, "installing "+strings.Join(missing, ", ")); err != nil {
			return err
		}
		if err := apt.Install(ctx, h.c.Slurm, missing); err != nil {
			return err
		}
		// What was read before the packages were there is of no use: read it again.
		facts.wait()
		facts = startFacts(ctx, h.c.slurm())
		defer facts.wait()
	}
	if err := h.redetectGres(ctx); err != nil {
		return err
	}
	if err := h.installRebootProgram(ctx); err != nil {
		return err
	}
	statusErr := h.setStatus(ctx, juju.StatusWaiting, "waiting for slurmctld relation")
	v, mi, err := facts.wait()
	if err != nil {
		return err
	}
	h.st.Facts = &Facts{Version: v.String(), Machine: mi}
	return statusErr
}

// upgrade (upgrade-charm) re-reads the machine's Slurm facts (a new package, new hardware)
// and, when slurmd runs and the controller's data is there, applies them as a relation hook
// would (a changed --conf re-registers the node); otherwise it reports the status.
func (h *hook) upgrade(ctx context.Context) error {
	h.st.Facts = nil
	if _, _, err := h.facts(ctx); err != nil {
		return err
	}
	if err := h.redetectGres(ctx); err != nil {
		return err
	}
	if err := h.installRebootProgram(ctx); err != nil {
		return err
	}
	if h.st.Applied == nil || h.st.Departed {
		return h.updateStatus(ctx)
	}
	return h.reapply(ctx)
}

// configChanged (also leader-elected): the leader publishes the partition; a new
// default-node-state applies to nodes that join later.
func (h *hook) configChanged(ctx context.Context) error {
	if err := h.publish(ctx); err != nil {
		return err
	}
	// A changed generic-resources re-registers the node (once its jobs end).
	changed, err := h.gresChanged(ctx)
	if err != nil {
		return err
	}
	if changed {
		return h.reapply(ctx)
	}
	return h.updateStatus(ctx)
}
