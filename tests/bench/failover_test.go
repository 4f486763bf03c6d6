package bench_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
	"github.com/charmed-slurm/operators/tests/bench"
)

// probes builds probes from (start, end, ok) in milliseconds after t0.
func probes(t0 time.Time, spec ...struct {
	start, end int
	ok         bool
}) []bench.Probe {
	var out []bench.Probe
	for _, s := range spec {
		out = append(out, bench.Probe{Start: t0.Add(time.Duration(s.start) * time.Millisecond), End: t0.Add(time.Duration(s.end) * time.Millisecond), OK: s.ok})
	}
	return out
}

type p = struct {
	start, end int
	ok         bool
}

func TestUnanswered(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name           string
		probes         []p
		total, longest time.Duration
	}{
		{name: "none"},
		{name: "always answered", probes: []p{{0, 20, true}, {100, 120, true}}},
		{
			name:   "one gap: first unanswered start → next answer's end",
			probes: []p{{0, 20, true}, {100, 130, false}, {200, 230, false}, {300, 320, true}, {400, 420, true}},
			total:  220 * time.Millisecond, longest: 220 * time.Millisecond,
		},
		{
			name:   "two gaps summed, the longest kept",
			probes: []p{{0, 20, false}, {100, 120, true}, {200, 220, false}, {300, 320, false}, {400, 450, false}, {500, 510, true}},
			total:  120*time.Millisecond + 310*time.Millisecond, longest: 310 * time.Millisecond,
		},
		{
			name:   "never answered again: to the last probe's end",
			probes: []p{{0, 20, true}, {100, 120, false}, {200, 5200, false}},
			total:  5100 * time.Millisecond, longest: 5100 * time.Millisecond,
		},
		{name: "one unanswered probe alone", probes: []p{{100, 150, false}}, total: 50 * time.Millisecond, longest: 50 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			total, longest := bench.Unanswered(probes(t0, tt.probes...))
			if total != tt.total || longest != tt.longest {
				t.Errorf("Unanswered = %v, %v; want %v, %v", total, longest, tt.total, tt.longest)
			}
		})
	}
}

func TestFirstAnswer(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	kill := t0.Add(time.Second)
	for _, tt := range []struct {
		name   string
		probes []p
		want   time.Duration
		ok     bool
	}{
		{name: "none"},
		{name: "no answer", probes: []p{{1000, 1020, false}, {1100, 1130, false}}},
		{name: "an answer before t0 does not count", probes: []p{{900, 1010, true}, {1100, 1130, false}}},
		{name: "the first answer's end", probes: []p{{1000, 1020, false}, {13400, 13450, true}, {13500, 13520, true}}, want: 12450 * time.Millisecond, ok: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := bench.FirstAnswer(probes(t0, tt.probes...), kill)
			if got != tt.want || ok != tt.ok {
				t.Errorf("FirstAnswer = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	if d := cmp.Diff([]time.Duration{20 * time.Millisecond, 30 * time.Millisecond}, bench.ProbeDurations(probes(t0, p{0, 20, true}, p{100, 130, false}))); d != "" {
		t.Errorf("ProbeDurations (-want +got):\n%s", d)
	}
}

func TestLostJobs(t *testing.T) {
	t.Parallel()
	submitted := map[string]string{"7": "failover-0-0", "8": "failover-0-1", "9": "failover-0-2", "10": "failover-0-3"}
	for _, tt := range []struct {
		name    string
		records []slurm.Job
		want    []string
	}{
		{name: "the controller knows none", want: []string{"10", "7", "8", "9"}},
		{
			name: "all completed",
			records: []slurm.Job{{ID: "7", Name: "failover-0-0", State: "COMPLETED"}, {ID: "8", Name: "failover-0-1", State: "COMPLETED"},
				{ID: "9", Name: "failover-0-2", State: "COMPLETED"}, {ID: "10", Name: "failover-0-3", State: "COMPLETED"}, {ID: "11", Name: "failover-0-late", State: "RUNNING"}},
		},
		{
			name: "running, failed, forgotten, id given again",
			records: []slurm.Job{{ID: "7", Name: "failover-0-0", State: "RUNNING"}, {ID: "8", Name: "failover-0-1", State: "NODE_FAIL"},
				{ID: "10", Name: "failover-0-late", State: "COMPLETED"}},
			want: []string{"10", "7", "8", "9"},
		},
		{
			name:    "one left",
			records: []slurm.Job{{ID: "7", Name: "failover-0-0", State: "COMPLETED"}, {ID: "8", Name: "failover-0-1", State: "COMPLETED"}, {ID: "9", Name: "failover-0-2", State: "COMPLETED"}},
			want:    []string{"10"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, bench.LostJobs(submitted, tt.records)); d != "" {
				t.Errorf("LostJobs (-want +got):\n%s", d)
			}
		})
	}
}

const haConf = `# managed
ClusterName=bench
SlurmctldHost=juju-0(10.0.0.11)
SlurmctldHost=juju-3(10.0.0.14)
SlurmctldTimeout=10
StateSaveLocation=/mnt/slurmctld-statefs/checkpoint
PartitionName=slurmd Nodes=ALL
`

func TestOnlyController(t *testing.T) {
	t.Parallel()
	got, err := bench.OnlyController([]byte(haConf), "juju-3")
	if err != nil {
		t.Fatal(err)
	}
	// The line kept goes after the other global parameters (slurmconf.Doc.Add).
	want := `# managed
ClusterName=bench
SlurmctldTimeout=10
StateSaveLocation=/mnt/slurmctld-statefs/checkpoint
SlurmctldHost=juju-3(10.0.0.14)
PartitionName=slurmd Nodes=ALL
`
	if d := cmp.Diff(want, string(got)); d != "" {
		t.Errorf("OnlyController(juju-3) (-want +got):\n%s", d)
	}
	for _, tt := range []struct{ name, conf, host string }{
		{"unknown controller", haConf, "juju-9"},
		{"a prefix of a name is not the name", haConf, "juju"},
		{"no controller", "ClusterName=bench\n", "juju-0"},
		{"not slurm.conf", "SlurmctldHost\n", "juju-0"},
	} {
		if out, err := bench.OnlyController([]byte(tt.conf), tt.host); err == nil {
			t.Errorf("%s: no error, got %q", tt.name, out)
		}
	}
}

func FuzzOnlyController(f *testing.F) {
	f.Add([]byte(haConf), "juju-3")
	f.Add([]byte("SlurmctldHost=a\nSlurmctldHost=a(1.2.3.4)\n"), "a")
	f.Fuzz(func(t *testing.T, conf []byte, host string) {
		out, err := bench.OnlyController(conf, host)
		if err != nil {
			return
		}
		d, err := slurmconf.Parse(out)
		if err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, out)
		}
		hosts := d.GetAll("SlurmctldHost")
		if len(hosts) != 1 {
			t.Fatalf("SlurmctldHost %q, want one line", hosts)
		}
		if name, _, _ := strings.Cut(hosts[0], "("); name != host {
			t.Fatalf("SlurmctldHost %q, want %s", hosts[0], host)
		}
	})
}
