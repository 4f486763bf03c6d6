package slurm

import "bytes"

// ControllerEvents are what slurmctld's own log says it did: the reconfigures it applied and
// the times it started other than for a reconfigure (restarts, and the first start).
type ControllerEvents struct {
	Reconfigures int
	Starts       int
}

// Sub returns the events of e that came after before (counts read from the same growing log).
func (e ControllerEvents) Sub(before ControllerEvents) ControllerEvents {
	return ControllerEvents{Reconfigures: e.Reconfigures - before.Reconfigures, Starts: e.Starts - before.Starts}
}

// The log lines ParseControllerLog reads (slurmctld at SlurmctldDebug=info, every release
// from 22.05 to 26.05).
const (
	// logStart begins every start of a slurmctld process: "slurmctld version 26.05.5 started
	// on cluster c(2508)".
	logStart = "slurmctld version "
	// logReconfigured ends a reconfigure done in the running process (before 24.05).
	logReconfigured = "_slurm_rpc_reconfigure_controller: completed"
	// logReexec begins a reconfigure that starts a new process (24.05 and later, from
	// `scontrol reconfigure` or a SIGHUP): its process start follows.
	logReexec = "Reconfigure signal (SIGHUP) received"
	// logReexecFailed ends one that failed: the old process goes on, nothing starts.
	logReexecFailed = "Resuming operation, reconfigure failed"
)

// ParseControllerLog counts the reconfigures and starts in the text of slurmctld.log. Before
// 24.05 a reconfigure is done in the running process ("_slurm_rpc_reconfigure_controller:
// completed"); from 24.05 it starts a new process, which logs a start like any other: a start
// that follows a reconfigure signal is that reconfigure, not a restart (whether the new
// process kept the PID depends on the supervisor: [Features.ReconfigureKeepsPID]).
func ParseControllerLog(log []byte) ControllerEvents {
	var ev ControllerEvents
	reexec := false
	for len(log) > 0 {
		var line []byte
		line, log, _ = bytes.Cut(log, []byte("\n"))
		switch {
		case bytes.Contains(line, []byte(logReconfigured)):
			ev.Reconfigures++
		case bytes.Contains(line, []byte(logReexec)):
			if !reexec {
				ev.Reconfigures++
			}
			reexec = true
		case bytes.Contains(line, []byte(logReexecFailed)):
			reexec = false
		case bytes.Contains(line, []byte(logStart)):
			if !reexec {
				ev.Starts++
			}
			reexec = false
		}
	}
	return ev
}
