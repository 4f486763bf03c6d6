package main

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// TestDefineAhead: on a new node's join slurmd's definition needs the controller's databag,
// not the key: it is made beside secret-get, so that a join whose key cannot be read yet
// (no grant here: the status says so) has slurmd defined as the join would define it, and
// neither enabled nor started. The join that follows defines it no second time; one whose
// databag the join refuses (no controller) defines nothing ahead.
func TestDefineAhead(t *testing.T) {
	e := newEnv(t)
	if err := e.run(jujutest.Hook(juju.Install)); err != nil {
		t.Fatal(err)
	}
	e.related()
	grants := e.state.Secrets[0].Grants
	e.state.Secrets[0].Grants = nil
	if err := e.run(jujutest.RelationHook(juju.RelationCreated, relID, "")); err != nil {
		t.Fatal(err)
	}
	if got := e.status(); got.Code != juju.StatusBlocked {
		t.Errorf("status %+v, want blocked on the unreadable secret", got)
	}
	if d := cmp.Diff([]string{"configure"}, e.svcCalls(SlurmdService)); d != "" {
		t.Errorf("slurmd calls with the key unread (-want +got):\n%s", d)
	}
	wantCmd := []string{SlurmdPath, "-D", "-Z", "-N", node, "--conf-server", "10.0.0.1:6817", "--conf",
		"CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105 Feature=slurmd"}
	if d := cmp.Diff(wantCmd, e.svc.Command(SlurmdService)); d != "" {
		t.Errorf("slurmd command defined ahead (-want +got):\n%s", d)
	}
	e.state.Secrets[0].Grants = grants
	if err := e.run(jujutest.RelationHook(juju.RelationJoined, relID, "slurmctld/0")); err != nil {
		t.Fatal(err)
	}
	if !e.slurm.hasNode(node) {
		t.Fatalf("node %s did not register", node)
	}
	// The join's hook defined slurmd once (ahead, the same definition), then enabled and
	// started it.
	if d := cmp.Diff([]string{"configure", "configure", "enable", "spawn"}, e.svcCalls(SlurmdService)); d != "" {
		t.Errorf("slurmd calls (-want +got):\n%s", d)
	}

	e = newEnv(t)
	if err := e.run(jujutest.Hook(juju.Install)); err != nil {
		t.Fatal(err)
	}
	e.related()
	e.state.Relations[0].RemoteAppData["controllers"] = "[]"
	if err := e.run(jujutest.RelationHook(juju.RelationCreated, relID, "")); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(e.svcCalls(SlurmdService), "configure") {
		t.Errorf("slurmd defined for a databag with no controller: %q", e.svcCalls(SlurmdService))
	}
}

// TestDefineAheadAgreesWithJoin: slurmd is defined ahead exactly when the join that follows,
// with the same databag and machine, starts it (joinHold, the one decision both take): a
// check the join makes that the definition ahead missed defines a slurmd the join refuses,
// and one the join does not make leaves a join without its definition ahead. Each case's
// first relation hook cannot read the key (no grant), so what it defines is the definition
// ahead's alone; the second can, and joins.
func TestDefineAheadAgreesWithJoin(t *testing.T) {
	tests := []struct {
		name string
		// before prepares the machine before install; setup relates the installed unit.
		before func(e *env)
		setup  func(e *env)
		// starts: the join starts slurmd, and so slurmd is defined ahead.
		starts bool
	}{{
		name:   "controller ready",
		setup:  func(e *env) { e.related() },
		starts: true,
	}, {
		name:   "slurmd newer than slurmctld",
		before: func(e *env) { e.slurm.version = "26.05.5" },
		setup:  func(e *env) { e.relatedTo("24.11.5") },
	}, {
		name:   "slurmd older than the configuration served",
		before: func(e *env) { e.slurm.version = "24.11.5" },
		setup: func(e *env) {
			e.relatedTo("26.05.5")
			e.state.Relations[0].RemoteAppData[slurmd.KeyConfMinVersion] = "25.11.0"
		},
	}, {
		name:   "GPUs the controller does not manage",
		before: func(e *env) { e.withGPUs(2, t4CSV) },
		setup:  func(e *env) { e.relatedGres() },
	}, {
		name:   "GPUs the controller manages",
		before: func(e *env) { e.withGPUs(2, t4CSV) },
		setup:  func(e *env) { e.relatedGres("gpu") },
		starts: true,
	}, {
		name: "node departed",
		setup: func(e *env) {
			e.related()
			st := e.savedState()
			st.Departed = true
			e.saveState(st)
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.before != nil {
				tt.before(e)
			}
			if err := e.run(jujutest.Hook(juju.Install)); err != nil {
				t.Fatal(err)
			}
			tt.setup(e)
			grants := e.state.Secrets[0].Grants
			e.state.Secrets[0].Grants = nil
			if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
				t.Fatal(err)
			}
			calls := e.svcCalls(SlurmdService)
			ahead := slices.Contains(calls, "configure")
			if slices.Contains(calls, "enable") || slices.Contains(calls, "spawn") {
				t.Errorf("slurmd enabled or started with the key unread: %q", calls)
			}
			e.state.Secrets[0].Grants = grants
			if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
				t.Fatal(err)
			}
			started := slices.Contains(e.svcCalls(SlurmdService), "spawn")
			if ahead != tt.starts || started != tt.starts {
				t.Errorf("defined ahead %v, join started slurmd %v: want both %v (slurmd calls %q)", ahead, started, tt.starts, e.svcCalls(SlurmdService))
			}
		})
	}
}
