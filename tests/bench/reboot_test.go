package bench_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/charmed-slurm/operators/tests/bench"
)

func TestPairRatios(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		num, den []float64
		want     []float64
	}{
		{"none", nil, nil, nil},
		{"pairs", []float64{2, 3, 9}, []float64{1, 2, 3}, []float64{2, 1.5, 3}},
		{"zero denominator skipped", []float64{2, 3}, []float64{0, 2}, []float64{1.5}},
		{"shorter of the two", []float64{4, 6, 8}, []float64{2}, []float64{2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, bench.PairRatios(tt.num, tt.den)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestRebootFigures(t *testing.T) {
	t.Parallel()
	d := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	s := func(kind string, idle, boot, systemd float64) bench.RebootSample {
		return bench.RebootSample{Kind: kind, ToIdle: d(idle), BootDone: d(boot), SystemdBoot: d(systemd)}
	}
	withHook := func(r bench.RebootSample, hook float64) bench.RebootSample {
		r.StartHook = d(hook)
		return r
	}
	for _, tt := range []struct {
		name    string
		samples []bench.RebootSample
		want    []bench.Figure
	}{
		{name: "none"},
		{
			name: "interleaved kinds, in the order they first appear",
			samples: []bench.RebootSample{
				s(bench.RebootInside, 6, 4, 1), withHook(s(bench.RebootJuju, 9, 6, 2), 7),
				s(bench.RebootInside, 8, 4, 3), withHook(s(bench.RebootJuju, 10, 5, 1), 5.5),
				s(bench.RebootInside, 3, 2, 2), s(bench.RebootJuju, 12, 6, 2),
			},
			want: []bench.Figure{
				{Name: "reboot.trixie.inside.to_idle_s", Value: 6, Unit: "s", Samples: 3, Values: []float64{6, 8, 3}},
				{Name: "reboot.trixie.inside.boot_s", Value: 4, Unit: "s", Samples: 3, Values: []float64{4, 4, 2}},
				{Name: "reboot.trixie.inside.after_boot_s", Value: 2, Unit: "s", Samples: 3, Values: []float64{2, 4, 1}},
				{Name: "reboot.trixie.inside.ratio", Value: 1.5, Unit: "ratio", Samples: 3, Values: []float64{1.5, 2, 1.5}},
				{Name: "reboot.trixie.juju.to_idle_s", Value: 10, Unit: "s", Samples: 3, Values: []float64{9, 10, 12}},
				{Name: "reboot.trixie.juju.boot_s", Value: 6, Unit: "s", Samples: 3, Values: []float64{6, 5, 6}},
				{Name: "reboot.trixie.juju.after_boot_s", Value: 5, Unit: "s", Samples: 3, Values: []float64{3, 5, 6}},
				{Name: "reboot.trixie.juju.start_hook_s", Value: 6.25, Unit: "s", Samples: 2, Values: []float64{7, 5.5}},
				{Name: "reboot.trixie.juju.ratio", Value: 2, Unit: "ratio", Samples: 3, Values: []float64{1.5, 2, 2}},
				{Name: "reboot.trixie.systemd_boot_s", Value: 2, Unit: "s", Samples: 6, Values: []float64{1, 2, 3, 1, 2, 2}},
			},
		},
		{
			name:    "a node registered before the boot transaction ended",
			samples: []bench.RebootSample{s(bench.RebootSlurm, 5, 5.5, 3)},
			want: []bench.Figure{
				{Name: "reboot.trixie.slurm.to_idle_s", Value: 5, Unit: "s", Samples: 1, Values: []float64{5}},
				{Name: "reboot.trixie.slurm.boot_s", Value: 5.5, Unit: "s", Samples: 1, Values: []float64{5.5}},
				{Name: "reboot.trixie.slurm.after_boot_s", Value: -0.5, Unit: "s", Samples: 1, Values: []float64{-0.5}},
				{Name: "reboot.trixie.slurm.ratio", Value: 5 / 5.5, Unit: "ratio", Samples: 1, Values: []float64{5 / 5.5}},
				{Name: "reboot.trixie.systemd_boot_s", Value: 3, Unit: "s", Samples: 1, Values: []float64{3}},
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := bench.RebootFigures("reboot.trixie.", tt.samples)
			for _, f := range got {
				if f.Note == "" {
					t.Errorf("%s has no note", f.Name)
				}
			}
			if d := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(bench.Figure{}, "Note"), cmpopts.EquateApprox(0, 1e-9)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestRebootFiguresTable: the reboot figures render in bench.md with their spread, and as
// name=value lines that parse back.
func TestRebootFiguresTable(t *testing.T) {
	t.Parallel()
	var samples []bench.RebootSample
	for i := range 7 {
		samples = append(samples, bench.RebootSample{Kind: bench.RebootJuju, ToIdle: time.Duration(10+i) * time.Second,
			BootDone: 5 * time.Second, SystemdBoot: 2 * time.Second})
	}
	rep := &bench.Report{Figures: bench.RebootFigures("reboot.trixie.", samples)}
	var md, lines strings.Builder
	if err := rep.WriteTable(&md); err != nil {
		t.Fatal(err)
	}
	if want := "| reboot.trixie.juju.to_idle_s | 13 | s | 7 | IQR 11–15, range 10–16 |"; !strings.Contains(md.String(), want) {
		t.Errorf("bench.md lacks %q:\n%s", want, md.String())
	}
	if err := rep.WriteLines(&lines); err != nil {
		t.Fatal(err)
	}
	figs, err := bench.ParseLines([]byte(lines.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != len(rep.Figures) {
		t.Errorf("%d lines parsed back, want %d", len(figs), len(rep.Figures))
	}
}
