package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// refresh observes what the unit's status needs and reports it: whether the relation is
// there, while slurmd was never started; this host's daemons, then the node's record, while
// it runs (applying a default-node-state still pending once the node registered).
func (h *hook) refresh(ctx context.Context) error {
	if h.st.Departed {
		return h.report(ctx, observed{})
	}
	if h.st.Applied == nil {
		id, err := h.k.Relation(ctx, slurmd.ProviderEndpoint)
		if err != nil {
			return err
		}
		return h.report(ctx, observed{noRelation: id == ""})
	}
	// This host's own daemons first: with munged down no Slurm command can authenticate, and
	// the controller would be blamed for it.
	if down := h.daemonsDown(ctx); down != "" {
		return h.report(ctx, observed{daemonsDown: down})
	}
	n, err := h.showNode(ctx)
	if err != nil {
		return h.report(ctx, h.seeNode(ctx, n, err))
	}
	return h.registered(ctx, n)
}

// registered applies a default-node-state still pending to the registered node n, then
// reports the node.
func (h *hook) registered(ctx context.Context, n slurm.Node) error {
	if !h.st.DefaultPending {
		return h.report(ctx, observed{node: &n})
	}
	changed, err := h.applyDefaultState(ctx)
	if err != nil {
		return err
	}
	h.st.DefaultPending = false
	if !changed {
		// idle: the record read is the node's (no scontrol more on a join).
		return h.report(ctx, observed{node: &n})
	}
	n, err = h.showNode(ctx)
	return h.report(ctx, h.seeNode(ctx, n, err))
}

// applyDefaultState gives a new node default-node-state (down, with default-node-reason)
// and reports whether it changed the node; idle needs nothing.
func (h *hook) applyDefaultState(ctx context.Context) (bool, error) {
	if h.cfg.nodeState() != "down" {
		return false, nil
	}
	cl, err := h.c.ctl()
	if err != nil {
		return false, err
	}
	err = cl.UpdateNode(ctx, h.node, slurm.NodeUpdate{State: "down", Reason: h.cfg.nodeReason()})
	if err != nil {
		return false, fmt.Errorf("cannot set node %s down (default-node-state): %w", h.node, err)
	}
	return true, nil
}

// daemonsDown checks this host's own daemons: munged (when this Slurm version authenticates
// with munge) must answer `munge -n`, and slurmd's service must be active; with the service
// manager unreachable, a live slurmd must hold its pid file. It says what is down ("slurmd
// and munged down (service manager unreachable)"), or "" when both run.
//
// munged's check (`munge -n`, a process) runs beside slurmd's (the service manager's answer,
// and the pid file): both only read, and neither answer depends on the other. The node's
// record is not read beside them: with munged down no Slurm command runs (it would time out).
func (h *hook) daemonsDown(ctx context.Context) string {
	var munged *charm.Pending[bool]
	if v, ferr := h.version(ctx); ferr == nil && slurm.FeaturesOf(v).Munge {
		munged = charm.Start(func() (bool, error) { return h.c.mungeAnswers(ctx), nil })
	}
	var down []string
	d := h.slurmd()
	st, err := d.status(ctx)
	supervisorDown := err != nil && !errors.Is(err, service.ErrUnknownService)
	if supervisorDown {
		h.logf(ctx, juju.LevelWarning, "cannot ask the service manager about slurmd: %v", err)
	}
	if (err == nil && st.State != service.StateActive) || errors.Is(err, service.ErrUnknownService) || (supervisorDown && !d.running()) {
		down = append(down, "slurmd")
	}
	if munged != nil {
		if up, _ := munged.Wait(); !up {
			down = append(down, "munged")
		}
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
