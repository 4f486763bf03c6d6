package sackd

import (
	"context"
	"errors"
	"fmt"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
)

// Endpoint names of the relation on each side.
const (
	// ProviderEndpoint is the sackd charm's endpoint (provides: slurmctld, interface sackd).
	ProviderEndpoint = "slurmctld"
	// RequirerEndpoint is the slurmctld charm's endpoint (requires: sackd, interface sackd).
	RequirerEndpoint = "sackd"
)

// Event is one of the interface's events; nil means the hook is not one of them.
type Event interface{ relation() juju.RelationID }

// SlurmctldConnected: the login unit has joined a controller application whose data is not
// complete yet (or cannot be read: the error comes with the event).
type SlurmctldConnected struct{ Relation juju.RelationID }

// SlurmctldReady: the controller's data is complete and its auth key secret resolves. It
// fires on relation-changed and on secret-changed of the auth secret (key rotation).
type SlurmctldReady struct {
	Relation juju.RelationID
	Data     ControllerData
}

// SlurmctldDeparted: this unit is leaving the relation (its own relation-departed).
type SlurmctldDeparted struct{ Relation juju.RelationID }

// SlurmctldDisconnected: the relation is gone for this unit (relation-broken): the
// controller application was removed, or the relation.
type SlurmctldDisconnected struct{ Relation juju.RelationID }

// SackdJoined: a login application's relation was created or one of its units joined; the
// controller grants its auth secret and publishes its data.
type SackdJoined struct {
	Relation juju.RelationID
	App      string
}

// SackdHost: a login unit published (or changed) its host name and address; Host is zero
// when its data cannot be decoded (the error comes with the event).
type SackdHost struct {
	Relation juju.RelationID
	App      string
	Unit     string
	Host     LoginHost
}

// SackdDeparted: a login unit left the relation.
type SackdDeparted struct {
	Relation juju.RelationID
	App      string
	Unit     string
}

// SackdDisconnected: a login application's relation is gone (relation-broken).
type SackdDisconnected struct {
	Relation juju.RelationID
	App      string
}

func (e SlurmctldConnected) relation() juju.RelationID    { return e.Relation }
func (e SlurmctldReady) relation() juju.RelationID        { return e.Relation }
func (e SlurmctldDeparted) relation() juju.RelationID     { return e.Relation }
func (e SlurmctldDisconnected) relation() juju.RelationID { return e.Relation }
func (e SackdJoined) relation() juju.RelationID           { return e.Relation }
func (e SackdHost) relation() juju.RelationID             { return e.Relation }
func (e SackdDeparted) relation() juju.RelationID         { return e.Relation }
func (e SackdDisconnected) relation() juju.RelationID     { return e.Relation }

// Provider is the sackd charm's side of the relation.
type Provider struct {
	HookContext *juju.HookContext
}

// Relation returns the unit's relation to slurmctld, or "" when there is none.
func (p Provider) Relation(ctx context.Context) (juju.RelationID, error) {
	ids, err := p.HookContext.Relations.IDs(ctx, ProviderEndpoint)
	if err != nil || len(ids) == 0 {
		return "", err
	}
	return ids[0], nil
}

// Controller reads the controller's data on relation id and the auth key from its secret.
// It returns ErrNotReady while the controller has not published.
func (p Provider) Controller(ctx context.Context, id juju.RelationID) (ControllerData, error) {
	hc := p.HookContext
	_, bag, err := hc.RemoteAppData(ctx, id)
	if err != nil {
		return ControllerData{}, fmt.Errorf("cannot read the controller's relation data: %w", err)
	}
	cb, err := DecodeControllerBag(bag)
	if err != nil {
		return ControllerData{}, err
	}
	key, keyID, err := slurmd.ReadAuthSecret(ctx, hc.Secrets, cb.AuthSecretID)
	if err != nil {
		return ControllerData{}, dataError(err)
	}
	return ControllerData{ControllerBag: cb, AuthKey: key, AuthKeyID: keyID}, nil
}

// Event translates the current hook into a provider event: the relation's hooks on
// ProviderEndpoint and secret-changed (the only secret a login unit reads is the auth key).
// Other hooks give a nil Event. A data error comes with SlurmctldConnected: the caller
// decides on the status to show.
func (p Provider) Event(ctx context.Context) (Event, error) {
	ev := p.HookContext.Event
	var id juju.RelationID
	switch {
	case ev.Kind.IsRelation() && ev.Endpoint == ProviderEndpoint:
		switch ev.Kind {
		case juju.RelationBroken:
			return SlurmctldDisconnected{Relation: ev.Relation}, nil
		case juju.RelationDeparted:
			if ev.DepartingUnit == ev.Unit {
				return SlurmctldDeparted{Relation: ev.Relation}, nil
			}
			return nil, nil // a controller unit left; its application stays
		}
		id = ev.Relation
	case ev.Kind == juju.SecretChanged:
		var err error
		if id, err = p.Relation(ctx); err != nil || id == "" {
			return nil, err
		}
	default:
		return nil, nil
	}
	data, err := p.Controller(ctx, id)
	switch {
	case errors.Is(err, ErrNotReady):
		return SlurmctldConnected{Relation: id}, nil
	case err != nil:
		return SlurmctldConnected{Relation: id}, err
	}
	return SlurmctldReady{Relation: id, Data: data}, nil
}

// PublishHost writes this login unit's host name and address to its unit databag.
func (p Provider) PublishHost(ctx context.Context, id juju.RelationID, h LoginHost) error {
	data, err := h.Encode()
	if err != nil {
		return err
	}
	return p.HookContext.Relations.SetUnitData(ctx, id, data)
}

// Requirer is the slurmctld charm's side of the relation.
type Requirer struct {
	HookContext *juju.HookContext
}

// PublishController writes the controller's databag on relation id (leader only).
func (r Requirer) PublishController(ctx context.Context, id juju.RelationID, bag ControllerBag) error {
	data, err := bag.Encode()
	if err != nil {
		return err
	}
	return r.HookContext.Relations.SetAppData(ctx, id, data)
}

// Event translates the current hook into a requirer event; nil when the hook is not about
// this relation or asks nothing of the controller (the controller's own unit leaving, a
// login unit that has not published yet).
func (r Requirer) Event(ctx context.Context) (Event, error) {
	hc := r.HookContext
	ev := hc.Event
	if !ev.Kind.IsRelation() || ev.Endpoint != RequirerEndpoint {
		return nil, nil
	}
	switch ev.Kind {
	case juju.RelationBroken:
		return SackdDisconnected{Relation: ev.Relation, App: ev.RemoteApp}, nil
	case juju.RelationCreated, juju.RelationJoined:
		return SackdJoined{Relation: ev.Relation, App: ev.RemoteApp}, nil
	case juju.RelationDeparted:
		unit := ev.DepartingUnit
		if unit == "" {
			unit = ev.RemoteUnit
		}
		if unit == ev.Unit {
			return nil, nil
		}
		return SackdDeparted{Relation: ev.Relation, App: ev.RemoteApp, Unit: unit}, nil
	}
	if ev.RemoteUnit == "" {
		return nil, nil // the application's databag changed: the login side writes none
	}
	bag, err := hc.Relations.UnitData(ctx, ev.Relation, ev.RemoteUnit)
	if err != nil {
		return nil, fmt.Errorf("cannot read the data of login unit %s: %w", ev.RemoteUnit, err)
	}
	host, err := DecodeLoginHost(bag)
	switch {
	case errors.Is(err, ErrNotReady):
		return nil, nil
	case err != nil:
		return SackdHost{Relation: ev.Relation, App: ev.RemoteApp, Unit: ev.RemoteUnit}, err
	}
	return SackdHost{Relation: ev.Relation, App: ev.RemoteApp, Unit: ev.RemoteUnit, Host: host}, nil
}
