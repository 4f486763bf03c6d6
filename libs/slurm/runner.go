package slurm

import "github.com/charmed-slurm/operators/libs/command"

// Output is what a command printed and how it exited ([command.Output]).
type Output = command.Output

// ExecRunner runs commands with os/exec ([command.Exec]).
type ExecRunner = command.Exec
