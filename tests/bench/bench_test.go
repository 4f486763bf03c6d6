package bench_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/bench"
)

func TestSummarize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []float64
		want bench.Summary
	}{
		{"none", nil, bench.Summary{}},
		{"one", []float64{3}, bench.Summary{N: 1, Min: 3, P25: 3, Median: 3, P75: 3, P90: 3, Max: 3}},
		{"odd unsorted", []float64{5, 1, 3}, bench.Summary{N: 3, Min: 1, P25: 1, Median: 3, P75: 5, P90: 5, Max: 5}},
		{"even", []float64{4, 1, 3, 2}, bench.Summary{N: 4, Min: 1, P25: 1, Median: 2.5, P75: 3, P90: 4, Max: 4}},
		{"ten", []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, bench.Summary{N: 10, Min: 1, P25: 3, Median: 5.5, P75: 8, P90: 9, Max: 10}},
		{"twenty", seq(20), bench.Summary{N: 20, Min: 1, P25: 5, Median: 10.5, P75: 15, P90: 18, Max: 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.in...)
			if d := cmp.Diff(tt.want, bench.Summarize(tt.in)); d != "" {
				t.Errorf("Summarize(%v) (-want +got):\n%s", tt.in, d)
			}
			if d := cmp.Diff(in, tt.in); d != "" {
				t.Errorf("Summarize changed its input (-before +after):\n%s", d)
			}
		})
	}
}

func seq(n int) []float64 {
	var out []float64
	for i := n; i >= 1; i-- {
		out = append(out, float64(i))
	}
	return out
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	xs := seq(10)
	for _, tt := range []struct {
		name string
		p    float64
		want float64
	}{{"p50", 50, 5}, {"p90", 90, 9}, {"p100", 100, 10}, {"p1", 1, 1}, {"p0 clamps", 0, 1}} {
		if got := bench.Percentile(xs, tt.p); got != tt.want {
			t.Errorf("%s: Percentile(1..10, %v) = %v, want %v", tt.name, tt.p, got, tt.want)
		}
	}
	if got := bench.Percentile(nil, 90); got != 0 {
		t.Errorf("Percentile(nil) = %v", got)
	}
	if got := bench.Median([]float64{2, 8}); got != 5 {
		t.Errorf("Median(2, 8) = %v", got)
	}
}

func TestDurations(t *testing.T) {
	t.Parallel()
	ds := []time.Duration{1500 * time.Millisecond, 2 * time.Millisecond}
	if d := cmp.Diff([]float64{1.5, 0.002}, bench.Seconds(ds)); d != "" {
		t.Error(d)
	}
	if d := cmp.Diff([]float64{1500, 2}, bench.Millis(ds)); d != "" {
		t.Error(d)
	}
}

func sampleReport() *bench.Report {
	r := &bench.Report{
		Started: time.Date(2026, 11, 22, 22, 0, 0, 0, time.UTC),
		Command: "make bench",
		Machine: bench.Machine{CPUs: 2, MemoryMiB: 24105, Kernel: "6.1", OS: "Debian 12", Slurm: "slurm-wlm 22.05.8", Go: "go1.26"},
	}
	r.Add(bench.Figure{Name: "raw_join_s", Value: 0.0412, Unit: "s", Samples: 5, Values: []float64{0.05, 0.039, 0.0412, 0.04, 0.043}, Note: "limit"},
		bench.Figure{Name: "join_ratio", Value: 2.5, Unit: "ratio", Target: bench.Max(2)},
		bench.Figure{Name: "reconfigures", Value: 0, Unit: "count", Target: bench.Max(0)},
		bench.Figure{Name: "hook_ms.slurmd.update-status", Value: 12.25, Unit: "ms", Samples: 20, Target: bench.Max(15), Note: "a|b"})
	return r
}

func TestReportAddReplaces(t *testing.T) {
	t.Parallel()
	r := sampleReport()
	r.Add(bench.Figure{Name: "join_ratio", Value: 1.5, Unit: "ratio"})
	f, ok := r.Figure("join_ratio")
	if !ok || f.Value != 1.5 || len(r.Figures) != 4 {
		t.Errorf("after replacing: %v %v, %d figures", f, ok, len(r.Figures))
	}
	if _, ok := r.Figure("nope"); ok {
		t.Error("Figure(nope) found")
	}
}

func TestWriteLinesRoundTrip(t *testing.T) {
	t.Parallel()
	r := sampleReport()
	var b bytes.Buffer
	if err := r.WriteLines(&b); err != nil {
		t.Fatal(err)
	}
	want := "raw_join_s=0.041 s\njoin_ratio=2.5 ratio\nreconfigures=0 count\nhook_ms.slurmd.update-status=12.25 ms\n"
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("lines (-want +got):\n%s", d)
	}
	got, err := bench.ParseLines(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	wantFigs := []bench.Figure{{Name: "raw_join_s", Value: 0.041, Unit: "s"}, {Name: "join_ratio", Value: 2.5, Unit: "ratio"},
		{Name: "reconfigures", Value: 0, Unit: "count"}, {Name: "hook_ms.slurmd.update-status", Value: 12.25, Unit: "ms"}}
	if d := cmp.Diff(wantFigs, got); d != "" {
		t.Errorf("parsed (-want +got):\n%s", d)
	}
}

func TestParseLineErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, line, want string }{
		{"no equals", "raw_join_s 0.4 s", "no '='"},
		{"no unit", "raw_join_s=0.4", "want `name=value unit`"},
		{"bad value", "raw_join_s=fast s", `bad value "fast"`},
		{"bad name", "Raw Join=0.4 s", "bad character"},
		{"empty name", "=0.4 s", "empty name"},
		{"two units", "x=1 s s", "want `name=value unit`"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bench.ParseLine(tt.line)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.line) {
				t.Errorf("ParseLine(%q) = %v, want an error naming the line and %q", tt.line, err, tt.want)
			}
		})
	}
	if _, err := bench.ParseLines([]byte("a=1 s\n\nb 2\n")); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("ParseLines error %v, want it to name line 3", err)
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add("raw_join_s=0.041 s")
	f.Add("hook_ms.slurmd.update-status=12.25 ms")
	f.Add("x=NaN s")
	f.Add("=1 s")
	f.Fuzz(func(t *testing.T, line string) {
		fig, err := bench.ParseLine(line)
		if err != nil {
			return
		}
		// What parses renders back to a line that parses to the same name and unit.
		again, err := bench.ParseLine(fig.Line())
		if err != nil {
			t.Fatalf("ParseLine(%q) gave %+v whose Line %q does not parse: %v", line, fig, fig.Line(), err)
		}
		if again.Name != fig.Name || again.Unit != fig.Unit {
			t.Fatalf("round trip of %q: %+v then %+v", line, fig, again)
		}
	})
}

func TestFormatValue(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]string{0: "0", 1: "1", 0.0412: "0.041", 12.25: "12.25", 1234.5678: "1234.568", -0.0001: "0", math.Inf(1): "+Inf"} {
		if got := bench.FormatValue(in); got != want {
			t.Errorf("FormatValue(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	t.Parallel()
	r := sampleReport()
	r.Series = []bench.Series{{Name: "raw", Points: []bench.Point{{Nodes: 1, Seconds: 0.04}}}}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back bench.Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(r, &back); d != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", d)
	}
	if !strings.Contains(b.String(), `"target": 2`) {
		t.Errorf("JSON lacks the target:\n%s", b.String())
	}
}

func TestWriteTable(t *testing.T) {
	t.Parallel()
	r := sampleReport()
	r.Notes = []string{"scale: 16 fit"}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"Machine: 2 CPUs, 24105 MiB, Debian 12, kernel 6.1, Slurm slurm-wlm 22.05.8, go1.26",
		"| raw_join_s | 0.041 | s | 5 | IQR 0.04–0.043, range 0.039–0.05 |  |  | limit |",
		"| join_ratio | 2.5 | ratio |  |  | ≤ 2 | no |  |",
		"| reconfigures | 0 | count |  |  | ≤ 0 | yes |  |",
		`| hook_ms.slurmd.update-status | 12.25 | ms | 20 |  | ≤ 15 | yes | a\|b |`,
		"- scale: 16 fit",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

func TestWriteTraces(t *testing.T) {
	t.Parallel()
	r := &bench.Report{Traces: map[string][]string{"b": {"+0.1s two"}, "a": {"+0.0s one"}}}
	var b bytes.Buffer
	if err := r.WriteTraces(&b); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff("== a\n+0.0s one\n\n== b\n+0.1s two\n\n", b.String()); d != "" {
		t.Error(d)
	}
}

func TestChartSVG(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		series                []bench.Series
		polylines, circles    int
		wantText, notWantText []string
	}{
		{
			name: "two series",
			series: []bench.Series{
				{Name: "raw <slurmd>", Points: []bench.Point{{1, 0.04}, {2, 0.05}, {3, 0.045}}},
				{Name: "operators", Points: []bench.Point{{2, 1.2}, {3, 1.3}}},
			},
			polylines: 2, circles: 5,
			wantText: []string{"raw &lt;slurmd&gt;", "operators", "Join"},
		},
		{
			name:      "single point and NaN",
			series:    []bench.Series{{Name: "one", Points: []bench.Point{{1, 0.5}, {2, math.NaN()}}}},
			polylines: 0, circles: 1,
			notWantText: []string{"NaN"},
		},
		{name: "empty", polylines: 0, circles: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := (bench.Chart{Title: "Join", XLabel: "nodes", YLabel: "s", Series: tt.series}).WriteSVG(&b); err != nil {
				t.Fatal(err)
			}
			svg := b.String()
			// Well-formed XML with an svg root.
			dec := xml.NewDecoder(strings.NewReader(svg))
			counts := map[string]int{}
			for {
				tok, err := dec.Token()
				if err != nil {
					if err.Error() != "EOF" {
						t.Fatalf("not well-formed XML: %v\n%s", err, svg)
					}
					break
				}
				if se, ok := tok.(xml.StartElement); ok {
					counts[se.Name.Local]++
				}
			}
			if counts["svg"] != 1 || counts["polyline"] != tt.polylines || counts["circle"] != tt.circles {
				t.Errorf("elements %v, want 1 svg, %d polylines, %d circles", counts, tt.polylines, tt.circles)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(svg, w) {
					t.Errorf("SVG lacks %q", w)
				}
			}
			for _, w := range tt.notWantText {
				if strings.Contains(svg, w) {
					t.Errorf("SVG contains %q", w)
				}
			}
		})
	}
}

func TestJournalTrace(t *testing.T) {
	t0 := time.Unix(1764111600, 500_000_000)
	out := []byte(`1764111600.100000 m1 systemd[1]: Started early.service - before t0.
1764111600.600000 m1 systemd[1]: Starting munge.service - MUNGE authentication service...
not a line
1764111600.712345 m1 systemd[1]: Reloading requested from client PID 77 ('x')...
x m1 systemd[1]: no time
1764111601.000000 m1 systemd[1]: Started slurmd.service - Slurm node daemon.
`)
	want := []string{
		"+  0.100s machine: systemd[1]: Starting munge.service - MUNGE authentication service...",
		"+  0.212s machine: systemd[1]: Reloading requested from client PID 77 ('x')...",
		"+  0.500s machine: systemd[1]: Started slurmd.service - Slurm node daemon.",
	}
	if d := cmp.Diff(want, bench.JournalTrace(t0, t0, "machine: ", out)); d != "" {
		t.Errorf("JournalTrace (-want +got):\n%s", d)
	}
}

func FuzzJournalTrace(f *testing.F) {
	f.Add([]byte("1764111600.600000 m1 systemd[1]: Started x.\n"))
	f.Add([]byte("1e300 a b\n-5 a b\nNaN a b\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		for _, l := range bench.JournalTrace(time.Unix(1764111600, 0), time.Unix(1764111600, 0), "m: ", out) {
			if !strings.HasPrefix(l, "+") || !strings.Contains(l, "s m: ") {
				t.Errorf("bad trace line %q", l)
			}
		}
	})
}

func TestSortTrace(t *testing.T) {
	got := bench.SortTrace([]string{"+  0.300s c", "machine journal: error", "+  0.100s a", "+  0.300s d", "+ 12.000s e", "+  0.200s b"})
	want := []string{"+  0.100s a", "+  0.200s b", "+  0.300s c", "+  0.300s d", "+ 12.000s e", "machine journal: error"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("SortTrace (-want +got):\n%s", d)
	}
}

func TestDeriveMachineScale(t *testing.T) {
	for _, tt := range []struct {
		name    string
		figures []bench.Figure
		want    map[string]float64 // derived figures by name
	}{
		{"two sizes", []bench.Figure{
			{Name: "trixie.scale.8.out_per_node_s", Value: 0.5},
			{Name: "trixie.scale.32.out_per_node_s", Value: 0.6},
			{Name: "bookworm.scale.8.out_per_node_s", Value: 0.4},
		}, map[string]float64{"trixie.scale.per_node_ratio_32_8": 1.2}},
		{"one size", []bench.Figure{{Name: "trixie.scale.8.out_per_node_s", Value: 0.5}}, map[string]float64{}},
		{"zero", []bench.Figure{
			{Name: "trixie.scale.8.out_per_node_s", Value: 0},
			{Name: "trixie.scale.32.out_per_node_s", Value: 0.6},
		}, map[string]float64{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := &bench.Report{Figures: tt.figures}
			bench.Derive(rep)
			got := map[string]float64{}
			for _, f := range rep.Figures {
				if strings.Contains(f.Name, "per_node_ratio") {
					got[f.Name] = math.Round(f.Value*1000) / 1000
				}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("derived (-want +got):\n%s", d)
			}
		})
	}
}

func TestAddScalePoint(t *testing.T) {
	var rep bench.Report
	rep.AddScalePoint("a", bench.Point{Nodes: 8, Seconds: 1})
	rep.AddScalePoint("b", bench.Point{Nodes: 8, Seconds: 2})
	rep.AddScalePoint("a", bench.Point{Nodes: 32, Seconds: 3})
	want := []bench.Series{{Name: "a", Points: []bench.Point{{Nodes: 8, Seconds: 1}, {Nodes: 32, Seconds: 3}}}, {Name: "b", Points: []bench.Point{{Nodes: 8, Seconds: 2}}}}
	if d := cmp.Diff(want, rep.ScaleSeries); d != "" {
		t.Errorf("series (-want +got):\n%s", d)
	}
}
