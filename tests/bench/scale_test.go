package bench_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/bench"
)

// A real /proc/<pid>/stat line of slurmctld (utime 1234, stime 56 ticks), with a command name
// holding spaces and a parenthesis.
const procStat = "4242 (slurm ctld) x) S 1 4242 4242 0 -1 4194560 2010 0 0 0 1234 56 0 0 20 0 9 0 8871 332611584 3560 18446744073709551615 1 1 0 0 0 0 0 4096 17415 0 0 0 17 1 0 0 0 0 0\n"

func TestParseProcStatCPU(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		in      string
		want    time.Duration
		wantErr string
	}{
		{"slurmctld", procStat, 12900 * time.Millisecond, ""},
		{"no command", "4242 S 1 2", 0, "no ')'"},
		{"short", "1 (a) S 1 2 3", 0, "fields after the command"},
		{"bad number", strings.Replace(procStat, " 1234 ", " x ", 1), 0, "bad CPU field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bench.ParseProcStatCPU([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestParseVmHWM(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, in string
		want     int64
		ok       bool
	}{
		{"status", "Name:\tslurmctld\nVmPeak:\t  324816 kB\nVmHWM:\t   14240 kB\nVmRSS:\t   14240 kB\n", 14240, true},
		{"none", "Name:\tx\n", 0, false},
		{"no unit", "VmHWM:\t 12\n", 0, false},
		{"negative", "VmHWM:\t -12 kB\n", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bench.ParseVmHWM([]byte(tt.in))
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("ParseVmHWM = %d, %v; want %d, ok %v", got, err, tt.want, tt.ok)
			}
		})
	}
}

func FuzzParseProcStatCPU(f *testing.F) {
	f.Add(procStat)
	f.Add("1 (a)")
	f.Fuzz(func(t *testing.T, in string) {
		if d, err := bench.ParseProcStatCPU([]byte(in)); err == nil && d < 0 {
			t.Errorf("negative CPU %v from %q", d, in)
		}
		if v, err := bench.ParseVmHWM([]byte(in)); err == nil && v < 0 {
			t.Errorf("negative VmHWM %d from %q", v, in)
		}
	})
}

// A change still in progress has Pebble's zero ready time: the trace says so instead of an
// offset of -9223372036.855s.
func TestPebbleChangeLine(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name         string
		spawn, ready time.Time
		status       string
		want         string
	}{
		{"done", t0.Add(198 * time.Millisecond), t0.Add(1206 * time.Millisecond), "Done",
			`  +0.198s pebble change "Start service" spawned; ready at +1.206s (Done)`},
		{"in progress", t0.Add(2 * time.Second), time.Time{}, "Doing",
			`  +2.000s pebble change "Start service" spawned; not ready yet (Doing)`},
		{"before t0", t0.Add(-1500 * time.Millisecond), t0.Add(-time.Second), "Done",
			`  -1.500s pebble change "Start service" spawned; ready at -1.000s (Done)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := bench.PebbleChangeLine(t0, "Start service", tt.status, tt.spawn, tt.ready)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestSpread(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		in   []float64
		want string
	}{
		{"none", nil, ""},
		{"one", []float64{1}, ""},
		{"fifteen", []float64{15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, "IQR 4–12, range 1–15"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, bench.Summarize(tt.in).Spread()); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
