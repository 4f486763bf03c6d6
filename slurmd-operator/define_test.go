package main

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

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
