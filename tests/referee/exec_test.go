package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/juju/cmd/v3"
	"github.com/juju/loggo"
	"github.com/juju/names/v5"
	"github.com/juju/utils/v3"
	"github.com/juju/utils/v3/exec"

	"github.com/juju/juju/cmd/jujud/agent/config"
	jujurun "github.com/juju/juju/cmd/jujud/run"
	"github.com/juju/juju/core/machinelock"
	"github.com/juju/juju/internal/worker/uniter"

	"github.com/charmed-slurm/operators/tests/model/jujuexec"
)

// TestJujuExec runs every juju-exec command line of jujuexec.Cases (the tests' and hostile
// ones) through Juju 3.6's own juju-exec, cmd/jujud/run's RunCommand run by juju/cmd's Main
// as jujud runs it (flags, Init, maybeGetUnitTag, executeInUnitContext: the agent directory,
// the relation checks, the run socket dialled and called), whose units' agents are Juju's own
// run listener (uniter.NewRunListener on the unit's uniter.Paths socket), and through the
// local model's juju-exec (jujuexec.Main) on a machine of the same layout. Exit code, output,
// and the unit and commands the agent was asked to run must be the same, and Want; a case the
// model does not play (Divergence) must still differ.
//
// Not run: Juju's --no-context runs the commands on the machine itself under the machine
// lock; the referee's lock refuses, so Juju's answer ends there (a Divergence).
func TestJujuExec(t *testing.T) {
	saved := config.DataDir
	t.Cleanup(func() { config.DataDir = saved })
	for _, c := range jujuexec.Cases {
		t.Run(c.Name, func(t *testing.T) {
			juju := runJuju(t, c)
			model := runModel(t, c)
			if c.Divergence != "" {
				if cmp.Equal(juju, model) {
					t.Errorf("declared divergence (%s), but Juju answers as the model: %+v", c.Divergence, juju)
				}
				if d := cmp.Diff(c.Want, model); d != "" {
					t.Errorf("the model's answer (-want +got):\n%s", d)
				}
				return
			}
			if d := cmp.Diff(juju, model); d != "" {
				t.Errorf("juju-exec %q: the model differs from Juju (-juju +model):\n%s", c.Args, d)
			}
			if d := cmp.Diff(c.Want, juju); d != "" {
				t.Errorf("juju-exec %q: Juju's answer is not the case's (-want +juju):\n%s", c.Args, d)
			}
		})
	}
}

// shortTemp is a temporary directory with a short path: a unix socket's address is short.
func shortTemp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "jx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// runModel runs c through the local model's juju-exec on a fake machine.
func runModel(t *testing.T, c jujuexec.Case) jujuexec.Result {
	t.Helper()
	m, err := jujuexec.NewFakeMachine(shortTemp(t), c)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r, err := m.Run(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runJuju runs c through Juju's juju-exec on a machine of c's layout whose units' agents are
// Juju's run listener with a runner answering as jujuexec's fake agents do.
func runJuju(t *testing.T, c jujuexec.Case) jujuexec.Result {
	t.Helper()
	data := shortTemp(t)
	if err := c.MakeAgentDirs(data); err != nil {
		t.Fatal(err)
	}
	// executeInUnitContext finds agent directories and sockets under config.DataDir, a
	// package variable Juju's own test sets too (run_test.go SetUpTest).
	config.DataDir = data
	runner := &recordingRunner{}
	for _, u := range c.Units {
		tag := names.NewUnitTag(u)
		rl, err := uniter.NewRunListener(uniter.NewPaths(data, tag, nil).Runtime.LocalJujuExecSocket.Server, loggo.GetLogger("referee.juju-exec"))
		if err != nil {
			t.Fatal(err)
		}
		rl.RegisterRunner(u, runner)
		defer rl.Close()
	}
	rc := &jujurun.RunCommand{MachineLock: refusingLock{}}
	if err := setDataDir(rc, data); err != nil {
		t.Fatal(err)
	}
	// Juju's Init reads JUJU_CONTEXT_ID from the process (os.Getenv); "" is unset to it.
	t.Setenv("JUJU_CONTEXT_ID", c.ContextID)
	var stdout, stderr strings.Builder
	ctx := &cmd.Context{Context: context.Background(), Dir: data, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}
	code := cmd.Main(rc, ctx, c.Args)
	r := jujuexec.Result{Code: code, Stdout: stdout.String(), Stderr: strings.ReplaceAll(stderr.String(), data, "<data>")}
	runner.mu.Lock()
	defer runner.mu.Unlock()
	switch len(runner.asked) {
	case 0:
	case 1:
		a := runner.asked[0]
		r.Unit, r.Commands = a.UnitName, a.Commands
		// What the model's agent is never asked: it shows as a difference.
		if a.RelationId != -1 || a.RemoteUnitName != "" || a.RemoteApplicationName != "" || a.Operator {
			r.Commands += fmt.Sprintf(" [relation %d, remote unit %q, remote app %q, operator %v]", a.RelationId, a.RemoteUnitName, a.RemoteApplicationName, a.Operator)
		}
	default:
		t.Fatalf("Juju's agents were asked %d times, want at most once", len(runner.asked))
	}
	return r
}

// setDataDir points RunCommand's maybeGetUnitTag at dir. RunCommand.dataDir, unexported, is
// the seam Juju's own test uses (run_test.go TestInferredUnit); jujud leaves it empty for
// paths.DataDir, /var/lib/juju, the default of config.DataDir too. The referee cannot run
// on the host's /var/lib/juju, so it sets the field through reflection; if Juju renames it,
// the test fails here.
func setDataDir(rc *jujurun.RunCommand, dir string) error {
	f := reflect.ValueOf(rc).Elem().FieldByName("dataDir")
	if !f.IsValid() || f.Kind() != reflect.String {
		return errors.New("juju's run.RunCommand has no dataDir string field")
	}
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().SetString(dir)
	return nil
}

// recordingRunner is the uniter's command runner behind Juju's run listener: it records
// what it is asked and answers as jujuexec's fake agents do.
type recordingRunner struct {
	mu    sync.Mutex
	asked []uniter.RunCommandsArgs
}

func (r *recordingRunner) RunCommands(args uniter.RunCommandsArgs) (*exec.ExecResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, args)
	return &exec.ExecResponse{Code: jujuexec.AgentCode, Stdout: []byte(jujuexec.AgentStdout), Stderr: []byte(jujuexec.AgentStderr)}, nil
}

// refusingLock is the machine lock of the referee's juju-exec: --no-context would run the
// commands on this machine, so it refuses.
type refusingLock struct{}

func (refusingLock) Acquire(machinelock.Spec) (func(), error) {
	return nil, errors.New("referee: --no-context would run the commands on this machine")
}

func (refusingLock) Report(...machinelock.ReportOption) (string, error) { return "", nil }

// FuzzUnitName: the model's unit name and tag rules are Juju's (github.com/juju/names, as
// RunCommand.Init applies them: a unit name, else a unit tag): the same units, the same
// errors, but for a tag of another kind that is not valid for that kind either, where Juju
// names the kind and the model says "unit tag" (jujuexec.UnitName).
func FuzzUnitName(f *testing.F) {
	for _, s := range []string{"slurmd/0", "unit-slurmd-3", "unit-a-b-c-10", "a/01", "unit-a-", "x", "", "-", "unit-",
		"unit-a-0-", "unit--0", "machine-0", "machine-x", "application-a", "user-bob", "unit-a/0", "a-b/1", "A/0", "a/-1",
		"unit-a-1x", "unit-a1-0", "unit-a-b1-0", "unit-1a-0", "model-x", "unit-ä-0", "a/0\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want string
		var wantErr error
		if names.IsValidUnit(s) {
			want = s
		} else if tag, err := names.ParseUnitTag(s); err == nil {
			want = tag.Id()
		} else {
			wantErr = err
		}
		got, err := jujuexec.UnitName(s)
		switch {
		case wantErr == nil && (err != nil || got != want):
			t.Fatalf("UnitName(%q) = %q, %v; Juju: %q", s, got, err, want)
		case wantErr != nil && err == nil:
			t.Fatalf("UnitName(%q) = %q; Juju: %v", s, got, wantErr)
		case wantErr != nil && err.Error() != wantErr.Error():
			kind, _, _ := strings.Cut(s, "-")
			if wantErr.Error() == fmt.Sprintf("%q is not a valid %s tag", s, kind) && kind != "unit" {
				return // the other kinds' rules are not played
			}
			t.Fatalf("UnitName(%q): %v; Juju: %v", s, err, wantErr)
		}
	})
}

// FuzzCommandString: the model joins several arguments into the commands as Juju's
// github.com/juju/utils CommandString does (the fuzzed string's NUL bytes part the arguments).
func FuzzCommandString(f *testing.F) {
	for _, s := range []string{"echo\x00a b", "env\x00A=b c\x00x\"$y\\z\x00plain", "\x00", "a\tb\x00c\nd", "'\x00\"\x00$\x00\\",
		"a\u00a0b\x00\u2028", "\xff\x00\xfe", "${HOME}\x00`id`\x00$(id)", "*\x00;\x00|\x00&&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		if got, want := jujuexec.CommandString(args...), utils.CommandString(args...); got != want {
			t.Fatalf("CommandString(%q) = %q; Juju: %q", args, got, want)
		}
	})
}
