package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/charmed-slurm/operators/libs/juju"
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
	if h.st.Applied == nil {
		id, err := h.relationID(ctx)
		if err != nil {
			return err
		}
		if id == "" {
			return h.setStatus(ctx, juju.StatusBlocked, "waiting for slurmctld relation")
		}
		return h.setStatus(ctx, juju.StatusWaiting, "waiting for slurmctld data")
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
	if err := h.saveState(ctx); err != nil {
		return err
	}
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
	return h.setStatus(ctx, code, "node "+n.Name+" "+describeState(n))
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
	if n.State.NotResponding() {
		s += " (not responding)"
	}
	if n.Reason != "" && (n.State.Drain() || n.State.Down()) {
		s += ": " + n.Reason
	}
	return s
}
