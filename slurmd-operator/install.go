package main

import (
	"context"
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

// install installs the missing packages and waits for the controller.
func (h *hook) install(ctx context.Context) error {
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
	}
	if err := h.redetectGres(ctx); err != nil {
		return err
	}
	if err := h.installRebootProgram(ctx); err != nil {
		return err
	}
	// Read this machine's Slurm facts now, so that the relation hooks that start slurmd need
	// not. `slurmd -V` and `slurmd -C` run while the status is set: on a new unit's join the
	// relation hook that starts slurmd comes next, so install's length counts. The version is
	// shown with the next status (setStatus).
	h.st.Facts = nil
	type read struct {
		v   slurm.Version
		mi  slurm.MachineInfo
		err error
	}
	facts := make(chan read, 1)
	cl := h.slurm()
	go func() {
		v, mi, err := readFacts(ctx, cl)
		facts <- read{v, mi, err}
	}()
	statusErr := h.setStatus(ctx, juju.StatusWaiting, "waiting for slurmctld relation")
	r := <-facts
	if r.err != nil {
		return r.err
	}
	h.st.Facts = &Facts{Version: r.v.String(), Machine: r.mi}
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
