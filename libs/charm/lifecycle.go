package charm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/charmed-slurm/operators/libs/atomicfile"
	"github.com/charmed-slurm/operators/libs/juju"
)

// StatusCache records what this unit last showed in juju status: the statuses ("code:
// message") and the workload version. Embed it in a charm's state to let Hook skip setting
// the same again.
type StatusCache struct {
	Unit string `json:"unit-status,omitempty"`
	App  string `json:"app-status,omitempty"`
	// Version is the version last given to application-version-set.
	Version string `json:"version-shown,omitempty"`
}

// Statuses returns the cache; it is how Hook finds a StatusCache embedded in a state.
func (c *StatusCache) Statuses() *StatusCache { return c }

// Lifecycle runs hooks of a charm whose state is S (a JSON-encodable struct).
type Lifecycle[S any] struct {
	// StateFile is the state's path. Empty means StateName in the unit's charm directory
	// (JUJU_CHARM_DIR): private to the unit and kept by Juju across hooks and upgrades.
	StateFile string
	// StateName is the state file's name in the charm directory when StateFile is empty.
	StateName string
	// Failed, when set, returns the state to save after a failed hook, from the state as
	// loaded (saved) and as the handler left it (cur); it is saved only when it differs
	// from saved. Nil saves nothing after a failure.
	Failed func(saved, cur S) S
	// RelationRecord, when set, names a file (in the charm directory, unless absolute)
	// where the lifecycle keeps what relation-ids answered for each endpoint the unit
	// listed, from one hook to the next: a hook then asks relation-ids only for an endpoint
	// never listed. The relation hooks keep it current (relation-created adds the relation,
	// its relation-broken removes it: Juju lists a relation to a unit from its
	// relation-created until its relation-broken); upgrade-charm starts it anew; it is saved
	// only after a hook that succeeded; one absent or unreadable is no record.
	RelationRecord string
}

// Hook is one hook being handled: the hook context and the charm's state.
type Hook[S any] struct {
	*juju.HookContext
	// State is the charm's state, loaded before the handler; the handler changes it in
	// place.
	State S

	path  string
	saved []byte // the encoded state as last loaded or saved
	// record is the relation record's path ("" for none) and recorded its content as loaded.
	record   string
	recorded []byte
}

// Handler returns a juju.Handler that runs fn in this lifecycle.
func (l Lifecycle[S]) Handler(fn func(ctx context.Context, h *Hook[S]) error) juju.Handler {
	return func(ctx context.Context, hc *juju.HookContext) error { return l.Run(ctx, hc, fn) }
}

// Run loads the state, runs fn, and saves the state once if fn succeeded and changed it
// (after a failure, what Failed returns). fn's error comes first; a failed save is the
// hook's error.
func (l Lifecycle[S]) Run(ctx context.Context, hc *juju.HookContext, fn func(ctx context.Context, h *Hook[S]) error) error {
	h, err := l.Begin(ctx, hc)
	if err != nil {
		return err
	}
	return h.Finish(ctx, fn(ctx, h), l.Failed)
}

// Begin loads the state for hc's hook. Run is Begin, the handler and Finish.
func (l Lifecycle[S]) Begin(ctx context.Context, hc *juju.HookContext) (*Hook[S], error) {
	path := l.StateFile
	if path == "" {
		if hc.Event.CharmDir == "" {
			return nil, errors.New("cannot find the charm state: JUJU_CHARM_DIR is not set")
		}
		if l.StateName == "" {
			return nil, errors.New("cannot find the charm state: the charm names no state file")
		}
		path = filepath.Join(hc.Event.CharmDir, l.StateName)
	}
	h := &Hook[S]{HookContext: hc, path: path}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("cannot read charm state: %w", err)
	default:
		if err := json.Unmarshal(data, &h.State); err != nil {
			return nil, fmt.Errorf("cannot read charm state %s: %w", path, err)
		}
	}
	if h.saved, err = encode(h.State); err != nil {
		return nil, err
	}
	h.record = recordPath(l.RelationRecord, hc.Event.CharmDir)
	h.recorded = beginRecord(hc, h.record)
	return h, ctx.Err()
}

// Finish ends a hook whose handler returned err: on success it saves the state if it
// changed; on failure it saves failed(saved, current) if failed is set and that differs.
// It returns err joined with a save error.
func (h *Hook[S]) Finish(ctx context.Context, err error, failed func(saved, cur S) S) error {
	if err == nil {
		if err := h.Checkpoint(ctx); err != nil {
			return err
		}
		return saveRecord(ctx, h.HookContext, h.record, h.recorded)
	}
	if failed == nil {
		return err
	}
	var saved S
	if uerr := json.Unmarshal(h.saved, &saved); uerr != nil {
		return errors.Join(err, fmt.Errorf("cannot decode charm state: %w", uerr))
	}
	h.State = failed(saved, h.State)
	return errors.Join(err, h.Checkpoint(ctx))
}

// Checkpoint saves the state now if it differs from what was last loaded or saved: for
// progress in the middle of a long wait. The lifecycle saves at the end of the hook anyway.
func (h *Hook[S]) Checkpoint(ctx context.Context) error {
	data, err := encode(h.State)
	if err != nil {
		return err
	}
	if bytes.Equal(data, h.saved) {
		return nil
	}
	opts := atomicfile.Options{Mode: 0o600, MkdirMode: 0o700}
	if err := atomicfile.Write(ctx, h.path, data, opts); err != nil {
		return fmt.Errorf("cannot save charm state: %w", err)
	}
	h.saved = data
	return nil
}

func encode(st any) ([]byte, error) {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cannot encode charm state: %w", err)
	}
	return append(data, '\n'), nil
}

// SetUnitStatus sets the unit status unless this unit set the same one last (with a
// StatusCache in the state).
func (h *Hook[S]) SetUnitStatus(ctx context.Context, code juju.StatusCode, msg string) error {
	return h.setCached(ctx, code, msg, false, func(c *StatusCache) *string { return &c.Unit }, h.Status.SetUnit)
}

// SetAppStatus sets the application status (leader only) unless this unit set the same one
// last; force sets it anyway (a new leader cannot trust what it set in an earlier term).
func (h *Hook[S]) SetAppStatus(ctx context.Context, code juju.StatusCode, msg string, force bool) error {
	return h.setCached(ctx, code, msg, force, func(c *StatusCache) *string { return &c.App }, h.Status.SetApp)
}

// SetVersion shows version in juju status's Version column (application-version-set),
// unless it is empty or this unit showed it last (with a StatusCache in the state).
func (h *Hook[S]) SetVersion(ctx context.Context, version string) error {
	if version == "" {
		return nil
	}
	c, ok := any(&h.State).(interface{ Statuses() *StatusCache })
	if ok && c.Statuses().Version == version {
		return nil
	}
	if err := h.Status.SetVersion(ctx, version); err != nil {
		return fmt.Errorf("cannot set the application version: %w", err)
	}
	if ok {
		c.Statuses().Version = version
	}
	return nil
}

// setCached sets a status with set unless the cache entry (field of the state's
// StatusCache) already holds it, and records it there.
func (h *Hook[S]) setCached(ctx context.Context, code juju.StatusCode, msg string, force bool,
	field func(*StatusCache) *string, set func(context.Context, juju.StatusCode, string) error) error {
	var cached *string
	if c, ok := any(&h.State).(interface{ Statuses() *StatusCache }); ok {
		cached = field(c.Statuses())
	}
	s := string(code) + ": " + msg
	if cached != nil && *cached == s && !force {
		return nil
	}
	if err := set(ctx, code, msg); err != nil {
		return err
	}
	if cached != nil {
		*cached = s
	}
	return nil
}

// Logf writes a juju-log line; logging is best effort, a failing juju-log does not fail the
// hook.
func (h *Hook[S]) Logf(ctx context.Context, level juju.LogLevel, format string, args ...any) {
	_ = h.Log.Logf(ctx, level, format, args...)
}
