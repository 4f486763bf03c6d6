package slurm

import (
	"errors"
	"fmt"
	"strings"
)

// Error kinds callers branch on with errors.Is. A *CommandError unwraps to at most one.
var (
	// ErrNodeBusy: the node still has jobs (`Requested nodes are busy`); retry later.
	ErrNodeBusy = errors.New("node is busy")
	// ErrUnknownNode: the controller does not know the node (`Invalid node name
	// specified`, `Node x not found`).
	ErrUnknownNode = errors.New("unknown node")
	// ErrUnknownPartition: `Invalid partition name specified`.
	ErrUnknownPartition = errors.New("unknown partition")
	// ErrInvalidNodeState: the state change is not valid from the node's current state,
	// e.g. resuming an idle node (`Invalid node state specified`; 26.05: `Invalid node state
	// transition`).
	ErrInvalidNodeState = errors.New("invalid node state transition")
	// ErrControllerUnreachable: slurmctld could not be contacted (`Unable to contact slurm
	// controller`, connection refused, `Zero Bytes were transmitted or received`, or
	// `scontrol ping` reporting DOWN).
	ErrControllerUnreachable = errors.New("slurm controller unreachable")
)

// CommandError is a Slurm command that exited non-zero.
type CommandError struct {
	Argv     []string
	ExitCode int
	// Stderr is the command's error output, trimmed (stdout when stderr was empty).
	Stderr string
	// Kind is one of the Err* values above, or nil when the message is not recognised.
	Kind error
}

func (e *CommandError) Error() string {
	msg := e.Stderr
	if msg == "" {
		msg = "no error output"
	}
	return fmt.Sprintf("cannot run %s: exit status %d: %s", strings.Join(e.Argv, " "), e.ExitCode, msg)
}

// Unwrap returns the error kind, so errors.Is(err, ErrNodeBusy) works.
func (e *CommandError) Unwrap() error { return e.Kind }

// classify maps Slurm's error messages to an error kind. The messages are those printed
// by Slurm 22.05 (recorded in slurmtest/real/*.stderr); 24.11 keeps them; 26.05 words a
// refused state change "Invalid node state transition" (slurmtest/real-26.05).
func classify(msg string) error {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "requested nodes are busy"):
		return ErrNodeBusy
	case strings.Contains(m, "invalid node name"),
		strings.Contains(m, "node ") && strings.Contains(m, " not found"):
		return ErrUnknownNode
	case strings.Contains(m, "invalid partition name"),
		strings.Contains(m, "partition ") && strings.Contains(m, " not found"):
		return ErrUnknownPartition
	case strings.Contains(m, "invalid node state specified"),
		strings.Contains(m, "invalid node state transition"):
		return ErrInvalidNodeState
	case strings.Contains(m, "unable to contact slurm controller"),
		strings.Contains(m, "connection refused"),
		strings.Contains(m, "zero bytes were transmitted or received"):
		return ErrControllerUnreachable
	}
	return nil
}
