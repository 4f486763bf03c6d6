package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/sackd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// ReadyMessage is the unit's status message once Slurm's clients work through sackd.
const ReadyMessage = "login node ready"

// start (also after a reboot) makes sure sackd runs when it should, then reports.
func (h *hook) start(ctx context.Context) error {
	if a := h.st.Applied; a != nil && h.refused() == "" && !h.running(ctx) {
		h.logf(ctx, juju.LevelWarning, "sackd was not running at start: starting it")
		if err := h.startSackd(ctx, a, false); err != nil {
			return err
		}
		h.waitServing(ctx)
	}
	return h.setStatus(ctx)
}

// updateStatus reports the unit's status. A machine refused as a login node is checked again
// (its packages may have been upgraded since) and, when it now has sackd, joins the cluster.
func (h *hook) updateStatus(ctx context.Context) error {
	if h.refused() != "" {
		if err := h.checkRelease(ctx, false); err != nil {
			return err
		}
		if h.refused() == "" {
			h.logf(ctx, juju.LevelInfo, "this machine has sackd now (Slurm %s)", h.st.Release.Version)
			return h.reapply(ctx)
		}
	}
	return h.setStatus(ctx)
}

// setStatus sets the unit status from what the unit is, and shows the Slurm version.
func (h *hook) setStatus(ctx context.Context) error {
	code, msg := h.status(ctx)
	if err := h.k.SetUnitStatus(ctx, code, msg); err != nil {
		return err
	}
	return h.showVersion(ctx)
}

// status is what the unit is: refused, waiting for a controller, sackd not running or not
// answering yet, or ready (sinfo answers through sackd).
func (h *hook) status(ctx context.Context) (juju.StatusCode, string) {
	if r := h.refused(); r != "" {
		return juju.StatusBlocked, r
	}
	a := h.st.Applied
	if a == nil {
		id, err := h.relationID(ctx)
		switch {
		case err != nil:
			return juju.StatusWaiting, fmt.Sprintf("cannot list the slurmctld relation: %v", err)
		case id == "":
			return juju.StatusBlocked, "waiting for slurmctld relation"
		}
		return juju.StatusWaiting, "waiting for slurmctld data"
	}
	st, err := h.c.Services.Status(ctx, SackdService)
	switch {
	case err != nil:
		h.logf(ctx, juju.LevelWarning, "cannot ask the service manager about sackd: %v", err)
		return juju.StatusBlocked, "sackd: service manager unreachable"
	case st.State == service.StateFailed:
		return juju.StatusBlocked, "sackd failed (see its log: journalctl -u sackd)"
	case st.State != service.StateActive:
		return juju.StatusWaiting, "sackd is " + string(st.State)
	}
	if _, err := os.Stat(h.c.Path(RunConf)); err != nil {
		return juju.StatusWaiting, "waiting for sackd to fetch the configuration from " + strings.Join(a.Controllers, ",")
	}
	if _, err := h.c.client().Partitions(ctx); err != nil {
		h.logf(ctx, juju.LevelWarning, "sinfo through sackd: %v", err)
		if errors.Is(err, slurm.ErrControllerUnreachable) {
			return juju.StatusWaiting, "slurmctld unreachable from this login node"
		}
		return juju.StatusWaiting, "sinfo does not answer through sackd: " + lastLine(err)
	}
	return juju.StatusActive, ReadyMessage
}

// relationID is the unit's relation to slurmctld, "" when there is none; the relation being
// broken in this hook is none.
func (h *hook) relationID(ctx context.Context) (juju.RelationID, error) {
	ev := h.hc.Event
	if ev.Kind.IsRelation() && ev.Endpoint == sackd.ProviderEndpoint {
		if ev.Kind == juju.RelationBroken {
			return "", nil
		}
		return ev.Relation, nil
	}
	return sackd.Provider{HookContext: h.hc}.Relation(ctx)
}

// lastLine is the last line of a Slurm command's error output (the one that says why), or the
// error.
func lastLine(err error) string {
	msg := err.Error()
	var ce *slurm.CommandError
	if errors.As(err, &ce) && ce.Stderr != "" {
		msg = ce.Stderr
	}
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// showVersion shows this machine's Slurm version in juju status's Version column, once per
// version.
func (h *hook) showVersion(ctx context.Context) error {
	r := h.st.Release
	if r == nil || r.Version == "" || h.st.VersionShown == r.Version {
		return nil
	}
	if err := h.hc.Status.SetVersion(ctx, r.Version); err != nil {
		return fmt.Errorf("cannot set the application version: %w", err)
	}
	h.st.VersionShown = r.Version
	return nil
}
