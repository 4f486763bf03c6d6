// Package jujucli drives a Juju client command line: `juju status --format=json`,
// `juju add-unit APP -n K`, `juju remove-unit UNIT...` and `juju exec --unit UNIT -- argv`.
// The same verbs and flags work with real Juju (3.x) and with the local model's juju-local, so
// the autoscaler acts on either through [CLI.Path].
package jujucli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/libs/command"
)

// CLI runs a Juju client binary.
type CLI struct {
	// Path is the client binary: "juju", or build/bin/juju-local (which reads JUJU_LOCAL_DIR).
	Path string
	// Model, when set, is passed as -m MODEL (real Juju; juju-local has one model per directory).
	Model string
	// Env holds extra KEY=value entries for every command (e.g. JUJU_LOCAL_DIR).
	Env []string
	// Runner runs the commands (required): command.Exec{} on this host.
	Runner command.Runner
}

// Error is a Juju command that exited non-zero.
type Error struct {
	Argv     []string
	ExitCode int
	Stderr   string
}

func (e *Error) Error() string {
	return fmt.Sprintf("cannot run %s: exit status %d: %s", strings.Join(e.Argv, " "), e.ExitCode, e.Stderr)
}

// argv builds the command line of verb: Path verb [-m Model] args...
func (c *CLI) argv(verb string, args ...string) []string {
	argv := []string{c.Path, verb}
	if c.Model != "" {
		argv = append(argv, "-m", c.Model)
	}
	return append(argv, args...)
}

func (c *CLI) run(ctx context.Context, argv []string) ([]byte, error) {
	if c.Runner == nil || c.Path == "" {
		return nil, fmt.Errorf("juju client has no Runner or Path")
	}
	out, err := c.Runner.Run(ctx, argv, c.Env)
	if err != nil {
		return nil, err
	}
	if out.ExitCode != 0 {
		// Juju reports its errors on stderr ("ERROR ...").
		return nil, &Error{Argv: argv, ExitCode: out.ExitCode, Stderr: strings.TrimSpace(string(out.Stderr))}
	}
	return out.Stdout, nil
}

// Status is the part of `juju status --format=json` the autoscaler reads.
type Status struct {
	Applications map[string]Application `json:"applications"`
}

// Application is one application of Status.
type Application struct {
	Life  string          `json:"life,omitempty"`
	Units map[string]Unit `json:"units,omitempty"`
}

// Unit is one unit of an Application.
type Unit struct {
	// Life is "dying" once remove-unit has been asked (empty while alive).
	Life           string      `json:"life,omitempty"`
	Leader         bool        `json:"leader,omitempty"`
	Machine        string      `json:"machine"`
	WorkloadStatus StatusValue `json:"workload-status"`
	JujuStatus     StatusValue `json:"juju-status"`
}

// StatusValue is a status and its message.
type StatusValue struct {
	Current string `json:"current"`
	Message string `json:"message,omitempty"`
}

// Dying reports whether the unit is being removed.
func (u Unit) Dying() bool { return u.Life == "dying" || u.Life == "dead" }

// UnitNames returns the application's unit names sorted by unit number.
func (a Application) UnitNames() []string {
	names := make([]string, 0, len(a.Units))
	for n := range a.Units {
		names = append(names, n)
	}
	slices.SortFunc(names, func(x, y string) int { return unitNumber(x) - unitNumber(y) })
	return names
}

func unitNumber(unit string) int {
	_, n, _ := strings.Cut(unit, "/")
	i, _ := strconv.Atoi(n)
	return i
}

// Leader returns the application's leader unit (the lowest-numbered live unit when no leader
// is shown), or "" when it has none.
func (a Application) Leader() string {
	names := a.UnitNames()
	for _, n := range names {
		if a.Units[n].Leader {
			return n
		}
	}
	for _, n := range names {
		if !a.Units[n].Dying() {
			return n
		}
	}
	return ""
}

// ParseStatus parses `juju status --format=json`.
func ParseStatus(data []byte) (*Status, error) {
	var st Status
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("cannot parse juju status: %w", err)
	}
	if st.Applications == nil {
		return nil, fmt.Errorf("cannot parse juju status: no applications object")
	}
	return &st, nil
}

// Status runs `juju status --format=json`.
func (c *CLI) Status(ctx context.Context) (*Status, error) {
	out, err := c.run(ctx, c.argv("status", "--format=json"))
	if err != nil {
		return nil, err
	}
	return ParseStatus(out)
}

// AddUnit runs `juju add-unit APP -n N`.
func (c *CLI) AddUnit(ctx context.Context, app string, n int) error {
	if n < 1 {
		return fmt.Errorf("cannot add %d units to %s", n, app)
	}
	_, err := c.run(ctx, c.argv("add-unit", app, "-n", strconv.Itoa(n)))
	return err
}

// RemoveUnit runs `juju remove-unit UNIT...`. The units' charm drains their nodes, waits for
// their jobs and deletes them.
func (c *CLI) RemoveUnit(ctx context.Context, units ...string) error {
	if len(units) == 0 {
		return nil
	}
	_, err := c.run(ctx, c.argv("remove-unit", units...))
	return err
}

// UnitRunner is a command.Runner that runs each command on a unit's machine with
// `juju exec --unit UNIT -- env KEY=value... argv` and reports the command's own exit code.
type UnitRunner struct {
	CLI  *CLI
	Unit string
}

// Run implements command.Runner.
func (r UnitRunner) Run(ctx context.Context, argv []string, env []string) (command.Output, error) {
	if r.CLI == nil || r.CLI.Runner == nil {
		return command.Output{}, fmt.Errorf("unit runner has no juju client")
	}
	full := r.CLI.argv("exec", "--unit", r.Unit, "--")
	if len(env) > 0 {
		full = append(append(full, "env"), env...)
	}
	full = append(full, argv...)
	return r.CLI.Runner.Run(ctx, full, r.CLI.Env)
}
