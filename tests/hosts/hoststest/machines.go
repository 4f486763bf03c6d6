package hoststest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts"
)

// Suites are the Debian releases machines boot: Debian 12 (Slurm 22.05, systemd 252),
// Debian 13 (Slurm 24.11, systemd 257) and Debian 14 (Slurm 26.05, systemd 262).
var Suites = []string{"bookworm", "trixie", "forky"}

// Image returns the root directory of suite's machine image, build/images/<suite>/root under
// the repository root, running scripts/images.sh to build it (or to check that the cached one
// matches the package list) first. It skips the test, or fails it under CI=true, when
// machines cannot run here.
func Image(t testing.TB, suite string) string {
	t.Helper()
	if reason := Unavailable(); reason != "" {
		Skip(t, reason)
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	img, err := EnsureImage(context.Background(), root, suite)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// EnsureImage runs scripts/images.sh for suite (a no-op when the cached image is current) and
// returns the image's root directory.
func EnsureImage(ctx context.Context, repoRoot, suite string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, "scripts", "images.sh"), suite)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cannot build the %s image: %v: %s", suite, err, out)
	}
	img := filepath.Join(repoRoot, "build", "images", suite, "root")
	if _, err := os.Stat(filepath.Join(img, "sbin", "init")); err != nil {
		return "", fmt.Errorf("the %s image is incomplete: %w", suite, err)
	}
	return img, nil
}

// AddMachine boots a machine called name from suite's image on n, failing the test on error.
func AddMachine(t testing.TB, n *hosts.Network, name, suite string) *hosts.Machine {
	t.Helper()
	img := Image(t, suite)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m, err := n.AddMachine(ctx, hosts.MachineOptions{Name: name, Image: img})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
