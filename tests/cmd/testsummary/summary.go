package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// event is one line of `go test -json` (cmd/test2json), plus the build events of `go test -json`
// (Action build-output / build-fail with ImportPath).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

// Counts are the results of one package's tests (subtests included).
type Counts struct {
	Passed, Failed, Skipped int
	// Failed is true when the package as a whole failed: a failed test, a build failure, a
	// panic or a timeout outside any test.
	PackageFailed bool
}

// Skip is one skipped test and the reason it gave.
type Skip struct {
	Package, Test, Reason string
}

// Summary accumulates `go test -json` events and, when Echo is set, writes what a plain
// `go test` run would print as the events arrive: the output of failed tests, a `--- SKIP`
// line with its reason for each skipped test, build errors and each package's closing line.
type Summary struct {
	// Echo receives the go test style lines; nil writes none.
	Echo io.Writer

	pkgs  map[string]*Counts
	order []string
	skips []Skip
	// out buffers each running test's (and each package's) output, keyed by package and test.
	out map[[2]string][]string
}

// Read feeds every line of r to the summary. Lines that are not test2json events are echoed
// as they are.
func (s *Summary) Read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		s.Line(sc.Bytes())
	}
	return sc.Err()
}

// Line feeds one line of `go test -json` output.
func (s *Summary) Line(line []byte) {
	var ev event
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil || ev.Action == "" {
		s.echo(string(line) + "\n")
		return
	}
	s.event(ev)
}

func (s *Summary) echo(text string) {
	if s.Echo != nil && text != "" {
		io.WriteString(s.Echo, text)
	}
}

func (s *Summary) pkg(name string) *Counts {
	if s.pkgs == nil {
		s.pkgs, s.out = map[string]*Counts{}, map[[2]string][]string{}
	}
	c, ok := s.pkgs[name]
	if !ok {
		c = &Counts{}
		s.pkgs[name] = c
		s.order = append(s.order, name)
	}
	return c
}

func (s *Summary) event(ev event) {
	switch ev.Action {
	case "build-output":
		s.echo(ev.Output)
		return
	case "build-fail":
		// "pkg [pkg.test]" for a test binary: the package is pkg.
		name, _, _ := strings.Cut(ev.ImportPath, " [")
		s.pkg(name).PackageFailed = true
		return
	}
	if ev.Package == "" {
		s.echo(ev.Output)
		return
	}
	c := s.pkg(ev.Package)
	key := [2]string{ev.Package, ev.Test}
	switch ev.Action {
	case "output":
		s.out[key] = append(s.out[key], ev.Output)
	case "pass", "fail", "skip":
		lines := s.out[key]
		delete(s.out, key)
		if ev.Test == "" {
			// The package's end: its own lines ("ok  \tpkg\t0.1s", "FAIL", a panic outside a
			// test, "[no test files]") as go test prints them without -v.
			if ev.Action == "fail" {
				c.PackageFailed = true
			}
			for _, l := range lines {
				if l != "PASS\n" && !isProgress(l) {
					s.echo(l)
				}
			}
			return
		}
		switch ev.Action {
		case "pass":
			c.Passed++
		case "fail":
			c.Failed++
			for _, l := range recapped(lines) {
				if !isProgress(l) {
					s.echo(l)
				}
			}
		case "skip":
			c.Skipped++
			s.skips = append(s.skips, Skip{Package: ev.Package, Test: ev.Test, Reason: skipReason(lines)})
			for _, l := range lines {
				if !isProgress(l) {
					s.echo(l)
				}
			}
		}
	}
}

// DumpMarker begins the first line a test logs when it dumps state after its failure (a
// cleanup's logs, daemons' log tails: tests/hosts/hoststest.DumpMarker, the same text). The
// dumps come after the failure's own message and can run to hundreds of lines; a CI log read
// from its end would show only them.
const DumpMarker = "failure dump: "

// recapLines is how many lines before a failed test's first dump recapped repeats.
const recapLines = 12

// recapped is a failed test's output lines with, just before its closing "--- FAIL" line, a
// recap of the last recapLines lines it printed before its first failure dump (DumpMarker):
// the failure's message and what led to it, next to the verdict. Lines without a dump are
// returned as they are.
func recapped(lines []string) []string {
	dump := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, ": "+DumpMarker) })
	verdict := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimLeft(l, " "), "--- FAIL") })
	if dump <= 0 || verdict < dump {
		return lines
	}
	var before []string
	for _, l := range lines[:dump] {
		if !isProgress(l) {
			before = append(before, l)
		}
	}
	if len(before) == 0 {
		return lines
	}
	before = before[max(0, len(before)-recapLines):]
	out := slices.Clone(lines[:verdict])
	out = append(out, fmt.Sprintf("    (testsummary) the last %d lines before the failure dumps, again:\n", len(before)))
	out = append(out, before...)
	return append(out, lines[verdict:]...)
}

// isProgress reports whether l is one of the lines -v adds (=== RUN, PAUSE, CONT, NAME).
func isProgress(l string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// skipReason is the text a skipped test logged (its t.Skip message), on one line.
func skipReason(lines []string) string {
	var parts []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || isProgress(l) || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		parts = append(parts, l)
	}
	return strings.Join(parts, " ")
}

// Packages returns the packages seen, in order of first appearance, with their counts.
func (s *Summary) Packages() ([]string, map[string]Counts) {
	out := map[string]Counts{}
	for name, c := range s.pkgs {
		out[name] = *c
	}
	return slices.Clone(s.order), out
}

// Skips returns every skipped test in order.
func (s *Summary) Skips() []Skip { return slices.Clone(s.skips) }

// Totals returns the tests passed, failed and skipped over all packages. A package that
// failed without a failed test (a build failure, a panic or a timeout outside a test) counts as
// one failure.
func (s *Summary) Totals() (passed, failed, skipped int) {
	for _, c := range s.pkgs {
		passed += c.Passed
		failed += c.Failed
		skipped += c.Skipped
		if c.PackageFailed && c.Failed == 0 {
			failed++
		}
	}
	return passed, failed, skipped
}

// Unexpected returns the skips that are not of a named helper test. helpers holds test
// names: a skip matches a helper when its test, or the top-level test it belongs to, has that
// name.
func Unexpected(skips []Skip, helpers []string) []Skip {
	var out []Skip
	for _, sk := range skips {
		top, _, _ := strings.Cut(sk.Test, "/")
		if !slices.Contains(helpers, sk.Test) && !slices.Contains(helpers, top) {
			out = append(out, sk)
		}
	}
	return out
}

// WriteTable writes the per-package table, the skipped tests with their reasons, and the
// closing line "N passed, N failed, N skipped in N packages". refused are skips that count as
// failures (under CI=true, those of tests that are not named helpers): they are listed and added
// to the failed count.
func (s *Summary) WriteTable(w io.Writer, refused []Skip) error {
	names, counts := s.Packages()
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "passed\tfailed\tskipped\t\tpackage")
	for _, name := range names {
		c := counts[name]
		mark := ""
		if c.PackageFailed {
			mark = "FAIL"
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t %s\n", c.Passed, c.Failed, c.Skipped, mark, name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.skips) > 0 {
		fmt.Fprintln(w, "skipped tests:")
		for _, sk := range s.skips {
			fmt.Fprintf(w, "  %s %s: %s\n", sk.Package, sk.Test, sk.Reason)
		}
	}
	if len(refused) > 0 {
		fmt.Fprintf(w, "FAIL: %d skipped tests are not named helper tests (CI=true: a test that cannot run here fails):\n", len(refused))
		for _, sk := range refused {
			fmt.Fprintf(w, "  %s %s\n", sk.Package, sk.Test)
		}
	}
	p, f, sk := s.Totals()
	_, err := fmt.Fprintf(w, "%d passed, %d failed, %d skipped in %d packages\n", p, f+len(refused), sk, len(names))
	return err
}
