package cosagent

import (
	"regexp"
	"strings"
	"testing"
)

// The patterns before the length bounds (pattern), with their counted repetitions: the oracle the bounded
// checks must agree with.
var (
	oldJobNameRE   = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.-]{0,127}$`)
	oldTargetRE    = regexp.MustCompile(`^[a-zA-Z0-9.:\[\]_-]{1,253}:[0-9]{1,5}$`)
	oldPathRE      = regexp.MustCompile(`^/[a-zA-Z0-9/_.~-]{0,255}$`)
	oldLogFileRE   = regexp.MustCompile(`^/[a-zA-Z0-9/_.*?\[\]-]{1,999}$`)
	oldGroupNameRE = regexp.MustCompile(`^[a-zA-Z0-9_:.-]{1,255}$`)
)

// checkNames compares every bounded check with its old pattern on s.
func checkNames(t *testing.T, s string) {
	t.Helper()
	for _, c := range []struct {
		name     string
		old, new bool
	}{
		{"job name", oldJobNameRE.MatchString(s), jobNameRE.MatchString(s)},
		{"target", oldTargetRE.MatchString(s), validTarget(s)},
		{"path", oldPathRE.MatchString(s), pathRE.MatchString(s)},
		{"log file", oldLogFileRE.MatchString(s), logFileRE.MatchString(s)},
		{"group name", oldGroupNameRE.MatchString(s), groupNameRE.MatchString(s)},
	} {
		if c.old != c.new {
			t.Errorf("%s %q (%d bytes): counted pattern %v, bounded check %v", c.name, s, len(s), c.old, c.new)
		}
	}
}

func TestBoundedNamesAsCountedPatterns(t *testing.T) {
	long := func(prefix string, n int, fill, suffix string) string {
		return prefix + strings.Repeat(fill, n) + suffix
	}
	var cases []string
	for _, n := range []int{0, 1, 126, 127, 128, 129, 252, 253, 254, 255, 256, 257, 998, 999, 1000, 1001} {
		cases = append(cases,
			long("a", n, "b", ""), long("_", n, ".", ""), long("/", n, "x", ""), long("/", n, "*", ""),
			long("", n, "h", ":80"), long("", n, "h", ":123456"), long("[", n, ":", "]:9100"),
			long("", n, "a", ""), long("", n, "é", ""), long("/", n, "a", "\n"))
	}
	cases = append(cases, "", ":", ":1", "a:", "a:1:2", "[::1]:9100", "h:1x", "h:x1", "a b", "/a/../b", "9job")
	for _, s := range cases {
		checkNames(t, s)
	}
}

func FuzzBoundedNames(f *testing.F) {
	for _, s := range []string{"job_1", "[::1]:9100", "/var/log/*.log", "/metrics", "grp:1.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkNames(t, s) })
}
