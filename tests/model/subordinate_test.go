package model_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/tests/model"
)

// subCharm is the test charm as a subordinate: its `sink` endpoint container-scoped.
func subCharm(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	yml, err := os.ReadFile(filepath.Join(charmDir, "charmcraft.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(yml), "name: testcharm\n", "name: testcharm\nsubordinate: true\n", 1)
	s = strings.Replace(s, "  sink:\n    interface: test\n", "  sink:\n    interface: test\n    scope: container\n", 1)
	if !strings.Contains(s, "scope: container") || !strings.Contains(s, "subordinate: true") {
		t.Fatal("cannot make the subordinate test charm")
	}
	if err := os.WriteFile(filepath.Join(dir, "charmcraft.yaml"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(charmDir, "dispatch"), filepath.Join(dir, "dispatch")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSubordinate: a subordinate application has no unit until it is related through a
// container-scoped endpoint; then each principal unit gets one on its own machine, which sees
// only that principal unit; a new principal unit gets one too; a removed principal unit's
// subordinate leaves first, and its machine goes only then.
func TestSubordinate(t *testing.T) {
	forEachMachines(t, func(t *testing.T, prov func(*testing.T, string) model.Provisioner) {
		m := newModel(t, modelOptions{provIn: prov})
		ctx := context.Background()
		deploy(t, m, "alpha", 2, nil)
		if _, err := m.Deploy(ctx, model.DeployOptions{Charm: subCharm(t), Name: "sub", Units: 1}); err == nil {
			t.Fatal("a subordinate deployed with units")
		}
		if _, err := m.Deploy(ctx, model.DeployOptions{Charm: subCharm(t), Name: "sub"}); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		if st := m.Status(ctx); len(st.Applications["sub"].Units) != 0 {
			t.Fatalf("sub has units before any relation: %v", st.Applications["sub"].Units)
		}
		if _, err := m.AddUnit(ctx, "sub", 1); err == nil {
			t.Fatal("add-unit of a subordinate accepted")
		}
		if _, err := m.Integrate(ctx, "alpha:source", "sub:sink"); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		machineOf := func() map[string]string {
			out := map[string]string{}
			for name, u := range m.State().Units {
				out[name] = u.Machine
			}
			return out
		}
		mach := machineOf()
		if len(mach) != 4 || mach["sub/0"] != mach["alpha/0"] || mach["sub/1"] != mach["alpha/1"] || mach["alpha/0"] == mach["alpha/1"] {
			t.Fatalf("units on machines %v, want sub/0 with alpha/0 and sub/1 with alpha/1", mach)
		}
		if n := len(m.Status(ctx).Machines); n != 2 {
			t.Errorf("%d machines, want 2", n)
		}
		h := hooks(m)
		for sub, principal := range map[string]string{"sub/0": "alpha/0", "sub/1": "alpha/1"} {
			joins := find(h[sub], "sink-relation-joined")
			if len(joins) != 1 || joins[0].Env["JUJU_REMOTE_UNIT"] != principal {
				t.Errorf("%s joined %v, want %s alone", sub, joins, principal)
			}
		}
		if _, err := m.AddUnit(ctx, "alpha", 1); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		if mach = machineOf(); mach["sub/2"] == "" || mach["sub/2"] != mach["alpha/2"] {
			t.Fatalf("after add-unit: %v", mach)
		}
		if err := m.RemoveUnit(ctx, "alpha/0"); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		if mach = machineOf(); mach["sub/0"] != "" || mach["alpha/0"] != "" || len(mach) != 4 {
			t.Fatalf("after remove-unit alpha/0: %v", mach)
		}
		h = hooks(m)
		if i := index(h["sub/0"], "remove", nil); i < 0 {
			t.Errorf("sub/0 did not run remove: %v", names(h["sub/0"]))
		}
		if n := len(m.Status(ctx).Machines); n != 2 {
			t.Errorf("%d machines after removing alpha/0, want 2", n)
		}
		if m.State().Units["sub/1"] == nil {
			t.Fatal("sub/1 gone before the relation's removal")
		}
		if err := m.RemoveRelation(ctx, "alpha", "sub"); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		if st := m.Status(ctx); len(st.Applications["sub"].Units) != 0 || len(st.Applications["alpha"].Units) != 2 {
			t.Errorf("after remove-relation: sub %v, alpha %v", st.Applications["sub"].Units, st.Applications["alpha"].Units)
		}
		// Related again: the model closes (destroying each machine once) with subordinates on them.
		if _, err := m.Integrate(ctx, "alpha:source", "sub:sink"); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		if n := len(m.Status(ctx).Applications["sub"].Units); n != 2 {
			t.Errorf("%d subordinate units after relating again, want 2", n)
		}
		if err := m.Close(); err != nil {
			t.Errorf("close with subordinates: %v", err)
		}
	})
}
