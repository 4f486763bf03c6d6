package model

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHookRuns(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	lines := []TimedLine{
		{at(0), "slurmctld/0: running slurmd-relation-departed hook"},
		{at(1), "slurmd/1: running slurmctld-relation-departed hook"},
		{at(2), "slurmctld/0: unit slurmd/1 left: its node slurmd-1 is removed once it has no job"},
		{at(12), `slurmctld/0: ran "slurmd-relation-departed" hook (via hook dispatching script: dispatch)`},
		{at(13), "slurmctld/0: running action show-current-config"},
		{at(20), "slurmctld/0: running commands"},
		{at(70), "slurmctld/0: ran commands (exit 0)"},
		{at(80), "slurmctld/0: running update-status hook"},
		{at(90), `slurmctld/0: hook failed: "update-status": exit status 1`},
		{at(95), "slurmd/2: running stop hook"},
		{at(99), `slurmd/2: hook "stop" cut off by the machine's shutdown; it runs again after the boot: signal: killed`},
		{at(100), "slurmctld/0: running commands"},
		{at(101), "slurmctld/0: cannot run commands: cannot run commands: signal: killed"},
		{at(3000), `slurmd/1: ran "slurmctld-relation-departed" hook (via hook dispatching script: dispatch)`},
		{at(3001), "slurmd/1: running stop hook"},
	}
	want := []HookRun{
		{Unit: "slurmctld/0", Hook: "slurmd-relation-departed", Start: at(0), End: at(12)},
		{Unit: "slurmd/1", Hook: "slurmctld-relation-departed", Start: at(1), End: at(3000)},
		{Unit: "slurmctld/0", Hook: "juju-exec", Start: at(20), End: at(70)},
		{Unit: "slurmctld/0", Hook: "update-status", Start: at(80), End: at(90), Failed: true},
		{Unit: "slurmd/2", Hook: "stop", Start: at(95), End: at(99), Failed: true},
		{Unit: "slurmctld/0", Hook: "juju-exec", Start: at(100), End: at(101), Failed: true},
		{Unit: "slurmd/1", Hook: "stop", Start: at(3001)},
	}
	got := HookRuns(lines)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("runs (-want +got):\n%s", d)
	}
	if d := got[0].Duration(); d != 12*time.Millisecond {
		t.Errorf("duration %v, want 12ms", d)
	}
	if d := got[6].Duration(); d != 0 {
		t.Errorf("duration of a running hook %v, want 0", d)
	}
}

// FuzzHookRuns: any lines give runs that start in order, never end before they start, and
// name a unit and a hook.
func FuzzHookRuns(f *testing.F) {
	f.Add("a/0: running start hook\na/0: ran \"start\" hook (via x)\na/0: running commands\na/0: hook failed: \"x\"")
	f.Add("a/0: running  hook\n: running x hook\na b: running x hook")
	f.Fuzz(func(t *testing.T, text string) {
		var lines []TimedLine
		for i, l := range strings.Split(text, "\n") {
			lines = append(lines, TimedLine{At: time.Unix(0, int64(i)), Text: l})
		}
		runs := HookRuns(lines)
		for i, r := range runs {
			if r.Unit == "" || r.Hook == "" || (!r.End.IsZero() && r.End.Before(r.Start)) || (i > 0 && r.Start.Before(runs[i-1].Start)) {
				t.Fatalf("run %d %+v of %q", i, r, text)
			}
		}
	})
}
