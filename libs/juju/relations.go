package juju

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Relations runs the relation tools: relation-ids, relation-list,
// relation-get and relation-set.
type Relations struct {
	Runner Runner
	// ids, when set (NewHookContext sets it), memoises IDs per endpoint for the hook process:
	// the relations Juju lists are those of the hook's context, fixed when the hook starts, so
	// asking twice costs a hook-tool call and learns nothing.
	ids *idMemo
}

// idMemo is IDs' answer per endpoint, for one hook.
type idMemo struct {
	mu  sync.Mutex
	ids map[string][]RelationID
}

// IDs lists the relations on endpoint:
// relation-ids <endpoint> --format=json, run once per endpoint and hook (see Relations.ids).
// The caller owns the slice returned.
func (c Relations) IDs(ctx context.Context, endpoint string) ([]RelationID, error) {
	if c.ids != nil {
		c.ids.mu.Lock()
		defer c.ids.mu.Unlock()
		if ids, ok := c.ids.ids[endpoint]; ok {
			return slices.Clone(ids), nil
		}
	}
	var ids []RelationID
	if err := runJSON(ctx, c.Runner, &ids, "relation-ids", endpoint, "--format=json"); err != nil {
		return nil, err
	}
	if c.ids != nil {
		if c.ids.ids == nil {
			c.ids.ids = map[string][]RelationID{}
		}
		c.ids.ids[endpoint] = slices.Clone(ids)
	}
	return ids, nil
}

// Units lists the remote units in the relation:
// relation-list -r <id> --format=json.
func (c Relations) Units(ctx context.Context, id RelationID) ([]string, error) {
	var units []string
	if err := runJSON(ctx, c.Runner, &units, "relation-list", "-r", string(id), "--format=json"); err != nil {
		return nil, err
	}
	if units == nil {
		units = []string{}
	}
	return units, nil
}

// RemoteApp names the application at the other end of the relation:
// relation-list -r <id> --app --format=json.
func (c Relations) RemoteApp(ctx context.Context, id RelationID) (string, error) {
	var app string
	if err := runJSON(ctx, c.Runner, &app, "relation-list", "-r", string(id), "--app", "--format=json"); err != nil {
		return "", err
	}
	return app, nil
}

// UnitData reads a unit's databag (a remote unit, or the local unit's own):
// relation-get --format=json -r <id> - <unit>.
func (c Relations) UnitData(ctx context.Context, id RelationID, unit string) (map[string]string, error) {
	return c.get(ctx, "relation-get", "--format=json", "-r", string(id), "-", unit)
}

// AppData reads an application's databag: the remote application's, or the
// local application's own (only the leader may read its own):
// relation-get --app --format=json -r <id> - <app>.
func (c Relations) AppData(ctx context.Context, id RelationID, app string) (map[string]string, error) {
	return c.get(ctx, "relation-get", "--app", "--format=json", "-r", string(id), "-", app)
}

func (c Relations) get(ctx context.Context, args ...string) (map[string]string, error) {
	var data map[string]string
	if err := runJSON(ctx, c.Runner, &data, args...); err != nil {
		return nil, err
	}
	if data == nil {
		data = map[string]string{}
	}
	return data, nil
}

// SetUnitData updates the local unit's databag: keys with an empty value are
// deleted, other keys set, keys not in data left alone:
// relation-set -r <id> --file - with the settings on stdin.
func (c Relations) SetUnitData(ctx context.Context, id RelationID, data map[string]string) error {
	return c.set(ctx, data, "relation-set", "-r", string(id), "--file", "-")
}

// SetAppData updates the local application's databag like SetUnitData.
// Only the leader may: relation-set --app -r <id> --file -.
func (c Relations) SetAppData(ctx context.Context, id RelationID, data map[string]string) error {
	return c.set(ctx, data, "relation-set", "--app", "-r", string(id), "--file", "-")
}

func (c Relations) set(ctx context.Context, data map[string]string, args ...string) error {
	if len(data) == 0 {
		return nil
	}
	// JSON is YAML: Juju reads the file with a YAML decoder into a map of
	// strings. Go's encoder sorts the keys.
	in, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("cannot encode relation settings: %w", err)
	}
	_, err = run(ctx, c.Runner, append(in, '\n'), args...)
	return err
}

// First is the first relation on endpoint, or "" when there is none: for an endpoint with
// `limit: 1`, the relation.
func (c Relations) First(ctx context.Context, endpoint string) (RelationID, error) {
	ids, err := c.IDs(ctx, endpoint)
	if err != nil || len(ids) == 0 {
		return "", err
	}
	return ids[0], nil
}

// RemoteAppData reads the databag of the application at the other end of relation id, and
// names it: on a hook of that relation the event names the application (no relation-list),
// otherwise relation-list -r <id> --app does. No application there yet gives "" and a nil
// bag.
func (hc *HookContext) RemoteAppData(ctx context.Context, id RelationID) (app string, data map[string]string, err error) {
	if ev := hc.Event; ev.Kind.IsRelation() && ev.Relation == id {
		app = ev.RemoteApp
	}
	if app == "" {
		if app, err = hc.Relations.RemoteApp(ctx, id); err != nil {
			return "", nil, fmt.Errorf("cannot find the application at the other end of %s: %w", id, err)
		}
	}
	if app == "" {
		return "", nil, nil
	}
	if data, err = hc.Relations.AppData(ctx, id, app); err != nil {
		return app, nil, fmt.Errorf("cannot read the data of %s on %s: %w", app, id, err)
	}
	return app, data, nil
}
