package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/service/servicetest"
)

// connecting is a service manager that can connect ahead (as auto.Manager): it counts the
// calls to Connect.
type connecting struct {
	*servicetest.Manager
	connects atomic.Int32
}

func (c *connecting) Connect(context.Context) { c.connects.Add(1) }

// TestConnectAhead: a new node's relation hook starts the service manager's connection at
// its start (on a machine, systemd's is made while the relation and the key are read);
// a node already running asks for none ahead.
func TestConnectAhead(t *testing.T) {
	e := newEnv(t)
	m := &connecting{Manager: e.svc}
	e.charm.Services = m
	if err := e.run(jujutest.Hook(juju.Install)); err != nil {
		t.Fatal(err)
	}
	e.join()
	after := []int32{m.connects.Load()}
	if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
		t.Fatal(err)
	}
	after = append(after, m.connects.Load())
	// The join's first hook connects ahead; the join's next hooks (slurmd started by the
	// first) and a later change do not.
	if d := cmp.Diff([]int32{1, 1}, after); d != "" {
		t.Errorf("connections ahead after the join and after a change (-want +got):\n%s", d)
	}
	if !e.slurm.hasNode(node) {
		t.Errorf("node %s did not register", node)
	}
}

// TestKeyWriteFailsClosed: under auth/slurm a new node's key is written beside slurmd's
// definition; when the write fails (here slurm.key is a directory) the hook fails and slurmd
// is neither enabled nor started, and no node registers.
func TestKeyWriteFailsClosed(t *testing.T) {
	e := newEnv(t)
	e.slurm.version = "24.11.5"
	if err := e.run(jujutest.Hook(juju.Install)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.root, "/etc/slurm/slurm.key/x"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.relatedTo("24.11.5")
	err := e.run(jujutest.RelationHook(juju.RelationCreated, relID, ""))
	if err == nil || !strings.Contains(err.Error(), "slurm.key") {
		t.Fatalf("got %v, want an error about slurm.key", err)
	}
	for _, c := range e.svcCalls(SlurmdService) {
		if c != "configure" {
			t.Errorf("slurmd %s although its key was not written", c)
		}
	}
	if e.slurm.hasNode(node) {
		t.Errorf("node %s registered", node)
	}
}
