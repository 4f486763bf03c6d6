package charm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

type state struct {
	charm.StatusCache
	Started bool   `json:"started,omitempty"`
	Host    string `json:"host,omitempty"` // a host change a failure does not undo
}

// readState is the state file's content, or "" when it does not exist.
func readState(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var errHook = errors.New("hook failed")

func TestLifecycleCommitsOnSuccessOnly(t *testing.T) {
	t.Parallel()
	const started = "{\n  \"unit-status\": \"active: started\",\n  \"started\": true,\n  \"host\": \"munged\"\n}\n"
	for _, tt := range []struct {
		name   string
		fail   bool
		failed func(saved, cur state) state
		want   string
	}{
		{name: "success saves", want: started},
		{name: "failure saves nothing", fail: true, want: ""},
		{name: "failure keeps what Failed picks", fail: true,
			failed: func(saved, cur state) state { saved.Host = cur.Host; return saved },
			want:   "{\n  \"host\": \"munged\"\n}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "state.json")
			lc := charm.Lifecycle[state]{StateFile: path, Failed: tt.failed}
			h := lc.Handler(func(ctx context.Context, h *charm.Hook[state]) error {
				h.State.Started, h.State.Host = true, "munged"
				if err := h.SetUnitStatus(ctx, juju.StatusActive, "started"); err != nil {
					return err
				}
				if tt.fail {
					return errHook
				}
				return nil
			})
			_, err := jujutest.Run(t, jujutest.State{Unit: "c/0"}, jujutest.Hook(juju.Start), h)
			if tt.fail != errors.Is(err, errHook) {
				t.Fatalf("hook error %v", err)
			}
			if d := cmp.Diff(tt.want, readState(t, path)); d != "" {
				t.Errorf("saved state (-want +got):\n%s", d)
			}
		})
	}
}

// TestStatusCache: a status this unit set last is not set again; after the cache is lost
// (a failed hook) it is.
func TestStatusCache(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.json")
	lc := charm.Lifecycle[state]{StateFile: path}
	set := lc.Handler(func(ctx context.Context, h *charm.Hook[state]) error {
		return h.SetUnitStatus(ctx, juju.StatusActive, "ready")
	})
	in := jujutest.State{Unit: "c/0"}
	out, err := jujutest.Run(t, in, jujutest.Hook(juju.UpdateStatus), set)
	if err != nil {
		t.Fatal(err)
	}
	if out.UnitStatus.Code != juju.StatusActive {
		t.Fatalf("status %+v", out.UnitStatus)
	}
	// Someone else changed the status; the cache says this unit set "ready" last, so the
	// charm does not set it again.
	out.UnitStatus = juju.WorkloadStatus{Code: juju.StatusMaintenance, Message: "other"}
	out2, err := jujutest.Run(t, out, jujutest.Hook(juju.UpdateStatus), set)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff("other", out2.UnitStatus.Message); d != "" {
		t.Errorf("cached status set again: %s", d)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	out3, err := jujutest.Run(t, out2, jujutest.Hook(juju.UpdateStatus), set)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff("ready", out3.UnitStatus.Message); d != "" {
		t.Errorf("status without a cache: %s", d)
	}
}

func TestCheckpointSurvivesFailure(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.json")
	lc := charm.Lifecycle[state]{StateFile: path}
	h := lc.Handler(func(ctx context.Context, h *charm.Hook[state]) error {
		h.State.Host = "partition removed"
		if err := h.Checkpoint(ctx); err != nil {
			return err
		}
		h.State.Started = true
		return errHook
	})
	if _, err := jujutest.Run(t, jujutest.State{Unit: "c/0"}, jujutest.Hook(juju.UpdateStatus), h); !errors.Is(err, errHook) {
		t.Fatal(err)
	}
	if d := cmp.Diff("{\n  \"host\": \"partition removed\"\n}\n", readState(t, path)); d != "" {
		t.Errorf("state (-want +got):\n%s", d)
	}
}

func TestLifecycleStateLocation(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		lc      charm.Lifecycle[state]
		content string
		wantErr bool
	}{
		{name: "corrupt state is an error", content: "{", wantErr: true},
		{name: "state in the charm directory needs a name", lc: charm.Lifecycle[state]{}, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lc := tt.lc
			if tt.content != "" {
				lc.StateFile = filepath.Join(t.TempDir(), "state.json")
				if err := os.WriteFile(lc.StateFile, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			ran := false
			h := lc.Handler(func(context.Context, *charm.Hook[state]) error { ran = true; return nil })
			_, err := jujutest.Scenario{T: t, Lenient: true}.Run(jujutest.State{Unit: "c/0"}, jujutest.Hook(juju.Start), h)
			if (err != nil) != tt.wantErr || ran == tt.wantErr {
				t.Errorf("error %v, handler ran %v", err, ran)
			}
		})
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		root, path, want string
	}{
		{"", "/etc/slurm/slurm.conf", "/etc/slurm/slurm.conf"},
		{"/", "/etc/slurm/slurm.conf", "/etc/slurm/slurm.conf"},
		{"/tmp/x", "/etc/slurm/slurm.conf", "/tmp/x/etc/slurm/slurm.conf"},
		{"/tmp/x/", "/run/munge", "/tmp/x/run/munge"},
	} {
		if got := (charm.Settings{Root: tt.root}).Path(tt.path); got != tt.want {
			t.Errorf("Root %q Path(%q) = %q, want %q", tt.root, tt.path, got, tt.want)
		}
	}
	if got := (charm.Settings{}).Poll(7); got != 7 {
		t.Errorf("default poll %v", got)
	}
	if got := (charm.Settings{PollInterval: 3}).Poll(7); got != 3 {
		t.Errorf("set poll %v", got)
	}
	if got := charm.Or("", "munged"); got != "munged" {
		t.Errorf("Or = %q", got)
	}
}
