package slurmdbd

import (
	"regexp"
	"strings"
	"testing"
)

// oldHostRE is the pattern before maxHostLen, with its counted repetition: the oracle.
var oldHostRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,252}[A-Za-z0-9])?$`)

func checkHost(t *testing.T, s string) {
	t.Helper()
	if old, new := oldHostRE.MatchString(s), len(s) <= maxHostLen && hostRE.MatchString(s); old != new {
		t.Errorf("host %q (%d bytes): counted pattern %v, bounded check %v", s, len(s), old, new)
	}
}

func TestHostBoundAsCountedPattern(t *testing.T) {
	for _, n := range []int{0, 1, 2, 251, 252, 253, 254, 255} {
		for _, fill := range []string{"a", ".", "-", "é"} {
			checkHost(t, "h"+strings.Repeat(fill, n)+"x")
			checkHost(t, strings.Repeat(fill, n))
			checkHost(t, "h"+strings.Repeat(fill, n)+"-")
		}
	}
}

func FuzzHostBound(f *testing.F) {
	for _, s := range []string{"db-1.example", "a", "-a", "a-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkHost(t, s) })
}
