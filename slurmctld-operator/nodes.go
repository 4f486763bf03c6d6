package main

import (
	"context"
	"slices"

	"github.com/charmed-slurm/operators/libs/slurm"
)

// nodeCache is the node list of one hook: `scontrol show node` read once, and again only
// after forget.
type nodeCache struct {
	client func() *slurm.Client
	nodes  []slurm.Node
	read   bool
	// forgot: the hook forgot the list (forget), after it changed nodes or partitions.
	forgot bool
	// early is the list being read ahead (ahead), until list takes it or forget drops it.
	early *earlyList
}

// earlyList is the node list read ahead in the background: ran, nodes and err are set
// before done closes; ran is false when slurmctld was not running, and nothing was read.
type earlyList struct {
	cancel context.CancelFunc
	done   chan struct{}
	ran    bool
	nodes  []slurm.Node
	err    error
}

// ahead starts reading the node list in the background, when slurmctld runs (running), for
// a hook whose status will read it (hook.listsNodes): the next list waits for this read
// instead of starting its own. forget drops it (a change to Slurm made after it started may
// be missing from it), cancelling the command; so does the hook's end (drop), so that no
// command runs past the hook. The client's Runner and running must be safe for concurrent
// use (command.Exec and the service managers are).
func (n *nodeCache) ahead(ctx context.Context, running func(ctx context.Context) bool) {
	n.drop()
	ctx, cancel := context.WithCancel(ctx)
	e := &earlyList{cancel: cancel, done: make(chan struct{})}
	cl := n.client()
	n.early = e
	go func() {
		defer close(e.done)
		if !running(ctx) {
			return
		}
		e.ran = true
		e.nodes, e.err = cl.Nodes(ctx)
	}()
}

// list is every node as `scontrol show node` gives it, read once per hook and again only
// after forget: the read started ahead, if any, or one now.
func (n *nodeCache) list(ctx context.Context) ([]slurm.Node, error) {
	if n.read {
		return n.nodes, nil
	}
	if e := n.early; e != nil {
		n.early = nil
		select {
		case <-e.done:
		case <-ctx.Done():
			e.cancel()
			<-e.done
			return nil, ctx.Err()
		}
		e.cancel()
		switch {
		case e.ran && e.err != nil:
			return nil, e.err
		case e.ran:
			n.nodes, n.read = e.nodes, true
			return e.nodes, nil
		}
		// slurmctld was not running then: read now.
	}
	nodes, err := n.client().Nodes(ctx)
	if err != nil {
		return nil, err
	}
	n.nodes, n.read = nodes, true
	return nodes, nil
}

// forget drops the node list after the hook changed nodes or partitions in Slurm (a drain, a
// delete, a reconfigure, a repair) or time passed: the next list reads it again. A read
// started ahead is cancelled and dropped too.
func (n *nodeCache) forget() {
	n.drop()
	n.nodes, n.read, n.forgot = nil, false, true
}

// drop cancels the read started ahead, if any, and waits for it to end.
func (n *nodeCache) drop() {
	if e := n.early; e != nil {
		n.early = nil
		e.cancel()
		<-e.done
	}
}

// drained marks node drained in the list, with reason, as Slurm does when a drain of it
// succeeds (its state gains DRAIN: draining while busy, drained once idle), so that the
// status counts it without reading the list again.
func (n *nodeCache) drained(node, reason string) {
	for i := range n.nodes {
		if nd := &n.nodes[i]; nd.Name == node && !nd.State.Drain() {
			nd.State.Flags = append(slices.Clone(nd.State.Flags), slurm.FlagDrain)
			nd.Reason = reason
		}
	}
}
