package model

import (
	"fmt"
	"time"
)

// hookContext is one running hook: the tools it calls act on view, a copy of the model taken
// when the hook started, and record their writes in ops, which are applied to the model only
// when the hook succeeds (Juju's commit-on-success). Status, juju-log and action results are
// applied at once, as Juju does.
type hookContext struct {
	id      string
	m       *Model
	unit    string
	app     string
	machine string
	hook    Hook
	view    *State
	ops     []func(*State) error
	// action state
	actionFailed  bool
	actionMessage string
}

// newContext makes the context of hook h and a copy of the model for its view; callers hold
// m.mu. The caller sets hc.view and registers hc in m.contexts, under the lock, before the
// hook runs.
func (a *agent) newContext(h Hook) (*hookContext, *State) {
	u := a.m.state.Units[a.unit]
	return &hookContext{
		id:      fmt.Sprintf("%s-%s-%s", a.unit, h.Name(), randomSuffix()),
		m:       a.m,
		unit:    a.unit,
		app:     u.App,
		machine: a.machineID,
		hook:    h,
	}, a.m.state.clone()
}

// do applies op to the hook's view and records it for the commit; an error (a broken rule)
// leaves both untouched.
func (hc *hookContext) do(op func(*State) error) error {
	if err := op(hc.view); err != nil {
		return err
	}
	hc.ops = append(hc.ops, op)
	return nil
}

// now applies op to the model at once and to the view (callers hold m.mu).
func (hc *hookContext) now(op func(*State) error) error {
	if err := op(hc.view); err != nil {
		return err
	}
	return op(hc.m.state)
}

// commit applies the hook's writes to s. A write that no longer applies (its relation is gone)
// is dropped.
func (hc *hookContext) commit(s *State) {
	for _, op := range hc.ops {
		if err := op(s); err != nil {
			hc.m.appendLog(fmt.Sprintf("%s: %s ERROR dropped a write of %s: %v", unitTag(hc.unit), time.Now().Format("15:04:05"), hc.hook.Name(), err))
		}
	}
	s.fill()
}

// finishAction records the action's outcome; callers hold m.mu.
func (hc *hookContext) finishAction(s *State, err error) {
	act := s.Actions[hc.hook.ActionID]
	if act == nil {
		return
	}
	act.Completed = time.Now()
	switch {
	case hc.actionFailed:
		act.Status, act.Message = "failed", hc.actionMessage
	case err != nil:
		act.Status, act.Message = "failed", err.Error()
	default:
		act.Status = "completed"
	}
}
