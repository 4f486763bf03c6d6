package bench

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// stepClock is a clock that moves on by the next step each time it is read.
func stepClock(steps ...time.Duration) func() time.Time {
	t := time.Unix(1000, 0)
	return func() time.Time {
		if len(steps) > 0 {
			t = t.Add(steps[0])
			steps = steps[1:]
		}
		return t
	}
}

// TestPartTimes: a part's wall time is a <part>.part_s figure, a part timed twice sums; a
// set-up gets its own wall time less the parts inside it, so the parts add up to the run;
// a failing part is timed and its error returned.
func TestPartTimes(t *testing.T) {
	var progress []string
	opts := &RunOptions{
		// Reads: hooks 0→2; set-up 2→(join 3→8, scale 8→20, join 20→21)→30; raw 30→34.
		now: stepClock(0, 2*time.Second, 0, time.Second, 5*time.Second, 0, 12*time.Second, 0, time.Second, 9*time.Second, 0, 4*time.Second),
		Progress: func(format string, args ...any) {
			progress = append(progress, fmt.Sprintf(format, args...))
		},
	}
	rep := &Report{}
	boom := errors.New("boom")
	if err := opts.timed(rep, "hooks", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	err := opts.setup(rep, "operators-setup", func() error {
		return errors.Join(
			opts.timed(rep, "join", func() error { return nil }),
			opts.timed(rep, "scale", func() error { return boom }),
			opts.timed(rep, "join", func() error { return nil }))
	})
	if !errors.Is(err, boom) {
		t.Errorf("setup returned %v, want the part's error", err)
	}
	if err := opts.timed(rep, "raw", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	var order []string
	for _, f := range rep.PartTimes() {
		got[f.Name] = f.Value
		order = append(order, f.Name)
		if f.Unit != "s" {
			t.Errorf("%s: unit %q", f.Name, f.Unit)
		}
	}
	want := map[string]float64{"hooks.part_s": 2, "join.part_s": 6, "scale.part_s": 12, "operators-setup.part_s": 10, "raw.part_s": 4}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("part times (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"hooks.part_s", "join.part_s", "scale.part_s", "operators-setup.part_s", "raw.part_s"}, order); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	if sum := partSeconds(rep); sum != 34 {
		t.Errorf("parts sum to %v s, want the run's 34 s", sum)
	}
	wantProgress := []string{"hooks: 2.0 s", "join: 5.0 s", "scale: 12.0 s", "join: 1.0 s",
		"operators-setup: 10.0 s (set-up and teardown of its parts)", "raw: 4.0 s"}
	if d := cmp.Diff(wantProgress, progress); d != "" {
		t.Errorf("progress (-want +got):\n%s", d)
	}
}
