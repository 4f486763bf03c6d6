package model

// config-get, is-leader, status-set, status-get, application-version-set.

import (
	"errors"
	"fmt"
	"time"
)

func (t *toolCall) configGet() error {
	t.withFormat()
	all := t.fs.BoolP("all", "a", false, "print all keys")
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	a := t.hc.view.Applications[t.hc.app]
	cfg := effectiveConfig(a)
	if len(args) == 1 {
		return t.out(cfg[args[0]])
	}
	if *all {
		out := map[string]any{}
		for k := range a.Charm.Options {
			out[k] = cfg[k]
		}
		return t.out(out)
	}
	return t.out(cfg)
}

func (t *toolCall) isLeader() error {
	t.withFormat()
	if _, err := t.parse(0, 0); err != nil {
		return err
	}
	return t.out(t.isLeaderNow())
}

var workloadStatuses = map[string]bool{"maintenance": true, "blocked": true, "waiting": true, "active": true}

func (t *toolCall) statusSet() error {
	application := t.fs.Bool("application", false, "set the application status")
	args, err := t.parse(1, 2)
	if err != nil {
		return err
	}
	if !workloadStatuses[args[0]] {
		return &usageError{fmt.Sprintf("invalid status %q, expected one of [maintenance blocked waiting active]", args[0])}
	}
	msg := ""
	if len(args) > 1 {
		msg = args[1]
	}
	if *application && !t.isLeaderNow() {
		return errors.New("this unit is not the leader") // runner/context ErrIsNotLeader, unwrapped
	}
	st := StatusInfo{Status: args[0], Message: msg, Since: time.Now()}
	unit, app := t.hc.unit, t.hc.app
	if *application {
		return t.hc.now(func(s *State) error {
			if a := s.Applications[app]; a != nil {
				a.Status = st
			}
			return nil
		})
	}
	return t.hc.now(func(s *State) error {
		if u := s.Units[unit]; u != nil {
			u.Workload = st
		}
		return nil
	})
}

func statusMap(st StatusInfo, withData bool) map[string]any {
	m := map[string]any{"status": st.Status, "message": st.Message}
	if withData {
		m["status-data"] = map[string]any{}
	}
	return m
}

func (t *toolCall) statusGet() error {
	t.withFormat()
	application := t.fs.Bool("application", false, "get the application status")
	includeData := t.fs.Bool("include-data", false, "include message and data")
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	if *application {
		if !t.isLeaderNow() {
			return errors.New("finding application status: this unit is not the leader")
		}
		a := t.hc.view.Applications[t.hc.app]
		units := map[string]any{}
		for _, u := range t.hc.view.Units {
			if u.App == t.hc.app {
				units[u.Name] = statusMap(u.Workload, true)
			}
		}
		st := statusMap(a.Status, true)
		st["units"] = units
		return t.out(map[string]any{"application-status": st})
	}
	st := t.unitState().Workload
	if len(args) == 1 {
		v, ok := statusMap(st, true)[args[0]]
		if !ok {
			return fmt.Errorf("status-get: %q is not a valid key", args[0])
		}
		return t.out(v)
	}
	if !*includeData && (t.format == nil || *t.format == "smart") {
		return t.out(st.Status)
	}
	if !*includeData {
		return t.out(map[string]any{"status": st.Status})
	}
	return t.out(statusMap(st, true))
}

func (t *toolCall) applicationVersionSet() error {
	args, err := t.parse(1, 1)
	if err != nil {
		return err
	}
	app, v := t.hc.app, args[0]
	return t.hc.now(func(s *State) error {
		if a := s.Applications[app]; a != nil {
			a.Version = v
		}
		return nil
	})
}
