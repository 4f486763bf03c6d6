package main

import (
	"regexp"
	"strings"
	"testing"
)

// The patterns before maxClusterName and maxHostLabel, with their counted repetitions: the
// oracles of the bounded checks.
var (
	oldClusterNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,39}$`)
	oldHostRE        = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

func checkBounds(t *testing.T, s string) {
	t.Helper()
	if old, new := oldClusterNameRE.MatchString(s), len(s) <= maxClusterName && clusterNameRE.MatchString(s); old != new {
		t.Errorf("cluster name %q (%d bytes): counted pattern %v, bounded check %v", s, len(s), old, new)
	}
	if old, new := oldHostRE.MatchString(s), len(s) <= maxHostLabel && hostRE.MatchString(s); old != new {
		t.Errorf("host %q (%d bytes): counted pattern %v, bounded check %v", s, len(s), old, new)
	}
}

func TestBoundsAsCountedPatterns(t *testing.T) {
	for _, n := range []int{0, 1, 2, 38, 39, 40, 41, 60, 61, 62, 63, 64} {
		for _, fill := range []string{"a", "_", "-", "é", "A", "0"} {
			checkBounds(t, "c"+strings.Repeat(fill, n)+"x")
			checkBounds(t, "c"+strings.Repeat(fill, n))
			checkBounds(t, strings.Repeat(fill, n))
			checkBounds(t, "c"+strings.Repeat(fill, n)+"-")
		}
	}
}

func FuzzBounds(f *testing.F) {
	for _, s := range []string{"cluster", "ctl-0", "a", "-a", "a-", "a_b-c", "1a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkBounds(t, s) })
}
