// Package commandtest fakes a command.Runner for unit tests: [Runner] replays scripted
// outputs for exact argv slices and records every call.
//
//	r := &commandtest.Runner{}
//	r.Expect(commandtest.Case{Argv: []string{"munge", "-n"}, Output: command.Output{ExitCode: 1}})
//	out, err := r.Run(ctx, []string{"munge", "-n"}, nil) // out.ExitCode == 1
//
// libs/slurm/slurmtest gives recorded real Slurm outputs as Cases.
package commandtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/charmed-slurm/operators/libs/command"
)

// Case is one scripted command: the exact argv and what it answers.
type Case struct {
	Argv   []string
	Output command.Output
	// Err, when set, is returned by Run instead of Output (the command could not run).
	Err error
}

// Call is one recorded Run.
type Call struct {
	Argv []string
	Env  []string
}

// Runner is a fake command.Runner. Cases for the same argv are answered in the order they
// were added; the last one keeps answering. A command with no case fails the Run with an
// error naming it. Safe for concurrent use.
type Runner struct {
	mu    sync.Mutex
	cases map[string][]Case
	calls []Call
}

// Expect adds cases.
func (r *Runner) Expect(cases ...Case) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cases == nil {
		r.cases = map[string][]Case{}
	}
	for _, c := range cases {
		k := key(c.Argv)
		r.cases[k] = append(r.cases[k], c)
	}
}

// Run implements command.Runner.
func (r *Runner) Run(ctx context.Context, argv []string, env []string) (command.Output, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, Call{Argv: slices.Clone(argv), Env: slices.Clone(env)})
	if err := ctx.Err(); err != nil {
		return command.Output{}, err
	}
	k := key(argv)
	cs := r.cases[k]
	if len(cs) == 0 {
		return command.Output{}, fmt.Errorf("commandtest: unexpected command %q", argv)
	}
	c := cs[0]
	if len(cs) > 1 {
		r.cases[k] = cs[1:]
	}
	return c.Output, c.Err
}

// Calls returns the calls so far.
func (r *Runner) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func key(argv []string) string { return strings.Join(argv, "\x00") }
