package main

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// TestRelationIDsOncePerHook: no hook lists an endpoint's relations twice (relation-ids costs
// a hook-tool call; Juju's answer is fixed for the hook), on a leader with a slurmd
// application, shared storage and a backup, and on the backup that is elected leader.
func TestRelationIDsOncePerHook(t *testing.T) {
	e, leader := haLeader(t, 0)
	b, backup := haBackup(t, leader)
	backup.Relations = append(backup.Relations, relation("slurmd:1", "slurmd", compute(t, "slurmd", ""), "slurmd/0"))
	backup = b.run(backup, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
	writeHeartbeat(t, b, 0)
	backup.Leader = true
	for _, tc := range []struct {
		who string
		e   *env
		in  jujutest.State
		ev  juju.Event
	}{
		{"leader", e, leader, jujutest.Hook(juju.LeaderElected)},
		{"leader", e, leader, jujutest.Hook(juju.ConfigChanged)},
		{"leader", e, leader, jujutest.Hook(juju.Start)},
		{"leader", e, leader, jujutest.Hook(juju.UpdateStatus)},
		{"leader", e, leader, jujutest.Hook(juju.UpgradeCharm)},
		{"leader", e, leader, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0")},
		{"leader", e, leader, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/1")},
		{"new leader", b, backup, jujutest.Hook(juju.LeaderElected)},
	} {
		listed := map[string]int{}
		_, calls, err := tc.e.runTools(tc.in, tc.ev, func(args []string) bool {
			if args[0] == "relation-ids" && len(args) > 1 {
				listed[args[1]]++
			}
			return false
		})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.who, tc.ev.Name, err)
		}
		for endpoint, n := range listed {
			if n > 1 {
				t.Errorf("%s %s: relation-ids %s ran %d times: %q", tc.who, tc.ev.Name, endpoint, n, calls)
			}
		}
	}
}

// TestRelationRecordSameHooks: with the relation record (as in production), a leader runs the
// hooks of a deployment in Juju's order (every relation's relation-created first: slurmd, then
// the shared storage and a peer, then slurmd's relation-broken) exactly as without it, the
// same model and status after every hook, with fewer relation-ids calls: each endpoint is
// listed once, then the record answers.
func TestRelationRecordSameHooks(t *testing.T) {
	plain, kept := newEnv(t), newEnv(t)
	kept.c.RelationRecord = filepath.Join(t.TempDir(), RelationRecordName)
	// The same time on both sides (a restart turn records when it began), a second later at
	// every reading.
	for _, e := range []*env{plain, kept} {
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		e.c.Clock = func() time.Time { now = now.Add(time.Second); return now }
	}
	ha := withHA(jujutest.State{})
	type step struct {
		add []jujutest.Relation // relations added to the model before the hook
		ev  juju.Event
	}
	steps := []step{
		{ev: jujutest.Hook(juju.Install)},
		{ev: jujutest.Hook(juju.LeaderElected)},
		{ev: jujutest.Hook(juju.ConfigChanged)},
		{ev: jujutest.Hook(juju.Start)},
		{add: []jujutest.Relation{relation("slurmd:1", "slurmd", compute(t, "slurmd", ""), "slurmd/0")}, ev: jujutest.RelationHook(juju.RelationCreated, "slurmd:1", "")},
		{ev: jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/0")},
		{ev: jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0")},
		{ev: jujutest.Hook(juju.UpdateStatus)},
		{add: ha.Relations[:1], ev: jujutest.RelationHook(juju.RelationCreated, "mount:5", "")},
		{add: ha.Relations[1:], ev: jujutest.RelationHook(juju.RelationCreated, "slurmctld-peers:0", "")},
		{ev: jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/1")},
		{ev: jujutest.Hook(juju.ConfigChanged)},
		{ev: jujutest.Hook(juju.LeaderElected)},
		{ev: jujutest.RelationHook(juju.RelationBroken, "slurmd:1", "")},
		{ev: jujutest.Hook(juju.ConfigChanged)},
		{ev: jujutest.Hook(juju.UpdateStatus)},
	}
	in := baseState()
	inKept := baseState()
	var listed, listedKept int
	endpoints := map[string]int{} // relation-ids with the record, by endpoint
	for _, s := range steps {
		in.Relations = append(slices.Clone(in.Relations), s.add...)
		inKept.Relations = append(slices.Clone(inKept.Relations), s.add...)
		count := func(e *env, st jujutest.State, n *int) jujutest.State {
			out, calls, err := e.runTools(st, s.ev, func(args []string) bool {
				if e == kept && args[0] == "relation-ids" {
					endpoints[args[1]]++
				}
				return false
			})
			if err != nil {
				t.Fatalf("%s: %v", s.ev.Name, err)
			}
			for _, c := range calls {
				if c == "relation-ids" {
					*n++
				}
			}
			return out
		}
		in, inKept = count(plain, in, &listed), count(kept, inKept, &listedKept)
		if d := cmp.Diff(in, inKept); d != "" {
			t.Fatalf("after %s: the record changed the model (-without +with):\n%s", s.ev.Name, d)
		}
	}
	for ep, n := range endpoints {
		if n > 1 {
			t.Errorf("relation-ids %s ran %d times with the record, want once", ep, n)
		}
	}
	if listedKept >= listed {
		t.Errorf("relation-ids ran %d times with the record, %d without", listedKept, listed)
	}
	t.Logf("relation-ids calls: %d without the record, %d with (%v)", listed, listedKept, endpoints)
}
