// Package jujuexec is the local model's juju-exec client, played as Juju 3.6's jujud plays it
// (cmd/jujud/run: RunCommand's flags, Init, maybeGetUnitTag and executeInUnitContext, run by
// github.com/juju/cmd's Main): `juju-exec [-u <unit>] [<unit>] <commands>` asks the unit's
// agent, through the run socket in the unit's agent directory, to run the commands in a hook
// context of the unit, prints their output and exits with their exit code. jujuc
// (tests/cmd/jujuc) runs Main under the name juju-exec.
//
// The command line is parsed by Juju's own flag package (github.com/juju/gnuflag, flags
// interspersed with arguments up to "--", as juju/cmd's Main parses it). The unit is a unit
// name or a unit tag; without one (or with -u ""), the machine's only unit. One argument is
// the commands as given; several are joined as Juju's CommandString joins them. Exit codes
// are juju/cmd's: 2 for a command-line error (Init's), 1 for a failure to run (Run's), else
// the commands' own.
//
// Not played: --no-context (Juju runs the commands on the machine under the machine lock,
// without a unit), a relation context (-r with --remote-unit, --remote-app,
// --force-remote-unit) and --operator (Kubernetes charms only). Juju's checks of those
// flags are played; where Juju would go on to run them, juju-exec refuses, exit 1, saying
// so. Cases lists them as divergences, which the referee keeps checking.
//
// The tests/referee module runs every command line of Cases through this package and
// through Juju's own cmd/jujud/run, and fails on any difference it does not list.
//
// It imports only the standard library, gnuflag and tests/model/wire: jujuc's start-up is
// part of every hook tool call (importing Juju's github.com/juju/names made a tool call's
// process 1.29 times as long, docs/fidelity.md; its unit-name and unit-tag rules are played
// here, and the referee fuzzes them against it). gnuflag changed nothing measurable
// (median ratio 1.00, the same measure).
package jujuexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/juju/gnuflag"

	"github.com/charmed-slurm/operators/tests/model/wire"
)

// Name is the command's name: jujuc is juju-exec under this name.
const Name = "juju-exec"

// RunSocket is the name of the run socket in each unit's agent directory
// (<data>/agents/unit-<app>-<n>/run.socket), where Juju's uniter listens too.
const RunSocket = "run.socket"

// Env is what juju-exec reads from its process.
type Env struct {
	// Getenv reads the environment (JUJU_CONTEXT_ID).
	Getenv func(string) string
	// DataDir is the agent data directory (/var/lib/juju on a machine).
	DataDir string
	// Stdout and Stderr take the commands' output and juju-exec's errors.
	Stdout, Stderr io.Writer
}

// command is one juju-exec command line, parsed: RunCommand's fields.
type command struct {
	unitFlag                             string // -u; "-" when not given
	noContext, forceRemoteUnit, operator bool
	relation, remoteUnit, remoteApp      string
	unit                                 string // the unit chosen, a unit name
	commands                             string
}

// Main runs juju-exec with args (without the command's name) and returns its exit code.
func Main(args []string, env Env) int {
	c, err := parse(args, env)
	if errors.Is(err, gnuflag.ErrHelp) {
		fmt.Fprint(env.Stdout, usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "ERROR %v\n", err)
		return 2
	}
	code, err := c.run(env)
	if err != nil {
		fmt.Fprintf(env.Stderr, "ERROR %v\n", err)
		return 1
	}
	return code
}

// usage is juju-exec's help, shorter than Juju's.
const usage = `Usage: juju-exec [flags] [-u] [<unit-name>] <commands>

Run the specified commands in the hook context for the unit.

Flags:
-u (= "-")
    explicit unit-name, all other arguments are commands. if -u is passed an empty string, unit-name is inferred from state
`

// parse is RunCommand's SetFlags and Init, after juju/cmd's Main: flags first, then the hook
// context check, then the unit and the commands.
func parse(args []string, env Env) (*command, error) {
	c := &command{}
	f := gnuflag.NewFlagSetWithFlagKnownAs(Name, gnuflag.ContinueOnError, "option")
	f.SetOutput(io.Discard)
	f.BoolVar(&c.noContext, "no-context", false, "")
	f.StringVar(&c.relation, "r", "", "")
	f.StringVar(&c.relation, "relation", "", "")
	f.StringVar(&c.remoteUnit, "remote-unit", "", "")
	f.StringVar(&c.remoteApp, "remote-app", "", "")
	f.BoolVar(&c.operator, "operator", false, "")
	f.BoolVar(&c.forceRemoteUnit, "force-remote-unit", false, "")
	f.StringVar(&c.unitFlag, "u", "-", "")
	if err := f.Parse(true, args); err != nil {
		return nil, err
	}
	if id := env.Getenv("JUJU_CONTEXT_ID"); id != "" {
		return nil, fmt.Errorf("juju-exec cannot be called from within a hook, have context %q", id)
	}
	if c.remoteApp == "" && c.remoteUnit != "" {
		m := unitRE.FindStringSubmatch(c.remoteUnit)
		if m == nil {
			return nil, fmt.Errorf("remoteUnit %q is not a valid unit name: %q is not a valid unit name", c.remoteUnit, c.remoteUnit)
		}
		c.remoteApp = m[1]
	}
	rest := f.Args()
	switch {
	case c.noContext && c.unitFlag != "-":
		return nil, fmt.Errorf("-no-context cannot be passed with an explicit unit-name (-u %q)", c.unitFlag)
	case c.noContext:
	case c.unitFlag == "-":
		if len(rest) < 1 {
			return nil, errors.New("missing unit-name")
		}
		unit, err := UnitName(rest[0])
		if err == nil {
			c.unit, rest = unit, rest[1:]
		} else if c.unit, _ = onlyUnit(env.DataDir); c.unit == "" {
			return nil, err
		}
	case c.unitFlag == "":
		unit, err := onlyUnit(env.DataDir)
		if err != nil {
			return nil, err
		}
		c.unit = unit
	default:
		unit, err := UnitName(c.unitFlag)
		if err != nil {
			return nil, err
		}
		c.unit = unit
	}
	if len(rest) < 1 {
		return nil, errors.New("missing commands")
	}
	c.commands = rest[0]
	if len(rest) > 1 {
		c.commands = CommandString(rest...)
	}
	return c, nil
}

// run is RunCommand's Run (executeInUnitContext): the unit's agent directory must be on
// this machine, the relation flags must make sense, and the agent answers through its run
// socket.
func (c *command) run(env Env) (int, error) {
	if c.noContext {
		return 0, errors.New("--no-context is not played by the local model (Juju runs the commands on the machine, outside any unit's context)")
	}
	agentDir := filepath.Join(env.DataDir, "agents", UnitTag(c.unit))
	if _, err := os.Stat(agentDir); errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("unit %q not found on this machine", c.unit)
	} else if err != nil {
		return 0, err
	}
	relationID, err := checkRelationID(c.relation)
	if err != nil {
		return 0, err
	}
	if c.remoteUnit != "" && relationID == -1 {
		return 0, fmt.Errorf("remote unit: %s, provided without a relation", c.remoteUnit)
	}
	if c.remoteApp != "" && relationID == -1 {
		return 0, fmt.Errorf("remote app: %s, provided without a relation", c.remoteApp)
	}
	if relationID != -1 {
		return 0, errors.New("relation contexts (-r) are not played by the local model")
	}
	if c.operator {
		return 0, errors.New("--operator is not played by the local model (Juju plays it on Kubernetes only)")
	}
	// --force-remote-unit without a relation changes nothing in Juju's agent
	// (runner/context/contextfactory.go inferRemoteUnit).
	dir, err := os.Open(agentDir)
	if err != nil {
		return 0, err
	}
	defer dir.Close()
	// Through the open directory: a machine's agent directory may be too long a path for a
	// unix socket address.
	sock := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), RunSocket)
	code, err := wire.Call(context.Background(), sock, wire.Request{Argv: []string{Name, c.unit, c.commands}}, env.Stdout, env.Stderr)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			// As Juju words it, with the socket's own path.
			op.Addr = &net.UnixAddr{Name: filepath.Join(agentDir, RunSocket), Net: "unix"}
			return 0, fmt.Errorf("dialing juju run socket: %w", op)
		}
		return 0, fmt.Errorf("dialing juju run socket: %w", err)
	}
	return code, nil
}

// checkRelationID is Juju's checkRelationId: -1 for none, else the number after the last
// colon ("slurmd:3" or "3"); the relation itself is the agent's to check.
func checkRelationID(value string) (int, error) {
	if value == "" {
		return -1, nil
	}
	if i := strings.LastIndex(value, ":"); i != -1 {
		value = value[i+1:]
	}
	id, err := strconv.Atoi(value)
	if err != nil {
		return -1, errors.New("invalid relation id")
	}
	return id, nil
}

var (
	// appName and unitRE are Juju's application and unit name rules (github.com/juju/names).
	appName = `[a-z][a-z0-9]*(?:-[a-z0-9]*[a-z][a-z0-9]*)*`
	unitRE  = regexp.MustCompile(`^(` + appName + `)/(?:0|[1-9][0-9]*)$`)
)

// tagKinds are the kinds of tag github.com/juju/names knows (names.TagKind).
var tagKinds = map[string]bool{
	"unit": true, "machine": true, "application": true, "applicationoffer": true, "environment": true,
	"user": true, "relation": true, "action": true, "volume": true, "charm": true, "storage": true,
	"operation": true, "filesystem": true, "ipaddress": true, "space": true, "subnet": true,
	"payload": true, "model": true, "controller": true, "cloud": true, "cloudcred": true, "caasmodel": true,
}

// UnitName takes a unit name (app/0) or a unit tag (unit-app-0) and returns the unit name,
// or names.ParseUnitTag's error: "… is not a valid tag" for what is no tag, "… is not a valid
// unit tag" for a tag of the unit kind (or of another kind) that names no unit. Juju names the
// other kind instead when the tag is not valid for that kind either (machine-x); the model
// does not play the other kinds' rules.
func UnitName(s string) (string, error) {
	if unitRE.MatchString(s) {
		return s, nil
	}
	i := strings.Index(s, "-")
	if i <= 0 || !tagKinds[s[:i]] {
		return "", fmt.Errorf("%q is not a valid tag", s)
	}
	if id := s[i+1:]; s[:i] == "unit" {
		if j := strings.LastIndex(id, "-"); j > 0 {
			id = id[:j] + "/" + id[j+1:]
		}
		if unitRE.MatchString(id) {
			return id, nil
		}
	}
	return "", fmt.Errorf("%q is not a valid unit tag", s)
}

// UnitTag is the unit's tag, its agent directory's name: unit-<app>-<n>.
func UnitTag(unit string) string { return "unit-" + strings.ReplaceAll(unit, "/", "-") }

// onlyUnit is Juju's maybeGetUnitTag: the unit of the machine's only agent directory named
// by a unit tag, if there is exactly one.
func onlyUnit(dataDir string) (string, error) {
	entries, _ := os.ReadDir(filepath.Join(dataDir, "agents"))
	var units []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "unit-") {
			continue
		}
		if u, err := UnitName(e.Name()); err == nil {
			units = append(units, u)
		}
	}
	if len(units) != 1 {
		return "", errors.New("no unit")
	}
	return units[0], nil
}

// CommandString joins args into one shell command line as Juju does (juju/utils
// CommandString): an argument with a space, or with ", $ or \ (each escaped with \), is
// double-quoted; the others are left as they are.
func CommandString(args ...string) string {
	var b strings.Builder
	for i, arg := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		var q strings.Builder
		quote := false
		for _, r := range arg {
			switch {
			case unicode.IsSpace(r):
				quote = true
			case r == '"' || r == '$' || r == '\\':
				quote = true
				q.WriteByte('\\')
			}
			q.WriteRune(r)
		}
		if quote {
			b.WriteString(`"` + q.String() + `"`)
		} else {
			b.WriteString(q.String())
		}
	}
	return b.String()
}

// DataDir is the agent data directory of the machine juju-exec runs on: the one holding the
// tools directory it was found in (<data>/tools/unit-<app>-<n>/juju-exec; the local model's
// machines without their own mount namespace keep /var/lib/juju below a root), else Juju's
// /var/lib/juju.
func DataDir(argv0 string, lookPath func(string) (string, error)) string {
	p := argv0
	if !strings.Contains(p, "/") {
		if found, err := lookPath(p); err == nil {
			p = found
		}
	}
	if tools := filepath.Dir(filepath.Dir(p)); filepath.IsAbs(p) && filepath.Base(tools) == "tools" {
		return filepath.Dir(tools)
	}
	return "/var/lib/juju"
}
