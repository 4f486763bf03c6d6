package main

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/charmed-slurm/operators/interfaces/slurmdbd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// controller returns the related controller's data (its auth key resolved), or ok false with
// h.problem or h.waiting set.
func (h *hook) controller(ctx context.Context) (juju.RelationID, slurmdbd.ControllerData, bool, error) {
	id, err := h.relation(ctx, slurmdbd.ProviderEndpoint)
	if err != nil {
		return "", slurmdbd.ControllerData{}, false, err
	}
	if id == "" {
		h.waiting = "waiting for the slurmctld relation"
		return "", slurmdbd.ControllerData{}, false, nil
	}
	d, err := slurmdbd.Provider{HookContext: h.hc}.Controller(ctx, id)
	var de *slurmdbd.DataError
	switch {
	case errors.Is(err, slurmdbd.ErrNotReady):
		h.waiting = "waiting for slurmctld's data"
		return id, slurmdbd.ControllerData{}, false, nil
	case errors.As(err, &de):
		h.problem = "slurmctld relation: " + err.Error()
		return id, slurmdbd.ControllerData{}, false, nil
	case err != nil:
		return id, slurmdbd.ControllerData{}, false, err
	}
	return id, d, true, nil
}

// checkVersion refuses a controller newer than this slurmdbd, in h.problem.
func (h *hook) checkVersion(own slurm.Version, d slurmdbd.ControllerData) bool {
	if err := slurmdbd.CheckVersions(own, d.SlurmVersion); err != nil {
		h.problem = err.Error()
		return false
	}
	return true
}

// publish writes where slurmdbd listens to the slurmctld relation (leader), unless the same
// data was written there already.
func (h *hook) publish(ctx context.Context, id juju.RelationID, own slurm.Version) error {
	addr, err := h.hc.Network.IngressAddress(ctx, slurmdbd.ProviderEndpoint)
	if err != nil {
		return fmt.Errorf("cannot find this unit's address: %w", err)
	}
	d := slurmdbd.DbdData{Host: addr, Port: slurmdbd.DefaultPort, SlurmVersion: own}
	bag, err := d.Encode()
	if err != nil {
		return fmt.Errorf("cannot publish slurmdbd's data: %w", err)
	}
	if p := h.st.Published; p != nil && p.Relation == id && maps.Equal(p.Data, bag) {
		return nil
	}
	if err := (slurmdbd.Provider{HookContext: h.hc}).Publish(ctx, id, d); err != nil {
		return fmt.Errorf("cannot publish slurmdbd's data on %s: %w", id, err)
	}
	h.st.Published = &Published{Relation: id, Data: bag}
	h.logf(ctx, juju.LevelInfo, "published slurmdbd at %s:%d on %s", addr, d.Port, id)
	return nil
}
