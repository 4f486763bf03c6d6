package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// runTools runs ev like run and returns the hook tools it ran.
func (e *env) runTools(ev juju.Event) []string {
	e.t.Helper()
	out, tools, err := jujutest.Tools(e.t, e.state, ev, e.charm.Router().Dispatch)
	if err != nil {
		e.t.Fatalf("%s: %v", ev.Name, err)
	}
	e.state = out
	return tools
}

// TestHookToolsKept: the configuration is read on config-changed only (kept in the state);
// a relation hook names the controller application from its environment and reads no
// secret whose key is installed; secret-changed reads only the secret, with the controller
// data the last relation hook kept.
func TestHookToolsKept(t *testing.T) {
	e := newEnv(t)
	e.join()
	changed := jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")
	tools := e.runTools(changed)
	for _, no := range []string{"config-get", "relation-list", "relation-ids", "secret-get"} {
		if slices.Contains(tools, no) {
			t.Errorf("relation-changed with the key installed ran %s: %q", no, tools)
		}
	}
	if !slices.Contains(tools, "relation-get") {
		t.Errorf("relation-changed did not read the controller's data: %q", tools)
	}
	for _, kind := range []juju.Kind{juju.UpdateStatus, juju.Start} {
		if tools := e.runTools(jujutest.Hook(kind)); slices.Contains(tools, "config-get") {
			t.Errorf("%s read the configuration: %q", kind, tools)
		}
	}
	e.state.Config["default-node-reason"] = "kept"
	if tools := e.runTools(jujutest.Hook(juju.ConfigChanged)); !slices.Contains(tools, "config-get") {
		t.Errorf("config-changed did not read the configuration: %q", tools)
	}
	if st := e.savedState(); st.Config == nil || st.Config.DefaultNodeReason != "kept" {
		t.Errorf("kept configuration %+v", st.Config)
	}

	// Rotation: secret-changed reads the secret alone and restarts with the new key.
	e.state.Secrets[0].Revisions = append(e.state.Secrets[0].Revisions, slurmd.EncodeAuthSecret(key2, "2"))
	tools = e.runTools(jujutest.SecretHook(juju.SecretChanged, secretID, 0))
	if got := slices.DeleteFunc(slices.Clone(tools), func(s string) bool { return s == "status-set" || s == "juju-log" }); !slices.Equal(got, []string{"secret-get"}) {
		t.Errorf("secret-changed ran %q, want secret-get only", tools)
	}
	if st := e.savedState(); st.Applied == nil || st.Applied.KeyID != "2" {
		t.Errorf("rotation not applied: %+v", st.Applied)
	}

	// A key file changed behind the charm's back: the relation hook reads the secret again.
	if err := os.WriteFile(filepath.Join(e.root, "/etc/munge/munge.key"), []byte("tampered"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tools := e.runTools(changed); !slices.Contains(tools, "secret-get") {
		t.Errorf("relation-changed after the key file changed: %q, want secret-get", tools)
	}
	if key, _ := os.ReadFile(filepath.Join(e.root, "/etc/munge/munge.key")); !slices.Equal(key, key2) {
		t.Error("key file not restored from the secret")
	}

	// The relation broken: nothing kept for secret-changed, which reads as before.
	if err := e.run(jujutest.RelationHook(juju.RelationBroken, relID, "")); err != nil {
		t.Fatal(err)
	}
	if st := e.savedState(); st.Controller != nil {
		t.Errorf("controller data kept after relation-broken: %+v", st.Controller)
	}
}

// TestRelationRecordSameHooks: with the relation record (as in production), a unit runs the
// hooks of joining, leading, reconfiguring and leaving the controller in Juju's order exactly
// as without it, the same model after every hook, and lists the slurmctld endpoint once.
func TestRelationRecordSameHooks(t *testing.T) {
	plain, kept := newEnv(t), newEnv(t)
	kept.charm.RelationRecord = filepath.Join(t.TempDir(), RelationRecordName)
	steps := []juju.Event{
		jujutest.Hook(juju.Install),
		jujutest.Hook(juju.LeaderElected),
		jujutest.Hook(juju.ConfigChanged),
		jujutest.Hook(juju.Start),
		jujutest.RelationHook(juju.RelationCreated, relID, ""),
		jujutest.RelationHook(juju.RelationJoined, relID, "slurmctld/0"),
		jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"),
		jujutest.Hook(juju.LeaderElected),
		jujutest.Hook(juju.ConfigChanged),
		jujutest.Hook(juju.Start),
		jujutest.Hook(juju.UpdateStatus),
		jujutest.RelationHook(juju.RelationDeparted, relID, "slurmctld/0"),
		jujutest.RelationHook(juju.RelationBroken, relID, ""),
		jujutest.Hook(juju.ConfigChanged),
		jujutest.Hook(juju.UpdateStatus),
	}
	listed := map[*env]int{}
	for _, ev := range steps {
		if ev.Kind == juju.RelationCreated {
			plain.related()
			kept.related()
		}
		for _, e := range []*env{plain, kept} {
			for _, tool := range e.runTools(ev) {
				if tool == "relation-ids" {
					listed[e]++
				}
			}
		}
		if d := cmp.Diff(plain.state, kept.state); d != "" {
			t.Fatalf("after %s: the record changed the model (-without +with):\n%s", ev.Name, d)
		}
	}
	if listed[kept] != 1 || listed[plain] <= 1 {
		t.Errorf("relation-ids ran %d times with the record, %d without; want once with it", listed[kept], listed[plain])
	}
}

// TestFactsKeptBeforeJoin: the hooks before a join (leader-elected, config-changed, start)
// read `slurmd -C` once: the first read that succeeds is kept in the state's facts (a hit
// after it); a failed read keeps nothing (the next hook reads again); upgrade-charm reads
// again (a new package, new hardware).
func TestFactsKeptBeforeJoin(t *testing.T) {
	e := newEnv(t)
	reads := func() int {
		n := 0
		for _, c := range e.slurm.callLog() {
			if c == "slurmd -C" {
				n++
			}
		}
		return n
	}
	if err := e.run(jujutest.Hook(juju.Install)); err != nil {
		t.Fatal(err)
	}
	e.slurm.mu.Lock()
	e.slurm.machine = "not what slurmd -C prints\n"
	e.slurm.mu.Unlock()
	if err := e.run(jujutest.Hook(juju.LeaderElected)); err != nil {
		t.Fatal(err)
	}
	if f := e.savedState().Facts; f.hasMachine() || reads() != 1 {
		t.Fatalf("after a failed read: facts %+v, %d reads; want none kept, 1 read", f, reads())
	}
	e.slurm.mu.Lock()
	e.slurm.machine = ""
	e.slurm.mu.Unlock()
	for i, kind := range []juju.Kind{juju.ConfigChanged, juju.Start, juju.UpdateStatus, juju.ConfigChanged} {
		if err := e.run(jujutest.Hook(kind)); err != nil {
			t.Fatal(err)
		}
		if f := e.savedState().Facts; !f.hasMachine() || f.Version != "22.05.8" || reads() != 2 {
			t.Fatalf("hook %d (%s): facts %+v, %d reads; want slurmd -C's kept, 2 reads", i, kind, f, reads())
		}
	}
	if err := e.run(jujutest.Hook(juju.UpgradeCharm)); err != nil {
		t.Fatal(err)
	}
	if f := e.savedState().Facts; !f.hasMachine() || reads() != 3 {
		t.Errorf("upgrade-charm: facts %+v, %d reads; want read again", f, reads())
	}
}

// TestLeaderElectedAsksNoLeadership: leader-elected runs on the leader alone and leadership
// holds for the hook, so it publishes the partition and sets the application status without
// is-leader; every other hook that would publish still asks.
func TestLeaderElectedAsksNoLeadership(t *testing.T) {
	e := newEnv(t)
	e.join()
	tools := e.runTools(jujutest.Hook(juju.LeaderElected))
	if slices.Contains(tools, "is-leader") {
		t.Errorf("leader-elected ran is-leader: %q", tools)
	}
	if !slices.Contains(tools, "relation-set") || !slices.Contains(tools, "status-set") {
		t.Errorf("leader-elected did not publish the partition and the application status: %q", tools)
	}
	e.state.Config["partition-config"] = "MaxTime=1:00:00"
	if tools := e.runTools(jujutest.Hook(juju.ConfigChanged)); !slices.Contains(tools, "is-leader") {
		t.Errorf("config-changed with a new partition published without is-leader: %q", tools)
	}
}
