package juju_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
)

// Relations.IDs runs relation-ids once per endpoint and hook: a second ask answers what the
// first listed (a copy the caller may change), another endpoint is asked, and a new hook's
// context asks Juju again.
func TestRelationIDsOncePerHook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := &recorder{res: juju.Result{Stdout: []byte(`["slurmd:3","slurmd:7"]`)}}
	hc := juju.NewHookContext(juju.Event{}, r)
	want := []juju.RelationID{"slurmd:3", "slurmd:7"}
	for i := range 2 {
		ids, err := hc.Relations.IDs(ctx, "slurmd")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, ids); d != "" {
			t.Errorf("ask %d (-want +got):\n%s", i, d)
		}
		ids[0] = "mangled"
	}
	if _, err := hc.Relations.First(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	if _, err := hc.Relations.IDs(ctx, "slurmctld-peer"); err != nil {
		t.Fatal(err)
	}
	if _, err := juju.NewHookContext(juju.Event{}, r).Relations.IDs(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, c := range r.calls {
		got = append(got, c.Args)
	}
	wantArgs := [][]string{
		{"relation-ids", "slurmd", "--format=json"},
		{"relation-ids", "slurmctld-peer", "--format=json"},
		{"relation-ids", "slurmd", "--format=json"}, // the next hook
	}
	if d := cmp.Diff(wantArgs, got); d != "" {
		t.Errorf("hook tools (-want +got):\n%s", d)
	}
}

// A failed relation-ids is not remembered: the next ask runs it again.
func TestRelationIDsErrorNotKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := &recorder{res: juju.Result{ExitCode: 1, Stderr: []byte("ERROR boom\n")}}
	hc := juju.NewHookContext(juju.Event{}, r)
	if _, err := hc.Relations.IDs(ctx, "slurmd"); err == nil {
		t.Fatal("relation-ids failed, IDs did not")
	}
	r.res = juju.Result{Stdout: []byte(`["slurmd:3"]`)}
	ids, err := hc.Relations.IDs(ctx, "slurmd")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]juju.RelationID{"slurmd:3"}, ids); d != "" {
		t.Errorf("after a failure (-want +got):\n%s", d)
	}
	if len(r.calls) != 2 {
		t.Errorf("relation-ids ran %d times, want 2", len(r.calls))
	}
}

// relation-list and relation-get run once per command line and hook too, each caller getting
// a value of its own; a relation-set forgets the bags read (the local unit's and
// application's own show the hook's writes) but not the lists.
func TestRelationReadsOncePerHookUntilASet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := &recorder{res: juju.Result{Stdout: []byte(`{"hostname":"juju-1"}`)}}
	hc := juju.NewHookContext(juju.Event{}, r)
	for range 2 {
		bag, err := hc.Relations.UnitData(ctx, "slurmctld-peers:1", "slurmctld/1")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(map[string]string{"hostname": "juju-1"}, bag); d != "" {
			t.Errorf("bag (-want +got):\n%s", d)
		}
		bag["hostname"] = "mangled"
	}
	if err := hc.Relations.SetUnitData(ctx, "slurmctld-peers:1", map[string]string{"runs-with": "juju-0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := hc.Relations.UnitData(ctx, "slurmctld-peers:1", "slurmctld/1"); err != nil {
		t.Fatal(err)
	}
	r.res = juju.Result{Stdout: []byte(`["slurmctld/1"]`)}
	for range 2 {
		if _, err := hc.Relations.Units(ctx, "slurmctld-peers:1"); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, c := range r.calls {
		got = append(got, c.Args[0])
	}
	want := []string{"relation-get", "relation-set", "relation-get", "relation-list"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("hook tools (-want +got):\n%s", d)
	}
}

// ListedIDs returns what relation-ids answered in this hook and what KnowIDs gave, by
// endpoint: not a failed listing, not the other read tools' answers, nothing from another
// hook's context; KnowIDs does not replace what relation-ids listed.
func TestListedIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := &recorder{res: juju.Result{Stdout: []byte(`["slurmd:3"]`)}}
	hc := juju.NewHookContext(juju.Event{}, r)
	if _, err := hc.Relations.IDs(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	hc.Relations.KnowIDs("slurmd", []juju.RelationID{"slurmd:9"})
	hc.Relations.KnowIDs("sackd", nil)
	r.res = juju.Result{Stdout: []byte(`["slurmd/0"]`)}
	if _, err := hc.Relations.Units(ctx, "slurmd:3"); err != nil {
		t.Fatal(err)
	}
	r.res = juju.Result{ExitCode: 1, Stderr: []byte("ERROR boom\n")}
	if _, err := hc.Relations.IDs(ctx, "slurmdbd"); err == nil {
		t.Fatal("relation-ids failed, IDs did not")
	}
	want := map[string][]juju.RelationID{"slurmd": {"slurmd:3"}, "sackd": {}}
	if d := cmp.Diff(want, hc.Relations.ListedIDs()); d != "" {
		t.Errorf("ListedIDs (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string][]juju.RelationID{}, juju.NewHookContext(juju.Event{}, r).Relations.ListedIDs()); d != "" {
		t.Errorf("another hook's ListedIDs (-want +got):\n%s", d)
	}
}
