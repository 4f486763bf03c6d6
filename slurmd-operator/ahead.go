package main

import (
	"context"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// readNodeAhead starts reading the node's record (scontrol show node) in the background on a
// relation hook (and secret-changed) of a unit whose slurmd runs as the state says (Applied,
// not departed, not held back by the controller's version, its configuration or GRES): the
// hook's join then most often changes nothing in slurmd and settles at once on the record
// (registrar.settle, the first of its reads), which was read beside the relation's data
// (relation-get, secret-get) and the join's checks instead of after them. A join that changes
// slurmd (start, restart, re-registration) drops the read before the change (dropNodeAhead),
// and so does the hook's end when nothing took it: its command is cancelled, never shown.
// This is the read the hook makes in turn in those cases too; only the hooks that change
// slurmd, or find the controller's data incomplete, read the record once more.
func (h *hook) readNodeAhead(ctx context.Context) {
	switch h.hc.Event.Kind {
	case juju.RelationCreated, juju.RelationJoined, juju.RelationChanged, juju.SecretChanged:
	default:
		return
	}
	st := h.st
	if st.Applied == nil || st.Departed || st.VersionRefused != "" || st.ConfWaiting != "" || len(st.GresWaiting) > 0 {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	h.nodeCancel = cancel
	h.nodeAhead = charm.Start(func() (slurm.Node, error) { return h.showNode(ctx) })
}

// takeNodeAhead returns the node's record read ahead, if the read succeeded; the read is gone
// after it either way.
func (h *hook) takeNodeAhead() (slurm.Node, bool) {
	p := h.nodeAhead
	if p == nil {
		return slurm.Node{}, false
	}
	n, err := p.Wait()
	h.dropNodeAhead()
	return n, err == nil
}

// dropNodeAhead cancels the read of the node's record started ahead, if any, and waits for
// it to end: before slurmd changes, and at the hook's end.
func (h *hook) dropNodeAhead() {
	if h.nodeAhead == nil {
		return
	}
	h.nodeCancel()
	h.nodeAhead.Wait()
	h.nodeAhead, h.nodeCancel = nil, nil
}
