package juju

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// Relations runs the relation tools: relation-ids, relation-list,
// relation-get and relation-set.
type Relations struct {
	Runner Runner
	// memo, when set (NewHookContext sets it), remembers what the read tools answered (or
	// are answering) in this hook process: the relations and units Juju lists and the remote bags it gives
	// are those of the hook's context, fixed when the hook starts, so asking twice costs a
	// hook-tool call and learns nothing. A relation-set forgets every bag read (the local
	// unit's and application's own bags show the hook's writes).
	memo *readMemo
}

// readMemo is the read tools' answers by command line, for one hook: each read once, its
// answer shared by every caller, including those that ask while it still runs.
type readMemo struct {
	mu  sync.Mutex
	out map[string]*memoRead
	// endpoints are those whose relations were asked for in this hook (IDs, KnowIDs): the
	// endpoints whose answers ListedIDs returns.
	endpoints map[string]bool
}

// asked records that endpoint's relations were asked for.
func (m *readMemo) asked(endpoint string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.endpoints == nil {
		m.endpoints = map[string]bool{}
	}
	m.endpoints[endpoint] = true
}

// memoRead is one read tool run: out and err are set before done closes.
type memoRead struct {
	done chan struct{}
	out  []byte
	err  error
}

// read runs a read tool (relation-ids, relation-list, relation-get) once per command line
// and hook, and decodes its JSON output into v (a fresh value at every call: the caller owns
// it). A caller that asks while the same read runs (in another goroutine: Relations.Ahead)
// waits for its answer or its error; a failed call is not remembered for later callers.
func (c Relations) read(ctx context.Context, v any, args ...string) error {
	if c.memo == nil {
		return runJSON(ctx, c.Runner, v, args...)
	}
	out, err := c.memo.run(ctx, c.Runner, strings.Join(args, "\x00"), args)
	if err != nil {
		return err
	}
	if err := decodeJSON(out, v); err != nil {
		return fmt.Errorf("cannot decode output of %s: %w", args[0], err)
	}
	return nil
}

// run answers the read args (key is its command line) from the memo, waiting for it while
// it runs, or runs it.
func (m *readMemo) run(ctx context.Context, r Runner, key string, args []string) ([]byte, error) {
	m.mu.Lock()
	if e, ok := m.out[key]; ok {
		m.mu.Unlock()
		select {
		case <-e.done:
			return e.out, e.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e := &memoRead{done: make(chan struct{})}
	if m.out == nil {
		m.out = map[string]*memoRead{}
	}
	m.out[key] = e
	m.mu.Unlock()
	e.out, e.err = run(ctx, r, nil, args...)
	if e.err != nil {
		m.mu.Lock()
		if m.out[key] == e {
			delete(m.out, key)
		}
		m.mu.Unlock()
	}
	close(e.done)
	return e.out, e.err
}

// forgetBags drops every bag read in this hook (after a relation-set), and those being read.
func (c Relations) forgetBags() {
	if c.memo == nil {
		return
	}
	c.memo.mu.Lock()
	defer c.memo.mu.Unlock()
	for k := range c.memo.out {
		if strings.HasPrefix(k, "relation-get\x00") {
			delete(c.memo.out, k)
		}
	}
}

// Ahead runs reads, calls of c's read methods (IDs, Units, RemoteApp, UnitData, AppData),
// in the background, each in its own goroutine, for a hook that will make them anyway: their
// tools then run beside the hook's other work, and the hook's own calls of the same reads
// wait for their answers (or errors) instead of running the tools again. Without the memo
// (a Relations not made by NewHookContext) it runs nothing. The reads' own results are
// dropped. The Runner must be safe for concurrent use (ExecRunner is). The returned wait
// waits for every read to end: call it before the hook ends, so that no tool runs past it.
// A relation-set while a bag is read ahead forgets that read: the hook reads it again.
func (c Relations) Ahead(ctx context.Context, reads ...func(ctx context.Context, r Relations) error) (wait func()) {
	if c.memo == nil || len(reads) == 0 {
		return func() {}
	}
	var wg sync.WaitGroup
	for _, read := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = read(ctx, c)
		}()
	}
	return wg.Wait
}

// IDs lists the relations on endpoint:
// relation-ids <endpoint> --format=json, run once per endpoint and hook (see Relations.memo).
// The caller owns the slice returned.
func (c Relations) IDs(ctx context.Context, endpoint string) ([]RelationID, error) {
	if c.memo != nil {
		c.memo.asked(endpoint)
	}
	var ids []RelationID
	if err := c.read(ctx, &ids, "relation-ids", endpoint, "--format=json"); err != nil {
		return nil, err
	}
	return ids, nil
}

// Units lists the remote units in the relation:
// relation-list -r <id> --format=json, once per relation and hook.
func (c Relations) Units(ctx context.Context, id RelationID) ([]string, error) {
	var units []string
	if err := c.read(ctx, &units, "relation-list", "-r", string(id), "--format=json"); err != nil {
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
	if err := c.read(ctx, &app, "relation-list", "-r", string(id), "--app", "--format=json"); err != nil {
		return "", err
	}
	return app, nil
}

// UnitData reads a unit's databag (a remote unit, or the local unit's own):
// relation-get --format=json -r <id> - <unit>, once per hook until a relation-set.
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
	if err := c.read(ctx, &data, args...); err != nil {
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
	c.forgetBags()
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
