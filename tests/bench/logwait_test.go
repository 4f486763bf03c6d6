package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/bench"
)

// SlurmdWrote holds while the host does not exist, while slurmd's log is missing and while
// it is empty, and asks for the path until it names one; AwaitLog returns once it holds, at
// once without a gate, and with ctx's error when it never does.
func TestSlurmdWrote(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "slurmd.log")
	asked := 0
	path := ""
	wrote := bench.SlurmdWrote(func() string { asked++; return path })
	if wrote() {
		t.Fatal("no host yet: wrote")
	}
	path = log
	if wrote() {
		t.Fatal("no log yet: wrote")
	}
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if wrote() {
		t.Fatal("empty log: wrote")
	}
	if err := os.WriteFile(log, []byte("[2026-11-27T03:30:00.000] slurmd version 22.05.8 started\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !wrote() {
		t.Fatal("log written: not wrote")
	}
	if asked != 2 {
		t.Errorf("path asked %d times, want 2 (until it named one)", asked)
	}

	if err := bench.AwaitLog(context.Background(), nil); err != nil {
		t.Errorf("no gate: %v", err)
	}
	if err := bench.AwaitLog(context.Background(), wrote); err != nil {
		t.Errorf("written: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := bench.AwaitLog(ctx, bench.SlurmdWrote(func() string { return filepath.Join(dir, "none") })); err == nil {
		t.Error("never written: AwaitLog returned no error")
	}
}
