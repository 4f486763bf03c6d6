package charm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// recordHook runs ev on in with a lifecycle keeping its relation record at record; the
// handler lists the slurmd and mount relations (twice) and fails with fail. It returns the
// relations listed by endpoint and how many relation-ids calls the hook made.
func recordHook(t *testing.T, record string, in jujutest.State, ev juju.Event, fail error) (map[string][]juju.RelationID, int, jujutest.State) {
	t.Helper()
	lc := charm.Lifecycle[struct{}]{StateFile: filepath.Join(filepath.Dir(record), "state.json"), RelationRecord: record}
	got := map[string][]juju.RelationID{}
	out, tools, err := jujutest.Tools(t, in, ev, lc.Handler(func(ctx context.Context, h *charm.Hook[struct{}]) error {
		for range 2 {
			for _, ep := range []string{"slurmd", "mount"} {
				ids, err := h.Relations.IDs(ctx, ep)
				if err != nil {
					return err
				}
				got[ep] = ids
			}
		}
		return fail
	}))
	if !errors.Is(err, fail) {
		t.Fatalf("%s: %v, want %v", ev.Name, err, fail)
	}
	calls := 0
	for _, tool := range tools {
		if tool == "relation-ids" {
			calls++
		}
	}
	return got, calls, out
}

func related(ids ...juju.RelationID) jujutest.State {
	st := jujutest.State{Unit: "slurmctld/0", Leader: true}
	for _, id := range ids {
		st.Relations = append(st.Relations, jujutest.Relation{ID: id, RemoteApp: strings.Split(string(id), ":")[0] + "-app"})
	}
	return st
}

// TestRelationRecord: with a relation record, relation-ids runs once per endpoint ever (a
// miss), then the record answers (a hit); relation-created adds its relation, relation-broken
// removes its own (also in that hook, as Juju leaves it out), upgrade-charm lists anew, and a
// failed hook saves nothing.
func TestRelationRecord(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "relations.json")
	steps := []struct {
		name  string
		in    jujutest.State
		ev    juju.Event
		fail  error
		want  map[string][]juju.RelationID
		calls int
	}{
		{"miss: no record", related("slurmd:1", "mount:2"), jujutest.Hook(juju.ConfigChanged), nil,
			map[string][]juju.RelationID{"slurmd": {"slurmd:1"}, "mount": {"mount:2"}}, 2},
		{"hit", related("slurmd:1", "mount:2"), jujutest.Hook(juju.UpdateStatus), nil,
			map[string][]juju.RelationID{"slurmd": {"slurmd:1"}, "mount": {"mount:2"}}, 0},
		{"relation-created adds", related("slurmd:1", "mount:2", "slurmd:7"), jujutest.RelationHook(juju.RelationCreated, "slurmd:7", ""), nil,
			map[string][]juju.RelationID{"slurmd": {"slurmd:1", "slurmd:7"}, "mount": {"mount:2"}}, 0},
		{"kept after created", related("slurmd:1", "mount:2", "slurmd:7"), jujutest.Hook(juju.Start), nil,
			map[string][]juju.RelationID{"slurmd": {"slurmd:1", "slurmd:7"}, "mount": {"mount:2"}}, 0},
		{"failed relation-broken", related("slurmd:1", "mount:2", "slurmd:7"), jujutest.RelationHook(juju.RelationBroken, "slurmd:1", ""), errors.New("boom"),
			map[string][]juju.RelationID{"slurmd": {"slurmd:7"}, "mount": {"mount:2"}}, 0},
		{"not saved after a failure", related("slurmd:1", "mount:2", "slurmd:7"), jujutest.Hook(juju.UpdateStatus), nil,
			map[string][]juju.RelationID{"slurmd": {"slurmd:1", "slurmd:7"}, "mount": {"mount:2"}}, 0},
		{"relation-broken removes", related("slurmd:1", "mount:2", "slurmd:7"), jujutest.RelationHook(juju.RelationBroken, "slurmd:1", ""), nil,
			map[string][]juju.RelationID{"slurmd": {"slurmd:7"}, "mount": {"mount:2"}}, 0},
		{"kept after broken", related("mount:2", "slurmd:7"), jujutest.Hook(juju.UpdateStatus), nil,
			map[string][]juju.RelationID{"slurmd": {"slurmd:7"}, "mount": {"mount:2"}}, 0},
		{"upgrade-charm lists anew", related("slurmd:7"), jujutest.Hook(juju.UpgradeCharm), nil,
			map[string][]juju.RelationID{"slurmd": {"slurmd:7"}, "mount": {}}, 2},
		{"hit after upgrade-charm", related("slurmd:7"), jujutest.Hook(juju.ConfigChanged), nil,
			map[string][]juju.RelationID{"slurmd": {"slurmd:7"}, "mount": {}}, 0},
	}
	for _, s := range steps {
		got, calls, _ := recordHook(t, record, s.in, s.ev, s.fail)
		if d := cmp.Diff(s.want, got); d != "" {
			t.Errorf("%s: relations (-want +got):\n%s", s.name, d)
		}
		if calls != s.calls {
			t.Errorf("%s: %d relation-ids calls, want %d", s.name, calls, s.calls)
		}
	}
}

// TestRelationRecordUnusable: a record that is corrupt, of another version, with an id that
// is not of its endpoint, or too large is no record: relation-ids lists every endpoint (fail
// closed), and the hook writes a good record.
func TestRelationRecordUnusable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, content string }{
		{"corrupt", `{"version":1,"endpoints":{"slurmd":["slurmd:1"`},
		{"empty", ""},
		{"other version", `{"version":2,"endpoints":{"slurmd":[],"mount":[]}}`},
		{"wrong endpoint", `{"version":1,"endpoints":{"slurmd":["mount:2"],"mount":[]}}`},
		{"bad id", `{"version":1,"endpoints":{"slurmd":["slurmd:x"],"mount":[]}}`},
		{"too large", `{"version":1,"endpoints":{"slurmd":[],"mount":[]}}` + strings.Repeat(" ", 1<<20)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			record := filepath.Join(t.TempDir(), "relations.json")
			if err := os.WriteFile(record, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			in := related("slurmd:1", "mount:2")
			want := map[string][]juju.RelationID{"slurmd": {"slurmd:1"}, "mount": {"mount:2"}}
			for i, calls := range []int{2, 0} {
				got, n, _ := recordHook(t, record, in, jujutest.Hook(juju.UpdateStatus), nil)
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("hook %d: relations (-want +got):\n%s", i, d)
				}
				if n != calls {
					t.Errorf("hook %d: %d relation-ids calls, want %d", i, n, calls)
				}
			}
		})
	}
}

// TestRelationRecordUnsaved: a record that cannot be saved is removed, not left stale, and
// the hook succeeds; without RelationRecord nothing is kept.
func TestRelationRecordUnsaved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "relations.json")
	if err := os.Mkdir(record, 0o700); err != nil { // a directory: no file can replace it
		t.Fatal(err)
	}
	recordHook(t, record, related("slurmd:1"), jujutest.Hook(juju.UpdateStatus), nil)
	if _, err := os.Stat(record); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("record not removed: %v", err)
	}
	lc := charm.Lifecycle[struct{}]{StateFile: filepath.Join(dir, "state.json")}
	for range 2 {
		_, tools, err := jujutest.Tools(t, related("slurmd:1"), jujutest.Hook(juju.UpdateStatus), lc.Handler(func(ctx context.Context, h *charm.Hook[struct{}]) error {
			_, err := h.Relations.IDs(ctx, "slurmd")
			return err
		}))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(tools, "relation-ids") {
			t.Errorf("no relation-ids without a record: %q", tools)
		}
	}
}
