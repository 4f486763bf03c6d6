package machines_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
)

// TestSlurmconfOracleMachines runs libs/slurmconf's oracle tests (its key set and value rules
// read by the real Slurm parser, `scontrol show hostnames`) inside a Debian 13 and a Debian 14
// machine, so the key sets of Slurm 24.11 and 26.05 are proven against their own parsers, as
// the host's Slurm 22.05 proves 22.05's in `go test ./libs/slurmconf`. It fails when any of
// them skips or does not pick the release's key set.
func TestSlurmconfOracleMachines(t *testing.T) {
	root, data := testBinary(t, "./libs/slurmconf")
	for _, tc := range []struct{ suite, release string }{
		{"trixie", "24.11"},
		{"forky", "26.05"},
	} {
		t.Run(tc.suite, func(t *testing.T) {
			t.Parallel()
			slurmconfOracle(t, root, data, tc.suite, tc.release)
		})
	}
}

// slurmconfOracle runs the slurmconf test binary data's oracle tests in a machine of suite,
// whose Slurm must be release.
func slurmconfOracle(t *testing.T, root string, data []byte, suite, release string) {
	n := hoststest.New(t)
	m := hoststest.AddMachine(t, n, "conf", suite)
	dir := m.Path("/root/slurmconf")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := hosts.WriteExecutable(filepath.Join(dir, "slurmconf.test"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	// The oracle tests read their corpus from testdata/ beside the binary's working directory.
	cp := exec.Command("cp", "-r", filepath.Join(root, "libs", "slurmconf", "testdata"), dir)
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("cannot copy the slurmconf test data: %v: %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := m.Command(ctx, []string{"env", "-C", "/root/slurmconf", "CI=true", "./slurmconf.test",
		"-test.run=AgainstSlurm$", "-test.v", "-test.count=1"})
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the slurmconf oracle tests failed on %s: %v:\n%s", suite, err, out)
	}
	for _, want := range []string{"TestKeysAgainstSlurm", "TestPartitionValuesAgainstSlurm", "TestDocsAgainstSlurm"} {
		if !strings.Contains(string(out), "--- PASS: "+want+" ") {
			t.Errorf("%s did not pass on %s", want, suite)
		}
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Errorf("some slurmconf oracle tests skipped on %s", suite)
	}
	re := regexp.MustCompile(`Slurm ` + regexp.QuoteMeta(release) + `\.\d+: key set of ` + regexp.QuoteMeta(release))
	found := re.FindString(string(out))
	if found == "" {
		t.Errorf("the oracle tests did not run Slurm %s with its key set", release)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
		return
	}
	t.Logf("%s: %d subtests passed", found, strings.Count(string(out), "--- PASS:"))
}

// testBinary builds the test binary of pkg (a package path from the repository root),
// statically linked to run inside a machine, and returns the repository root and the binary.
func testBinary(t *testing.T, pkg string) (root string, bin []byte) {
	t.Helper()
	root, err := hoststest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(pkg)+".test")
	build := exec.Command("go", "test", "-c", "-o", path, pkg)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cannot build the tests of %s: %v: %s", pkg, err, out)
	}
	bin, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return root, bin
}
