package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// Output is what a command printed and how it exited.
type Output struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
}

// Runner runs one command. argv[0] is the program; env holds extra KEY=value entries added
// to the runner's environment. A command that ran and exited non-zero is not an error of
// Run: it is reported through Output.ExitCode. Run returns an error only when the command
// could not be run at all (not found, context cancelled, killed by a signal).
type Runner interface {
	Run(ctx context.Context, argv []string, env []string) (Output, error)
}

// ExecRunner runs commands with os/exec.
type ExecRunner struct {
	// Command builds the command to run; nil means exec.CommandContext on this host. Tests
	// running Slurm inside namespaces pass a function that wraps argv in nsenter.
	// If the returned cmd has a nil Env, the current process environment is used.
	Command func(ctx context.Context, argv []string) *exec.Cmd
}

// Run implements [Runner].
func (r ExecRunner) Run(ctx context.Context, argv []string, env []string) (Output, error) {
	if len(argv) == 0 {
		return Output{}, errors.New("cannot run command: empty argv")
	}
	var cmd *exec.Cmd
	if r.Command != nil {
		cmd = r.Command(ctx, argv)
	} else {
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	}
	if len(env) > 0 {
		base := cmd.Env
		if base == nil {
			base = os.Environ()
		}
		cmd.Env = append(append([]string(nil), base...), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	out := Output{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if err == nil {
		return out, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return out, fmt.Errorf("cannot run %q: %w", argv[0], ctxErr)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() >= 0 {
		out.ExitCode = exitErr.ExitCode()
		return out, nil
	}
	return out, fmt.Errorf("cannot run %q: %w", argv[0], err)
}
