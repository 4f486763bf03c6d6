package model

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
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

// actionParams converts and checks params against spec, adding defaults.
func actionParams(spec Action, params map[string]string) (map[string]any, error) {
	out := map[string]any{}
	for name, p := range spec.Params {
		if p.Default != nil {
			out[name] = p.Default
		}
	}
	for _, k := range sortedKeys(params) {
		raw := params[k]
		p, ok := spec.Params[k]
		if !ok {
			if spec.AdditionalProperties != nil && !*spec.AdditionalProperties {
				return nil, fmt.Errorf("validation failed: (root) : additional property %q is not allowed", k)
			}
		}
		var v any
		switch p.Type {
		case "string":
			v = raw
		case "integer":
			n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("validation failed: (root).%s : must be of type integer, given %q", k, raw)
			}
			v = n
		case "number":
			f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
			if err != nil {
				return nil, fmt.Errorf("validation failed: (root).%s : must be of type number, given %q", k, raw)
			}
			v = f
		case "boolean":
			b, err := strconv.ParseBool(strings.TrimSpace(raw))
			if err != nil {
				return nil, fmt.Errorf("validation failed: (root).%s : must be of type boolean, given %q", k, raw)
			}
			v = b
		default:
			if err := yaml.Unmarshal([]byte(raw), &v); err != nil {
				v = raw
			}
		}
		out[k] = v
	}
	for _, r := range spec.Required {
		if _, ok := out[r]; !ok {
			return nil, fmt.Errorf("validation failed: (root) : %q is required", r)
		}
	}
	return out, nil
}
