package model

// leader-get, leader-set, state-get, state-set, state-delete.

import (
	"errors"
	"fmt"
)

func (t *toolCall) leaderGet() error {
	t.withFormat()
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	data := t.hc.view.Applications[t.hc.app].LeaderData
	if data == nil {
		data = map[string]string{}
	}
	if len(args) == 1 && args[0] != "-" {
		return t.out(data[args[0]])
	}
	return t.out(data)
}

func (t *toolCall) leaderSet() error {
	args, err := t.parse(0, -1)
	if err != nil {
		return err
	}
	kv, err := parseKV(args)
	if err != nil {
		return err
	}
	if !t.isLeaderNow() {
		return errors.New("cannot write leadership settings: cannot write settings: not the leader")
	}
	app := t.hc.app
	return t.hc.do(func(s *State) error {
		a := s.Applications[app]
		if a == nil {
			return nil
		}
		var changed bool
		if a.LeaderData, changed = applySettings(a.LeaderData, kv); changed {
			a.LeaderDataVersion++ // the other units run leader-settings-changed
		}
		return nil
	})
}

func (t *toolCall) stateGet() error {
	t.withFormat()
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	data := t.unitState().CharmState
	if data == nil {
		data = map[string]string{}
	}
	if len(args) == 1 {
		v, ok := data[args[0]]
		if !ok {
			return fmt.Errorf("%q not found", args[0])
		}
		return t.out(v)
	}
	return t.out(data)
}

func (t *toolCall) stateSet() error {
	t.fs.String("file", "", "YAML file of values")
	args, err := t.parse(0, -1)
	if err != nil {
		return err
	}
	kv, err := parseKV(args)
	if err != nil {
		return err
	}
	unit := t.hc.unit
	return t.hc.do(func(s *State) error {
		u := s.Units[unit]
		if u == nil {
			return nil
		}
		u.CharmState, _ = applySettings(u.CharmState, kv)
		return nil
	})
}

func (t *toolCall) stateDelete() error {
	args, err := t.parse(1, 1)
	if err != nil {
		return err
	}
	unit, key := t.hc.unit, args[0]
	return t.hc.do(func(s *State) error {
		if u := s.Units[unit]; u != nil {
			delete(u.CharmState, key)
		}
		return nil
	})
}
