package mysqlclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/charmed-slurm/operators/libs/juju"
)

// Endpoint is the endpoint name on both sides: the requirer's `requires: database` and the
// provider's `provides: database` (the MySQL charm's).
const EndpointName = "database"

// Event is one of the interface's events; nil means the hook is not one of them.
type Event interface{ relation() juju.RelationID }

// DatabaseConnected: the requirer's relation was created or a provider unit joined; the
// leader writes (or rewrites) its request.
type DatabaseConnected struct{ Relation juju.RelationID }

// DatabaseReady: the provider answered and the credentials resolve. It fires on
// relation-changed and on secret-changed of the user secret (a new password).
type DatabaseReady struct {
	Relation    juju.RelationID
	Response    Response
	Credentials Credentials
}

// DatabaseDisconnected: the relation is gone for this unit (relation-broken).
type DatabaseDisconnected struct{ Relation juju.RelationID }

// DatabaseRequested: a requirer application asked for a database (provider side).
type DatabaseRequested struct {
	Relation juju.RelationID
	App      string
	Request  Request
}

// RequirerGone: a requirer's relation is gone (provider side, relation-broken).
type RequirerGone struct {
	Relation juju.RelationID
	App      string
}

func (e DatabaseConnected) relation() juju.RelationID    { return e.Relation }
func (e DatabaseReady) relation() juju.RelationID        { return e.Relation }
func (e DatabaseDisconnected) relation() juju.RelationID { return e.Relation }
func (e DatabaseRequested) relation() juju.RelationID    { return e.Relation }
func (e RequirerGone) relation() juju.RelationID         { return e.Relation }

// Requirer is the side of a charm that needs a database.
type Requirer struct {
	HookContext *juju.HookContext
	// Database is the database name the charm asks for.
	Database string
}

// Relation returns the unit's database relation, or "" when there is none.
func (r Requirer) Relation(ctx context.Context) (juju.RelationID, error) {
	return r.HookContext.Relations.First(ctx, EndpointName)
}

// Request writes the request on relation id (leader only).
func (r Requirer) Request(ctx context.Context, id juju.RelationID) error {
	bag, err := Request{Database: r.Database}.Encode()
	if err != nil {
		return err
	}
	return r.HookContext.Relations.SetAppData(ctx, id, bag)
}

// Response reads the provider's answer on relation id; ErrNotReady until it is there.
func (r Requirer) Response(ctx context.Context, id juju.RelationID) (Response, error) {
	_, bag, err := r.HookContext.RemoteAppData(ctx, id)
	if err != nil {
		return Response{}, err
	}
	return DecodeResponse(r.Database, bag)
}

// Credentials reads the user secret of a response, following its newest revision.
func (r Requirer) Credentials(ctx context.Context, resp Response) (Credentials, error) {
	content, err := r.HookContext.Secrets.Get(ctx, juju.NormalizeSecretID(resp.UserSecretID), juju.SecretGetOptions{Refresh: true})
	if err != nil {
		return Credentials{}, &DataError{Field: KeySecretUser, Msg: fmt.Sprintf("cannot read secret %s", resp.UserSecretID), Err: err}
	}
	return DecodeCredentials(content)
}

// Event translates the current hook into a requirer event. Data errors are returned with the
// event that carried them (a DatabaseConnected): the charm shows them as it sees fit.
// secret-changed is the requirer's only when the secret is its relation's user secret.
func (r Requirer) Event(ctx context.Context) (Event, error) {
	ev := r.HookContext.Event
	switch {
	case ev.Kind.IsRelation() && ev.Endpoint == EndpointName:
		switch ev.Kind {
		case juju.RelationBroken:
			return DatabaseDisconnected{Relation: ev.Relation}, nil
		case juju.RelationDeparted:
			return nil, nil
		case juju.RelationCreated, juju.RelationJoined:
			return DatabaseConnected{Relation: ev.Relation}, nil
		}
		return r.readyOrConnected(ctx, ev.Relation, "")
	case ev.Kind == juju.SecretChanged:
		id, err := r.Relation(ctx)
		if err != nil || id == "" {
			return nil, err
		}
		return r.readyOrConnected(ctx, id, string(juju.NormalizeSecretID(string(ev.SecretID))))
	}
	return nil, nil
}

// readyOrConnected reads the answer on id; when secret is set, only an answer whose user
// secret it is makes an event.
func (r Requirer) readyOrConnected(ctx context.Context, id juju.RelationID, secret string) (Event, error) {
	resp, err := r.Response(ctx, id)
	if errors.Is(err, ErrNotReady) {
		if secret != "" {
			return nil, nil
		}
		return DatabaseConnected{Relation: id}, nil
	}
	if err != nil {
		return DatabaseConnected{Relation: id}, err
	}
	if secret != "" && string(juju.NormalizeSecretID(resp.UserSecretID)) != secret {
		return nil, nil
	}
	creds, err := r.Credentials(ctx, resp)
	if err != nil {
		return DatabaseConnected{Relation: id}, err
	}
	return DatabaseReady{Relation: id, Response: resp, Credentials: creds}, nil
}

// Provider is the database side.
type Provider struct {
	HookContext *juju.HookContext
}

// Publish writes the answer on relation id (leader only). The user secret must exist and be
// granted to the relation already.
func (p Provider) Publish(ctx context.Context, id juju.RelationID, resp Response) error {
	bag, err := resp.Encode()
	if err != nil {
		return err
	}
	return p.HookContext.Relations.SetAppData(ctx, id, bag)
}

// Request reads the requirer's request on relation id; ErrNotReady until it is there.
func (p Provider) Request(ctx context.Context, id juju.RelationID) (Request, error) {
	_, req, err := p.request(ctx, id)
	return req, err
}

func (p Provider) request(ctx context.Context, id juju.RelationID) (string, Request, error) {
	app, bag, err := p.HookContext.RemoteAppData(ctx, id)
	if err != nil {
		return app, Request{}, err
	}
	req, err := DecodeRequest(bag)
	return app, req, err
}

// Event translates the current hook into a provider event: DatabaseRequested once the
// requirer's request is there (a bad request comes with its *DataError), RequirerGone on
// relation-broken.
func (p Provider) Event(ctx context.Context) (Event, error) {
	hc := p.HookContext
	ev := hc.Event
	if !ev.Kind.IsRelation() || ev.Endpoint != EndpointName {
		return nil, nil
	}
	switch ev.Kind {
	case juju.RelationBroken:
		return RequirerGone{Relation: ev.Relation, App: ev.RemoteApp}, nil
	case juju.RelationDeparted:
		return nil, nil
	}
	app, req, err := p.request(ctx, ev.Relation)
	if errors.Is(err, ErrNotReady) {
		return nil, nil
	}
	return DatabaseRequested{Relation: ev.Relation, App: app, Request: req}, err
}
