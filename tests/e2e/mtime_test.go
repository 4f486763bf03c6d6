package e2e_test

import (
	"testing"
	"time"
)

// TestParseMtime: waitStateSaved's reading of `stat -c %.9Y`, nanoseconds kept, anything else
// refused.
func TestParseMtime(t *testing.T) {
	got, err := parseMtime("1795733863.450788001")
	if want := time.Unix(1795733863, 450788001); err != nil || !got.Equal(want) {
		t.Errorf("parseMtime: %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "1795733863", "1795733863.45", "x.450788001", "1795733863.-50788001", "1795733863.4507880011"} {
		if _, err := parseMtime(bad); err == nil {
			t.Errorf("parseMtime(%q) took it", bad)
		}
	}
}

func FuzzParseMtime(f *testing.F) {
	f.Add("1795733863.450788001")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseMtime(s)
		if err == nil && (m.Nanosecond() < 0 || m.Nanosecond() > 999999999) {
			t.Errorf("parseMtime(%q) = %v", s, m)
		}
	})
}
