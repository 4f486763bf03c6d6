package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// updateStatus reports the node's state, applies a default-node-state still pending and
// publishes the partition (leader).
func (h *hook) updateStatus(ctx context.Context) error {
	if h.hc.Event.Kind == juju.UpdateStatus {
		if err := h.publish(ctx); err != nil {
			return err
		}
	}
	if h.st.Departed {
		return h.setStatus(ctx, juju.StatusMaintenance, "node "+h.node+" removed")
	}
	if h.hc.Event.Kind == juju.UpdateStatus && h.st.Applied != nil && h.st.StagedNodeConfig != "" && h.recordDeleted() {
		// RebootProgram deleted the record, but the machine did not go down (its reboot
		// failed): the node registers with the staged node-config now.
		h.logf(ctx, juju.LevelWarning, "node %s's record was deleted for a reboot that did not happen", h.node)
		if err := h.registerStaged(ctx); err != nil {
			return err
		}
	}
	if h.st.Applied == nil {
		id, err := h.relationID(ctx)
		if err != nil {
			return err
		}
		if id == "" {
			return h.setStatus(ctx, juju.StatusBlocked, "waiting for slurmctld relation")
		}
		if len(h.st.GresWaiting) > 0 {
			return h.setStatus(ctx, juju.StatusWaiting, unmanagedStatus(h.st.GresWaiting))
		}
		return h.setStatus(ctx, juju.StatusWaiting, "waiting for slurmctld data")
	}
	// This host's own daemons first: with munged down no Slurm command can authenticate, and
	// the controller would be blamed for it.
	if down := h.daemonsDown(ctx); down != "" {
		return h.setStatus(ctx, juju.StatusBlocked, fmt.Sprintf("node %s: %s", h.node, down))
	}
	n, err := h.showNode(ctx)
	if errors.Is(err, errNoConf) {
		return h.setStatus(ctx, juju.StatusWaiting, fmt.Sprintf("waiting for slurmd on %s to fetch its configuration", h.node))
	}
	if err != nil {
		if unreachable(err) {
			return h.setStatus(ctx, juju.StatusWaiting, fmt.Sprintf("node %s: controller unreachable", h.node))
		}
		if errors.Is(err, slurm.ErrUnknownNode) {
			return h.setStatus(ctx, juju.StatusWaiting, fmt.Sprintf("waiting for node %s to register", h.node))
		}
		h.logf(ctx, juju.LevelWarning, "cannot show node %s: %v", h.node, err)
		return h.setStatus(ctx, juju.StatusWaiting, fmt.Sprintf("node %s: cannot read its state", h.node))
	}
	return h.reportNode(ctx, n)
}

// reportNode applies a default-node-state still pending to the registered node n, then
// shows the node's state.
func (h *hook) reportNode(ctx context.Context, n slurm.Node) error {
	if !h.st.DefaultPending {
		return h.nodeStatus(ctx, n)
	}
	if err := h.applyDefaultState(ctx); err != nil {
		return err
	}
	h.st.DefaultPending = false
	n, err := h.showNode(ctx)
	if err != nil {
		return h.setStatus(ctx, juju.StatusWaiting, fmt.Sprintf("node %s: %v", h.node, err))
	}
	return h.nodeStatus(ctx, n)
}

// nodeStatus shows the node's state: "node slurmd-3 idle", "node slurmd-3 drained: reason".
func (h *hook) nodeStatus(ctx context.Context, n slurm.Node) error {
	code := juju.StatusActive
	if n.State.NotResponding() {
		code = juju.StatusWaiting
	}
	msg := "node " + n.Name + " " + describeState(n)
	if a := h.st.Applied; a != nil {
		if g := gresSummary(appliedGres(a.Conf)); g != "" {
			msg += ", " + g
		}
	}
	if len(h.st.GresWaiting) > 0 {
		// A resource added since slurmd started: the node re-registers with it later.
		code, msg = juju.StatusWaiting, msg+"; "+unmanagedStatus(h.st.GresWaiting)
	}
	if h.st.StagedNodeConfig != "" {
		msg += "; node-config staged for the next reboot"
	}
	return h.setStatus(ctx, code, msg)
}

// describeState is the node's state as sinfo words it, lower case, with the reason.
func describeState(n slurm.Node) string {
	var s string
	switch {
	case n.State.Drained():
		s = "drained"
	case n.State.Draining():
		s = "draining"
	default:
		s = strings.ToLower(n.State.Base)
		if n.State.Has(slurm.FlagCompleting) {
			s += "+completing"
		}
	}
	if r := rebootState(n); r != "" {
		s += ", " + r
	}
	if n.State.NotResponding() {
		s += " (not responding)"
	}
	if n.Reason != "" && (n.State.Drain() || n.State.Down()) {
		s += ": " + n.Reason
	}
	return s
}

// daemonsDown checks this host's own daemons: munged (when this Slurm version authenticates
// with munge) must answer `munge -n`, and slurmd's service must be active; with the service
// manager unreachable, a live slurmd must hold its pid file. It says what is down ("slurmd
// and munged down (service manager unreachable)"), or "" when both run.
func (h *hook) daemonsDown(ctx context.Context) string {
	var down []string
	st, err := h.c.Services.Status(ctx, SlurmdService)
	supervisorDown := err != nil && !errors.Is(err, service.ErrUnknownService)
	if supervisorDown {
		h.logf(ctx, juju.LevelWarning, "cannot ask the service manager about slurmd: %v", err)
	}
	if (err == nil && st.State != service.StateActive) || errors.Is(err, service.ErrUnknownService) || (supervisorDown && !h.slurmdRunning()) {
		down = append(down, "slurmd")
	}
	if v, ferr := h.version(ctx); ferr == nil && slurm.FeaturesOf(v).Munge && !h.mungeAnswers(ctx) {
		down = append(down, "munged")
	}
	if len(down) == 0 {
		return ""
	}
	msg := strings.Join(down, " and ") + " down"
	if supervisorDown {
		msg += " (service manager unreachable)"
	}
	return msg
}

// slurmdRunning reports whether a slurmd process holds slurmd's pid file on this host.
func (h *hook) slurmdRunning() bool {
	data, err := os.ReadFile(h.c.Path(SlurmdPidFile))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return false
	}
	comm, err := os.ReadFile(h.c.Path(fmt.Sprintf("/proc/%d/comm", pid)))
	return err == nil && strings.TrimSpace(string(comm)) == "slurmd"
}

// mungeAnswers reports whether munged encodes a credential (`munge -n`) within ProbeTimeout.
func (h *hook) mungeAnswers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, charm.Or(h.c.ProbeTimeout, DefaultProbeTimeout))
	defer cancel()
	out, err := h.c.Slurm.Run(ctx, []string{munge.ClientPath, "-n"}, nil)
	return err == nil && out.ExitCode == 0
}

// showVersion shows this machine's Slurm version in juju status's Version column, once per
// version; setStatus calls it, so the version follows the facts (read again by upgrade-charm).
func (h *hook) showVersion(ctx context.Context) error {
	f := h.st.Facts
	if f == nil || f.Version == "" || h.st.VersionShown == f.Version {
		return nil
	}
	if err := h.hc.Status.SetVersion(ctx, f.Version); err != nil {
		return fmt.Errorf("cannot set the application version: %w", err)
	}
	h.st.VersionShown = f.Version
	return nil
}
