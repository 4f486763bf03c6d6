package bench

import "bytes"

// ControllerEvents counts what slurmctld's own log says it did.
type ControllerEvents struct {
	// Reconfigures counts `_slurm_rpc_reconfigure_controller: completed` lines.
	Reconfigures int
	// Starts counts `slurmctld version ` lines: one per start of the daemon.
	Starts int
}

// CountControllerLog counts reconfigures and starts in the text of slurmctld.log.
func CountControllerLog(log []byte) ControllerEvents {
	return ControllerEvents{
		Reconfigures: bytes.Count(log, []byte("_slurm_rpc_reconfigure_controller: completed")),
		Starts:       bytes.Count(log, []byte("slurmctld version ")),
	}
}

// Sub returns the events in e that happened after before (counts taken from the same
// growing log).
func (e ControllerEvents) Sub(before ControllerEvents) ControllerEvents {
	return ControllerEvents{Reconfigures: e.Reconfigures - before.Reconfigures, Starts: e.Starts - before.Starts}
}
