package slurmdbd

import (
	"regexp"
	"strings"
	"testing"
)

// oldClusterNameRE is the pattern before maxClusterName, with its counted repetition: the
// oracle.
var oldClusterNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,39}$`)

func checkClusterName(t *testing.T, s string) {
	t.Helper()
	if old, new := oldClusterNameRE.MatchString(s), len(s) <= maxClusterName && clusterNameRE.MatchString(s); old != new {
		t.Errorf("cluster name %q (%d bytes): counted pattern %v, bounded check %v", s, len(s), old, new)
	}
}

func TestClusterNameBoundAsCountedPattern(t *testing.T) {
	for _, n := range []int{0, 1, 2, 38, 39, 40, 41} {
		for _, fill := range []string{"a", "_", "-", "é", "A"} {
			checkClusterName(t, "c"+strings.Repeat(fill, n))
			checkClusterName(t, strings.Repeat(fill, n))
			checkClusterName(t, "c"+strings.Repeat(fill, n)+"\n")
		}
	}
}

func FuzzClusterNameBound(f *testing.F) {
	for _, s := range []string{"cluster", "a", "-a", "a_b-c", "1a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkClusterName(t, s) })
}
