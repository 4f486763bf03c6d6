package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/model"
)

// TestCtlHookFigures: the longest, the median, the count of runs and of juju-exec wakes; a run
// that has not ended is counted and named in the note but not measured; the longest is held
// to the 1 s target.
func TestCtlHookFigures(t *testing.T) {
	t0 := time.Unix(1000, 0)
	run := func(hook string, start, ms int) model.HookRun {
		r := model.HookRun{Unit: "slurmctld/0", Hook: hook, Start: t0.Add(time.Duration(start) * time.Millisecond)}
		if ms >= 0 {
			r.End = r.Start.Add(time.Duration(ms) * time.Millisecond)
		}
		return r
	}
	rep := &Report{}
	longest := ctlHookFigures(rep, "busy.4", "during the test", []model.HookRun{
		run("slurmd-relation-departed", 0, 120), run("slurmd-relation-departed", 200, 80),
		run(model.JujuExec, 400, 300), run("update-status", 800, 60), run("slurmd-relation-departed", 900, -1),
	})
	if longest.Hook != model.JujuExec || longest.Duration() != 300*time.Millisecond {
		t.Errorf("longest %+v", longest)
	}
	got := map[string]float64{}
	for _, f := range rep.Figures {
		got[f.Name] = f.Value
	}
	want := map[string]float64{"busy.4.ctl_hook_max_ms": 300, "busy.4.ctl_hook_median_ms": 100, "busy.4.ctl_hooks": 5, "busy.4.ctl_wakes": 1}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("figures (-want +got):\n%s", d)
	}
	max, _ := rep.Figure("busy.4.ctl_hook_max_ms")
	if max.Target == nil || *max.Target != 1000 || !strings.Contains(max.Note, "1 NOT ENDED") || !strings.Contains(max.Note, "1 juju-exec, 2 slurmd-relation-departed, 1 update-status") {
		t.Errorf("max figure %+v", max)
	}
}
