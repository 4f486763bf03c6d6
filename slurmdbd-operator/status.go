package main

import (
	"context"
	"fmt"

	"github.com/charmed-slurm/operators/libs/juju"
)

// setStatus sets the unit status from what this hook found, and shows slurmdbd's version.
func (h *hook) setStatus(ctx context.Context) error {
	code, msg := h.status(ctx)
	if err := h.k.SetUnitStatus(ctx, code, msg); err != nil {
		return err
	}
	if h.st.Version != "" && h.st.VersionShown != h.st.Version {
		if err := h.hc.Status.SetVersion(ctx, h.st.Version); err != nil {
			return fmt.Errorf("cannot set the application version: %w", err)
		}
		h.st.VersionShown = h.st.Version
	}
	return nil
}

// status is the unit's status: a problem blocks (and says whether slurmdbd still runs), a
// missing piece waits, else slurmdbd serves.
func (h *hook) status(ctx context.Context) (juju.StatusCode, string) {
	if !h.leader {
		return juju.StatusBlocked, "standby unit: only the leader runs slurmdbd (high availability is not supported yet)"
	}
	running := h.running(ctx)
	switch {
	case h.problem != "" && running && h.st.Applied != nil && h.leader:
		return juju.StatusBlocked, h.problem + " (slurmdbd keeps running; slurmctld queues the records meanwhile)"
	case h.problem != "":
		return juju.StatusBlocked, h.problem
	case h.waiting != "":
		return juju.StatusWaiting, h.waiting
	case !running:
		return juju.StatusMaintenance, "slurmdbd is not running"
	}
	return juju.StatusActive, fmt.Sprintf("slurmdbd %s serving, storing in %s", h.st.Version, h.st.Applied.Database)
}
