package juju_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// TestRemoteAppData: on a hook of the relation the event names the remote application; on
// any other hook relation-list does.
func TestRemoteAppData(t *testing.T) {
	t.Parallel()
	in := jujutest.State{Unit: "sackd/0", Relations: []jujutest.Relation{{
		ID: "slurmctld:4", RemoteApp: "ctl", RemoteAppData: map[string]string{"k": "v"},
		RemoteUnits: map[string]map[string]string{"ctl/0": {}},
	}}}
	for _, tt := range []struct {
		ev    juju.Event
		tools []string
	}{
		{jujutest.RelationHook(juju.RelationChanged, "slurmctld:4", "ctl/0"), []string{"relation-get"}},
		{jujutest.Hook(juju.UpdateStatus), []string{"relation-list", "relation-get"}},
	} {
		var tools []string
		_, err := jujutest.Run(t, in, tt.ev, func(ctx context.Context, hc *juju.HookContext) error {
			rec := juju.NewHookContext(hc.Event, runnerFunc(func(ctx context.Context, c juju.Command) (juju.Result, error) {
				tools = append(tools, c.Args[0])
				return hc.Runner.Run(ctx, c)
			}))
			app, data, err := rec.RemoteAppData(ctx, "slurmctld:4")
			if err != nil {
				return err
			}
			if app != "ctl" || data["k"] != "v" {
				t.Errorf("%s: app %q data %v", tt.ev.Name, app, data)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tt.tools, tools); d != "" {
			t.Errorf("%s: hook tools (-want +got):\n%s", tt.ev.Name, d)
		}
	}
}

type runnerFunc func(ctx context.Context, c juju.Command) (juju.Result, error)

func (f runnerFunc) Run(ctx context.Context, c juju.Command) (juju.Result, error) { return f(ctx, c) }
