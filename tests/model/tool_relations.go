package model

// relation-ids, relation-list, relation-get, relation-set.

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// relation resolves -r (or the hook's relation).
func (t *toolCall) relation(arg string) (*Relation, error) {
	if arg == "" {
		if !strings.HasPrefix(t.hc.hook.Kind, "relation-") {
			return nil, &usageError{"no relation id specified"}
		}
		arg = strconv.Itoa(t.hc.hook.RelationID)
	}
	idStr := arg
	if i := strings.LastIndex(arg, ":"); i >= 0 {
		idStr = arg[i+1:]
	}
	id, err := strconv.Atoi(idStr)
	if err != nil {
		return nil, &usageError{fmt.Sprintf("invalid value %q for option -r: invalid relation id", arg)}
	}
	r := t.hc.view.Relations[id]
	if r == nil {
		return nil, &usageError{fmt.Sprintf("invalid value %q for option -r: relation not found", arg)}
	}
	ep, ok := r.endpointOf(t.hc.app)
	if !ok || (strings.Contains(arg, ":") && arg[:strings.LastIndex(arg, ":")] != ep.Name) {
		return nil, &usageError{fmt.Sprintf("invalid value %q for option -r: relation not found", arg)}
	}
	return r, nil
}

func (t *toolCall) relationIDs() error {
	t.withFormat()
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	ep := t.hc.hook.Endpoint
	if len(args) == 1 {
		ep = args[0]
	}
	if ep == "" {
		return &usageError{"no endpoint name specified"}
	}
	app := t.hc.view.Applications[t.hc.app]
	_ = app // Juju lists no relation for a name that is no endpoint, and exits 0
	ids := []string{}
	var nums []int
	for _, r := range t.hc.view.Relations {
		e, ok := r.endpointOf(t.hc.app)
		if !ok || e.Name != ep {
			continue
		}
		// Juju lists a relation the unit has entered until its relation-broken, dying or not.
		// In its own relation-broken hook, the relation is broken in the context and left out.
		rl := t.unitState().Seen.Relations[r.ID]
		if h := t.hc.hook; h.Kind == "relation-broken" && h.RelationID == r.ID {
			continue
		}
		if rl == nil && !r.Dying || rl != nil && !rl.Broken {
			nums = append(nums, r.ID)
		}
	}
	sort.Ints(nums)
	for _, n := range nums {
		ids = append(ids, fmt.Sprintf("%s:%d", ep, n))
	}
	return t.out(ids)
}

// members is the remote units this unit sees in r during this hook.
func (t *toolCall) members(r *Relation) []string {
	rl := t.unitState().Seen.Relations[r.ID]
	set := map[string]bool{}
	if rl != nil {
		for u := range rl.Joined {
			set[u] = true
		}
	}
	h := t.hc.hook
	if h.RelationID == r.ID {
		switch h.Kind {
		case "relation-joined":
			set[h.RemoteUnit] = true
		case "relation-departed":
			delete(set, h.RemoteUnit)
		}
	}
	return sortedKeys(set)
}

func (t *toolCall) relationList() error {
	t.withFormat()
	rel := t.fs.StringP("relation", "r", "", "relation id")
	app := t.fs.Bool("app", false, "list the remote application")
	if _, err := t.parse(0, 0); err != nil {
		return err
	}
	r, err := t.relation(*rel)
	if err != nil {
		return err
	}
	if *app {
		return t.out(r.remoteApp(t.hc.app))
	}
	return t.out(t.members(r))
}

func (t *toolCall) relationGet() error {
	t.withFormat()
	rel := t.fs.StringP("relation", "r", "", "relation id")
	app := t.fs.Bool("app", false, "get the application databag")
	args, err := t.parse(0, 2)
	if err != nil {
		return err
	}
	r, err := t.relation(*rel)
	if err != nil {
		return err
	}
	key := ""
	if len(args) > 0 && args[0] != "-" {
		key = args[0]
	}
	who := ""
	if len(args) > 1 {
		who = args[1]
	} else if *app {
		who = t.hc.hook.RemoteApp
		if who == "" && t.hc.hook.RelationID == r.ID {
			who = r.remoteApp(t.hc.app)
		}
	} else {
		who = t.hc.hook.RemoteUnit
	}
	if who == "" {
		return &usageError{"no unit or application specified"}
	}
	var data map[string]string
	if *app {
		appName, _, _ := strings.Cut(who, "/")
		if _, ok := r.endpointOf(appName); !ok {
			return fmt.Errorf("application %q: settings not found", appName)
		}
		if appName == t.hc.app && !r.isPeer() && !t.isLeaderNow() {
			return errors.New("permission denied (unit is not the leader)")
		}
		data = r.AppData[appName]
	} else {
		if !strings.Contains(who, "/") {
			return fmt.Errorf("invalid unit name %q", who)
		}
		appName, _, _ := strings.Cut(who, "/")
		if _, ok := r.endpointOf(appName); !ok {
			return fmt.Errorf("unit %q: settings not found", who)
		}
		data = r.UnitData[who]
		if _, known := t.hc.view.Units[who]; !known && data == nil {
			// Juju reads the unit's settings document, which a unit never in the model lacks.
			return fmt.Errorf("unit %q: settings not found", who)
		}
	}
	if key != "" {
		return t.out(data[key])
	}
	if data == nil {
		data = map[string]string{}
	}
	return t.out(data)
}

func (t *toolCall) relationSet() error {
	rel := t.fs.StringP("relation", "r", "", "relation id")
	app := t.fs.Bool("app", false, "set the application databag")
	file := t.fs.String("file", "", "YAML file of settings (- for stdin)")
	t.fs.String("format", "", "deprecated")
	args, err := t.parse(0, -1)
	if err != nil {
		return err
	}
	r, err := t.relation(*rel)
	if err != nil {
		return err
	}
	settings := map[string]string{}
	if *file != "" {
		var raw map[string]any
		if err := yaml.Unmarshal(t.stdin, &raw); err != nil {
			return fmt.Errorf("cannot parse settings file: %w", err)
		}
		for k, v := range raw {
			if v == nil {
				settings[k] = ""
			} else {
				settings[k] = fmt.Sprint(v)
			}
		}
	}
	kv, err := parseKV(args)
	if err != nil {
		return err
	}
	for k, v := range kv {
		settings[k] = v
	}
	if *app && !t.isLeaderNow() {
		return errors.New("cannot write relation settings") // jujuc/relation-set.go says no more
	}
	id, unit, appName := r.ID, t.hc.unit, t.hc.app
	writeApp := *app
	return t.hc.do(func(s *State) error {
		r := s.Relations[id]
		if r == nil {
			return fmt.Errorf("relation %d is gone", id)
		}
		key := unit
		data, versions := r.UnitData, r.UnitVersion
		if writeApp {
			key, data, versions = appName, r.AppData, r.AppVersion
		}
		var changed bool
		data[key], changed = applySettings(data[key], settings)
		if changed {
			// Every unit in the relation's scope watches the other side's application data,
			// which in a peer relation is its own application's: the leader that wrote it gets
			// relation-changed too (state/relationunit.go, counterpartApplicationSettingsKeys).
			versions[key]++
		}
		return nil
	})
}
