package slurm

import (
	"bytes"
	"strings"
)

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

// The log lines ParseControllerLog reads (slurmctld at SlurmctldDebug=info; the words of every
// release from 22.05 to 26.05, read in their sources and seen in 22.05's, 24.11's and 26.05's
// logs).
const (
	// logStart begins every start of a slurmctld process: "slurmctld version 26.05.5 started
	// on cluster c(2508)".
	logStart = "slurmctld version "
	// logRequest is a reconfigure asked by RPC (scontrol reconfigure), in every release. From
	// 23.11 the request goes on as a reconfigure signal (logSignal, next).
	logRequest = "Processing Reconfiguration Request"
	// logSignal is a reconfigure asked by SIGHUP, and from 23.11 every reconfigure.
	logSignal = "Reconfigure signal (SIGHUP) received"
	// logReexec (23.11 and later) precedes the start of the new process of a reconfigure.
	logReexec = "Attempting to reconfigure"
	// logReexecFailed ends one that failed: the old process goes on, nothing starts.
	logReexecFailed = "Resuming operation, reconfigure failed"
)

// ParseControllerLog counts the reconfigures and starts in the text of slurmctld.log, by the
// words of the release each start line names (until the first one, the oldest supported
// release's). Before 23.11 a reconfigure is done in the running process: each RPC and each
// SIGHUP is one. From 23.11 (Features.ReconfigureReexecs) each reconfigure, RPC or SIGHUP,
// logs the signal and starts a new process, which logs a start like any other: a start that
// follows "Attempting to reconfigure" is that reconfigure, not a restart (whether the new
// process kept the PID depends on the supervisor: [Features.ReconfigureKeepsPID]).
func ParseControllerLog(log []byte) ControllerEvents {
	var ev ControllerEvents
	var feat = FeaturesOf(Version{})
	reexec := false
	for len(log) > 0 {
		var line []byte
		line, log, _ = bytes.Cut(log, []byte("\n"))
		switch {
		case bytes.Contains(line, []byte(logRequest)):
			if !feat.ReconfigureReexecs {
				ev.Reconfigures++
			}
		case bytes.Contains(line, []byte(logSignal)):
			ev.Reconfigures++
		case bytes.Contains(line, []byte(logReexec)):
			reexec = true
		case bytes.Contains(line, []byte(logReexecFailed)):
			reexec = false
		case bytes.Contains(line, []byte(logStart)):
			if v, ok := startVersion(line); ok {
				feat = FeaturesOf(v)
			}
			if !reexec {
				ev.Starts++
			}
			reexec = false
		}
	}
	return ev
}

// startVersion reads the version of a start line ("... slurmctld version 26.05.5 started on
// cluster ...").
func startVersion(line []byte) (Version, bool) {
	_, rest, _ := bytes.Cut(line, []byte(logStart))
	word, _, _ := strings.Cut(string(rest), " ")
	v, err := ParseVersion(word)
	return v, err == nil
}
