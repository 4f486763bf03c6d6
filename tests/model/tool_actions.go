package model

// action-get, action-set, action-fail, action-log.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

func (t *toolCall) action() (*ActionRun, error) {
	if t.hc.hook.Kind != "action" {
		return nil, errors.New("not running an action")
	}
	act := t.hc.m.state.Actions[t.hc.hook.ActionID]
	if act == nil {
		return nil, errors.New("action not found")
	}
	return act, nil
}

func (t *toolCall) actionGet() error {
	t.withFormat()
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	act, err := t.action()
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return t.out(act.Params)
	}
	var v any = act.Params
	for _, k := range strings.Split(args[0], ".") {
		mp, ok := v.(map[string]any)
		if !ok {
			return t.out(nil)
		}
		v = mp[k]
	}
	return t.out(v)
}

var actionKey = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)

var reservedActionKeys = map[string]bool{"stdout": true, "stdout-encoding": true, "stderr": true, "stderr-encoding": true}

func (t *toolCall) actionSet() error {
	args, err := t.parse(1, -1)
	if err != nil {
		return err
	}
	act, err := t.action()
	if err != nil {
		return err
	}
	type kv struct {
		path []string
		val  string
	}
	var sets []kv
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return &usageError{fmt.Sprintf("argument %q must be of the form key...=value", a)}
		}
		path := strings.Split(k, ".")
		for _, p := range path {
			if !actionKey.MatchString(p) {
				return &usageError{fmt.Sprintf("key %q must start and end with lowercase alphanumeric, and contain only lowercase alphanumeric and hyphens", p)}
			}
		}
		if reservedActionKeys[path[0]] {
			return &usageError{fmt.Sprintf("cannot set reserved action key %q", path[0])}
		}
		sets = append(sets, kv{path, v})
	}
	if act.Results == nil {
		act.Results = map[string]any{}
	}
	for _, s := range sets {
		m := act.Results
		for _, p := range s.path[:len(s.path)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[s.path[len(s.path)-1]] = s.val
	}
	return nil
}

func (t *toolCall) actionFail() error {
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	if _, err := t.action(); err != nil {
		return err
	}
	t.hc.actionFailed = true
	t.hc.actionMessage = "action failed without reason given, check action for errors"
	if len(args) == 1 {
		t.hc.actionMessage = args[0]
	}
	return nil
}

func (t *toolCall) actionLog() error {
	args, err := t.parse(1, -1)
	if err != nil {
		return err
	}
	act, err := t.action()
	if err != nil {
		return err
	}
	line := strings.Join(args, " ")
	act.Log = append(act.Log, time.Now().UTC().Format(time.RFC3339)+" "+line)
	t.hc.m.progress("%s: action %s: %s", t.hc.unit, act.Name, line)
	return nil
}
