package main

import (
	"context"
	"slices"

	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// nodeCache is the node list of one hook: `scontrol show node` read once, and again only
// after forget. The hook changes Slurm only through its client and its services
// (hook.client, hook.services), which forget the list on every change: no list, read ahead
// or kept count (hook.keepsCounts) read before a change serves after it.
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
// delete, a reconfigure, a repair: hook.client and hook.services call it) or time passed:
// the next list reads it again. A read started ahead is cancelled and dropped too.
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

// drained keeps before, the list read right before the hook drained node (which forgot it),
// with node marked drained with reason, as Slurm does when a drain of it succeeds (its
// state gains DRAIN: draining while busy, drained once idle), so that the status counts it
// without reading the list again. before must be the hook's list with no other change
// since.
func (n *nodeCache) drained(before []slurm.Node, node, reason string) {
	n.drop()
	nodes := slices.Clone(before)
	for i := range nodes {
		if nd := &nodes[i]; nd.Name == node && !nd.State.Drain() {
			nd.State.Flags = append(slices.Clone(nd.State.Flags), slurm.FlagDrain)
			nd.Reason = reason
		}
	}
	n.nodes, n.read = nodes, true
}

// client is the hook's Slurm client: every command of it that may change Slurm forgets the
// hook's node list (slurm.Client.Changed, nodeCache.forget). Hook code asks Slurm through it
// alone; Charm.client, which forgets nothing, is for what runs outside a hook.
func (h *hook) client() *slurm.Client {
	cl := h.c.client()
	cl.Changed = h.nodes.forget
	return cl
}

// remover runs node removals through the hook's client, with the charm's bounds.
func (h *hook) remover() *slurm.Remover {
	c := h.c
	return &slurm.Remover{Client: h.client(), Interval: c.poll(), StuckFor: c.StuckFor, Now: c.Now}
}

// services is the charm's service manager as the hook uses it: a start, stop or restart of
// slurmctld forgets the hook's node list (hookServices).
func (h *hook) services() service.Manager {
	return hookServices{m: h.c.Services, forget: h.nodes.forget}
}

// hookServices is a service manager that forgets the hook's node list (forget) before
// slurmctld starts, stops or restarts: a list read before is another slurmctld's, or none,
// and a read ahead is cancelled before slurmctld goes away under it. It implements every
// method itself, so that a method added to service.Manager is decided here.
type hookServices struct {
	m      service.Manager
	forget func()
}

var _ service.Manager = hookServices{}

// changes forgets the node list when name is slurmctld's.
func (s hookServices) changes(name string) {
	if name == svcSlurmctld {
		s.forget()
	}
}

func (s hookServices) Configure(ctx context.Context, spec service.Spec) error {
	return s.m.Configure(ctx, spec)
}

func (s hookServices) Enable(ctx context.Context, name string) error { return s.m.Enable(ctx, name) }

func (s hookServices) Disable(ctx context.Context, name string) error {
	return s.m.Disable(ctx, name)
}

func (s hookServices) Start(ctx context.Context, name string) error {
	s.changes(name)
	return s.m.Start(ctx, name)
}

func (s hookServices) Stop(ctx context.Context, name string) error {
	s.changes(name)
	return s.m.Stop(ctx, name)
}

func (s hookServices) Restart(ctx context.Context, name string) error {
	s.changes(name)
	return s.m.Restart(ctx, name)
}

func (s hookServices) Spawn(ctx context.Context, name string) error {
	s.changes(name)
	return s.m.Spawn(ctx, name)
}

func (s hookServices) Respawn(ctx context.Context, name string) error {
	s.changes(name)
	return s.m.Respawn(ctx, name)
}

func (s hookServices) Status(ctx context.Context, name string) (service.Status, error) {
	return s.m.Status(ctx, name)
}
