package jujuexec

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/charmed-slurm/operators/tests/model/wire"
)

// Case is one juju-exec command line on a machine, with what juju-exec answers. The
// package's test runs each through Main on a FakeMachine; the referee (tests/referee
// TestJujuExec) runs each through Juju 3.6's cmd/jujud/run too and fails on any difference
// from Want, or, for a Divergence, on Juju answering Want.
type Case struct {
	Name string
	Args []string
	// ContextID is JUJU_CONTEXT_ID (empty: unset).
	ContextID string
	// Units have an agent directory and an agent answering on its run socket; Stopped have
	// an agent directory and no agent; Dirs are other directories in <data>/agents.
	Units, Stopped, Dirs []string
	// Want is the answer; "<data>" in Want.Stderr stands for the machine's data directory.
	Want Result
	// Divergence says why the local model answers otherwise than Juju: a part it does not
	// play. The referee checks that Juju's answer still differs.
	Divergence string
}

// Result is what a juju-exec run shows: its exit code and output, and the unit and
// commands it asked an agent to run (empty when it asked none).
type Result struct {
	Code           int
	Stdout, Stderr string
	Unit, Commands string
}

// The answer of every agent of a FakeMachine (and of the referee's agents in Juju's run
// listener): juju-exec prints it and exits with its code.
const (
	AgentStdout = "ran\n"
	AgentStderr = "warn\n"
	AgentCode   = 3
)

// sent is the Result of a command line the unit's agent ran.
func sent(unit, commands string) Result {
	return Result{Code: AgentCode, Stdout: AgentStdout, Stderr: AgentStderr, Unit: unit, Commands: commands}
}

// refused is the Result of a command line refused with exit code and message.
func refused(code int, message string) Result {
	return Result{Code: code, Stderr: "ERROR " + message + "\n"}
}

// one is a machine with one unit, slurmctld/0.
var one = []string{"slurmctld/0"}

// Cases are the juju-exec command lines of the tests (tests/model TestRuleJujuExec and
// TestRuleJujuExecLock, slurmctld-operator's waiter) and hostile or odd ones.
var Cases = []Case{
	// The tests' command lines.
	{Name: "unit and one command line", Args: []string{"slurmctld/0", "echo a b"}, Units: one, Want: sent("slurmctld/0", "echo a b")},
	{Name: "rule test script", Args: []string{"alpha/0", "echo \"$JUJU_CONTEXT_ID|${JUJU_HOOK_NAME-unset}\"\nis-leader --format=json\nexit 3"}, Units: []string{"alpha/0"},
		Want: sent("alpha/0", "echo \"$JUJU_CONTEXT_ID|${JUJU_HOOK_NAME-unset}\"\nis-leader --format=json\nexit 3")},
	{Name: "rule test: another machine's unit", Args: []string{"beta/0", "true"}, Units: []string{"alpha/0"}, Want: refused(1, `unit "beta/0" not found on this machine`)},
	{Name: "rule test: inside a hook", Args: []string{"alpha/0", "true"}, ContextID: "alpha/0-run-action-4", Units: []string{"alpha/0"},
		Want: refused(2, `juju-exec cannot be called from within a hook, have context "alpha/0-run-action-4"`)},
	{Name: "lock test: date", Args: []string{"alpha/0", "date +%s%N"}, Units: []string{"alpha/0"}, Want: sent("alpha/0", "date +%s%N")},
	{Name: "slurmctld waiter", Args: []string{"slurmctld/0", `JUJU_DISPATCH_PATH=hooks/update-status exec "$JUJU_CHARM_DIR/dispatch"`}, Units: one,
		Want: sent("slurmctld/0", `JUJU_DISPATCH_PATH=hooks/update-status exec "$JUJU_CHARM_DIR/dispatch"`)},

	// Choosing the unit.
	{Name: "unit tag", Args: []string{"unit-slurm-ctld-12", "true"}, Units: []string{"slurm-ctld/12"}, Want: sent("slurm-ctld/12", "true")},
	{Name: "-u unit tag", Args: []string{"-u", "unit-slurmctld-0", "true"}, Units: one, Want: sent("slurmctld/0", "true")},
	{Name: "the only unit, no name given", Args: []string{"hostname -f"}, Units: one, Want: sent("slurmctld/0", "hostname -f")},
	{Name: "the only unit, several arguments", Args: []string{"--", "hostname", "-f"}, Units: one, Want: sent("slurmctld/0", "hostname -f")},
	{Name: "-u empty: the only unit", Args: []string{"-u", "", "true"}, Units: one, Want: sent("slurmctld/0", "true")},
	{Name: "-u empty, two units", Args: []string{"-u", "", "true"}, Units: []string{"a/0", "b/0"}, Want: refused(2, "no unit")},
	{Name: "-u empty, no unit", Args: []string{"-u", "", "true"}, Want: refused(2, "no unit")},
	{Name: "no name and two units", Args: []string{"true"}, Units: []string{"a/0", "b/0"}, Want: refused(2, `"true" is not a valid tag`)},
	{Name: "no name and no unit", Args: []string{"true"}, Want: refused(2, `"true" is not a valid tag`)},
	{Name: "-u and a unit name as the first command", Args: []string{"-u", "slurmctld/0", "slurmctld/0", "true"}, Units: one, Want: sent("slurmctld/0", "slurmctld/0 true")},
	{Name: "a machine tag is a command on a one-unit machine", Args: []string{"machine-0", "true"}, Units: one, Want: sent("slurmctld/0", "machine-0 true")},
	{Name: "a machine tag, two units", Args: []string{"machine-0", "true"}, Units: []string{"a/0", "b/0"}, Want: refused(2, `"machine-0" is not a valid unit tag`)},
	{Name: "bad unit tag, two units", Args: []string{"unit-Slurm-0", "true"}, Units: []string{"a/0", "b/0"}, Want: refused(2, `"unit-Slurm-0" is not a valid unit tag`)},
	{Name: "unit tag with a leading zero, two units", Args: []string{"unit-a-00", "true"}, Units: []string{"a/0", "b/0"}, Want: refused(2, `"unit-a-00" is not a valid unit tag`)},
	{Name: "bad -u", Args: []string{"-u", "Slurm/0", "true"}, Units: one, Want: refused(2, `"Slurm/0" is not a valid tag`)},
	{Name: "-u machine tag", Args: []string{"-u", "machine-0", "true"}, Units: one, Want: refused(2, `"machine-0" is not a valid unit tag`)},
	{Name: "-u without a value", Args: []string{"-u"}, Units: one, Want: refused(2, "option needs an argument: -u")},
	{Name: "another machine's unit tag", Args: []string{"unit-slurmd-3", "true"}, Units: one, Want: refused(1, `unit "slurmd/3" not found on this machine`)},
	{Name: "agent directories that are no unit's", Args: []string{"true"}, Units: one, Dirs: []string{"machine-0", "unit-Bad-0", "unit-a-01", "unit-"},
		Want: sent("slurmctld/0", "true")},
	{Name: "a stopped unit counts", Args: []string{"true"}, Units: one, Stopped: []string{"slurmd/0"}, Want: refused(2, `"true" is not a valid tag`)},
	{Name: "unit whose agent is not running", Args: []string{"slurmctld/0", "true"}, Stopped: one,
		Want: refused(1, "dialing juju run socket: dial unix <data>/agents/unit-slurmctld-0/run.socket: connect: no such file or directory")},

	// The commands.
	{Name: "missing commands", Args: []string{"slurmctld/0"}, Units: one, Want: refused(2, "missing commands")},
	{Name: "missing unit", Units: one, Want: refused(2, "missing unit-name")},
	{Name: "empty command line", Args: []string{"slurmctld/0", ""}, Units: one, Want: sent("slurmctld/0", "")},
	{Name: "empty arguments", Args: []string{"slurmctld/0", "", ""}, Units: one, Want: sent("slurmctld/0", " ")},
	{Name: "only an empty argument", Args: []string{""}, Units: one, Want: sent("slurmctld/0", "")},
	{Name: "arguments joined as Juju does", Args: []string{"-u", "slurmctld/0", "--", "env", "A=b c", `x"$y\z`, "plain"}, Units: one,
		Want: sent("slurmctld/0", `env "A=b c" "x\"\$y\\z" plain`)},
	{Name: "quotes, tabs and newlines", Args: []string{"slurmctld/0", "printf", "%s\n", "a\tb", `'single'`, "*", "a;b"}, Units: one,
		Want: sent("slurmctld/0", "printf \"%s\n\" \"a\tb\" 'single' * a;b")},
	{Name: "dollar and backslash alone", Args: []string{"slurmctld/0", "echo", "$HOME", `\`, `"`}, Units: one,
		Want: sent("slurmctld/0", `echo "\$HOME" "\\" "\""`)},
	{Name: "one argument is passed as given", Args: []string{"slurmctld/0", `echo "$HOME" \ '"'`}, Units: one,
		Want: sent("slurmctld/0", `echo "$HOME" \ '"'`)},
	{Name: "non-ASCII space", Args: []string{"slurmctld/0", "echo", "a\u00a0b"}, Units: one, Want: sent("slurmctld/0", "echo \"a\u00a0b\"")},

	// Flags.
	{Name: "a flag among the commands", Args: []string{"slurmctld/0", "ls", "-l"}, Units: one, Want: refused(2, "option provided but not defined: -l")},
	{Name: "a flag after --", Args: []string{"slurmctld/0", "--", "ls", "-l"}, Units: one, Want: sent("slurmctld/0", "ls -l")},
	{Name: "unknown flag", Args: []string{"--bogus", "slurmctld/0", "true"}, Units: one, Want: refused(2, "option provided but not defined: --bogus")},
	{Name: "unknown flag inside a hook", Args: []string{"--bogus", "true"}, ContextID: "slurmctld/0-update-status-1", Units: one,
		Want: refused(2, "option provided but not defined: --bogus")},
	{Name: "help", Args: []string{"--help"}, Units: one, Want: Result{Stdout: usage},
		Divergence: "the model's usage text is shorter than Juju's"},
	{Name: "--no-context", Args: []string{"--no-context", "true"}, Units: one,
		Want:       refused(1, "--no-context is not played by the local model (Juju runs the commands on the machine, outside any unit's context)"),
		Divergence: "--no-context runs the commands on the machine under the machine lock: not played"},
	{Name: "--no-context with -u", Args: []string{"--no-context", "-u", "slurmctld/0", "true"}, Units: one,
		Want: refused(2, `-no-context cannot be passed with an explicit unit-name (-u "slurmctld/0")`)},
	{Name: "--no-context without commands", Args: []string{"--no-context"}, Units: one, Want: refused(2, "missing commands")},
	{Name: "relation context", Args: []string{"-r", "slurmd:1", "slurmctld/0", "true"}, Units: one,
		Want: refused(1, "relation contexts (-r) are not played by the local model"), Divergence: "relation contexts are not played"},
	{Name: "bad relation id", Args: []string{"-r", "slurmd:x", "slurmctld/0", "true"}, Units: one, Want: refused(1, "invalid relation id")},
	{Name: "--relation bad id, unknown unit", Args: []string{"--relation", "x", "slurmd/0", "true"}, Units: one, Want: refused(1, `unit "slurmd/0" not found on this machine`)},
	{Name: "remote unit without a relation", Args: []string{"--remote-unit", "slurmd/0", "slurmctld/0", "true"}, Units: one,
		Want: refused(1, "remote unit: slurmd/0, provided without a relation")},
	{Name: "remote app without a relation", Args: []string{"--remote-app", "slurmd", "slurmctld/0", "true"}, Units: one,
		Want: refused(1, "remote app: slurmd, provided without a relation")},
	{Name: "bad remote unit", Args: []string{"--remote-unit", "slurmd", "slurmctld/0", "true"}, Units: one,
		Want: refused(2, `remoteUnit "slurmd" is not a valid unit name: "slurmd" is not a valid unit name`)},
	{Name: "--force-remote-unit without a relation", Args: []string{"--force-remote-unit", "slurmctld/0", "true"}, Units: one, Want: sent("slurmctld/0", "true")},
	{Name: "--operator", Args: []string{"--operator", "slurmctld/0", "true"}, Units: one,
		Want:       refused(1, "--operator is not played by the local model (Juju plays it on Kubernetes only)"),
		Divergence: "--operator is for Kubernetes charms: not played"},
}

// FakeMachine is a machine's agent data directory for a Case: an agent directory for each
// of its units and stopped units, and for each unit an agent answering on its run socket
// with AgentStdout, AgentStderr and AgentCode, which records what it was asked. It is a fake
// for the tests of this package and the referee; the model's own agents are tested for real
// (tests/model TestRuleJujuExec).
type FakeMachine struct {
	DataDir string
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closers []io.Closer
	mu      sync.Mutex
	asked   []wire.Request
}

// MakeAgentDirs makes the agent directories of c's machine in dataDir: its units', its
// stopped units' and its other directories.
func (c Case) MakeAgentDirs(dataDir string) error {
	var dirs []string
	for _, u := range append(slices.Clone(c.Units), c.Stopped...) {
		dirs = append(dirs, UnitTag(u))
	}
	for _, d := range append(dirs, c.Dirs...) {
		if err := os.MkdirAll(filepath.Join(dataDir, "agents", d), 0o755); err != nil {
			return fmt.Errorf("cannot make an agent directory: %w", err)
		}
	}
	return nil
}

// NewFakeMachine makes the machine of c under dataDir (short: a socket path has a limit).
func NewFakeMachine(dataDir string, c Case) (*FakeMachine, error) {
	if err := c.MakeAgentDirs(dataDir); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &FakeMachine{DataDir: dataDir, cancel: cancel}
	for _, u := range c.Units {
		ln, err := net.Listen("unix", filepath.Join(dataDir, "agents", UnitTag(u), RunSocket))
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("cannot listen on %s's run socket: %w", u, err)
		}
		m.closers = append(m.closers, ln)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			wire.Serve(ctx, ln, m.answer, &m.wg)
		}()
	}
	return m, nil
}

func (m *FakeMachine) answer(_ context.Context, req wire.Request, stdout, stderr io.Writer) int {
	m.mu.Lock()
	m.asked = append(m.asked, req)
	m.mu.Unlock()
	io.WriteString(stdout, AgentStdout)
	io.WriteString(stderr, AgentStderr)
	return AgentCode
}

// Run runs c's command line through Main on the machine and returns what it shows.
func (m *FakeMachine) Run(c Case) (Result, error) {
	var stdout, stderr strings.Builder
	code := Main(c.Args, Env{
		Getenv:  func(k string) string { return map[string]string{"JUJU_CONTEXT_ID": c.ContextID}[k] },
		DataDir: m.DataDir, Stdout: &stdout, Stderr: &stderr,
	})
	r := Result{Code: code, Stdout: stdout.String(), Stderr: strings.ReplaceAll(stderr.String(), m.DataDir, "<data>")}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch len(m.asked) {
	case 0:
	case 1:
		if a := m.asked[0].Argv; len(a) != 3 || a[0] != Name {
			return r, fmt.Errorf("the agent was asked %q, want juju-exec <unit> <commands>", a)
		}
		r.Unit, r.Commands = m.asked[0].Argv[1], m.asked[0].Argv[2]
	default:
		return r, fmt.Errorf("the agents were asked %d times, want once", len(m.asked))
	}
	m.asked = nil
	return r, nil
}

// Close stops the agents.
func (m *FakeMachine) Close() {
	m.cancel()
	for _, c := range m.closers {
		c.Close()
	}
	m.wg.Wait()
}
