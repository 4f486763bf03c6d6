package model

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// EnqueueAction queues action name on unit with params given as `juju run` takes them
// (key=value, values parsed as YAML and checked against the action's schema) and returns the
// action's id.
func (m *Model) EnqueueAction(ctx context.Context, unit, name string, params map[string]string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.state.Units[unit]
	if !ok {
		return "", fmt.Errorf("cannot run action: unit %q not found", unit)
	}
	spec, ok := m.state.Applications[u.App].Charm.Actions[name]
	if !ok {
		return "", fmt.Errorf("cannot run action: %s has no action %q", u.App, name)
	}
	p, err := actionParams(spec, params)
	if err != nil {
		return "", fmt.Errorf("cannot run action %s on %s: %w", name, unit, err)
	}
	m.state.NextAction++
	id := strconv.Itoa(m.state.NextAction)
	m.state.Actions[id] = &ActionRun{ID: id, Unit: unit, Name: name, Params: p, Status: "pending", Enqueued: time.Now()}
	if err := m.save(); err != nil {
		return "", err
	}
	m.notify()
	return id, nil
}

// WaitAction waits until action id has completed or failed and returns it.
func (m *Model) WaitAction(ctx context.Context, id string) (*ActionRun, error) {
	for {
		m.mu.Lock()
		act := m.state.Actions[id]
		if act == nil {
			m.mu.Unlock()
			return nil, fmt.Errorf("action %s not found", id)
		}
		if act.Status == "completed" || act.Status == "failed" {
			c := *act
			m.mu.Unlock()
			return &c, nil
		}
		if _, ok := m.state.Units[act.Unit]; !ok {
			m.mu.Unlock()
			return nil, fmt.Errorf("action %s: unit %s was removed", id, act.Unit)
		}
		changed := m.changed
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cannot wait for action %s: %w", id, ctx.Err())
		case <-changed:
		}
	}
}

// Run runs an action and waits for its outcome; a failed action is returned with Status
// "failed" and no error.
func (m *Model) Run(ctx context.Context, unit, name string, params map[string]string) (*ActionRun, error) {
	id, err := m.EnqueueAction(ctx, unit, name, params)
	if err != nil {
		return nil, err
	}
	return m.WaitAction(ctx, id)
}

// actionParams parses params as `juju run` does (YAML values), validates them against spec's
// schema and inserts the defaults of parameters not given, as Juju does before queuing.
func actionParams(spec Action, params map[string]string) (map[string]any, error) {
	out, err := parseActionArgs(params)
	if err != nil {
		return nil, err
	}
	if err := validateActionParams(spec, out); err != nil {
		return nil, err
	}
	for name, p := range spec.Params {
		if _, ok := out[name]; !ok && p.Default != nil {
			out[name] = p.Default
		}
	}
	return out, nil
}
