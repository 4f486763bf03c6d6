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
}

// list is every node as `scontrol show node` gives it, read once per hook and again only
// after forget.
func (n *nodeCache) list(ctx context.Context) ([]slurm.Node, error) {
	if n.read {
		return n.nodes, nil
	}
	nodes, err := n.client().Nodes(ctx)
	if err != nil {
		return nil, err
	}
	n.nodes, n.read = nodes, true
	return nodes, nil
}

// forget drops the node list after the hook changed nodes or partitions in Slurm (a drain, a
// delete, a reconfigure, a repair) or time passed: the next list reads it again.
func (n *nodeCache) forget() { n.nodes, n.read = nil, false }

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
