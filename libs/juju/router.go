package juju

import (
	"context"
	"errors"
	"fmt"
)

// Handler handles one event. Returning an error makes the hook fail (see
// Main).
type Handler func(ctx context.Context, hc *HookContext) error

// ErrNoHandler is returned (wrapped) by Router.Dispatch for an event that
// has no handler. Under Juju an unhandled hook is harmless; an unhandled
// action is a failed action. Main acts accordingly.
var ErrNoHandler = errors.New("no handler")

// Router maps hooks and actions to handlers. Register handlers once at
// start-up; registering the same hook or action twice, or a relation kind
// through Handle, panics (a programming error).
type Router struct {
	hooks   map[string]Handler
	actions map[string]Handler
}

// NewRouter returns an empty router.
func NewRouter() *Router {
	return &Router{hooks: map[string]Handler{}, actions: map[string]Handler{}}
}

// Handle routes a non-relation hook kind (Install, ConfigChanged,
// SecretChanged, ...) to h.
func (r *Router) Handle(kind Kind, h Handler) {
	if !simpleKinds[kind] {
		panic(fmt.Sprintf("juju: Router.Handle: %q is not a simple hook kind (use HandleRelation or HandleAction)", kind))
	}
	r.add(r.hooks, string(kind), h)
}

// HandleRelation routes the relation hook kind on endpoint
// (<endpoint>-relation-joined, ...) to h.
func (r *Router) HandleRelation(endpoint string, kind Kind, h Handler) {
	if !kind.IsRelation() || endpoint == "" {
		panic(fmt.Sprintf("juju: Router.HandleRelation: %q on endpoint %q is not a relation hook", kind, endpoint))
	}
	r.add(r.hooks, HookName(kind, endpoint), h)
}

// HandleAction routes the action name to h.
func (r *Router) HandleAction(name string, h Handler) {
	if name == "" {
		panic("juju: Router.HandleAction: empty action name")
	}
	r.add(r.actions, name, h)
}

func (r *Router) add(m map[string]Handler, name string, h Handler) {
	if h == nil {
		panic(fmt.Sprintf("juju: Router: nil handler for %q", name))
	}
	if _, dup := m[name]; dup {
		panic(fmt.Sprintf("juju: Router: %q registered twice", name))
	}
	m[name] = h
}

// Lookup returns the handler for ev, if any.
func (r *Router) Lookup(ev Event) (Handler, bool) {
	if ev.Kind == Action {
		h, ok := r.actions[ev.Name]
		return h, ok
	}
	h, ok := r.hooks[ev.Name]
	return h, ok
}

// Dispatch runs the handler for hc.Event. It is itself a Handler. Without a
// handler it returns an error wrapping ErrNoHandler that names the hook or
// action.
func (r *Router) Dispatch(ctx context.Context, hc *HookContext) error {
	h, ok := r.Lookup(hc.Event)
	if !ok {
		if hc.Event.Kind == Action {
			return fmt.Errorf("%w for action %q", ErrNoHandler, hc.Event.Name)
		}
		return fmt.Errorf("%w for hook %q", ErrNoHandler, hc.Event.Name)
	}
	return h(ctx, hc)
}
