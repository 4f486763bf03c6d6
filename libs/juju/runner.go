package juju

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/charmed-slurm/operators/libs/command"
)

// Command is one hook tool invocation.
type Command struct {
	// Args is the argv: Args[0] is the hook tool's name (relation-get),
	// the rest its arguments. Never a shell string.
	Args []string
	// Stdin is written to the tool's standard input; nil means no input.
	Stdin []byte
}

// Result is what a finished hook tool produced.
type Result struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
}

// Runner runs hook tools. Run returns an error only when the tool could
// not be run at all (not found, ctx cancelled); a tool that ran and failed
// reports it through Result.ExitCode and Result.Stderr.
type Runner interface {
	Run(ctx context.Context, cmd Command) (Result, error)
}

// ExecRunner runs hook tools as processes with os/exec. It is the Runner
// charms use at runtime.
type ExecRunner struct {
	// ToolsDir, if set, is the directory holding the hook tools; otherwise
	// they are looked up on PATH (where Juju puts them).
	ToolsDir string
	// Env, if non-nil, is the tools' environment; nil inherits the
	// charm's environment (JUJU_CONTEXT_ID and friends), which is what
	// Juju's tools need.
	Env []string
}

// Run implements Runner, with command.Exec: the project's one exec runner.
func (r ExecRunner) Run(ctx context.Context, c Command) (Result, error) {
	if len(c.Args) == 0 {
		return Result{}, errors.New("cannot run hook tool: empty command")
	}
	name := c.Args[0]
	if r.ToolsDir != "" && !strings.ContainsRune(name, '/') {
		name = filepath.Join(r.ToolsDir, name)
	}
	x := command.Exec{Command: func(ctx context.Context, argv []string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = r.Env
		return cmd
	}}
	out, err := x.RunInput(ctx, append([]string{name}, c.Args[1:]...), nil, c.Stdin)
	res := Result{Stdout: out.Stdout, Stderr: out.Stderr, ExitCode: out.ExitCode}
	if err != nil {
		return res, fmt.Errorf("cannot run hook tool %s: %w", c.Args[0], err)
	}
	return res, nil
}

// HookToolError is a hook tool that ran and exited non-zero.
type HookToolError struct {
	Tool     string   // relation-set
	Args     []string // the arguments after the tool name; secret values redacted
	ExitCode int
	Stderr   string // the tool's message, e.g. "ERROR cannot write relation settings"
}

func (e *HookToolError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = "no message"
	}
	return fmt.Sprintf("hook tool %s failed with exit code %d: %s", e.Tool, e.ExitCode, msg)
}

// redactedTools lists tools whose key=value arguments carry secret content.
var redactedTools = map[string]bool{"secret-add": true, "secret-set": true}

func redact(args []string) []string {
	if len(args) == 0 || !redactedTools[args[0]] {
		return append([]string(nil), args[1:]...)
	}
	out := make([]string, 0, len(args)-1)
	for _, a := range args[1:] {
		if k, _, ok := strings.Cut(a, "="); ok && !strings.HasPrefix(a, "-") {
			a = k + "=<redacted>"
		}
		out = append(out, a)
	}
	return out
}

// run runs one tool and turns a non-zero exit into a *HookToolError.
func run(ctx context.Context, r Runner, stdin []byte, args ...string) ([]byte, error) {
	res, err := r.Run(ctx, Command{Args: args, Stdin: stdin})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, &HookToolError{Tool: args[0], Args: redact(args), ExitCode: res.ExitCode, Stderr: string(res.Stderr)}
	}
	return res.Stdout, nil
}

// runJSON runs one tool and decodes its JSON output into v.
func runJSON(ctx context.Context, r Runner, v any, args ...string) error {
	out, err := run(ctx, r, nil, args...)
	if err != nil {
		return err
	}
	if err := decodeJSON(out, v); err != nil {
		return fmt.Errorf("cannot decode output of %s: %w", args[0], err)
	}
	return nil
}
