package main

import (
	"context"
	"encoding/json"
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

// relations lists the slurmd relations (known).
func (pb publisher) relations(ctx context.Context) ([]juju.RelationID, error) {
	return pb.known(ctx, slurmd.RequirerEndpoint, &pb.h.pub.Relations, &pb.h.pub.RelationsKnown)
}

// known lists the relations of endpoint: from the record *rels when *complete says it has
// them all, else with relation-ids, after which the record follows them (relations it has but
// Juju no longer lists are dropped).
func (pb publisher) known(ctx context.Context, endpoint string, rels *map[juju.RelationID]*publishedRel, complete *bool) ([]juju.RelationID, error) {
	if *complete {
		return sortedKeys(*rels), nil
	}
	ids, err := pb.h.hc.Relations.IDs(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("cannot list %s relations: %w", endpoint, err)
	}
	for id := range *rels {
		if !slices.Contains(ids, id) {
			delete(*rels, id)
		}
	}
	for _, id := range ids {
		record(rels, id)
	}
	*complete = true
	return ids, nil
}

// grant grants the auth key secret to slurmd relation rel unless the record says it was.
func (pb publisher) grant(ctx context.Context, id juju.SecretID, rel juju.RelationID) error {
	return pb.h.pub.relation(rel).grant(ctx, pb.h.hc.Secrets, id, rel)
}

// grant grants secret id to relation rel, whose record r is, unless r says it was.
func (r *publishedRel) grant(ctx context.Context, secrets juju.Secrets, id juju.SecretID, rel juju.RelationID) error {
	if r.Granted == string(id) {
		return nil
	}
	if err := secrets.Grant(ctx, id, rel, ""); err != nil {
		return fmt.Errorf("cannot grant auth key secret to %s: %w", rel, err)
	}
	r.Granted = string(id)
	return nil
}

// controllers are the slurmctld addresses (host:port, primary first) that this controller
// publishes to every application that uses the cluster (slurmd, sackd): every controller in
// SlurmctldHost order (but those that left: retire) as this hook planned them, or as the last configure hook did (a hook
// that does not plan them keeps every controller); this controller's ingress address on the
// slurmd endpoint alone without high availability. The one place that decides the list.
func (h *hook) controllers(ctx context.Context) ([]string, error) {
	if h.ctls == nil {
		h.ctls = h.st.Controllers // a hook that did not plan them: the last plan
	}
	if ctls := live(h.ctls); len(ctls) > 0 {
		out := make([]string, 0, len(ctls))
		for _, c := range ctls {
			out = append(out, net.JoinHostPort(c.Addr, strconv.Itoa(SlurmctldPort)))
		}
		return out, nil
	}
	addr, err := h.ingress(ctx)
	if err != nil {
		return nil, err
	}
	return []string{net.JoinHostPort(addr, strconv.Itoa(SlurmctldPort))}, nil
}

// publish writes ControllerData to relation rel (leader only) unless the record says the
// same data was written there.
func (pb publisher) publish(ctx context.Context, rel juju.RelationID) error {
	h := pb.h
	ctls, err := h.controllers(ctx)
	if err != nil {
		return err
	}
	bag := slurmd.ControllerBag{
		Controllers:  ctls,
		AuthSecretID: h.st.SecretID,
		ClusterName:  h.cfg.ClusterName,
		GresTypes:    h.st.gresRunning(),
	}
	// The version slurmd units check theirs against (none while unknown), and the release
	// the configuration needs (metricsgate.go).
	bag.SlurmVersion, _ = slurm.ParseVersion(h.st.SlurmVersion)
	if bag.ConfMinVersion, err = (metricsGate{h}).confMinVersion(ctx); err != nil {
		return err
	}
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

// peers writes the controllers, the configuration and the auth secret's id in the
// peer application bag (leader only), when they changed.
func (pb publisher) peers(ctx context.Context) error {
	h := pb.h
	rel, err := h.peerRelation(ctx)
	if err != nil || rel == "" {
		return err
	}
	if h.ctls == nil {
		h.ctls = h.st.Controllers // a hook that did not plan them: the last plan
	}
	ctls, err := encodeControllers(h.ctls)
	if err != nil {
		return err
	}
	reboots, err := encodeRebootPlan(h.st.Reboots)
	if err != nil {
		return err
	}
	files, err := h.sharedConf()
	if err != nil {
		return fmt.Errorf("cannot read the configuration to share: %w", err)
	}
	conf, err := json.Marshal(files)
	if err != nil {
		return err
	}
	bag := map[string]string{peerKeyControllers: ctls, peerKeyConf: string(conf), peerKeySecret: h.st.SecretID, peerKeyTurn: h.st.Turn, peerKeyReboots: reboots}
	if h.pub.Peers != nil && maps.Equal(h.pub.Peers, bag) {
		return nil
	}
	if err := h.hc.Relations.SetAppData(ctx, rel, bag); err != nil {
		return fmt.Errorf("cannot publish the controllers to the peers: %w", err)
	}
	h.pub.Peers = bag
	return nil
}

// share writes the peer application bag (peers) at the end of a leader's hook that changed
// what it holds other than in a configure hook: the configuration files (a partition added,
// set INACTIVE or removed, accounting turned on or off) or the rolling reboot. The backups
// then run the leader's files at once, and a new leader takes over the latest of both
// (leadership.go), instead of the files of the last configure hook.
func (pb publisher) share(ctx context.Context) error {
	h := pb.h
	if !h.leader || (h.ctls == nil && len(h.st.Controllers) == 0) {
		return nil
	}
	reboots, err := encodeRebootPlan(h.st.Reboots)
	if err != nil {
		return err
	}
	if !h.conf.installed && h.pub.Peers[peerKeyReboots] == reboots {
		return nil
	}
	return pb.peers(ctx)
}
