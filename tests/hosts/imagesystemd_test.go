package hosts

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestImageSystemd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  int
		err   string
	}{
		{"bookworm", []string{"usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-252.so"}, 252, ""},
		{"forky", []string{"usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-262.so", "usr/lib/x86_64-linux-gnu/systemd/libsystemd-core-262.so"}, 262, ""},
		{"old layout", []string{"usr/lib/systemd/libsystemd-shared-247.so"}, 247, ""},
		{"suffixed", []string{"usr/lib/aarch64-linux-gnu/systemd/libsystemd-shared-257.9-1.so"}, 257, ""},
		{"none", nil, 0, "no libsystemd-shared"},
		{"garbage", []string{"usr/lib/systemd/libsystemd-shared-x.so"}, 0, "has no systemd version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(root, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ImageSystemd(root)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ImageSystemd = %d, %v; want an error saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ImageSystemd = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// TestNspawnEnv: only a systemd that refuses the legacy cgroup hierarchy gets a unified one.
func TestNspawnEnv(t *testing.T) {
	const unified = "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1"
	for v, want := range map[int]bool{252: false, 257: false, 258: true, 262: true} {
		if got := slices.Contains(nspawnEnv(v), unified); got != want {
			t.Errorf("systemd %d: %s set = %v, want %v", v, unified, got, want)
		}
	}
}

// FuzzParseSharedVersion: no input panics; a version read is positive and its digits begin
// the part after the prefix.
func FuzzParseSharedVersion(f *testing.F) {
	f.Add("libsystemd-shared-262.so")
	f.Add("libsystemd-shared-257.9-1.so")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseSharedVersion(s)
		if err != nil {
			return
		}
		if v <= 0 || !strings.HasPrefix(s, "libsystemd-shared-") || !strings.HasSuffix(s, ".so") {
			t.Errorf("parseSharedVersion(%q) = %d", s, v)
		}
	})
}
