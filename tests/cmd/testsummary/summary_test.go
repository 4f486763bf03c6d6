package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
	"github.com/google/go-cmp/cmp"
)

// stream is a `go test -json` run: one package with a pass, a fail, a skipped subtest and a
// helper skip; one package with no test files; one that does not build.
const stream = `{"Action":"start","Package":"ex/a"}
{"Action":"run","Package":"ex/a","Test":"TestOK"}
{"Action":"output","Package":"ex/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"ex/a","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}
{"Action":"pass","Package":"ex/a","Test":"TestOK"}
{"Action":"run","Package":"ex/a","Test":"TestBad"}
{"Action":"output","Package":"ex/a","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Action":"output","Package":"ex/a","Test":"TestBad","Output":"    a_test.go:9: got 1, want 2\n"}
{"Action":"output","Package":"ex/a","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"ex/a","Test":"TestBad"}
{"Action":"output","Package":"ex/a","Test":"TestTable/none","Output":"=== RUN   TestTable/none\n"}
{"Action":"output","Package":"ex/a","Test":"TestTable/none","Output":"    a_test.go:20: SKIPPED: needs root\n"}
{"Action":"output","Package":"ex/a","Test":"TestTable/none","Output":"--- SKIP: TestTable/none (0.00s)\n"}
{"Action":"skip","Package":"ex/a","Test":"TestTable/none"}
{"Action":"pass","Package":"ex/a","Test":"TestTable"}
{"Action":"output","Package":"ex/a","Test":"TestChild","Output":"    crash_test.go:28: helper for TestParent\n"}
{"Action":"skip","Package":"ex/a","Test":"TestChild"}
{"Action":"output","Package":"ex/a","Output":"FAIL\n"}
{"Action":"output","Package":"ex/a","Output":"FAIL\tex/a\t0.012s\n"}
{"Action":"fail","Package":"ex/a"}
{"Action":"output","Package":"ex/b","Output":"?   \tex/b\t[no test files]\n"}
{"Action":"skip","Package":"ex/b"}
{"ImportPath":"ex/c","Action":"build-output","Output":"ex/c/c.go:3:1: syntax error\n"}
{"ImportPath":"ex/c [ex/c.test]","Action":"build-fail"}
{"Action":"output","Package":"ex/c","Output":"FAIL\tex/c [build failed]\n"}
{"Action":"fail","Package":"ex/c"}
not json at all
`

func TestSummary(t *testing.T) {
	var echo bytes.Buffer
	s := &Summary{Echo: &echo}
	if err := s.Read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	wantEcho := `    a_test.go:9: got 1, want 2
--- FAIL: TestBad (0.00s)
    a_test.go:20: SKIPPED: needs root
--- SKIP: TestTable/none (0.00s)
    crash_test.go:28: helper for TestParent
FAIL
FAIL	ex/a	0.012s
?   	ex/b	[no test files]
ex/c/c.go:3:1: syntax error
FAIL	ex/c [build failed]
not json at all
`
	if d := cmp.Diff(wantEcho, echo.String()); d != "" {
		t.Errorf("echo (-want +got):\n%s", d)
	}
	names, counts := s.Packages()
	if d := cmp.Diff([]string{"ex/a", "ex/b", "ex/c"}, names); d != "" {
		t.Errorf("packages (-want +got):\n%s", d)
	}
	wantCounts := map[string]Counts{
		"ex/a": {Passed: 2, Failed: 1, Skipped: 2, PackageFailed: true},
		"ex/b": {},
		"ex/c": {PackageFailed: true},
	}
	if d := cmp.Diff(wantCounts, counts); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
	wantSkips := []Skip{
		{Package: "ex/a", Test: "TestTable/none", Reason: "a_test.go:20: SKIPPED: needs root"},
		{Package: "ex/a", Test: "TestChild", Reason: "crash_test.go:28: helper for TestParent"},
	}
	if d := cmp.Diff(wantSkips, s.Skips()); d != "" {
		t.Errorf("skips (-want +got):\n%s", d)
	}
	p, f, sk := s.Totals()
	if d := cmp.Diff([3]int{2, 2, 2}, [3]int{p, f, sk}); d != "" {
		t.Errorf("totals passed, failed, skipped (-want +got):\n%s", d)
	}
}

func TestUnexpected(t *testing.T) {
	skips := []Skip{{Test: "TestChild"}, {Test: "TestTable/none"}, {Test: "TestHelper/sub"}, {Test: "TestOther"}}
	for _, tt := range []struct {
		name    string
		helpers []string
		want    []Skip
	}{
		{"no helpers", nil, skips},
		{"by name and by parent", []string{"TestChild", "TestHelper"}, []Skip{{Test: "TestTable/none"}, {Test: "TestOther"}}},
		{"a subtest named exactly", []string{"TestTable/none", "TestChild", "TestHelper", "TestOther"}, nil},
		{"a prefix is not a name", []string{"TestChil", "TestTable/n"}, skips},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, Unexpected(skips, tt.helpers)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestRun(t *testing.T) {
	passing := `{"Action":"output","Package":"ex/p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"ex/p","Test":"TestA"}
{"Action":"output","Package":"ex/p","Test":"TestHelper","Output":"    h_test.go:5: helper for TestA\n"}
{"Action":"skip","Package":"ex/p","Test":"TestHelper"}
{"Action":"output","Package":"ex/p","Test":"TestRoot","Output":"    r_test.go:5: SKIPPED: needs root\n"}
{"Action":"skip","Package":"ex/p","Test":"TestRoot"}
{"Action":"output","Package":"ex/p","Output":"ok  \tex/p\t0.1s\n"}
{"Action":"pass","Package":"ex/p"}
`
	for _, tt := range []struct {
		name      string
		args      []string
		ci        bool
		in        string
		wantCode  int
		wantLast  string
		wantInOut string
	}{
		{"passing, not CI", []string{"-helpers", "TestHelper"}, false, passing, 0,
			"1 passed, 0 failed, 2 skipped in 1 packages", "ok  \tex/p\t0.1s"},
		{"CI: a skip that is not a helper fails", []string{"-helpers", "TestHelper"}, true, passing, 1,
			"1 passed, 1 failed, 2 skipped in 1 packages", "FAIL: 1 skipped tests are not named helper tests"},
		{"CI: every skip named", []string{"-helpers", "TestHelper,TestRoot"}, true, passing, 0,
			"1 passed, 0 failed, 2 skipped in 1 packages", "TestRoot: r_test.go:5: SKIPPED: needs root"},
		{"-ci=false overrides CI=true", []string{"-ci=false"}, true, passing, 0,
			"1 passed, 0 failed, 2 skipped in 1 packages", ""},
		{"failure", nil, false, stream, 1, "2 passed, 2 failed, 2 skipped in 3 packages", "--- FAIL: TestBad"},
		{"quiet", []string{"-quiet"}, false, passing, 0, "1 passed, 0 failed, 2 skipped in 1 packages", ""},
		{"bad flag", []string{"-nope"}, false, "", 2, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tt.args, strings.NewReader(tt.in), &out, &errOut, tt.ci)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stdout:\n%s\nstderr:\n%s", code, tt.wantCode, &out, &errOut)
			}
			lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
			if d := cmp.Diff(tt.wantLast, lines[len(lines)-1]); d != "" {
				t.Errorf("closing line (-want +got):\n%s", d)
			}
			if !strings.Contains(out.String(), tt.wantInOut) {
				t.Errorf("output lacks %q:\n%s", tt.wantInOut, &out)
			}
			if tt.name == "quiet" && strings.Contains(out.String(), "ok  \t") {
				t.Errorf("-quiet echoed go test lines:\n%s", &out)
			}
		})
	}
}

// FuzzSummary feeds arbitrary text: the summary never panics, and its totals add up to the
// package counts.
func FuzzSummary(f *testing.F) {
	f.Add(stream)
	f.Add(`{"Action":"skip","Package":"p","Test":"T"}` + "\n" + `{"Action":"fail"}`)
	f.Add("{\"Action\":\"build-fail\",\"ImportPath\":\"x\"}\n{")
	f.Fuzz(func(t *testing.T, in string) {
		s := &Summary{Echo: &bytes.Buffer{}}
		if err := s.Read(strings.NewReader(in)); err != nil {
			return
		}
		names, counts := s.Packages()
		var p, fl, sk int
		for _, n := range names {
			c := counts[n]
			p, fl, sk = p+c.Passed, fl+c.Failed, sk+c.Skipped
			if c.PackageFailed && c.Failed == 0 {
				fl++
			}
		}
		gp, gf, gs := s.Totals()
		if [3]int{p, fl, sk} != [3]int{gp, gf, gs} || gs != len(s.Skips()) {
			t.Errorf("totals %v, packages add up to %v, %d skips listed", [3]int{gp, gf, gs}, [3]int{p, fl, sk}, len(s.Skips()))
		}
		if err := s.WriteTable(&bytes.Buffer{}, Unexpected(s.Skips(), nil)); err != nil {
			t.Error(err)
		}
	})
}

// TestRecap: a failed test whose cleanups dumped state after its failure gets, just before its
// "--- FAIL" line, its last lines before the first dump again, so that a log read from its
// end shows the failure's message; a failed test without dumps and a passing test are echoed
// as they were.
func TestRecap(t *testing.T) {
	const in = `{"Action":"output","Package":"ex/a","Test":"TestHA","Output":"=== RUN   TestHA\n"}
{"Action":"output","Package":"ex/a","Test":"TestHA","Output":"    ha_test.go:10: took 15s\n"}
{"Action":"output","Package":"ex/a","Test":"TestHA","Output":"    ha_test.go:12: slurmctld/1: standing by\n"}
{"Action":"output","Package":"ex/a","Test":"TestHA","Output":"    harness_test.go:210: failure dump: the model's debug log\n"}
{"Action":"output","Package":"ex/a","Test":"TestHA","Output":"    harness_test.go:211: slurmd.log (tail):\n"}
{"Action":"output","Package":"ex/a","Test":"TestHA","Output":"        [05:20:19] done with job\n"}
{"Action":"output","Package":"ex/a","Test":"TestHA","Output":"--- FAIL: TestHA (184.68s)\n"}
{"Action":"fail","Package":"ex/a","Test":"TestHA"}
{"Action":"output","Package":"ex/a","Test":"TestPlain","Output":"    a_test.go:9: got 1, want 2\n"}
{"Action":"output","Package":"ex/a","Test":"TestPlain","Output":"--- FAIL: TestPlain (0.00s)\n"}
{"Action":"fail","Package":"ex/a","Test":"TestPlain"}
`
	var echo bytes.Buffer
	s := &Summary{Echo: &echo}
	if err := s.Read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	want := `    ha_test.go:10: took 15s
    ha_test.go:12: slurmctld/1: standing by
    harness_test.go:210: failure dump: the model's debug log
    harness_test.go:211: slurmd.log (tail):
        [05:20:19] done with job
    (testsummary) the last 2 lines before the failure dumps, again:
    ha_test.go:10: took 15s
    ha_test.go:12: slurmctld/1: standing by
--- FAIL: TestHA (184.68s)
    a_test.go:9: got 1, want 2
--- FAIL: TestPlain (0.00s)
`
	if d := cmp.Diff(want, echo.String()); d != "" {
		t.Errorf("echo (-want +got):\n%s", d)
	}
}

// TestRecapLast: only the last recapLines lines before the first dump are repeated.
func TestRecapLast(t *testing.T) {
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf("    x_test.go:%d: line\n", i))
	}
	lines = append(lines, "    x_test.go:99: "+DumpMarker+"a\n", "    x_test.go:100: "+DumpMarker+"b\n", "--- FAIL: TestX (1.00s)\n")
	got := recapped(lines)
	want := slices.Concat(lines[:22], []string{"    (testsummary) the last 12 lines before the failure dumps, again:\n"}, lines[8:20], lines[22:])
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("recapped (-want +got):\n%s", d)
	}
}

// TestDumpMarker: the tests' failure dumps begin with the marker recapped looks for.
func TestDumpMarker(t *testing.T) {
	if DumpMarker != hoststest.DumpMarker {
		t.Errorf("DumpMarker %q, hoststest.DumpMarker %q", DumpMarker, hoststest.DumpMarker)
	}
}
