package main

import (
	"context"

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
