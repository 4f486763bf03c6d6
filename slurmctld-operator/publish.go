package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// publisher writes what the leader tells the slurmd applications (ControllerData on each slurmd
// relation, the auth key secret's grants) and opens the controller's port, writing nothing the
// record (published) says was written.
type publisher struct{ h *hook }

// relations lists the slurmd relations: from the record when it has them all, else with
// relation-ids (relations the record has but Juju no longer lists are dropped from it).
func (pb publisher) relations(ctx context.Context) ([]juju.RelationID, error) {
	h := pb.h
	if h.pub.RelationsKnown {
		return sortedKeys(h.pub.Relations), nil
	}
	rels, err := h.hc.Relations.IDs(ctx, slurmd.RequirerEndpoint)
	if err != nil {
		return nil, fmt.Errorf("cannot list slurmd relations: %w", err)
	}
	for id := range h.pub.Relations {
		if !slices.Contains(rels, id) {
			delete(h.pub.Relations, id)
		}
	}
	for _, rel := range rels {
		h.pub.relation(rel)
	}
	h.pub.RelationsKnown = true
	return rels, nil
}

// grant grants the auth key secret to relation rel unless the record says it was.
func (pb publisher) grant(ctx context.Context, id juju.SecretID, rel juju.RelationID) error {
	h := pb.h
	r := h.pub.relation(rel)
	if r.Granted == string(id) {
		return nil
	}
	if err := h.hc.Secrets.Grant(ctx, id, rel, ""); err != nil {
		return fmt.Errorf("cannot grant auth key secret to %s: %w", rel, err)
	}
	r.Granted = string(id)
	return nil
}

// publish writes ControllerData to relation rel (leader only) unless the record says the
// same data was written there.
func (pb publisher) publish(ctx context.Context, rel juju.RelationID) error {
	h := pb.h
	addr, err := h.ingress(ctx)
	if err != nil {
		return err
	}
	bag := slurmd.ControllerBag{
		Controllers:  []string{net.JoinHostPort(addr, strconv.Itoa(SlurmctldPort))},
		AuthSecretID: h.st.SecretID,
		ClusterName:  h.cfg.ClusterName,
		GresTypes:    h.st.gresRunning(),
	}
	// The version slurmd units check theirs against (none while unknown).
	bag.SlurmVersion, _ = slurm.ParseVersion(h.st.SlurmVersion)
	data, err := bag.Encode()
	if err != nil {
		return fmt.Errorf("cannot publish controller data on %s: %w", rel, err)
	}
	r := h.pub.relation(rel)
	if r.Data != nil && maps.Equal(r.Data, data) {
		return nil
	}
	if err := (slurmd.Requirer{HookContext: h.hc}).PublishController(ctx, rel, bag); err != nil {
		return fmt.Errorf("cannot publish controller data on %s: %w", rel, err)
	}
	r.Data = data
	return nil
}

// all publishes ControllerData on every slurmd relation.
func (pb publisher) all(ctx context.Context) error {
	rels, err := pb.relations(ctx)
	if err != nil {
		return err
	}
	for _, rel := range rels {
		if err := pb.publish(ctx, rel); err != nil {
			return err
		}
	}
	return nil
}

// openPort opens SlurmctldPort unless a successful hook of this leadership term did.
func (pb publisher) openPort(ctx context.Context) error {
	h := pb.h
	if h.pub.PortOpen {
		return nil
	}
	if err := h.hc.Ports.Open(ctx, juju.Port{Number: SlurmctldPort, Protocol: "tcp"}); err != nil {
		return fmt.Errorf("cannot open port %d: %w", SlurmctldPort, err)
	}
	h.pub.PortOpen = true
	return nil
}
