package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Figure is one measured value.
type Figure struct {
	// Name is a lower-case identifier (letters, digits, _ and .), e.g. "join_s.median".
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Unit is "s", "ms", "KiB", "ratio" or "count".
	Unit string `json:"unit"`
	// Samples is how many runs the value summarises (0 for a single measurement).
	Samples int `json:"samples,omitempty"`
	// Values are the individual samples, when the figure summarises several.
	Values []float64 `json:"values,omitempty"`
	// Target is the upper bound aimed at, when there is one.
	Target *float64 `json:"target,omitempty"`
	// Note says what the figure is or why it is missing or unusual.
	Note string `json:"note,omitempty"`
}

// Met reports whether the figure is within its target; ok is false when it has none.
func (f Figure) Met() (met, ok bool) {
	if f.Target == nil {
		return false, false
	}
	return f.Value <= *f.Target, true
}

// Max returns a pointer to t, for Figure.Target.
func Max(t float64) *float64 { return &t }

// Machine describes where figures were measured.
type Machine struct {
	CPUs      int    `json:"cpus"`
	MemoryMiB int64  `json:"memory_mib"`
	Kernel    string `json:"kernel"`
	OS        string `json:"os"`
	Slurm     string `json:"slurm"`
	Go        string `json:"go"`
}

// Point is one point of a series: y seconds at cluster size x (nodes).
type Point struct {
	Nodes   int     `json:"nodes"`
	Seconds float64 `json:"seconds"`
}

// Series is a named line of the chart.
type Series struct {
	Name   string  `json:"name"`
	Points []Point `json:"points"`
}

// AddScalePoint adds p to the scale series named name, creating it.
func (r *Report) AddScalePoint(name string, p Point) {
	for i := range r.ScaleSeries {
		if r.ScaleSeries[i].Name == name {
			r.ScaleSeries[i].Points = append(r.ScaleSeries[i].Points, p)
			return
		}
	}
	r.ScaleSeries = append(r.ScaleSeries, Series{Name: name, Points: []Point{p}})
}

// Report is a benchmark run: its figures, the machine and the join-latency series.
type Report struct {
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	Command  string        `json:"command"`
	Machine  Machine       `json:"machine"`
	Figures  []Figure      `json:"figures"`
	Series   []Series      `json:"series,omitempty"`
	// ScaleSeries are the scale figures as lines: seconds until all nodes are IDLE against the
	// number of nodes added at once.
	ScaleSeries []Series `json:"scale_series,omitempty"`
	// Notes are findings the run made (e.g. why a figure is missing).
	Notes []string `json:"notes,omitempty"`
	// Traces are timestamped model lines (hooks run, statuses) of chosen samples, by name:
	// where the time of a join or leave goes.
	Traces map[string][]string `json:"traces,omitempty"`
}

// Add appends figures, replacing any with the same name.
func (r *Report) Add(fs ...Figure) {
	for _, f := range fs {
		replaced := false
		for i := range r.Figures {
			if r.Figures[i].Name == f.Name {
				r.Figures[i], replaced = f, true
			}
		}
		if !replaced {
			r.Figures = append(r.Figures, f)
		}
	}
}

// Figure returns the figure called name.
func (r *Report) Figure(name string) (Figure, bool) {
	for _, f := range r.Figures {
		if f.Name == name {
			return f, true
		}
	}
	return Figure{}, false
}

// FormatValue renders v with up to three decimals, trailing zeros removed.
func FormatValue(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	s := strconv.FormatFloat(v, 'f', 3, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

// Line renders f as `name=value unit`.
func (f Figure) Line() string {
	return f.Name + "=" + FormatValue(f.Value) + " " + f.Unit
}

// WriteLines writes one `name=value unit` line per figure.
func (r *Report) WriteLines(w io.Writer) error {
	for _, f := range r.Figures {
		if _, err := fmt.Fprintln(w, f.Line()); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report as Markdown: the machine, then one row per figure with its
// target and whether it was met, then the notes.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "Benchmarks (%s), %s\n\n", r.Started.UTC().Format(time.RFC3339), r.Command)
	fmt.Fprintf(&b, "Machine: %d CPUs, %d MiB, %s, kernel %s, Slurm %s, %s\n\n", m.CPUs, m.MemoryMiB, m.OS, m.Kernel, m.Slurm, m.Go)
	b.WriteString("| figure | value | unit | n | spread | target | met | note |\n|---|---:|---|---:|---|---|---|---|\n")
	for _, f := range r.Figures {
		target, met := "", ""
		if ok, has := f.Met(); has {
			target = "≤ " + FormatValue(*f.Target)
			met = "no"
			if ok {
				met = "yes"
			}
		}
		n := ""
		if f.Samples > 0 {
			n = strconv.Itoa(f.Samples)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", f.Name, FormatValue(f.Value), f.Unit, n, Summarize(f.Values).Spread(), target, met, escapeCell(f.Note))
	}
	if len(r.Notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func escapeCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// ParseLine parses one `name=value unit` line (the inverse of Figure.Line).
func ParseLine(line string) (Figure, error) {
	name, rest, ok := strings.Cut(strings.TrimSpace(line), "=")
	if !ok {
		return Figure{}, fmt.Errorf("cannot parse figure line %q: no '='", line)
	}
	if err := validName(name); err != nil {
		return Figure{}, fmt.Errorf("cannot parse figure line %q: %w", line, err)
	}
	value, unit, ok := strings.Cut(rest, " ")
	if !ok || unit == "" || strings.ContainsFunc(unit, unicode.IsSpace) {
		return Figure{}, fmt.Errorf("cannot parse figure line %q: want `name=value unit`", line)
	}
	v, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return Figure{}, fmt.Errorf("cannot parse figure line %q: bad value %q", line, value)
	}
	return Figure{Name: name, Value: v, Unit: unit}, nil
}

// ParseLines parses the output of WriteLines; blank lines are skipped.
func ParseLines(data []byte) ([]Figure, error) {
	var fs []Figure
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f, err := ParseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		fs = append(fs, f)
	}
	return fs, nil
}

func validName(name string) error {
	if name == "" {
		return fmt.Errorf("empty name")
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Errorf("bad character %q in name %q", c, name)
		}
	}
	return nil
}

// WriteTraces writes the traces, sorted by name, each line under its name.
func (r *Report) WriteTraces(w io.Writer) error {
	names := make([]string, 0, len(r.Traces))
	for n := range r.Traces {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "== %s\n", n)
		for _, l := range r.Traces[n] {
			b.WriteString(l + "\n")
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
