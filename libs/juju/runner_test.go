package juju_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/charmed-slurm/operators/libs/juju"
)

// writeTool installs a shell script as a hook tool in dir.
func writeTool(t *testing.T, dir, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestExecRunner(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// relation-set echoes its argv and stdin; is-leader fails like Juju.
	writeTool(t, dir, "relation-set", `echo "$@"; cat`)
	writeTool(t, dir, "is-leader", `echo "ERROR permission denied" >&2; exit 3`)
	r := juju.ExecRunner{ToolsDir: dir}
	ctx := context.Background()

	res, err := r.Run(ctx, juju.Command{Args: []string{"relation-set", "-r", "db:1", "--file", "-"}, Stdin: []byte("{}\n")})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(juju.Result{Stdout: []byte("-r db:1 --file -\n{}\n")}, res, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("result (-want +got):\n%s", d)
	}

	hc := juju.NewHookContext(juju.Event{}, r)
	_, err = hc.Leadership.IsLeader(ctx)
	var hte *juju.HookToolError
	if !errors.As(err, &hte) {
		t.Fatalf("got %v, want *HookToolError", err)
	}
	want := &juju.HookToolError{Tool: "is-leader", Args: []string{"--format=json"}, ExitCode: 3, Stderr: "ERROR permission denied\n"}
	if d := cmp.Diff(want, hte); d != "" {
		t.Errorf("error (-want +got):\n%s", d)
	}

	if _, err := r.Run(ctx, juju.Command{Args: []string{"no-such-tool"}}); err == nil {
		t.Error("missing tool: got no error")
	}
	if _, err := r.Run(ctx, juju.Command{}); err == nil {
		t.Error("empty command: got no error")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Run(cancelled, juju.Command{Args: []string{"relation-set"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
}
