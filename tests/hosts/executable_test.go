package hosts_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/charmed-slurm/operators/tests/hosts"
)

// TestCopyExecutableNeverBusy: an executable installed by CopyExecutable can be run at once
// while other goroutines fork and exec all the time (as the model's agents do). Written by the
// test process itself instead, about 1 run in 20 failed here with "text file busy"
// (a child forked during the write still held the descriptor): 300 runs without one show the
// copy never leaves a writer behind.
func TestCopyExecutableNeverBusy(t *testing.T) {
	src, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				exec.Command(src).Run()
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	dir := t.TempDir()
	for i := range 300 {
		dst := filepath.Join(dir, fmt.Sprint(i))
		if err := hosts.CopyExecutable(src, dst, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := exec.Command(dst).Run(); err != nil {
			if strings.Contains(err.Error(), "text file busy") {
				t.Fatalf("run %d: %v", i, err)
			}
			t.Fatal(err)
		}
	}
	if err := hosts.CopyExecutable(src, filepath.Join(dir, "0"), 0o755); err == nil {
		t.Error("CopyExecutable over an existing file succeeded")
	}
	// WriteExecutable replaces a file with a runnable one.
	script := filepath.Join(dir, "script")
	for _, code := range []string{"3", "4"} {
		if err := hosts.WriteExecutable(script, []byte("#!/bin/sh\nexit "+code+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		err := exec.Command(script).Run()
		if ee, ok := err.(*exec.ExitError); !ok || fmt.Sprint(ee.ExitCode()) != code {
			t.Errorf("the written script exited with %v, want %s", err, code)
		}
	}
}
