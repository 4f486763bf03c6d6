package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/sackd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// relation handles the slurmctld relation's hooks and secret-changed through the interface's
// events.
func (h *hook) relation(ctx context.Context) error {
	ev, err := sackd.Provider{HookContext: h.hc}.Event(ctx)
	if id := h.hc.Event.Relation; h.hc.Event.Kind.IsRelation() {
		switch ev.(type) {
		case sackd.SlurmctldConnected, sackd.SlurmctldReady:
			if perr := h.publishHost(ctx, id, false); perr != nil {
				return perr
			}
		}
	}
	switch ev := ev.(type) {
	case sackd.SlurmctldConnected:
		var de *sackd.DataError
		switch {
		case errors.As(err, &de):
			h.logf(ctx, juju.LevelWarning, "bad controller data: %v", err)
			return h.report(ctx, observed{dataErr: err})
		case err != nil:
			return err
		}
		return h.refresh(ctx)
	case sackd.SlurmctldReady:
		return h.join(ctx, ev.Relation, ev.Data)
	case sackd.SlurmctldDeparted:
		return h.leave(ctx, true)
	case sackd.SlurmctldDisconnected:
		h.st.Host = nil // the relation's data went with it
		return h.leave(ctx, false)
	}
	return err
}

// publishHost publishes this unit's short host name and ingress address on relation id,
// unless the record says they are there; fresh reads them again (upgrade-charm, start: the
// machine may have changed). A machine that cannot be a login node publishes nothing.
func (h *hook) publishHost(ctx context.Context, id juju.RelationID, fresh bool) error {
	if h.st.refused() != "" {
		return nil
	}
	if p := h.st.Host; p != nil && p.Relation == id && !fresh {
		return nil
	}
	hostname := h.c.Hostname
	if hostname == nil {
		hostname = os.Hostname
	}
	name, err := hostname()
	if err != nil {
		return fmt.Errorf("cannot find this machine's host name: %w", err)
	}
	name, _, _ = strings.Cut(name, ".") // srun sends the short name
	ingress, err := h.hc.Network.IngressAddress(ctx, sackd.ProviderEndpoint)
	if err != nil {
		return fmt.Errorf("cannot find this unit's address: %w", err)
	}
	addr, err := netip.ParseAddr(ingress)
	if err != nil {
		return fmt.Errorf("cannot read this unit's address %q: %w", ingress, err)
	}
	// The release sackd runs, so that the controller serves no configuration it cannot
	// read (none from a local build without a release: not published).
	var v slurm.Version
	if r := h.st.Release; r != nil {
		v, _ = slurm.ParseVersion(r.Version)
	}
	rec := &PublishedHost{Relation: id, Hostname: name, Address: addr.String()}
	if !v.IsZero() {
		rec.SlurmVersion = v.String()
	}
	if p := h.st.Host; p != nil && *p == *rec {
		return nil
	}
	if err := (sackd.Provider{HookContext: h.hc}).PublishHost(ctx, id, sackd.LoginHost{Hostname: name, Address: addr, SlurmVersion: v}); err != nil {
		return fmt.Errorf("cannot publish this login node's host name and address: %w", err)
	}
	h.published = rec
	return nil
}

// reapply applies the controller's data as the last relation hook would, when there is a
// relation and its data is complete; otherwise it reports the status.
func (h *hook) reapply(ctx context.Context) error {
	id, err := h.relationID(ctx)
	if err != nil {
		return err
	}
	if id == "" || h.st.refused() != "" {
		return h.refresh(ctx)
	}
	if err := h.publishHost(ctx, id, true); err != nil {
		return err
	}
	data, err := sackd.Provider{HookContext: h.hc}.Controller(ctx, id)
	var de *sackd.DataError
	switch {
	case errors.Is(err, sackd.ErrNotReady):
		return h.refresh(ctx)
	case errors.As(err, &de):
		return h.report(ctx, observed{dataErr: err})
	case err != nil:
		return err
	}
	return h.join(ctx, id, data)
}
