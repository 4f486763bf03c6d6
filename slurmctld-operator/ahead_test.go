package main

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// TestReadAheadSameHooks: with the relation reads started ahead of the handler (ReadAhead,
// with is-leader asked early, as in production), a leader, then a unit that no longer leads,
// then a leaving unit run the hooks of a deployment exactly as when each hook reads in turn:
// the same model and status after every hook, and the same hook tools and Slurm commands, as
// many times each; but for a hook that reconfigures slurmctld, which drops the node list read
// ahead and reads it again, and the first hook of a unit that no longer leads, which drops
// the list read for a leader's status (one `scontrol show node` more each).
func TestReadAheadSameHooks(t *testing.T) {
	plain, ahead := newEnv(t), newEnv(t)
	ahead.c.AskLeaderEarly, ahead.c.ReadAhead = true, true
	withUnit := relation("slurmd:1", "slurmd", compute(t, "slurmd", ""), "slurmd/0", "slurmd/1")
	withUnit.RemoteUnits["slurmd/1"] = map[string]string{"slurm_version": "24.11.5"}
	steps := []struct {
		add    []jujutest.Relation
		config map[string]any // options changed before the hook
		ev     juju.Event
		leader bool
	}{
		{ev: jujutest.Hook(juju.Install), leader: true},
		{ev: jujutest.Hook(juju.LeaderElected), leader: true},
		{ev: jujutest.Hook(juju.ConfigChanged), leader: true},
		{ev: jujutest.Hook(juju.Start), leader: true},
		{add: []jujutest.Relation{withUnit}, ev: jujutest.RelationHook(juju.RelationCreated, "slurmd:1", ""), leader: true},
		{ev: jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/0"), leader: true},
		{ev: jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"), leader: true},
		{ev: jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/1"), leader: true},
		{ev: jujutest.RelationHook(juju.RelationChanged, "slurmd:1", ""), leader: true},
		{ev: jujutest.Hook(juju.UpdateStatus), leader: true},
		{config: map[string]any{"cluster-name": "other"}, ev: jujutest.Hook(juju.ConfigChanged), leader: true},
		{ev: jujutest.Hook(juju.UpdateStatus), leader: true},
		{ev: jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/1"), leader: true},
		{config: map[string]any{"cluster-name": "charmed-slurm"}, ev: jujutest.Hook(juju.ConfigChanged), leader: true},
		{config: map[string]any{"slurm-conf-parameters": "MinJobAge=10"}, ev: jujutest.Hook(juju.ConfigChanged), leader: true},
		{ev: jujutest.Hook(juju.UpgradeCharm), leader: true},
		{ev: jujutest.Hook(juju.Start), leader: true},
		{ev: jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/1"), leader: false},
		{ev: jujutest.Hook(juju.UpdateStatus), leader: false},
		{ev: jujutest.RelationHook(juju.RelationDeparted, "slurmd:1", "slurmctld/0"), leader: false},
		{ev: jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/1"), leader: false},
		{ev: jujutest.RelationHook(juju.RelationBroken, "slurmd:1", ""), leader: false},
	}
	in, inAhead := baseState(), baseState()
	led := false // the unit led in its last hook
	for _, s := range steps {
		if s.ev.Kind == juju.RelationDeparted {
			s.ev.DepartingUnit = "slurmctld/0"
		}
		in.Relations = append(slices.Clone(in.Relations), s.add...)
		inAhead.Relations = append(slices.Clone(inAhead.Relations), s.add...)
		in.Leader, inAhead.Leader = s.leader, s.leader
		for k, v := range s.config {
			in.Config, inAhead.Config = maps.Clone(in.Config), maps.Clone(inAhead.Config)
			in.Config[k], inAhead.Config[k] = v, v
		}
		n, nAhead := len(plain.slurm.commands()), len(ahead.slurm.commands())
		out, calls, err := plain.runTools(in, s.ev, nil)
		if err != nil {
			t.Fatalf("%s: %v", s.ev.Name, err)
		}
		outAhead, callsAhead, err := ahead.runTools(inAhead, s.ev, nil)
		if err != nil {
			t.Fatalf("%s, read ahead: %v", s.ev.Name, err)
		}
		cmds, cmdsAhead := lines(plain.slurm.commands()[n:]), lines(ahead.slurm.commands()[nAhead:])
		if slices.Contains(cmds, "scontrol reconfigure") || (!s.leader && led) {
			// The node list read ahead is dropped (cancelled if still running) by the
			// reconfigure, and the status reads it again: one read more, never a stale one.
			if i := slices.Index(cmdsAhead, "scontrol show node -o"); i >= 0 {
				cmdsAhead = slices.Delete(cmdsAhead, i, i+1)
			}
		}
		if d := cmp.Diff(cmds, cmdsAhead, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("%s (%s): reading ahead changed the Slurm commands run (-in turn +ahead):\n%s", s.ev.Name, s.ev.RemoteUnit, d)
		}
		if d := cmp.Diff(out, outAhead); d != "" {
			t.Fatalf("after %s (%s): reading ahead changed the model (-in turn +ahead):\n%s", s.ev.Name, s.ev.RemoteUnit, d)
		}
		slices.Sort(calls)
		slices.Sort(callsAhead)
		if d := cmp.Diff(calls, callsAhead); d != "" {
			t.Fatalf("%s (%s): reading ahead changed the hook tools run (-in turn +ahead):\n%s", s.ev.Name, s.ev.RemoteUnit, d)
		}
		if s.config["cluster-name"] == "other" && out.UnitStatus.Code != juju.StatusBlocked {
			t.Fatalf("%s with cluster-name changed: status %+v, want blocked", s.ev.Name, out.UnitStatus)
		}
		in, inAhead = out, outAhead
		led = s.leader
	}
}

// TestReadAheadFails: a relation read or network-get that fails fails the hook read ahead as
// it does read in turn, with the same error; an is-leader that fails too, and the hook still
// waits for the reads it started (the race detector and the test's end see none left).
func TestReadAheadFails(t *testing.T) {
	changed := jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0")
	for _, tc := range []struct {
		name string
		ev   juju.Event
		fail func(args []string) bool
	}{
		{name: "relation-list", ev: changed, fail: func(args []string) bool { return args[0] == "relation-list" }},
		{name: "app bag", ev: changed, fail: func(args []string) bool { return args[0] == "relation-get" && slices.Contains(args, "--app") }},
		{name: "is-leader", ev: changed, fail: func(args []string) bool { return args[0] == "is-leader" }},
		{name: "network-get", ev: jujutest.Hook(juju.ConfigChanged), fail: func(args []string) bool { return args[0] == "network-get" }},
		{name: "is-leader, address read ahead", ev: jujutest.Hook(juju.Start), fail: func(args []string) bool { return args[0] == "is-leader" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errs []string
			for _, ahead := range []bool{false, true} {
				e := newEnv(t)
				e.c.AskLeaderEarly, e.c.ReadAhead = ahead, ahead
				st := e.run(baseState(), jujutest.Hook(juju.Install))
				st = e.run(st, jujutest.Hook(juju.LeaderElected))
				st.Relations = []jujutest.Relation{relation("slurmd:1", "slurmd", compute(t, "slurmd", ""), "slurmd/0")}
				_, _, err := e.runTools(st, tc.ev, tc.fail)
				if err == nil {
					t.Fatalf("ahead %v: the hook succeeded", ahead)
				}
				errs = append(errs, err.Error())
			}
			if errs[0] != errs[1] || !strings.Contains(errs[0], "injected failure") {
				t.Errorf("errors: in turn %q, read ahead %q", errs[0], errs[1])
			}
		})
	}
}

// lines are commands as sorted command lines.
func lines(cmds [][]string) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, strings.Join(c, " "))
	}
	slices.Sort(out)
	return out
}
