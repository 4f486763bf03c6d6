package charm_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// Hook.Relation: the event's own relation on a relation hook of the endpoint (none on its
// relation-broken) without a tool call, else one relation-ids call per hook and endpoint.
func TestHookRelation(t *testing.T) {
	t.Parallel()
	related := jujutest.State{Unit: "slurmd/0", Relations: []jujutest.Relation{{ID: "slurmctld:4", RemoteApp: "slurmctld"}}}
	withAgent := related
	withAgent.Relations = append(withAgent.Relations[:1:1], jujutest.Relation{ID: "cos-agent:7", RemoteApp: "agent"})
	for _, tt := range []struct {
		name  string
		in    jujutest.State
		ev    juju.Event
		want  juju.RelationID
		tools []string
	}{
		{name: "other hook", in: related, ev: jujutest.Hook(juju.UpdateStatus), want: "slurmctld:4", tools: []string{"relation-ids"}},
		{name: "no relation", in: jujutest.State{Unit: "slurmd/0"}, ev: jujutest.Hook(juju.UpdateStatus), want: "", tools: []string{"relation-ids"}},
		{name: "relation hook", in: related, ev: jujutest.RelationHook(juju.RelationChanged, "slurmctld:4", "slurmctld/0"), want: "slurmctld:4"},
		{name: "relation-broken", in: related, ev: jujutest.RelationHook(juju.RelationBroken, "slurmctld:4", ""), want: ""},
		{name: "another endpoint's hook", in: withAgent, ev: jujutest.RelationHook(juju.RelationBroken, "cos-agent:7", ""), want: "slurmctld:4", tools: []string{"relation-ids"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lc := charm.Lifecycle[struct{}]{StateFile: filepath.Join(t.TempDir(), "state.json")}
			var got []juju.RelationID
			_, tools, err := jujutest.Tools(t, tt.in, tt.ev, lc.Handler(func(ctx context.Context, h *charm.Hook[struct{}]) error {
				for range 2 { // asked twice, listed once
					id, err := h.Relation(ctx, "slurmctld")
					if err != nil {
						return err
					}
					got = append(got, id)
				}
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]juju.RelationID{tt.want, tt.want}, got); d != "" {
				t.Errorf("Relation (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.tools, tools); d != "" {
				t.Errorf("hook tools (-want +got):\n%s", d)
			}
		})
	}
}
