package charm_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// opts is a charm's configuration.
type opts struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// cfgState is a charm's state that keeps its configuration.
type cfgState struct {
	charm.StatusCache
	Config *opts `json:"config,omitempty"`
	Wrote  bool  `json:"wrote,omitempty"`
}

// view is a charm's hook value.
type view struct {
	k     *charm.Hook[cfgState]
	cfg   opts
	trace *[]string
	wrote bool // what the hook wrote to Juju, recorded by End
}

func (v *view) start(ctx context.Context) error {
	*v.trace = append(*v.trace, "start "+v.cfg.Name)
	v.wrote = true
	return v.k.SetUnitStatus(ctx, juju.StatusActive, v.cfg.Name)
}

// end records what the hook wrote.
func (v *view) end(context.Context) error {
	*v.trace = append(*v.trace, "end")
	v.k.State.Wrote = v.wrote
	return nil
}

func (v *view) fail(context.Context) error {
	*v.trace = append(*v.trace, "fail")
	v.wrote = true
	return errHook
}

func handlers(path string, trace *[]string) charm.Handlers[cfgState, *view] {
	return charm.Handlers[cfgState, *view]{
		Lifecycle: charm.Lifecycle[cfgState]{StateFile: path},
		Begin: func(ctx context.Context, k *charm.Hook[cfgState]) (*view, error) {
			cfg, err := charm.ReadConfig(ctx, k.HookContext, &k.State.Config, opts{Count: 3})
			*trace = append(*trace, "begin")
			return &view{k: k, cfg: cfg, trace: trace}, err
		},
		End: (*view).end,
	}
}

// TestHandlers: Begin builds the hook value, the handler (a method expression) runs with it,
// After runs whatever its outcome, and End runs only after a success, before the state is
// saved.
func TestHandlers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		fn        charm.Func[*view]
		after     bool // Handlers.After set
		wantTrace []string
		wantWrote bool
		wantErr   error
	}{
		{name: "success", fn: (*view).start, wantTrace: []string{"begin", "start a", "end"}, wantWrote: true},
		{name: "failure", fn: (*view).fail, wantTrace: []string{"begin", "fail"}, wantErr: errHook},
		{name: "success, after", fn: (*view).start, after: true, wantTrace: []string{"begin", "start a", "after", "end"}, wantWrote: true},
		{name: "failure, after", fn: (*view).fail, after: true, wantTrace: []string{"begin", "fail", "after"}, wantErr: errHook},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "state.json")
			var trace []string
			in := jujutest.State{Unit: "c/0", Config: map[string]any{"name": "a"}}
			hs := handlers(path, &trace)
			if tt.after {
				hs.After = func(v *view, _ context.Context) { *v.trace = append(*v.trace, "after") }
			}
			_, err := jujutest.Run(t, in, jujutest.Hook(juju.Start), hs.Handle(tt.fn))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if d := cmp.Diff(tt.wantTrace, trace); d != "" {
				t.Errorf("trace (-want +got):\n%s", d)
			}
			if got := strings.Contains(readState(t, path), `"wrote": true`); got != tt.wantWrote {
				t.Errorf("saved state %q, want wrote=%v", readState(t, path), tt.wantWrote)
			}
		})
	}
}

// TestReadConfig: config-get runs on config-changed, upgrade-charm and when no copy is kept;
// other hooks use the kept copy; options config-get leaves out keep their defaults.
func TestReadConfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.json")
	var trace []string
	h := handlers(path, &trace).Handle((*view).start)
	st := jujutest.State{Unit: "c/0", Config: map[string]any{"name": "a"}}
	for _, tt := range []struct {
		kind      juju.Kind
		name      string // the option's value in the model before the hook
		wantRead  bool
		wantState string // the name the hook saw
	}{
		{kind: juju.Install, name: "a", wantRead: true, wantState: "a"}, // none kept
		{kind: juju.UpdateStatus, name: "b", wantState: "a"},
		{kind: juju.ConfigChanged, name: "b", wantRead: true, wantState: "b"},
		{kind: juju.Start, name: "c", wantState: "b"},
		{kind: juju.UpgradeCharm, name: "c", wantRead: true, wantState: "c"},
	} {
		st.Config["name"] = tt.name
		trace = nil
		out, tools, err := jujutest.Tools(t, st, jujutest.Hook(tt.kind), h)
		if err != nil {
			t.Fatalf("%s: %v", tt.kind, err)
		}
		if got := slices.Contains(tools, "config-get"); got != tt.wantRead {
			t.Errorf("%s ran config-get %v, want %v (%q)", tt.kind, got, tt.wantRead, tools)
		}
		if d := cmp.Diff([]string{"begin", "start " + tt.wantState, "end"}, trace); d != "" {
			t.Errorf("%s: trace (-want +got):\n%s", tt.kind, d)
		}
		st = out
	}
	if got := readState(t, path); !strings.Contains(got, `"count": 3`) {
		t.Errorf("kept configuration lacks the default count: %s", got)
	}
}

func TestConfKeys(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ version, release string }{
		{"", "22.05"}, {"garbage", "22.05"}, {"22.05.8", "22.05"}, {"23.02.1", "24.11"}, {"24.11.5", "24.11"},
	} {
		if got := charm.ConfKeys(tt.version).Release(); got != tt.release {
			t.Errorf("ConfKeys(%q) is %s's key set, want %s's", tt.version, got, tt.release)
		}
	}
}

// TestSetVersion: the version is shown once per version, and again after the cache is lost
// with a failed hook's state.
func TestSetVersion(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.json")
	version := "22.05.8"
	fail := false
	h := charm.Lifecycle[state]{StateFile: path}.Handler(func(ctx context.Context, h *charm.Hook[state]) error {
		if err := h.SetVersion(ctx, version); err != nil {
			return err
		}
		if fail {
			return errHook
		}
		return nil
	})
	st := jujutest.State{Unit: "c/0"}
	for _, tt := range []struct {
		version string
		fail    bool
		wantSet bool
	}{
		{version: "", wantSet: false},
		{version: "22.05.8", wantSet: true},
		{version: "22.05.8", wantSet: false},
		{version: "24.11.5", fail: true, wantSet: true},
		{version: "24.11.5", wantSet: true}, // the failed hook's record was dropped
		{version: "24.11.5", wantSet: false},
	} {
		version, fail = tt.version, tt.fail
		out, tools, err := jujutest.Tools(t, st, jujutest.Hook(juju.UpdateStatus), h)
		if (err != nil) != tt.fail {
			t.Fatalf("%s: %v", tt.version, err)
		}
		if got := slices.Contains(tools, "application-version-set"); got != tt.wantSet {
			t.Errorf("version %q: application-version-set ran %v, want %v", tt.version, got, tt.wantSet)
		}
		if tt.wantSet && out.Version != tt.version {
			t.Errorf("version shown %q, want %q", out.Version, tt.version)
		}
		st = out
	}
}
