package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/charmed-slurm/operators/libs/apt"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// packages are the apt packages that provide the programs the charm runs.
var packages = []apt.Need{
	{Binary: "slurmd", Package: "slurmd"},
	{Binary: "munged", Package: "munge"},
}

// installHandler runs install with the machine's Slurm version (slurmd -V) read from the
// hook's start, beside its tool calls: nothing in install waits on it until its end. When the
// packages are missing that reading fails (no slurmd yet) and install reads it again after
// apt. `slurmd -C`, ten times longer, is left to the next hook (the relation hook that starts
// slurmd, on a new unit's join), which reads it beside its own work (handler).
func (c *Charm) installHandler() juju.Handler {
	return func(ctx context.Context, hc *juju.HookContext) error {
		version := c.startVersion(ctx)
		defer version.wait() // no command left running when the hook ends
		return c.handler(func(ctx context.Context, h *hook) error { return h.install(ctx, version) })(ctx, hc)
	}
}

// startVersion reads `slurmd -V` in the background.
func (c *Charm) startVersion(ctx context.Context) *pending[slurm.Version] {
	cl := c.slurm()
	return start(func() (slurm.Version, error) { return cl.SlurmdVersion(ctx) })
}

// install installs the missing packages, records the machine's Slurm version (read
// meanwhile) and waits for the controller. The version is shown with the next status
// (setStatus).
func (h *hook) install(ctx context.Context, version *pending[slurm.Version]) error {
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
		version.wait()
		version = h.c.startVersion(ctx)
		defer version.wait()
	}
	if err := h.redetectGres(ctx); err != nil {
		return err
	}
	if err := h.installRebootProgram(ctx); err != nil {
		return err
	}
	statusErr := h.setStatus(ctx, juju.StatusWaiting, "waiting for slurmctld relation")
	v, err := version.wait()
	if err != nil {
		return fmt.Errorf("cannot find the Slurm version: %w", err)
	}
	h.st.Facts = &Facts{Version: v.String()}
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
