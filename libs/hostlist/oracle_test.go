package hostlist_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/libs/hostlist"
	"github.com/google/go-cmp/cmp"
)

// scontrolRunner runs the real scontrol with a minimal slurm.conf. Without
// scontrol the test is skipped with a loud reason, or fails when CI=true.
func scontrolRunner(t *testing.T) func(args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("scontrol")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("scontrol (Slurm 22.05) is required in CI: %v", err)
		}
		t.Skipf("SKIPPED: scontrol not found (%v): install slurm-client to compare with real Slurm", err)
	}
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=oracle\nSlurmctldHost=localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) (string, error) {
		cmd := exec.CommandContext(context.Background(), bin, args...)
		cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// TestAgainstScontrol compares Expand with `scontrol show hostnames` and
// Compress with `scontrol show hostlist` of the installed Slurm.
func TestAgainstScontrol(t *testing.T) {
	t.Parallel()
	run := scontrolRunner(t)
	for _, expr := range []string{
		"node[01-03,7],gpu[1-2]", "rack[1-2]-node[01-02]", "a[1-2][3-4]", "n[8-10]", "n[008-010]",
		"n[01-2]", "n[1-02]", "[1-3]", "b,a,b", ",a,,b,", "n[5]", "r1n[1-2]",
		"n[1-2]-ib", "[1-2]a", "n[3-1]", "n[a-b]", "n[1-9:2]", "n[1-2]]",
	} {
		t.Run("expand "+expr, func(t *testing.T) {
			t.Parallel()
			ours, ourErr := hostlist.Expand(expr)
			out, err := run("show", "hostnames", expr)
			theirsOK := err == nil && !strings.Contains(out, "Invalid hostlist")
			if (ourErr == nil) != theirsOK {
				t.Fatalf("Expand error %v; scontrol (%v): %q", ourErr, err, out)
			}
			if !theirsOK {
				return
			}
			if d := cmp.Diff(strings.Fields(out), ours); d != "" {
				t.Errorf("Expand(%q) (-scontrol +ours):\n%s", expr, d)
			}
		})
	}
	for _, names := range [][]string{
		{"node01", "node02", "node03", "node7", "gpu1", "gpu2"}, {"n8", "n9", "n10", "n11"},
		{"n8", "n09", "n10"}, {"n3", "n1", "n2"}, {"n1", "n1"}, {"n1-ib", "n2-ib", "n3"},
		{"a1", "b1", "a2"}, {"1", "2"}, {"n9", "n10", "n11", "n012"}, {"n0", "n00"}, {"x"},
		{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"},
	} {
		list := strings.Join(names, ",")
		t.Run("compress "+list, func(t *testing.T) {
			t.Parallel()
			out, err := run("show", "hostlist", list)
			if err != nil {
				t.Fatalf("scontrol: %v: %s", err, out)
			}
			if got, want := hostlist.Compress(names), strings.TrimSpace(out); got != want {
				t.Errorf("Compress(%q) = %q, scontrol says %q", names, got, want)
			}
		})
	}
}
