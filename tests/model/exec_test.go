package model_test

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/model"
)

// jujuExec runs `juju-exec args...` on unit's machine, outside any hook, as a process on the
// machine (a charm's own waiter, an administrator) runs it.
func jujuExec(t *testing.T, m *model.Model, unit string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	tools, err := m.ToolsDir(unit)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code, err = m.Exec(ctx, unit, append([]string{filepath.Join(tools, model.JujuExec)}, args...), &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// TestRuleJujuExec: juju-exec on a unit's machine runs commands in a hook context of the unit
// (Juju 3.6: cmd/jujud/run, internal/worker/uniter/runlistener.go, operation/runcommands.go,
// runner/runner.go): the hook tools work, the environment is a hook's without a hook name or
// dispatch path, the working directory is the charm directory, the output and exit code come
// back, and the context's writes are committed whatever the exit code. It refuses inside a
// hook and names a unit not on its machine.
func TestRuleJujuExec(t *testing.T) {
	t.Parallel()
	forEachMachines(t, func(t *testing.T, prov func(*testing.T, string) model.Provisioner) {
		t.Parallel()
		m := newModel(t, modelOptions{provIn: prov})
		deploy(t, m, "alpha", 1, nil)
		deploy(t, m, "beta", 1, nil)
		id, err := m.Integrate(context.Background(), "alpha:source", "beta:sink")
		if err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)

		script := `echo "$JUJU_CONTEXT_ID|${JUJU_HOOK_NAME-unset}|${JUJU_DISPATCH_PATH-unset}|$JUJU_UNIT_NAME|$JUJU_RELATION_ID"
[ "$PWD" = "$JUJU_CHARM_DIR" ] && echo in-charm-dir
is-leader --format=json
status-set active from-juju-exec
relation-set -r "$(relation-ids source)" exec=yes
echo to-stderr >&2
exit 3`
		code, stdout, stderr := jujuExec(t, m, "alpha/0", "alpha/0", script)
		if code != 3 || stderr != "to-stderr\n" {
			t.Errorf("juju-exec: exit %d, stderr %q; want 3, \"to-stderr\\n\"", code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) != 3 {
			t.Fatalf("juju-exec printed %q, want 3 lines", stdout)
		}
		f := strings.Split(lines[0], "|")
		if !strings.HasPrefix(f[0], "alpha/0-run-commands-") || f[1] != "" || f[2] != "unset" || f[3] != "alpha/0" || f[4] != "" {
			t.Errorf("environment %q: want context alpha/0-run-commands-<n>, JUJU_HOOK_NAME set and empty, no JUJU_DISPATCH_PATH, JUJU_UNIT_NAME alpha/0, no relation", lines[0])
		}
		if lines[1] != "in-charm-dir" || lines[2] != "true" {
			t.Errorf("working directory and is-leader: %q, want in-charm-dir and true", lines[1:])
		}
		st := m.Status(context.Background())
		if u := st.Applications["alpha"].Units["alpha/0"]; u.WorkloadStatus.Current != "active" || u.WorkloadStatus.Message != "from-juju-exec" {
			t.Errorf("alpha/0 status %s %q, want active from-juju-exec", u.WorkloadStatus.Current, u.WorkloadStatus.Message)
		}
		// Juju flushes a run-commands context whatever the commands' exit code.
		if got := m.State().Relations[id].UnitData["alpha/0"]["exec"]; got != "yes" {
			t.Errorf("relation data written by commands that exited 3: exec=%q, want it committed (yes)", got)
		}

		code, _, stderr = jujuExec(t, m, "alpha/0", "beta/0", "true")
		if code != 1 || stderr != "ERROR unit \"beta/0\" not found on this machine\n" {
			t.Errorf("juju-exec for another machine's unit: exit %d, stderr %q", code, stderr)
		}
		_, stderr2, exit := runTool(t, m, "alpha/0", model.JujuExec, "alpha/0", "true")
		if exit != "2" || !strings.Contains(stderr2, "juju-exec cannot be called from within a hook, have context \"alpha/0-") {
			t.Errorf("juju-exec inside an action: exit %s, stderr %q; want 2 and the refusal", exit, stderr2)
		}
	})
}

// TestRuleJujuExecLock: juju-exec's commands wait for the hook that runs (the machine lock) and
// run on a unit in error, which stays in error.
func TestRuleJujuExecLock(t *testing.T) {
	t.Parallel()
	m := newModel(t, modelOptions{hookRetry: -1})
	deploy(t, m, "alpha", 1, nil)
	waitIdle(t, m)
	ctx := context.Background()
	lines, stop := m.Subscribe()
	defer stop()
	if err := m.SetConfig(ctx, "alpha", map[string]string{"slow-hooks": "config-changed=2s"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, "the slow config-changed", func(h map[string][]record) bool { return len(find(h["alpha/0"], "config-changed")) >= 2 })
	_, stdout, _ := jujuExec(t, m, "alpha/0", "alpha/0", "date +%s%N")
	started, err := strconv.ParseInt(strings.TrimSpace(stdout), 10, 64)
	if err != nil {
		t.Fatalf("juju-exec printed %q: %v", stdout, err)
	}
	var ended time.Time
	for _, s := range spans(m)["alpha/0"] {
		if s.Hook == "config-changed" {
			ended = s.End
		}
	}
	if ended.IsZero() || time.Unix(0, started).Before(ended) {
		t.Errorf("juju-exec's commands started at %v, the slow config-changed ended at %v: want them after it", time.Unix(0, started), ended)
	}
	// The model's progress lines, as Juju's unit log: the hook, then the commands.
	var seen []string
	want := []string{"alpha/0: running config-changed hook", `alpha/0: ran "config-changed" hook (via hook dispatching script: dispatch)`,
		"alpha/0: running commands", "alpha/0: ran commands (exit 0)"}
drain:
	for {
		select {
		case l := <-lines:
			if slices.Contains(want, l) {
				seen = append(seen, l)
			}
		default:
			break drain
		}
	}
	if d := cmp.Diff(want, seen); d != "" {
		t.Errorf("progress lines (-want +got):\n%s", d)
	}

	if err := m.SetConfig(ctx, "alpha", map[string]string{"slow-hooks": "", "fail-hooks": "config-changed"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, "config-changed failure", func(map[string][]record) bool {
		return m.State().Units["alpha/0"].Failed != nil
	})
	code, stdout, _ := jujuExec(t, m, "alpha/0", "alpha/0", "echo ran")
	if code != 0 || stdout != "ran\n" {
		t.Errorf("juju-exec on a unit in error: exit %d, stdout %q; want 0, ran", code, stdout)
	}
	if u := m.State().Units["alpha/0"]; u.Failed == nil || u.Agent.Status != "error" {
		t.Errorf("after juju-exec on a unit in error: failed hook %v, agent %s %q; want still in error", u.Failed, u.Agent.Status, u.Agent.Message)
	}
}
