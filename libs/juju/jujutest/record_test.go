package jujutest_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

func TestToolsRecorded(t *testing.T) {
	in := jujutest.State{Unit: "app/0", Leader: true, Config: map[string]any{"x": "1"}}
	out, tools, err := jujutest.Tools(t, in, jujutest.Hook(juju.ConfigChanged), func(ctx context.Context, hc *juju.HookContext) error {
		if _, err := hc.Leadership.IsLeader(ctx); err != nil {
			return err
		}
		return hc.Status.SetUnit(ctx, juju.StatusActive, "ok")
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"is-leader", "status-set"}, tools); d != "" {
		t.Errorf("tools (-want +got):\n%s", d)
	}
	if out.UnitStatus.Message != "ok" {
		t.Errorf("the tools did not reach the model: %+v", out.UnitStatus)
	}
}
