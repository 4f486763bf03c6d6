package hosts

import (
	"os"
	"strings"
	"testing"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want procStat
		ok   bool
	}{
		{"1234 (nsenter) T 1200 1234 1200 0 -1 4194560 ...", procStat{"nsenter", 'T', 1200, 0}, true},
		{"1 (systemd-shutdow) S 0 1 1 0", procStat{"systemd-shutdow", 'S', 0, 0}, true},
		// comm may hold spaces and parentheses: the last ')' ends it.
		{"77 (a b) (c)) Z 5 0", procStat{"a b) (c)", 'Z', 5, 0}, true},
		// The start time is field 22.
		{"9 (sleep) S 1 9 9 0 -1 4194560 98 0 0 0 0 0 0 0 20 0 1 0 7341 2285568 128", procStat{"sleep", 'S', 1, 7341}, true},
		{"9 (sleep) S 1 9 9 0 -1 4194560 98 0 0 0 0 0 0 0 20 0 1 0 -5 2285568", procStat{}, false},
		{"77 (x) R", procStat{}, false},
		{"77 x R 5", procStat{}, false},
		{"77 (x) RR 5", procStat{}, false},
		{"77 (x) R five", procStat{}, false},
		{"", procStat{}, false},
	} {
		got, ok := parseStat(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	// This process, read for real.
	st, ok := readStat(os.Getpid())
	if !ok || st.ppid != os.Getppid() || st.state != 'R' && st.state != 'S' {
		t.Errorf("readStat(self) = %+v, %v; want ppid %d, running or sleeping", st, ok, os.Getppid())
	}
	if alive(1<<22 + 1) {
		t.Errorf("a PID beyond pid_max is alive")
	}
	// A Proc runs while its PID names the same process.
	self, ok := procOf(os.Getpid())
	if !ok || self.start == 0 || !self.Running() {
		t.Errorf("procOf(self) = %+v, %v: want running, with a start time", self, ok)
	}
	if (Proc{PID: self.PID, start: self.start + 1}).Running() {
		t.Errorf("a Proc whose start time differs from its PID's process runs")
	}
	if (Proc{}).Running() {
		t.Errorf("the zero Proc runs")
	}
}

// FuzzParseStat: no input panics, and a parsed comm is the text between the first '(' and the
// last ')'.
func FuzzParseStat(f *testing.F) {
	f.Add("1234 (nsenter) T 1200 1234")
	f.Add("77 (a b) (c)) Z 5 0")
	f.Fuzz(func(t *testing.T, s string) {
		st, ok := parseStat(s)
		if ok && !strings.Contains(s, "("+st.comm+")") {
			t.Errorf("parseStat(%q) comm %q is not between the parentheses", s, st.comm)
		}
	})
}
