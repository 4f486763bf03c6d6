package main

import (
	"context"

	"github.com/charmed-slurm/operators/interfaces/sackd"
	"github.com/charmed-slurm/operators/libs/juju"
)

// Router routes every hook the charm handles to a method of hook (charm.Handlers).
func (c *Charm) Router() *juju.Router {
	hs := c.handlers()
	r := juju.NewRouter()
	r.Handle(juju.Install, hs.Handle((*hook).install))
	r.Handle(juju.UpgradeCharm, hs.Handle((*hook).upgrade))
	r.Handle(juju.Start, hs.Handle((*hook).start))
	r.Handle(juju.UpdateStatus, hs.Handle((*hook).updateStatus))
	r.Handle(juju.SecretChanged, hs.Handle((*hook).relation))
	for _, k := range []juju.Kind{juju.RelationCreated, juju.RelationJoined, juju.RelationChanged, juju.RelationDeparted, juju.RelationBroken} {
		r.HandleRelation(sackd.ProviderEndpoint, k, hs.Handle((*hook).relation))
	}
	return r
}

// install checks this machine's Slurm release, installs what is missing when the release has
// sackd, and leaves the packaged sackd stopped until a controller is related. A release
// without sackd blocks the unit with nothing installed or configured.
func (h *hook) install(ctx context.Context) error {
	if err := h.checkRelease(ctx, true); err != nil {
		return err
	}
	if h.st.refused() == "" && h.st.Applied == nil {
		// Debian's package enables and starts sackd, which would look for the controllers
		// in DNS: it runs when a controller says where it is.
		if err := h.sackd().stop(ctx); err != nil {
			return err
		}
	}
	return h.refresh(ctx)
}

// upgrade (upgrade-charm) checks the release again (a new package, a machine upgraded to a
// release with sackd) and applies the controller's data as a relation hook would.
func (h *hook) upgrade(ctx context.Context) error {
	if err := h.checkRelease(ctx, true); err != nil {
		return err
	}
	return h.reapply(ctx)
}

// start (also after a reboot) makes sure sackd runs when it should, then reports.
func (h *hook) start(ctx context.Context) error {
	if a := h.st.Applied; a != nil && h.st.refused() == "" && !h.sackd().running(ctx) {
		h.logf(ctx, juju.LevelWarning, "sackd was not running at start: starting it")
		if err := h.startSackd(ctx, a, false); err != nil {
			return err
		}
		h.sackd().waitServing(ctx)
	}
	return h.refresh(ctx)
}

// updateStatus reports the unit's status. A machine refused as a login node is checked again
// (its packages may have been upgraded since) and, when it now has sackd, joins the cluster.
func (h *hook) updateStatus(ctx context.Context) error {
	if h.st.refused() != "" {
		if err := h.checkRelease(ctx, false); err != nil {
			return err
		}
		if h.st.refused() == "" {
			h.logf(ctx, juju.LevelInfo, "this machine has sackd now (Slurm %s)", h.st.Release.Version)
			return h.reapply(ctx)
		}
	}
	return h.refresh(ctx)
}
