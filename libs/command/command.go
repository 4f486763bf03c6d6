// Package command runs external programs for the rest of the project: one [Runner]
// abstraction (an argv slice plus extra environment entries, never a shell string) and one
// implementation over os/exec, [Exec].
//
// A command that ran and exited non-zero is not an error of [Runner.Run]: the exit code is
// in [Output.ExitCode], so callers decide what a failure means (Slurm's clients, apt-get and
// Juju's hook tools all report through their exit code and standard error). Run returns an
// error only when the command could not run at all: not found, its context ended, it was
// killed by a signal, or it outlived the runner's per-command [Exec.Timeout] (then the error
// wraps [ErrTimeout] and context.DeadlineExceeded).
//
//	r := command.Exec{Timeout: 30 * time.Second} // every command at most 30 s
//	out, err := r.Run(ctx, []string{"scontrol", "ping"}, []string{"SLURM_CONF=/etc/slurm/slurm.conf"})
//	if err != nil {
//		return err // did not run (errors.Is(err, command.ErrTimeout) when it hung)
//	}
//	if out.ExitCode != 0 {
//		return fmt.Errorf("scontrol ping: %s", out.Stderr)
//	}
//
// [Exec.Command] runs commands somewhere else than on this host, for example inside a test
// host's namespaces (host.Command wraps argv in nsenter). Unit tests fake a Runner; see
// libs/slurm/slurmtest for one that answers with recorded real Slurm outputs.
package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
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
// could not be run at all (not found, context cancelled, timed out, killed by a signal).
type Runner interface {
	Run(ctx context.Context, argv []string, env []string) (Output, error)
}

// ErrTimeout is wrapped by the error of a command that ran longer than its timeout.
var ErrTimeout = errors.New("command timed out")

// Exec runs commands with os/exec. The zero value runs them on this host, with no timeout
// of its own.
type Exec struct {
	// Command builds the command to run; nil means exec.CommandContext on this host. Tests
	// running programs inside namespaces pass a function that wraps argv in nsenter. If the
	// returned cmd has a nil Env, the current process environment is used.
	Command func(ctx context.Context, argv []string) *exec.Cmd
	// Timeout bounds each command; zero means only ctx bounds it.
	Timeout time.Duration
}

var _ Runner = Exec{}

// Run implements [Runner].
func (r Exec) Run(ctx context.Context, argv []string, env []string) (Output, error) {
	return r.RunInput(ctx, argv, env, nil)
}

// RunInput is Run with stdin written to the command's standard input (nil: no input).
func (r Exec) RunInput(ctx context.Context, argv []string, env []string, stdin []byte) (Output, error) {
	if len(argv) == 0 {
		return Output{}, errors.New("cannot run command: empty argv")
	}
	parent := ctx
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
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
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	out := Output{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if err == nil {
		return out, nil
	}
	if perr := parent.Err(); perr != nil {
		return out, fmt.Errorf("cannot run %q: %w", argv[0], perr)
	}
	if ctx.Err() != nil {
		return out, fmt.Errorf("cannot run %q: %w after %s: %w", argv[0], ErrTimeout, r.Timeout, context.DeadlineExceeded)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() >= 0 {
		out.ExitCode = exitErr.ExitCode()
		return out, nil
	}
	return out, fmt.Errorf("cannot run %q: %w", argv[0], err)
}
