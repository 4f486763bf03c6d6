package charm_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// TestHandlersAskLeader: with AskLeader, a hook it names runs is-leader once, whose answer
// Begin reads, and a hook it does not name runs no is-leader; a Begin that fails before
// reading the answer still leaves no tool running after the hook.
func TestHandlersAskLeader(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		kind      juju.Kind
		leader    bool
		failBegin bool
		wantAsk   int
		wantErr   bool
	}{
		{kind: juju.UpdateStatus, leader: true, wantAsk: 1},
		{kind: juju.UpdateStatus, leader: false, wantAsk: 1},
		{kind: juju.Install, wantAsk: 0},
		{kind: juju.ConfigChanged, failBegin: true, wantAsk: 1, wantErr: true},
	} {
		path := filepath.Join(t.TempDir(), "state.json")
		var saw []bool
		hs := charm.Handlers[cfgState, bool]{
			Lifecycle: charm.Lifecycle[cfgState]{StateFile: path},
			Begin: func(ctx context.Context, k *charm.Hook[cfgState]) (bool, error) {
				if tt.failBegin {
					return false, errors.New("cannot begin")
				}
				if k.Event.Kind == juju.Install {
					return false, nil
				}
				return k.Leadership.IsLeader(ctx)
			},
			AskLeader: func(ev juju.Event) bool { return ev.Kind != juju.Install },
		}
		h := hs.Handle(func(leader bool, ctx context.Context) error {
			saw = append(saw, leader)
			return nil
		})
		_, tools, err := jujutest.Tools(t, jujutest.State{Unit: "c/0", Leader: tt.leader}, jujutest.Hook(tt.kind), h)
		if (err != nil) != tt.wantErr {
			t.Fatalf("%s: %v", tt.kind, err)
		}
		if n := len(slices.DeleteFunc(tools, func(s string) bool { return s != "is-leader" })); n != tt.wantAsk {
			t.Errorf("%s: is-leader ran %d times, want %d", tt.kind, n, tt.wantAsk)
		}
		if !tt.wantErr && tt.kind != juju.Install && !slices.Equal(saw, []bool{tt.leader}) {
			t.Errorf("%s: the handler saw leader %v, want %v", tt.kind, saw, tt.leader)
		}
	}
}
