package mountinfo

import (
	"context"
	"errors"
	"fmt"

	"github.com/charmed-slurm/operators/libs/juju"
)

// Event is one of the interface's events; nil means the hook is not one of them.
type Event interface{ relation() juju.RelationID }

// ProviderConnected: the relation with a filesystem client was created; the principal's
// leader writes its Info (the library's mount_provider_connected).
type ProviderConnected struct{ Relation juju.RelationID }

// FilesystemMounted: the client unit on this machine reports the filesystem mounted
// (mounted_filesystem).
type FilesystemMounted struct {
	Relation juju.RelationID
	Unit     string
}

// FilesystemUnmounted: the client unit on this machine reports it not mounted
// (unmounted_filesystem).
type FilesystemUnmounted struct {
	Relation juju.RelationID
	Unit     string
}

// ProviderDisconnected: the relation is gone for this unit (relation-broken;
// mount_provider_disconnected).
type ProviderDisconnected struct{ Relation juju.RelationID }

// MountRequested: the principal asked for a mount (client side; mount_requested).
type MountRequested struct {
	Relation juju.RelationID
	App      string
	Info     Info
}

// MountUnrequested: the principal's data holds no mountpoint (any more), or the relation is
// gone (client side; mount_unrequested).
type MountUnrequested struct {
	Relation juju.RelationID
	App      string
}

func (e ProviderConnected) relation() juju.RelationID    { return e.Relation }
func (e FilesystemMounted) relation() juju.RelationID    { return e.Relation }
func (e FilesystemUnmounted) relation() juju.RelationID  { return e.Relation }
func (e ProviderDisconnected) relation() juju.RelationID { return e.Relation }
func (e MountRequested) relation() juju.RelationID       { return e.Relation }
func (e MountUnrequested) relation() juju.RelationID     { return e.Relation }

// Requirer is the principal's side (provides: mount), the charm that needs the filesystem.
type Requirer struct {
	HookContext *juju.HookContext
}

// Relation returns the unit's mount relation, or "" when there is none. More than one is an
// error: a principal mounts one filesystem through this endpoint.
func (r Requirer) Relation(ctx context.Context) (juju.RelationID, error) {
	ids, err := r.HookContext.Relations.IDs(ctx, EndpointName)
	if err != nil {
		return "", err
	}
	switch len(ids) {
	case 0:
		return "", nil
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("cannot use %d %s relations at once (%v): relate one filesystem client", len(ids), EndpointName, ids)
}

// Request writes info on relation id (leader only).
func (r Requirer) Request(ctx context.Context, id juju.RelationID, info Info) error {
	bag, err := info.Encode()
	if err != nil {
		return err
	}
	return r.HookContext.Relations.SetAppData(ctx, id, bag)
}

// Mounted reports what the client unit on this machine says on relation id, and names that
// unit ("" while no client unit has joined: Unreported).
func (r Requirer) Mounted(ctx context.Context, id juju.RelationID) (Mounted, string, error) {
	units, err := r.HookContext.Relations.Units(ctx, id)
	if err != nil {
		return Unreported, "", err
	}
	switch len(units) {
	case 0:
		return Unreported, "", nil
	case 1:
	default:
		return Unreported, "", fmt.Errorf("cannot tell which of %v mounts this machine's filesystem: the mount relation must be container-scoped", units)
	}
	bag, err := r.HookContext.Relations.UnitData(ctx, id, units[0])
	if err != nil {
		return Unreported, units[0], err
	}
	m, err := DecodeMounted(bag)
	return m, units[0], err
}

// Event translates the current hook into a requirer event. A malformed "mounted" comes back
// as its *DataError with no event.
func (r Requirer) Event(ctx context.Context) (Event, error) {
	ev := r.HookContext.Event
	if !ev.Kind.IsRelation() || ev.Endpoint != EndpointName {
		return nil, nil
	}
	switch ev.Kind {
	case juju.RelationCreated:
		return ProviderConnected{Relation: ev.Relation}, nil
	case juju.RelationBroken:
		return ProviderDisconnected{Relation: ev.Relation}, nil
	case juju.RelationChanged:
		if ev.RemoteUnit == "" {
			return nil, nil // the client application's bag: the library's clients write none
		}
		bag, err := r.HookContext.Relations.UnitData(ctx, ev.Relation, ev.RemoteUnit)
		if err != nil {
			return nil, err
		}
		switch m, err := DecodeMounted(bag); {
		case err != nil:
			return nil, err
		case m == IsMounted:
			return FilesystemMounted{Relation: ev.Relation, Unit: ev.RemoteUnit}, nil
		case m == NotMounted:
			return FilesystemUnmounted{Relation: ev.Relation, Unit: ev.RemoteUnit}, nil
		}
	}
	return nil, nil
}

// Provider is the filesystem client's side (requires: mount).
type Provider struct {
	HookContext *juju.HookContext
}

// Info reads the principal's request on relation id; ErrNotReady until it is there.
func (p Provider) Info(ctx context.Context, id juju.RelationID) (Info, error) {
	_, info, err := p.info(ctx, id)
	return info, err
}

func (p Provider) info(ctx context.Context, id juju.RelationID) (string, Info, error) {
	hc := p.HookContext
	app := hc.Event.RemoteApp
	if hc.Event.Relation != id || app == "" {
		var err error
		if app, err = hc.Relations.RemoteApp(ctx, id); err != nil {
			return "", Info{}, err
		}
	}
	bag, err := hc.Relations.AppData(ctx, id, app)
	if err != nil {
		return app, Info{}, err
	}
	info, err := DecodeInfo(bag)
	return app, info, err
}

// SetMounted reports the mount's state on every mount relation of this unit, as the
// library's set_mount_status does.
func (p Provider) SetMounted(ctx context.Context, mounted bool) error {
	ids, err := p.HookContext.Relations.IDs(ctx, EndpointName)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		if err := p.HookContext.Relations.SetUnitData(ctx, id, EncodeMounted(mounted)); err != nil {
			errs = append(errs, fmt.Errorf("cannot report the mount on %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// Event translates the current hook into a provider event, on relation-changed only, as the
// library's MountProvides observes nothing else: MountRequested once the principal wrote a
// mountpoint (a bad request comes with its *DataError), MountUnrequested when its bag holds
// none. The relation's departure (departed, broken) is no event: the real filesystem-client
// unmounts nothing when its principal goes (its autofs map keeps the mount until the machine
// does).
func (p Provider) Event(ctx context.Context) (Event, error) {
	ev := p.HookContext.Event
	if ev.Kind != juju.RelationChanged || ev.Endpoint != EndpointName {
		return nil, nil
	}
	app, info, err := p.info(ctx, ev.Relation)
	if errors.Is(err, ErrNotReady) {
		return MountUnrequested{Relation: ev.Relation, App: app}, nil
	}
	if err != nil {
		return MountRequested{Relation: ev.Relation, App: app}, err
	}
	return MountRequested{Relation: ev.Relation, App: app, Info: info}, nil
}
