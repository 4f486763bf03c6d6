// Package hoststest gives a test a hosts.Network that is cleaned up when the
// test ends, pass or fail.
//
// New skips the test with a loud reason when it cannot run here (not root, no
// network or PID namespaces, missing ip/nsenter/unshare), except when the
// environment variable CI is "true": then it fails the test instead, so CI
// never silently skips real-daemon tests.
//
//	func TestCluster(t *testing.T) {
//		n := hoststest.New(t)
//		ctl := hoststest.AddHost(t, n, "ctl")
//		out, err := ctl.Run(ctx, "hostname")
//		...
//	}
//
// The Pebble binary is build/bin/pebble under the repository root (the
// directory holding go.work, found by walking up from the working
// directory); if it is missing it is built there from the pinned module in
// tests/go.mod.
package hoststest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts"
)

// DumpMarker begins the first line a test logs when a cleanup dumps state after the test
// failed (logs, statuses, daemons' log tails): tests/cmd/testsummary repeats a failed test's
// last lines before it next to its "--- FAIL" line (the same text as its DumpMarker), so
// that the failure's message, not only the dumps, ends a CI log.
const DumpMarker = "failure dump: "

// Prefix starts every namespace name created through this package.
const Prefix = "ht"

// New returns a fresh network whose Close is registered with t.Cleanup.
func New(t testing.TB) *hosts.Network {
	t.Helper()
	if reason := Unavailable(); reason != "" {
		Skip(t, reason)
	}
	pebble, err := PebbleBin()
	if err != nil {
		t.Fatalf("cannot find or build pebble: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Not t.TempDir(): its path holds the test's name, and Pebble's unix socket under a host's
	// directory must stay within the 108-byte limit of socket paths.
	dir, err := os.MkdirTemp("", "ht")
	if err != nil {
		t.Fatal(err)
	}
	n, err := hosts.NewNetwork(ctx, hosts.NetworkOptions{
		Prefix:    Prefix,
		Dir:       dir,
		PebbleBin: pebble,
	})
	if err != nil {
		os.RemoveAll(dir)
		t.Fatalf("cannot create test network: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("cannot clean up test network: %v", err)
		}
		os.RemoveAll(dir)
	})
	return n
}

// AddHost adds a host called name to n, failing the test on error.
func AddHost(t testing.TB, n *hosts.Network, name string) *hosts.Host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := n.AddHost(ctx, hosts.HostOptions{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Skip skips t with reason, or fails it when CI=true.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CANNOT RUN real-host test in CI (CI=true): %s", reason)
	}
	t.Skipf("SKIPPED: real-host test needs %s", reason)
}

var (
	probeOnce   sync.Once
	probeReason string
)

// Unavailable returns why real hosts cannot run here, or "" if they can. It
// probes once per process by creating and deleting a network namespace.
func Unavailable() string {
	probeOnce.Do(func() { probeReason = probe() })
	return probeReason
}

func probe() string {
	if os.Geteuid() != 0 {
		return "root (running as uid " + strconv.Itoa(os.Geteuid()) + ")"
	}
	for _, cmd := range []string{"ip", "nsenter", "unshare", "mount", "sleep"} {
		if _, err := exec.LookPath(cmd); err != nil {
			return fmt.Sprintf("the %s command (%v)", cmd, err)
		}
	}
	name := fmt.Sprintf("%sprobe%d", Prefix, os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return fmt.Sprintf("network namespaces (ip netns add failed: %v: %s)", err, out)
	}
	defer exec.Command("ip", "netns", "delete", name).Run()
	if out, err := exec.Command("nsenter", "--net=/run/netns/"+name, "--", "unshare", "--uts", "--ipc", "--mount", "--propagation", "private",
		"--pid", "--fork", "--kill-child", "--mount-proc", "--", "true").CombinedOutput(); err != nil {
		return fmt.Sprintf("UTS, IPC, mount and PID namespaces (unshare failed: %v: %s)", err, out)
	}
	return ""
}

var (
	pebbleMu   sync.Mutex
	pebblePath string
)

// PebbleBin returns the path of build/bin/pebble under the repository root,
// building it first if it is missing.
func PebbleBin() (string, error) {
	pebbleMu.Lock()
	defer pebbleMu.Unlock()
	if pebblePath != "" {
		return pebblePath, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "build", "bin", "pebble")
	if _, err := os.Stat(bin); err != nil {
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			return "", err
		}
		// Build to a temporary name and rename: other test binaries may
		// be doing the same at the same time.
		tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
		cmd := exec.Command("go", "build", "-o", tmp, "github.com/canonical/pebble/cmd/pebble")
		cmd.Dir = filepath.Join(root, "tests")
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp)
			return "", fmt.Errorf("cannot build pebble: %v: %s", err, out)
		}
		if err := os.Rename(tmp, bin); err != nil {
			return "", err
		}
	}
	pebblePath = bin
	return bin, nil
}

// RepoRoot returns the nearest directory at or above the working directory
// that holds go.work.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root: no go.work above the working directory")
		}
		dir = parent
	}
}
