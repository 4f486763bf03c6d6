package main

import (
	"context"

	"github.com/charmed-slurm/operators/interfaces/sackd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
)

// hook is one event being handled: the state is read once. Every hook handler is a method of
// it (hooks.go, relation.go); the login node's service is sackdDaemon (sackd.go).
type hook struct {
	c  *Charm
	hc *juju.HookContext
	k  *charm.Hook[State]
	st *State // &k.State
	// published is the host data this hook wrote to the relation, recorded in st.Host only
	// when the hook succeeds (Juju discards a failed hook's relation-set).
	published *PublishedHost
	// rel and relKnown memoize the slurmctld relation id.
	rel      juju.RelationID
	relKnown bool
}

// lifecycle runs the hooks: the state is loaded before the handler and saved once after it
// succeeds. A failed hook keeps what it did to the host (sackd started with a configuration,
// the release found, sackd stopped for good, a version refused) and drops what it wrote to
// Juju, which Juju discards or the next hook writes again: the host data published, the
// status cache and the version shown.
func (c *Charm) lifecycle() charm.Lifecycle[State] {
	return charm.Lifecycle[State]{
		StateFile: c.StateFile,
		StateName: StateName,
		Failed: func(saved, cur State) State {
			cur.StatusCache, cur.Host = saved.StatusCache, saved.Host
			return cur
		},
	}
}

// handlers runs every handler in the lifecycle with the hook value built by begin.
func (c *Charm) handlers() charm.Handlers[State, *hook] {
	return charm.Handlers[State, *hook]{Lifecycle: c.lifecycle(), Begin: c.begin, End: (*hook).end}
}

// begin builds the hook value. The charm has no configuration options: nothing to read.
func (c *Charm) begin(_ context.Context, k *charm.Hook[State]) (*hook, error) {
	return &hook{c: c, hc: k.HookContext, k: k, st: &k.State}, nil
}

// end records what the hook published, once it succeeded.
func (h *hook) end(context.Context) error {
	if h.published != nil {
		h.st.Host = h.published
	}
	return nil
}

// report sets the unit status from the state and what the hook observed (unitStatus, the
// one place statuses are worded), and shows the Slurm version beside it.
func (h *hook) report(ctx context.Context, o observed) error {
	code, msg := unitStatus(h.st, o)
	if err := h.k.SetUnitStatus(ctx, code, msg); err != nil {
		return err
	}
	return h.showVersion(ctx)
}

// progress shows a step under way ("installing sackd", "restarting sackd") until the hook
// reports its outcome.
func (h *hook) progress(ctx context.Context, msg string) error {
	if err := h.k.SetUnitStatus(ctx, juju.StatusMaintenance, msg); err != nil {
		return err
	}
	return h.showVersion(ctx)
}

// showVersion shows this machine's Slurm version in juju status's Version column, once per
// version (the kit's cache): the release install found, checked again by upgrade-charm.
func (h *hook) showVersion(ctx context.Context) error {
	if r := h.st.Release; r != nil && r.Version != "" {
		return h.k.SetVersion(ctx, r.Version)
	}
	return nil
}

// relationID returns the slurmctld relation id ("" when there is none): the event's own on a
// relation hook ("" on relation-broken: the relation being broken is none), else one
// relation-ids call per hook.
func (h *hook) relationID(ctx context.Context) (juju.RelationID, error) {
	ev := h.hc.Event
	if ev.Kind.IsRelation() && ev.Endpoint == sackd.ProviderEndpoint {
		if ev.Kind == juju.RelationBroken {
			return "", nil
		}
		return ev.Relation, nil
	}
	if !h.relKnown {
		id, err := sackd.Provider{HookContext: h.hc}.Relation(ctx)
		if err != nil {
			return "", err
		}
		h.rel, h.relKnown = id, true
	}
	return h.rel, nil
}

// sackd is this host's sackd.
func (h *hook) sackd() sackdDaemon { return sackdDaemon{c: h.c} }

// logf writes to the unit's log (best effort).
func (h *hook) logf(ctx context.Context, level juju.LogLevel, format string, args ...any) {
	h.k.Logf(ctx, level, format, args...)
}
