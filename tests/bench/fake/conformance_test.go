package fake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/juju/jujutest/conformance"
	"github.com/charmed-slurm/operators/tests/bench/fake"
)

// TestConformance: the bench fake keeps the rules of the Juju conformance table that a
// stateless fake can keep; it commits no hook's writes, by design.
func TestConformance(t *testing.T) {
	conformance.Run(t, fakeSim, conformance.Divergence{
		Case: "successful hook's relation writes are kept",
		Why:  "the bench fake commits no writes: every measured run of a hook sees the same model",
	})
}

// fakeSim is the bench fake's conformance.Simulator: the world becomes the unit's Fixture
// (secrets neither owned by its application nor granted on one of its relations Hidden), each
// hook a fresh $BENCH_FAKE_WRITES, each call fake.Main as the faketool binary runs it.
func fakeSim(t *testing.T, world jujutest.State) conformance.Unit {
	app, _, _ := strings.Cut(world.Unit, "/")
	fx := fake.Fixture{Leader: world.Leader, Config: world.Config, Secrets: map[string]map[string]string{}}
	nums := map[string]bool{}
	for _, r := range world.Relations {
		data := map[string]map[string]string{app: r.LocalAppData, world.Unit: r.LocalUnitData, r.RemoteApp: r.RemoteAppData}
		maps.Copy(data, r.RemoteUnits)
		fx.Relations = append(fx.Relations, fake.Relation{ID: string(r.ID), Endpoint: r.ID.Endpoint(), RemoteApp: r.RemoteApp,
			Units: slices.Sorted(maps.Keys(r.RemoteUnits)), Data: data})
		_, n, _ := r.ID.Parse()
		nums[strconv.Itoa(n)] = true
	}
	for _, s := range world.Secrets {
		if len(s.Revisions) > 0 {
			fx.Secrets[string(s.ID)] = s.Revisions[len(s.Revisions)-1]
		}
		granted := s.Owner == app || s.Owner == world.Unit
		for _, g := range s.Grants {
			_, n, _ := g.Relation.Parse()
			granted = granted || (nums[strconv.Itoa(n)] && (g.Unit == "" || g.Unit == world.Unit))
		}
		if !granted {
			fx.Hidden = append(fx.Hidden, string(s.ID))
		}
	}
	dir := t.TempDir()
	data, err := json.Marshal(fx)
	if err != nil {
		t.Fatal(err)
	}
	fixture := filepath.Join(dir, "fixture.json")
	if err := os.WriteFile(fixture, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(fake.FixtureEnv, fixture)
	t.Setenv("JUJU_UNIT_NAME", world.Unit)
	t.Setenv(fake.WritesEnv, "") // restored after the test; each hook sets its own
	return &fakeUnit{dir: dir}
}

type fakeUnit struct {
	dir   string
	hooks int
}

// Hook implements conformance.Unit: the hook's writes go to a file of its own.
func (u *fakeUnit) Hook(ctx context.Context, ev juju.Event, body func(context.Context, juju.Runner) error) error {
	u.hooks++
	os.Setenv(fake.WritesEnv, filepath.Join(u.dir, "writes-"+strconv.Itoa(u.hooks)))
	return body(ctx, mainRunner{})
}

// mainRunner runs a hook tool as fake.Main.
type mainRunner struct{}

func (mainRunner) Run(_ context.Context, c juju.Command) (juju.Result, error) {
	var stdout, stderr bytes.Buffer
	code := fake.Main(c.Args, bytes.NewReader(c.Stdin), &stdout, &stderr)
	return juju.Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: code}, nil
}

// FuzzRelationSet: the fake's relation-set reads any --file content without failing, and a
// key set through JSON reads back in the same hook.
func FuzzRelationSet(f *testing.F) {
	f.Add([]byte(`{"a":"b"}`), "controllers", `["10.0.0.1:6817"]`)
	f.Add([]byte("a: b\nc: 'd'\n"), "addr", "")
	f.Add([]byte("\x00:"), "k=v", "x\ny")
	dir := f.TempDir()
	fixture := filepath.Join(dir, "fixture.json")
	data, _ := json.Marshal(fake.Fixture{Leader: true, Relations: []fake.Relation{{ID: "slurmctld:1", Endpoint: "slurmctld", RemoteApp: "slurmd"}}})
	if err := os.WriteFile(fixture, data, 0o644); err != nil {
		f.Fatal(err)
	}
	f.Setenv(fake.FixtureEnv, fixture)
	f.Setenv("JUJU_UNIT_NAME", "slurmctld/0")
	n := 0
	f.Fuzz(func(t *testing.T, raw []byte, key, value string) {
		if !utf8.ValidString(key) || !utf8.ValidString(value) {
			t.Skip("settings are UTF-8 text")
		}
		n++
		os.Setenv(fake.WritesEnv, filepath.Join(dir, "writes-"+strconv.Itoa(n)))
		r := mainRunner{}
		set := []string{"relation-set", "-r", "slurmctld:1", "--file", "-"}
		if res, _ := r.Run(context.Background(), juju.Command{Args: set, Stdin: raw}); res.ExitCode != 0 {
			t.Fatalf("relation-set of %q: exit %d: %s", raw, res.ExitCode, res.Stderr)
		}
		js, _ := json.Marshal(map[string]string{key: value})
		if res, _ := r.Run(context.Background(), juju.Command{Args: set, Stdin: js}); res.ExitCode != 0 {
			t.Fatalf("relation-set of %s: exit %d: %s", js, res.ExitCode, res.Stderr)
		}
		res, _ := r.Run(context.Background(), juju.Command{Args: []string{"relation-get", "--format=json", "-r", "slurmctld:1", "-", "slurmctld/0"}})
		var got map[string]string
		if err := json.Unmarshal(res.Stdout, &got); err != nil {
			t.Fatalf("relation-get: %v: %q", err, res.Stdout)
		}
		if v, ok := got[key]; (value == "") == ok || v != value {
			t.Errorf("after setting %q=%q: %q", key, value, got)
		}
	})
}
