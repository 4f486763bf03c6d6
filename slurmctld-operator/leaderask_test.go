package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// TestAskLeaderEarlySameHooks: with is-leader started before the state loads (AskLeaderEarly,
// as in production), a leader and then a unit that no longer leads run the hooks of a
// deployment exactly as when each hook asks in turn: the same model and status after every
// hook, and the same hook tools, as many times each (only their order may differ).
func TestAskLeaderEarlySameHooks(t *testing.T) {
	plain, early := newEnv(t), newEnv(t)
	early.c.AskLeaderEarly = true
	steps := []struct {
		add    []jujutest.Relation
		ev     juju.Event
		leader bool
	}{
		{ev: jujutest.Hook(juju.Install), leader: true},
		{ev: jujutest.Hook(juju.LeaderElected), leader: true},
		{ev: jujutest.Hook(juju.ConfigChanged), leader: true},
		{ev: jujutest.Hook(juju.Start), leader: true},
		{add: []jujutest.Relation{relation("slurmd:1", "slurmd", compute(t, "slurmd", ""), "slurmd/0")}, ev: jujutest.RelationHook(juju.RelationCreated, "slurmd:1", ""), leader: true},
		{ev: jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/0"), leader: true},
		{ev: jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"), leader: true},
		{ev: jujutest.Hook(juju.UpdateStatus), leader: true},
		{ev: jujutest.Hook(juju.ConfigChanged), leader: false},
		{ev: jujutest.Hook(juju.UpdateStatus), leader: false},
		{ev: jujutest.RelationHook(juju.RelationBroken, "slurmd:1", ""), leader: false},
	}
	in, inEarly := baseState(), baseState()
	for _, s := range steps {
		in.Relations = append(slices.Clone(in.Relations), s.add...)
		inEarly.Relations = append(slices.Clone(inEarly.Relations), s.add...)
		in.Leader, inEarly.Leader = s.leader, s.leader
		out, calls, err := plain.runTools(in, s.ev, nil)
		if err != nil {
			t.Fatalf("%s: %v", s.ev.Name, err)
		}
		outEarly, callsEarly, err := early.runTools(inEarly, s.ev, nil)
		if err != nil {
			t.Fatalf("%s, is-leader asked early: %v", s.ev.Name, err)
		}
		if d := cmp.Diff(out, outEarly); d != "" {
			t.Fatalf("after %s: asking early changed the model (-in turn +early):\n%s", s.ev.Name, d)
		}
		slices.Sort(calls)
		slices.Sort(callsEarly)
		if d := cmp.Diff(calls, callsEarly); d != "" {
			t.Fatalf("%s: asking early changed the hook tools run (-in turn +early):\n%s", s.ev.Name, d)
		}
		in, inEarly = out, outEarly
	}
}

// TestAskLeaderEarlyFails: an is-leader that fails fails the hook asked early as it does asked
// in turn, naming the leadership check.
func TestAskLeaderEarlyFails(t *testing.T) {
	for _, early := range []bool{false, true} {
		e := newEnv(t)
		e.c.AskLeaderEarly = early
		st := e.run(baseState(), jujutest.Hook(juju.Install))
		st = e.run(st, jujutest.Hook(juju.LeaderElected))
		_, _, err := e.runTools(st, jujutest.Hook(juju.UpdateStatus), func(args []string) bool { return args[0] == "is-leader" })
		if err == nil || !strings.Contains(err.Error(), "cannot check leadership") {
			t.Errorf("early %v: update-status with is-leader failing: %v, want cannot check leadership", early, err)
		}
	}
}
