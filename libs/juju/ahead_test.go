package juju_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/google/go-cmp/cmp"
)

// TestRelationsAhead: reads started with Ahead run once each, whatever the order in which the
// hook asks for them (before, while or after they run); the hook's own calls get the same
// answers as without Ahead; a failed read ahead is run again by the hook, which gets the
// tool's error; a relation-set forgets a bag read ahead; wait returns once every tool ended;
// without the memo Ahead runs nothing.
func TestRelationsAhead(t *testing.T) {
	t.Parallel()
	answers := map[string]juju.Result{
		"relation-list -r slurmd:1 --app --format=json":            {Stdout: []byte(`"compute"`)},
		"relation-get --app --format=json -r slurmd:1 - compute":   {Stdout: []byte(`{"partition":"p"}`)},
		"relation-get --format=json -r slurmd:1 - compute/0":       {Stdout: []byte(`{"version":"24.11.5"}`)},
		"relation-get --format=json -r slurmd:1 - compute/1":       {ExitCode: 1, Stderr: []byte("ERROR no unit\n")},
		"relation-set --app -r slurmd:1 --file -":                  {},
		"relation-get --app --format=json -r slurmd:1 - slurmctld": {Stdout: []byte(`{}`)},
	}
	type want struct {
		app  string
		bag  map[string]string
		unit map[string]string
	}
	reads := []func(context.Context, juju.Relations) error{
		func(ctx context.Context, r juju.Relations) error { _, err := r.RemoteApp(ctx, "slurmd:1"); return err },
		func(ctx context.Context, r juju.Relations) error {
			_, err := r.AppData(ctx, "slurmd:1", "compute")
			return err
		},
		func(ctx context.Context, r juju.Relations) error {
			_, err := r.UnitData(ctx, "slurmd:1", "compute/0")
			return err
		},
	}
	hook := func(ctx context.Context, r juju.Relations) (want, error) {
		var w want
		var err error
		if w.unit, err = r.UnitData(ctx, "slurmd:1", "compute/0"); err != nil {
			return w, err
		}
		if w.app, err = r.RemoteApp(ctx, "slurmd:1"); err != nil {
			return w, err
		}
		w.bag, err = r.AppData(ctx, "slurmd:1", w.app)
		return w, err
	}
	for _, tc := range []struct {
		name  string
		hold  bool // the tools answer only once the hook asked
		reads []func(context.Context, juju.Relations) error
	}{
		{name: "sequential"},
		{name: "ahead, answered before the hook asks", reads: reads},
		{name: "ahead, answered while the hook waits", reads: reads, hold: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			runs := map[string]int{}
			release := make(chan struct{})
			r := runnerFunc(func(_ context.Context, c juju.Command) (juju.Result, error) {
				line := strings.Join(c.Args, " ")
				mu.Lock()
				runs[line]++
				mu.Unlock()
				if tc.hold {
					<-release
				}
				return answers[line], nil
			})
			hc := juju.NewHookContext(juju.Event{Kind: juju.RelationChanged}, r)
			wait := hc.Relations.Ahead(context.Background(), tc.reads...)
			if tc.hold {
				close(release)
			} else {
				wait()
			}
			got, err := hook(context.Background(), hc.Relations)
			wait()
			if err != nil {
				t.Fatal(err)
			}
			w := want{app: "compute", bag: map[string]string{"partition": "p"}, unit: map[string]string{"version": "24.11.5"}}
			if d := cmp.Diff(w, got, cmp.AllowUnexported(want{})); d != "" {
				t.Errorf("answers (-want +got):\n%s", d)
			}
			wantRuns := map[string]int{
				"relation-list -r slurmd:1 --app --format=json":          1,
				"relation-get --app --format=json -r slurmd:1 - compute": 1,
				"relation-get --format=json -r slurmd:1 - compute/0":     1,
			}
			if d := cmp.Diff(wantRuns, runs); d != "" {
				t.Errorf("tools run (-want +got):\n%s", d)
			}
		})
	}
	t.Run("failed read ahead runs again", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		runs := 0
		r := runnerFunc(func(_ context.Context, c juju.Command) (juju.Result, error) {
			mu.Lock()
			defer mu.Unlock()
			runs++
			return answers[strings.Join(c.Args, " ")], nil
		})
		hc := juju.NewHookContext(juju.Event{Kind: juju.RelationChanged}, r)
		read := func(ctx context.Context, r juju.Relations) error {
			_, err := r.UnitData(ctx, "slurmd:1", "compute/1")
			return err
		}
		hc.Relations.Ahead(context.Background(), read)()
		_, err := hc.Relations.UnitData(context.Background(), "slurmd:1", "compute/1")
		_, seqErr := juju.NewHookContext(juju.Event{}, r).Relations.UnitData(context.Background(), "slurmd:1", "compute/1")
		if err == nil || err.Error() != seqErr.Error() {
			t.Errorf("error %v, want %v", err, seqErr)
		}
		if runs != 3 {
			t.Errorf("relation-get ran %d times, want 3 (ahead, again in the hook, sequential)", runs)
		}
	})
	t.Run("error waited for", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		boom := errors.New("cannot start")
		r := runnerFunc(func(context.Context, juju.Command) (juju.Result, error) {
			<-release
			return juju.Result{}, boom
		})
		hc := juju.NewHookContext(juju.Event{Kind: juju.RelationChanged}, r)
		wait := hc.Relations.Ahead(context.Background(), reads[0])
		done := make(chan error)
		go func() {
			_, err := hc.Relations.RemoteApp(context.Background(), "slurmd:1")
			done <- err
		}()
		close(release)
		if err := <-done; !errors.Is(err, boom) {
			t.Errorf("error %v, want %v", err, boom)
		}
		wait()
	})
	t.Run("relation-set forgets a bag read ahead", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		runs := map[string]int{}
		r := runnerFunc(func(_ context.Context, c juju.Command) (juju.Result, error) {
			line := strings.Join(c.Args, " ")
			mu.Lock()
			defer mu.Unlock()
			runs[line]++
			return answers[line], nil
		})
		hc := juju.NewHookContext(juju.Event{Kind: juju.RelationChanged}, r)
		ctx := context.Background()
		hc.Relations.Ahead(ctx, func(ctx context.Context, r juju.Relations) error {
			_, err := r.AppData(ctx, "slurmd:1", "slurmctld")
			return err
		})()
		if err := hc.Relations.SetAppData(ctx, "slurmd:1", map[string]string{"k": "v"}); err != nil {
			t.Fatal(err)
		}
		if _, err := hc.Relations.AppData(ctx, "slurmd:1", "slurmctld"); err != nil {
			t.Fatal(err)
		}
		if n := runs["relation-get --app --format=json -r slurmd:1 - slurmctld"]; n != 2 {
			t.Errorf("own bag read %d times, want 2 (ahead, after the relation-set)", n)
		}
	})
	t.Run("without memo", func(t *testing.T) {
		t.Parallel()
		r := runnerFunc(func(context.Context, juju.Command) (juju.Result, error) {
			t.Error("a tool ran")
			return juju.Result{}, nil
		})
		juju.Relations{Runner: r}.Ahead(context.Background(), reads...)()
	})
}
