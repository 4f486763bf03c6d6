package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/authkey"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// relation handles the slurmctld relation's hooks and secret-changed: the node first (slurmd
// starts as early as the data allows), then the partition.
func (h *hook) relation(ctx context.Context) error {
	ev := h.hc.Event
	if ev.Kind == juju.RelationCreated {
		h.st.Departed = false
	}
	if ev.Kind == juju.RelationBroken {
		h.st.Published, h.st.Controller, h.st.UnitPublished = nil, nil, ""
	}
	h.readNodeAhead(ctx)
	defer h.dropNodeAhead() // no command left running when the hook ends
	h.prepareMunged(ctx)
	defer h.waitMunged()
	h.defineAhead(ctx)
	defer h.slurmdAhead.Wait() // nothing of it left running when the hook ends
	l := slurmctldRelation{h}
	if err := l.event(ctx); err != nil {
		return err
	}
	switch ev.Kind {
	case juju.RelationCreated, juju.RelationJoined, juju.RelationChanged:
		// After the node's start: Juju applies a hook's relation-set when the hook ends,
		// so the controller reads this unit's release no later for it, and a join's slurmd
		// starts one hook-tool call earlier.
		if err := l.publishUnit(ctx, ev.Relation); err != nil {
			return err
		}
		return l.publish(ctx)
	}
	return nil
}

// slurmctldRelation is the slurmctld relation seen from this unit: the controller's data (which
// makes the registrar join, or the removal depart) and the partition the leader publishes.
type slurmctldRelation struct{ h *hook }

// publish writes the application's ComputeData when this unit leads and the partition-config
// is valid. An invalid one leaves the databag untouched and sets the application status to
// blocked (the unit status follows from cfgErr).
//
// What it last published and the application status it set are kept in the state: when
// neither would change, the hook skips the leadership check and the writes. leader-elected
// always writes (a new leader cannot trust what it wrote in an earlier term), and needs no
// leadership check.
func (l slurmctldRelation) publish(ctx context.Context) error {
	h := l.h
	ev := h.hc.Event
	force := ev.Kind == juju.LeaderElected
	data, cerr := h.cfg.computeData(h.confKeys(), ev.App)
	code, msg := juju.StatusActive, partitionSummary(data)
	switch {
	case cerr != nil:
		code, msg = juju.StatusBlocked, cerr.Error()
	case h.cfgErr != nil:
		code, msg = juju.StatusBlocked, h.cfgErr.Error()
	}
	var bag map[string]string
	if cerr == nil {
		// The leader's release: the controller's sign that this charm's units publish
		// theirs (an older charm's bag has none).
		if data.SlurmVersion, cerr = h.version(ctx); cerr != nil {
			return cerr
		}
		bag = data.Encode()
	}
	if !force && h.st.App == string(code)+": "+msg {
		if cerr != nil {
			return nil
		}
		if p := h.st.Published; p != nil && maps.Equal(p.Data, bag) && l.samePublishedRelation(p.Relation) {
			return nil
		}
	}
	// leader-elected runs on the leader alone, and leadership holds for the hook: it says by
	// itself that this unit leads (as slurmctld's begin reads it), so it asks no is-leader.
	if !force {
		leader, err := h.hc.Leadership.IsLeader(ctx)
		if err != nil || !leader {
			return err
		}
	}
	if cerr != nil {
		h.logf(ctx, juju.LevelWarning, "not publishing the partition: %v", cerr)
		return h.k.SetAppStatus(ctx, code, msg, force)
	}
	id, err := h.k.Relation(ctx, slurmd.ProviderEndpoint)
	if err != nil {
		return fmt.Errorf("cannot find the slurmctld relation: %w", err)
	}
	if id != "" {
		p := h.st.Published
		if force || p == nil || p.Relation != id || !maps.Equal(p.Data, bag) {
			if err := (slurmd.Provider{HookContext: h.hc}).PublishCompute(ctx, id, data); err != nil {
				return fmt.Errorf("cannot publish partition %s: %w", ev.App, err)
			}
			h.published = &Published{Relation: id, Data: bag}
		}
	}
	return h.k.SetAppStatus(ctx, code, msg, force)
}

// publishUnit writes this unit's UnitData (the Slurm release its slurmd runs) on relation id
// unless the record says it is there. Every relation hook of the slurmctld relation writes
// it, so that the controller learns the release that will read its configuration (it leaves
// out the keys that release lacks, and says so in conf_min_version, which join waits for);
// the controller sees it once the hook ends, wherever in the hook it is written.
func (l slurmctldRelation) publishUnit(ctx context.Context, id juju.RelationID) error {
	h := l.h
	v, err := h.version(ctx)
	if err != nil {
		return err
	}
	rec := string(id) + " " + v.String()
	if h.st.UnitPublished == rec {
		return nil
	}
	if err := (slurmd.Provider{HookContext: h.hc}).PublishUnit(ctx, id, slurmd.UnitData{SlurmVersion: v}); err != nil {
		return fmt.Errorf("cannot publish this unit's Slurm version on %s: %w", id, err)
	}
	h.st.UnitPublished = rec
	return nil
}

// samePublishedRelation reports whether rel, where the data was last published, is the
// current relation as far as this hook knows without asking: on a hook of the slurmctld
// relation, the event's; otherwise rel (st.Published is cleared when the relation breaks).
func (l slurmctldRelation) samePublishedRelation(rel juju.RelationID) bool {
	ev := l.h.hc.Event
	if ev.Kind.IsRelation() && ev.Endpoint == slurmd.ProviderEndpoint {
		return ev.Relation == rel && ev.Kind != juju.RelationBroken
	}
	return true
}

// event acts on the controller's side of the relation: its data (the registrar joins), or
// its departure (the node leaves).
func (l slurmctldRelation) event(ctx context.Context) error {
	h := l.h
	var reg registrar = newRegistrar(h)
	rm := removal{h}
	pev, err := l.provider().Event(ctx)
	switch pev := pev.(type) {
	case slurmd.SlurmctldReady:
		if h.hc.Event.Kind.IsRelation() {
			b := pev.Data.Bag()
			h.st.Controller = &LastController{Relation: pev.Relation, Controllers: b.Controllers, AuthSecretID: b.AuthSecretID, ClusterName: b.ClusterName, GresTypes: b.GresTypes}
		}
		return reg.join(ctx, pev.Data)
	case slurmd.SlurmctldConnected:
		if err != nil {
			var de *slurmd.DataError
			if !errors.As(err, &de) {
				return err
			}
			h.logf(ctx, juju.LevelWarning, "bad controller data: %v", err)
			return h.report(ctx, observed{dataErr: err})
		}
		if h.st.Applied != nil {
			return h.refresh(ctx)
		}
		return h.report(ctx, observed{dataPending: true})
	case slurmd.SlurmctldDeparted:
		return rm.depart(ctx)
	case slurmd.SlurmctldDisconnected:
		return rm.disconnected(ctx)
	}
	return err
}

// reapply applies the controller's current data to slurmd as a relation hook would; without
// the relation or its data it only reports the status.
func (l slurmctldRelation) reapply(ctx context.Context) error {
	h := l.h
	id, err := h.k.Relation(ctx, slurmd.ProviderEndpoint)
	if err != nil || id == "" {
		return errors.Join(err, h.refresh(ctx))
	}
	if err := l.publishUnit(ctx, id); err != nil {
		return err
	}
	data, err := slurmd.Provider{HookContext: h.hc}.Controller(ctx, id)
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "cannot read the controller's data: %v", err)
		return h.refresh(ctx)
	}
	reg := newRegistrar(h)
	return reg.join(ctx, data)
}

// partitionSummary is the application status of a published partition: its name and the
// parameters partition-config adds ("partition gpu: MaxTime=1:00:00").
func partitionSummary(d slurmd.ComputeData) string {
	extra := d.Partition.Params.Clone()
	extra.Delete("Nodes")
	if len(extra) == 0 {
		return "partition " + d.Partition.Name
	}
	return "partition " + d.Partition.Name + ": " + extra.String()
}

// provider is the relation's slurmd side with what this unit kept (providerCache).
func (l slurmctldRelation) provider() slurmd.Provider {
	return slurmd.Provider{HookContext: l.h.hc, Cache: providerCache{st: l.h.st, c: l.h.c}}
}

// providerCache spares hook-tool calls with the charm state: the key installed from the
// relation's secret (no secret-get on a relation hook while the secret and the key file are
// unchanged), the controller data of the last relation hook (secret-changed reads only the
// secret).
type providerCache struct {
	st *State
	c  *Charm
}

func (p providerCache) InstalledKey(secretID string) ([]byte, string, bool) {
	a := p.st.Applied
	if a == nil || a.SecretID == "" || a.SecretID != secretID || p.st.Facts == nil {
		return nil, "", false
	}
	v, err := slurm.ParseVersion(p.st.Facts.Version)
	if err != nil {
		return nil, "", false
	}
	key, err := os.ReadFile(p.c.Path(slurm.FeaturesOf(v).AuthKeyFile))
	if err != nil || authkey.Hash(key) != a.KeyHash {
		return nil, "", false
	}
	return key, a.KeyID, true
}

func (p providerCache) LastController() (juju.RelationID, slurmd.ControllerBag, bool) {
	l := p.st.Controller
	if l == nil {
		return "", slurmd.ControllerBag{}, false
	}
	return l.Relation, slurmd.ControllerBag{Controllers: l.Controllers, AuthSecretID: l.AuthSecretID, ClusterName: l.ClusterName, GresTypes: l.GresTypes}, true
}
