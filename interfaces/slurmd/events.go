package slurmd

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// Endpoint names of the relation on each side.
const (
	// ProviderEndpoint is the slurmd charm's endpoint (provides: slurmctld).
	ProviderEndpoint = "slurmctld"
	// RequirerEndpoint is the slurmctld charm's endpoint (requires: slurmd).
	RequirerEndpoint = "slurmd"
)

// Event is one of the interface's events; nil means the hook is not one of them.
type Event interface{ relation() juju.RelationID }

// SlurmctldConnected: the slurmd unit has joined a controller application (relation created or
// joined) whose data is not complete yet.
type SlurmctldConnected struct{ Relation juju.RelationID }

// SlurmctldReady: the controller's data is complete and its auth key secret resolves. It fires on
// relation-changed and on secret-changed of the auth secret (key rotation).
type SlurmctldReady struct {
	Relation juju.RelationID
	Data     ControllerData
}

// SlurmctldDeparted: this unit is leaving the relation (its own relation-departed), so its node
// must leave the cluster.
type SlurmctldDeparted struct{ Relation juju.RelationID }

// SlurmctldDisconnected: the relation is gone for this unit (relation-broken).
type SlurmctldDisconnected struct{ Relation juju.RelationID }

// SlurmdReady: a slurmd application published (or changed) its ComputeData.
type SlurmdReady struct {
	Relation juju.RelationID
	App      string
	Data     ComputeData
}

// SlurmdJoined: a slurmd application's relation was created or one of its units joined; the
// controller grants its auth secret and publishes ControllerData.
type SlurmdJoined struct {
	Relation juju.RelationID
	App      string
}

// SlurmdDeparted: a slurmd unit left; Node is its Slurm node name.
type SlurmdDeparted struct {
	Relation juju.RelationID
	App      string
	Unit     string
	Node     string
}

// SlurmdDisconnected: a slurmd application's relation is gone (relation-broken), typically the
// application was removed.
type SlurmdDisconnected struct {
	Relation juju.RelationID
	App      string
}

func (e SlurmctldConnected) relation() juju.RelationID    { return e.Relation }
func (e SlurmctldReady) relation() juju.RelationID        { return e.Relation }
func (e SlurmctldDeparted) relation() juju.RelationID     { return e.Relation }
func (e SlurmctldDisconnected) relation() juju.RelationID { return e.Relation }
func (e SlurmdReady) relation() juju.RelationID           { return e.Relation }
func (e SlurmdJoined) relation() juju.RelationID          { return e.Relation }
func (e SlurmdDeparted) relation() juju.RelationID        { return e.Relation }
func (e SlurmdDisconnected) relation() juju.RelationID    { return e.Relation }

// Provider is the slurmd charm's side of the relation.
type Provider struct {
	HookContext *juju.HookContext
	// Cache, when set, is what the charm kept from earlier hooks, to spare hook-tool calls.
	Cache ProviderCache
}

// ProviderCache is what a slurmd charm kept from earlier hooks.
type ProviderCache interface {
	// InstalledKey returns the auth key and key id the charm installed from secretID, when
	// it still has them (the key file unchanged). A relation hook then reads no secret: a
	// new revision of the same secret arrives as secret-changed, which always reads it.
	InstalledKey(secretID string) (key []byte, keyID string, ok bool)
	// LastController returns the relation and the controller's data as the last relation
	// hook read them. secret-changed then reads only the secret: a change of the databag
	// arrives as relation-changed.
	LastController() (juju.RelationID, ControllerBag, bool)
}

// Relation returns the unit's relation to slurmctld, or "" when there is none.
func (p Provider) Relation(ctx context.Context) (juju.RelationID, error) {
	ids, err := p.HookContext.Relations.IDs(ctx, ProviderEndpoint)
	if err != nil || len(ids) == 0 {
		return "", err
	}
	return ids[0], nil
}

// Controller reads and resolves the controller's data on relation id. It returns ErrNotReady
// while the controller has not published. On a hook of relation id the remote application
// is the event's (no relation-list); with a Cache, a relation hook reads no secret whose
// key is installed already.
func (p Provider) Controller(ctx context.Context, id juju.RelationID) (ControllerData, error) {
	hc := p.HookContext
	ev := hc.Event
	_, bag, err := hc.RemoteAppData(ctx, id)
	if err != nil {
		return ControllerData{}, fmt.Errorf("cannot read the controller's relation data: %w", err)
	}
	cb, err := DecodeControllerBag(bag)
	if err != nil {
		return ControllerData{}, err
	}
	if p.Cache != nil && ev.Kind != juju.SecretChanged {
		if key, keyID, ok := p.Cache.InstalledKey(cb.AuthSecretID); ok {
			return data(cb, key, keyID), nil
		}
	}
	return p.resolve(ctx, cb)
}

// resolve reads the auth key of cb's secret.
func (p Provider) resolve(ctx context.Context, cb ControllerBag) (ControllerData, error) {
	key, keyID, err := ReadAuthSecret(ctx, p.HookContext.Secrets, cb.AuthSecretID)
	if err != nil {
		return ControllerData{}, err
	}
	return data(cb, key, keyID), nil
}

// ReadAuthSecret reads the auth key from the secret id a controller's databag names
// (auth_secret_id), as a consumer of the secret: every application the controller grants
// it to (slurmd, sackd) reads it so. A secret that cannot be read or decoded is a
// *DataError on auth_secret_id.
func ReadAuthSecret(ctx context.Context, secrets juju.Secrets, id string) (key []byte, keyID string, err error) {
	// Refresh: a consumer tracks the newest revision, so a rotated key is picked up.
	content, err := secrets.Get(ctx, juju.NormalizeSecretID(id), juju.SecretGetOptions{Refresh: true})
	if err != nil {
		return nil, "", &DataError{Field: KeyAuthSecretID, Msg: fmt.Sprintf("cannot read secret %s", id), Err: err}
	}
	return DecodeAuthSecret(content)
}

func data(cb ControllerBag, key []byte, keyID string) ControllerData {
	return ControllerData{AuthKey: key, AuthKeyID: keyID, Controllers: cb.Controllers, ClusterName: cb.ClusterName, GresTypes: cb.GresTypes, AuthSecretID: cb.AuthSecretID, SlurmVersion: cb.SlurmVersion, ConfMinVersion: cb.ConfMinVersion}
}

// PublishCompute writes ComputeData to the application databag of relation id (leader only).
func (p Provider) PublishCompute(ctx context.Context, id juju.RelationID, data ComputeData) error {
	return p.HookContext.Relations.SetAppData(ctx, id, data.Encode())
}

// PublishUnit writes this unit's UnitData to its unit databag of relation id.
func (p Provider) PublishUnit(ctx context.Context, id juju.RelationID, u UnitData) error {
	bag, err := u.Encode()
	if err != nil {
		return err
	}
	return p.HookContext.Relations.SetUnitData(ctx, id, bag)
}

// Event translates the current hook into a provider event. Hooks that are not about this
// relation give a nil Event. Data errors are returned with the event that carried them: the
// caller decides on the status to show.
func (p Provider) Event(ctx context.Context) (Event, error) {
	ev := p.HookContext.Event
	switch {
	case ev.Kind.IsRelation() && ev.Endpoint == ProviderEndpoint:
		switch ev.Kind {
		case juju.RelationBroken:
			return SlurmctldDisconnected{Relation: ev.Relation}, nil
		case juju.RelationDeparted:
			if ev.DepartingUnit == ev.Unit {
				return SlurmctldDeparted{Relation: ev.Relation}, nil
			}
			return nil, nil
		}
		return p.readyOrConnected(ctx, ev.Relation)
	case ev.Kind == juju.SecretChanged:
		if p.Cache != nil {
			if id, cb, ok := p.Cache.LastController(); ok {
				data, err := p.resolve(ctx, cb)
				if err != nil {
					return SlurmctldConnected{Relation: id}, err
				}
				return SlurmctldReady{Relation: id, Data: data}, nil
			}
		}
		id, err := p.Relation(ctx)
		if err != nil || id == "" {
			return nil, err
		}
		return p.readyOrConnected(ctx, id)
	}
	return nil, nil
}

func (p Provider) readyOrConnected(ctx context.Context, id juju.RelationID) (Event, error) {
	data, err := p.Controller(ctx, id)
	if errors.Is(err, ErrNotReady) {
		return SlurmctldConnected{Relation: id}, nil
	}
	if err != nil {
		return SlurmctldConnected{Relation: id}, err
	}
	return SlurmctldReady{Relation: id, Data: data}, nil
}

// Requirer is the slurmctld charm's side of the relation.
type Requirer struct {
	HookContext *juju.HookContext
	// Keys is the key set of the controller's Slurm release, which the partitions the slurmd
	// applications publish are checked against; nil means Slurm 22.05's.
	Keys *slurmconf.Keys
}

// Compute reads the ComputeData of the slurmd application on relation id. It returns
// ErrNotReady while that application has not published.
func (r Requirer) Compute(ctx context.Context, id juju.RelationID) (string, ComputeData, error) {
	hc := r.HookContext
	app, err := hc.Relations.RemoteApp(ctx, id)
	if err != nil {
		return "", ComputeData{}, fmt.Errorf("cannot find the slurmd application of %s: %w", id, err)
	}
	bag, err := hc.Relations.AppData(ctx, id, app)
	if err != nil {
		return app, ComputeData{}, fmt.Errorf("cannot read relation data of %s: %w", app, err)
	}
	keys := r.Keys
	if keys == nil {
		keys = slurmconf.KeysOf(22, 5)
	}
	d, err := DecodeComputeDataFor(keys, app, bag)
	return app, d, err
}

// Unit reads the UnitData of slurmd unit unit on relation id: ErrNotReady when it has
// published none (not yet, or an older charm).
func (r Requirer) Unit(ctx context.Context, id juju.RelationID, unit string) (UnitData, error) {
	bag, err := r.HookContext.Relations.UnitData(ctx, id, unit)
	if err != nil {
		return UnitData{}, fmt.Errorf("cannot read relation data of %s: %w", unit, err)
	}
	return DecodeUnitData(bag)
}

// PublishController writes the controller's databag on relation id (leader only).
func (r Requirer) PublishController(ctx context.Context, id juju.RelationID, bag ControllerBag) error {
	data, err := bag.Encode()
	if err != nil {
		return err
	}
	return r.HookContext.Relations.SetAppData(ctx, id, ForRelationSet(data))
}

// ForRelationSet is a controller bag as relation-set must be given it: relation-set changes
// only the keys it is given, so conf_min_version, when the bag leaves it out, is given empty,
// which deletes what an earlier write left (a unit would wait on it). The other optional keys
// keep what was written before, as they always have: gres_types names stay published while a
// restart for new ones is under way.
func ForRelationSet(bag map[string]string) map[string]string {
	out := maps.Clone(bag)
	if _, ok := out[KeyConfMinVersion]; !ok {
		out[KeyConfMinVersion] = ""
	}
	return out
}

// Event translates the current hook into a requirer event; nil when the hook is not about this
// relation. A SlurmdReady whose data cannot be decoded is returned as SlurmdJoined with the
// error, so the charm can still publish its own data and report the bad field.
func (r Requirer) Event(ctx context.Context) (Event, error) {
	ev := r.HookContext.Event
	if !ev.Kind.IsRelation() || ev.Endpoint != RequirerEndpoint {
		return nil, nil
	}
	switch ev.Kind {
	case juju.RelationBroken:
		return SlurmdDisconnected{Relation: ev.Relation, App: ev.RemoteApp}, nil
	case juju.RelationDeparted:
		unit := ev.DepartingUnit
		if unit == "" {
			unit = ev.RemoteUnit
		}
		if unit == ev.Unit {
			return nil, nil // the controller unit itself is leaving
		}
		return SlurmdDeparted{Relation: ev.Relation, App: ev.RemoteApp, Unit: unit, Node: NodeName(unit)}, nil
	case juju.RelationCreated, juju.RelationJoined:
		return SlurmdJoined{Relation: ev.Relation, App: ev.RemoteApp}, nil
	}
	app, data, err := r.Compute(ctx, ev.Relation)
	if errors.Is(err, ErrNotReady) {
		return SlurmdJoined{Relation: ev.Relation, App: app}, nil
	}
	if err != nil {
		return SlurmdJoined{Relation: ev.Relation, App: app}, err
	}
	return SlurmdReady{Relation: ev.Relation, App: app, Data: data}, nil
}
