package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"github.com/charmed-slurm/operators/tests/model/wire"
)

// execEnv is what juju-exec reads from its process.
type execEnv struct {
	// Getenv reads the environment (JUJU_CONTEXT_ID).
	Getenv func(string) string
	// DataDir is the agent data directory (/var/lib/juju on a machine).
	DataDir string
	// Stdout and Stderr take the commands' output and juju-exec's errors.
	Stdout, Stderr io.Writer
}

// jujuExec is juju-exec as Juju 3.6's jujud plays it (cmd/jujud/run/run.go): `juju-exec
// [-u <unit>] [<unit>] <commands>` asks the unit's agent, through the run socket in its agent
// directory, to run the commands in a hook context of the unit, prints their output and exits
// with their exit code. A unit name that is neither a unit nor a unit tag is taken for the
// first command when the machine holds only one unit. One argument is the commands as given;
// several are joined as a shell command line. Exit codes are juju/cmd's: 2 for a command-line
// error (in a hook context, a bad flag, a missing unit or command), 1 for a failure to run.
// --no-context and the relation flags are not played by the local model, and say so.
func jujuExec(args []string, env execEnv) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(env.Stderr, "ERROR "+format+"\n", a...)
		return code
	}
	if id := env.Getenv("JUJU_CONTEXT_ID"); id != "" {
		return fail(2, "juju-exec cannot be called from within a hook, have context %q", id)
	}
	flags := flag.NewFlagSet("juju-exec", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	unitFlag := flags.String("u", "-", "explicit unit-name")
	var unplayed []*bool
	for _, name := range []string{"no-context", "force-remote-unit", "operator"} {
		unplayed = append(unplayed, flags.Bool(name, false, ""))
	}
	var unplayedS []*string
	for _, name := range []string{"r", "relation", "remote-unit", "remote-app"} {
		unplayedS = append(unplayedS, flags.String(name, "", ""))
	}
	if err := flags.Parse(args); err != nil {
		return fail(2, "%v", err)
	}
	for _, b := range unplayed {
		if *b {
			return fail(2, "--no-context, --force-remote-unit and --operator are not played by the local model")
		}
	}
	for _, s := range unplayedS {
		if *s != "" {
			return fail(2, "relation contexts (-r, --remote-unit, --remote-app) are not played by the local model")
		}
	}
	rest := flags.Args()
	var unit string
	switch u := *unitFlag; u {
	case "-":
		if len(rest) < 1 {
			return fail(2, "missing unit-name")
		}
		var err error
		if unit, err = unitName(rest[0]); err == nil {
			rest = rest[1:]
		} else if unit, err = onlyUnit(env.DataDir); err != nil {
			return fail(2, "%q is neither a unit name nor a unit tag, and %v", rest[0], err)
		}
	case "":
		var err error
		if unit, err = onlyUnit(env.DataDir); err != nil {
			return fail(2, "%v", err)
		}
	default:
		var err error
		if unit, err = unitName(u); err != nil {
			return fail(2, "%v", err)
		}
	}
	if len(rest) < 1 {
		return fail(2, "missing commands")
	}
	commands := rest[0]
	if len(rest) > 1 {
		commands = commandString(rest)
	}
	agentDir := filepath.Join(env.DataDir, "agents", unitTag(unit))
	dir, err := os.Open(agentDir)
	if errors.Is(err, fs.ErrNotExist) {
		return fail(1, "unit %q not found on this machine", unit)
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	defer dir.Close()
	// Through the open directory: a machine's agent directory may be too long a path for a
	// unix socket address.
	sock := fmt.Sprintf("/proc/self/fd/%d/run.socket", dir.Fd())
	code, err := wire.Call(context.Background(), sock, wire.Request{Argv: []string{"juju-exec", unit, commands}}, env.Stdout, env.Stderr)
	if err != nil {
		return fail(1, "dialing juju run socket: %v", err)
	}
	return code
}

var (
	// appName and unitRE are Juju's application and unit name rules (github.com/juju/names).
	appName = `[a-z][a-z0-9]*(?:-[a-z0-9]*[a-z][a-z0-9]*)*`
	unitRE  = regexp.MustCompile(`^` + appName + `/(?:0|[1-9][0-9]*)$`)
	tagRE   = regexp.MustCompile(`^unit-(` + appName + `)-((?:0|[1-9][0-9]*))$`)
)

// unitName takes a unit name (app/0) or a unit tag (unit-app-0) and returns the unit name.
func unitName(s string) (string, error) {
	if unitRE.MatchString(s) {
		return s, nil
	}
	if m := tagRE.FindStringSubmatch(s); m != nil {
		return m[1] + "/" + m[2], nil
	}
	return "", fmt.Errorf("%q is not a valid unit tag", s)
}

// unitTag is the unit's agent directory name: unit-<app>-<n>.
func unitTag(unit string) string { return "unit-" + strings.ReplaceAll(unit, "/", "-") }

// onlyUnit is the unit of the machine's only unit agent directory, if there is exactly one.
func onlyUnit(dataDir string) (string, error) {
	entries, _ := os.ReadDir(filepath.Join(dataDir, "agents"))
	var units []string
	for _, e := range entries {
		if u, err := unitName(e.Name()); err == nil && e.IsDir() && strings.HasPrefix(e.Name(), "unit-") {
			units = append(units, u)
		}
	}
	if len(units) != 1 {
		return "", errors.New("no unit")
	}
	return units[0], nil
}

// commandString joins args into one shell command line as Juju does (juju/utils
// CommandString): an argument with a space, or with ", $ or \ (each escaped with \), is
// double-quoted; the others are left as they are.
func commandString(args []string) string {
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

// dataDir is the agent data directory of the machine juju-exec runs on: the one holding the
// tools directory it was found in (<data>/tools/unit-<app>-<n>/juju-exec; the local model's
// machines without their own mount namespace keep /var/lib/juju below a root), else Juju's
// /var/lib/juju.
func dataDir(argv0 string, lookPath func(string) (string, error)) string {
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
