package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"no application", nil},
		{"bad application spec", []string{"--app", "slurmd:min=3,max=1"}},
		{"stray argument", []string{"--app", "slurmd", "extra"}},
		{"bad time zone", []string{"--app", "slurmd", "--controller-tz", "Nowhere/Else"}},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), tt.args, &out, &errb); code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", tt.name, code, errb.String())
		}
	}
}

// TestOnceDryRun runs one dry-run decision against a fake juju client: a shell script that
// answers status with a model and exec with a queue of two pending jobs.
func TestOnceDryRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	juju := filepath.Join(dir, "juju")
	script := `#!/bin/sh
echo "$@" >> ` + filepath.Join(dir, "calls") + `
case "$1" in
status) echo '{"applications":{"slurmctld":{"units":{"slurmctld/0":{"leader":true}}},"slurmd":{"units":{"slurmd/0":{"leader":true}}}}}';;
exec) case "$*" in
  *squeue*) printf '4|slurmd|1|Resources\n5|slurmd|1|Priority\n';;
  *scontrol*) echo 'NodeName=slurmd-0 State=ALLOCATED+DYNAMIC_NORM Partitions=slurmd LastBusyTime=2026-11-23T20:00:00';;
  esac;;
*) echo "unexpected $1" >&2; exit 1;;
esac
`
	if err := os.WriteFile(juju, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--juju", juju, "--app", "slurmd:max=4", "--once", "--dry-run"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "dry run: slurmd: 2 pending jobs need 2 more nodes: adding 2") {
		t.Errorf("output does not report the decision:\n%s", out.String())
	}
	calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
	if strings.Contains(string(calls), "add-unit") || strings.Contains(string(calls), "remove-unit") {
		t.Errorf("dry run changed the model:\n%s", calls)
	}
	if !strings.Contains(string(calls), "exec --unit slurmctld/0 -- env SLURM_CONF=/etc/slurm/slurm.conf squeue") {
		t.Errorf("Slurm was not read on the controller's leader:\n%s", calls)
	}
}
