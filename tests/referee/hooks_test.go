package main

import (
	"sort"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/tests/model"
)

// remote is the remote state of unit a/0, leader of a, with a peer relation 0 (alpha/1 in it
// when peer is true) and the relations rels to b.
func remote(leader bool, peer bool, rels ...int) model.RemoteState {
	rs := model.RemoteState{Life: "alive", AppLife: "alive", Charm: "local:a-0", Config: "1", Leader: leader,
		Relations: map[int]model.RemoteRelation{0: {Key: "a:peer", Life: "alive", Endpoint: "peer", Role: "peer", Interface: "p", RemoteApp: "a",
			Members: map[string]int64{}, AppMembers: map[string]int64{"a": 0}}}}
	if peer {
		rs.Relations[0].Members["a/1"] = 1
	}
	for _, id := range rels {
		rs.Relations[id] = model.RemoteRelation{Key: "a:db b:db", Life: "alive", Endpoint: "db", Role: "requirer", Interface: "db", RemoteApp: "b",
			Members: map[string]int64{"b/0": 1}, AppMembers: map[string]int64{"b": 0}}
	}
	return rs
}

// step is one choice of the model's agent and how it ended ("" for a choice of nothing).
type step struct {
	hook   *model.Hook
	remote model.RemoteState
	done   string
}

func run(kind string) *model.Hook { return &model.Hook{Kind: kind} }

func rel(kind string, id int, unit, app string, version int) *model.Hook {
	ep := "db"
	if id == 0 {
		ep = "peer"
	}
	return &model.Hook{Kind: kind, RelationID: id, Endpoint: ep, RemoteUnit: unit, RemoteApp: app, Version: version}
}

// judgeSteps runs steps through a referee uniter for a/0 and returns what it found.
func judgeSteps(t *testing.T, start model.RemoteState, steps []step) string {
	t.Helper()
	j := newHookJudge(t.TempDir())
	j.event(&model.AgentEvent{Unit: "a/0", Start: &model.AgentStart{Remote: start, Retry: true}})
	scopes := map[int]bool{}
	installed := false // the unit enters relation scopes once installed
	for _, s := range steps {
		if s.hook != nil && installed {
			for id, r := range s.remote.Relations {
				if r.Life == "alive" {
					scopes[id] = true
				}
			}
		}
		if s.hook != nil && s.hook.Kind == "install" {
			installed = true
		}
		if s.hook != nil && s.hook.Kind == "relation-broken" {
			delete(scopes, s.hook.RelationID)
		}
		var ids []int
		for id := range scopes {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		j.event(&model.AgentEvent{Unit: "a/0", Choice: &model.AgentChoice{Remote: s.remote, Hook: s.hook, Scopes: ids}})
		if s.hook != nil {
			done := s.done
			if done == "" {
				done = "ok"
			}
			j.event(&model.AgentEvent{Unit: "a/0", Done: done})
		}
	}
	return strings.Join(j.finish(), "\n")
}

// TestHookOrder checks that the referee passes hook sequences Juju's uniter runs and fails
// those it does not.
func TestHookOrder(t *testing.T) {
	lead := remote(true, false)
	withAction := lead
	withAction.Actions = []model.RemoteAction{{ID: "7", Name: "do"}}
	twoRels := remote(true, false, 1, 2)
	withCommands := lead
	withCommands.Commands = []string{"0"}
	commands := &model.Hook{Kind: model.RunCommands, CommandsID: "0"}
	failing := lead
	retried := lead
	retried.RetryHook = 1
	deploy := []step{
		{hook: run("install"), remote: lead},
		{hook: rel("relation-created", 0, "", "a", 0), remote: lead},
		{hook: run("leader-elected"), remote: lead},
		{hook: &model.Hook{Kind: "config-changed", Version: 1}, remote: lead},
		{hook: run("start"), remote: lead},
	}
	tests := []struct {
		name     string
		steps    []step
		wantDiff string // "" for none
	}{
		{"deploy", append(deploy, step{remote: lead}), ""},
		{"start before config-changed", []step{deploy[0], deploy[1], deploy[2], deploy[4]},
			"the model runs start; Juju's uniter runs config-changed"},
		{"nothing while start is queued", []step{deploy[0], deploy[1], deploy[2], deploy[3], {remote: lead}},
			"the model runs nothing; Juju's uniter runs start"},
		{"an action goes before config-changed", []step{deploy[0], deploy[1], deploy[2],
			{hook: &model.Hook{Kind: "action", ActionID: "7", ActionName: "do"}, remote: withAction}}, ""},
		{"not before leader-elected", []step{deploy[0], deploy[1],
			{hook: &model.Hook{Kind: "action", ActionID: "7", ActionName: "do"}, remote: withAction}},
			"Juju's uniter runs leader-elected"},
		{"juju-exec before install", []step{{hook: commands, remote: withCommands}, deploy[0]}, ""},
		{"juju-exec goes before a queued start", append(append([]step{}, deploy[:4]...),
			step{hook: commands, remote: withCommands}, deploy[4], step{remote: lead}), ""},
		{"juju-exec is not left waiting", append(append([]step{}, deploy...), step{remote: withCommands}),
			"the model runs nothing; Juju's uniter runs juju-exec commands 0"},
		{"juju-exec is not put after update-status", append(append([]step{}, deploy...),
			step{hook: run("update-status"), remote: func() model.RemoteState { r := withCommands; r.UpdateStatus = 1; return r }()}),
			"the model runs update-status; Juju's uniter runs juju-exec commands 0"},
		{"a failed unit runs juju-exec", append(append([]step{}, deploy[:3]...),
			step{hook: &model.Hook{Kind: "config-changed", Version: 1}, remote: failing, done: "failed"},
			step{hook: commands, remote: withCommands},
			step{remote: failing}), ""},
		{"relations in any order", append(append([]step{}, deploy[0]),
			step{hook: rel("relation-created", 2, "", "b", 0), remote: twoRels},
			step{hook: rel("relation-created", 0, "", "a", 0), remote: twoRels},
			step{hook: rel("relation-created", 1, "", "b", 0), remote: twoRels}), ""},
		{"a failed hook is replayed", append(append([]step{}, deploy[:3]...),
			step{hook: &model.Hook{Kind: "config-changed", Version: 1}, remote: failing, done: "failed"},
			step{remote: failing},
			step{hook: &model.Hook{Kind: "config-changed", Version: 1}, remote: retried},
			step{hook: run("start"), remote: retried}), ""},
		{"a failed hook is not replaced", append(append([]step{}, deploy[:3]...),
			step{hook: &model.Hook{Kind: "config-changed", Version: 1}, remote: failing, done: "failed"},
			step{hook: run("start"), remote: retried}),
			"the model runs start; Juju's uniter runs config-changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diff := judgeSteps(t, lead, tt.steps)
			switch {
			case tt.wantDiff == "" && diff != "":
				t.Errorf("unexpected difference: %s", diff)
			case tt.wantDiff != "" && !strings.Contains(diff, tt.wantDiff):
				t.Errorf("difference %q, want one naming %q", diff, tt.wantDiff)
			}
		})
	}
}
