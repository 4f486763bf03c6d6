package slurmdbd

import (
	"context"
	"errors"
	"fmt"

	"github.com/charmed-slurm/operators/libs/juju"
)

// Endpoint names of the relation on each side.
const (
	// ProviderEndpoint is the slurmdbd charm's endpoint (provides: slurmctld).
	ProviderEndpoint = "slurmctld"
	// RequirerEndpoint is the slurmctld charm's endpoint (requires: slurmdbd).
	RequirerEndpoint = "slurmdbd"
)

// Event is one of the interface's events; nil means the hook is not one of them.
type Event interface{ relation() juju.RelationID }

// ControllerConnected: slurmdbd has joined a controller whose data is not there yet.
type ControllerConnected struct{ Relation juju.RelationID }

// ControllerReady: the controller's data is complete and its auth key resolves (on
// relation-changed, and on secret-changed of the auth secret: a rotated key).
type ControllerReady struct {
	Relation juju.RelationID
	Data     ControllerData
}

// ControllerDisconnected: the relation is gone for this slurmdbd unit.
type ControllerDisconnected struct{ Relation juju.RelationID }

// DbdJoined: a slurmdbd application's relation was created or a unit joined; the controller
// grants its auth secret and publishes its data.
type DbdJoined struct {
	Relation juju.RelationID
	App      string
}

// DbdReady: slurmdbd published (or changed) where it listens.
type DbdReady struct {
	Relation juju.RelationID
	App      string
	Data     DbdData
}

// DbdDisconnected: the slurmdbd relation is gone (relation-broken): accounting goes.
type DbdDisconnected struct{ Relation juju.RelationID }

func (e ControllerConnected) relation() juju.RelationID    { return e.Relation }
func (e ControllerReady) relation() juju.RelationID        { return e.Relation }
func (e ControllerDisconnected) relation() juju.RelationID { return e.Relation }
func (e DbdJoined) relation() juju.RelationID              { return e.Relation }
func (e DbdReady) relation() juju.RelationID               { return e.Relation }
func (e DbdDisconnected) relation() juju.RelationID        { return e.Relation }

// Provider is the slurmdbd charm's side.
type Provider struct {
	HookContext *juju.HookContext
}

// Relation returns the unit's relation to slurmctld, or "" when there is none.
func (p Provider) Relation(ctx context.Context) (juju.RelationID, error) {
	return p.HookContext.Relations.First(ctx, ProviderEndpoint)
}

// Controller reads the controller's data on relation id and resolves its auth key.
func (p Provider) Controller(ctx context.Context, id juju.RelationID) (ControllerData, error) {
	hc := p.HookContext
	_, bag, err := hc.RemoteAppData(ctx, id)
	if err != nil {
		return ControllerData{}, err
	}
	cb, err := DecodeControllerBag(bag)
	if err != nil {
		return ControllerData{}, err
	}
	content, err := hc.Secrets.Get(ctx, juju.NormalizeSecretID(cb.AuthSecretID), juju.SecretGetOptions{Refresh: true})
	if err != nil {
		return ControllerData{}, &DataError{Field: KeyAuthSecretID, Msg: fmt.Sprintf("cannot read secret %s", cb.AuthSecretID), Err: err}
	}
	key, keyID, err := DecodeAuthSecret(content)
	if err != nil {
		return ControllerData{}, err
	}
	return ControllerData{ControllerBag: cb, AuthKey: key, AuthKeyID: keyID}, nil
}

// Publish writes slurmdbd's data on relation id (leader only).
func (p Provider) Publish(ctx context.Context, id juju.RelationID, d DbdData) error {
	bag, err := d.Encode()
	if err != nil {
		return err
	}
	return p.HookContext.Relations.SetAppData(ctx, id, bag)
}

// Event translates the current hook into a provider event. secret-changed is the
// provider's when it names the auth secret of the controller's data. Data errors come with
// the event that carried them.
func (p Provider) Event(ctx context.Context) (Event, error) {
	ev := p.HookContext.Event
	switch {
	case ev.Kind.IsRelation() && ev.Endpoint == ProviderEndpoint:
		switch ev.Kind {
		case juju.RelationBroken:
			return ControllerDisconnected{Relation: ev.Relation}, nil
		case juju.RelationDeparted:
			return nil, nil
		}
		return p.readyOrConnected(ctx, ev.Relation, "")
	case ev.Kind == juju.SecretChanged:
		id, err := p.Relation(ctx)
		if err != nil || id == "" {
			return nil, err
		}
		return p.readyOrConnected(ctx, id, string(juju.NormalizeSecretID(string(ev.SecretID))))
	}
	return nil, nil
}

func (p Provider) readyOrConnected(ctx context.Context, id juju.RelationID, secret string) (Event, error) {
	d, err := p.Controller(ctx, id)
	switch {
	case errors.Is(err, ErrNotReady):
		if secret != "" {
			return nil, nil
		}
		return ControllerConnected{Relation: id}, nil
	case err != nil:
		return ControllerConnected{Relation: id}, err
	case secret != "" && string(juju.NormalizeSecretID(d.AuthSecretID)) != secret:
		return nil, nil
	}
	return ControllerReady{Relation: id, Data: d}, nil
}

// Requirer is the slurmctld charm's side.
type Requirer struct {
	HookContext *juju.HookContext
}

// Relation returns the controller's slurmdbd relation, or "" when there is none.
func (r Requirer) Relation(ctx context.Context) (juju.RelationID, error) {
	return r.HookContext.Relations.First(ctx, RequirerEndpoint)
}

// PublishController writes the controller's databag on relation id (leader only).
func (r Requirer) PublishController(ctx context.Context, id juju.RelationID, b ControllerBag) error {
	bag, err := b.Encode()
	if err != nil {
		return err
	}
	return r.HookContext.Relations.SetAppData(ctx, id, bag)
}

// Dbd reads slurmdbd's data on relation id; ErrNotReady until it published.
func (r Requirer) Dbd(ctx context.Context, id juju.RelationID) (string, DbdData, error) {
	app, bag, err := r.HookContext.RemoteAppData(ctx, id)
	if err != nil {
		return app, DbdData{}, err
	}
	d, err := DecodeDbdData(bag)
	return app, d, err
}

// Event translates the current hook into a requirer event; nil when the hook is not about
// this relation. A DbdReady whose data cannot be decoded comes as DbdJoined with the error.
func (r Requirer) Event(ctx context.Context) (Event, error) {
	ev := r.HookContext.Event
	if !ev.Kind.IsRelation() || ev.Endpoint != RequirerEndpoint {
		return nil, nil
	}
	switch ev.Kind {
	case juju.RelationBroken:
		return DbdDisconnected{Relation: ev.Relation}, nil
	case juju.RelationDeparted:
		return nil, nil
	case juju.RelationCreated, juju.RelationJoined:
		return DbdJoined{Relation: ev.Relation, App: ev.RemoteApp}, nil
	}
	app, d, err := r.Dbd(ctx, ev.Relation)
	if errors.Is(err, ErrNotReady) {
		return DbdJoined{Relation: ev.Relation, App: app}, nil
	}
	if err != nil {
		return DbdJoined{Relation: ev.Relation, App: app}, err
	}
	return DbdReady{Relation: ev.Relation, App: app, Data: d}, nil
}
