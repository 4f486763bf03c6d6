package slurm

import "github.com/charmed-slurm/operators/libs/command"

// Output is what a command printed and how it exited ([command.Output]).
type Output = command.Output

// Runner runs one command ([command.Runner]): an argv slice plus extra KEY=value
// environment entries. A non-zero exit is reported through Output.ExitCode, not as an error.
type Runner = command.Runner

// ExecRunner runs commands with os/exec ([command.Exec]).
type ExecRunner = command.Exec
