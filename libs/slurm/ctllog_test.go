package slurm_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/slurm"
)

func TestParseControllerLog(t *testing.T) {
	for _, tt := range []struct {
		name string
		log  string
		want slurm.ControllerEvents
	}{
		{"empty", "", slurm.ControllerEvents{}},
		{"22.05: reconfigures in the running process, by RPC and by SIGHUP", `[2026-11-22T22:19:00.101] slurmctld version 22.05.8 started on cluster bench
[2026-11-22T22:19:01.000] Processing Reconfiguration Request
[2026-11-22T22:19:01.000] _slurm_rpc_reconfigure_controller: completed usec=1234
[2026-11-22T22:19:02.000] Reconfigure signal (SIGHUP) received
[2026-11-22T22:20:00.101] slurmctld version 22.05.8 started on cluster bench
[2026-11-22T22:20:01.000] Processing Reconfiguration Request
[2026-11-22T22:20:01.000] _slurm_rpc_reconfigure_controller: completed usec=999
`, slurm.ControllerEvents{Reconfigures: 3, Starts: 2}},
		{"26.05: a reconfigure starts a new process", `[2026-11-25T22:09:55.477] slurmctld version 26.05.5 started on cluster charmed-slurm(0)
[2026-11-25T22:09:57.129] Processing Reconfiguration Request
[2026-11-25T22:09:57.129] Reconfigure signal (SIGHUP) received
[2026-11-25T22:09:57.157] Attempting to reconfigure
[2026-11-25T22:09:57.270] slurmctld version 26.05.5 started on cluster charmed-slurm(2508)
[2026-11-25T22:10:57.008] SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
`, slurm.ControllerEvents{Reconfigures: 1, Starts: 1}},
		{"24.11: a SIGHUP, then a restart", `slurmctld version 24.11.5 started on cluster c(0)
Reconfigure signal (SIGHUP) received
Attempting to reconfigure
slurmctld version 24.11.5 started on cluster c(1)
Terminate signal (SIGINT or SIGTERM) received
slurmctld version 24.11.5 started on cluster c(1)
`, slurm.ControllerEvents{Reconfigures: 1, Starts: 2}},
		{"a failed reconfigure starts nothing", `slurmctld version 24.11.5 started on cluster c(0)
Processing Reconfiguration Request
Reconfigure signal (SIGHUP) received
Attempting to reconfigure
Resuming operation, reconfigure failed.
Terminate signal (SIGINT or SIGTERM) received
slurmctld version 24.11.5 started on cluster c(1)
`, slurm.ControllerEvents{Reconfigures: 1, Starts: 2}},
		{"an upgrade from 22.05 to 26.05 in one log", `slurmctld version 22.05.8 started on cluster c(0)
Processing Reconfiguration Request
_slurm_rpc_reconfigure_controller: completed usec=1
slurmctld version 26.05.5 started on cluster c(0)
Processing Reconfiguration Request
Reconfigure signal (SIGHUP) received
Attempting to reconfigure
slurmctld version 26.05.5 started on cluster c(0)
`, slurm.ControllerEvents{Reconfigures: 2, Starts: 2}},
		{"no final new line", "slurmctld version 26.05.5 started", slurm.ControllerEvents{Starts: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, slurm.ParseControllerLog([]byte(tt.log))); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	}
	// Sub: what happened after a first reading of the same log.
	log := "slurmctld version 26.05.5 started\nReconfigure signal (SIGHUP) received\nAttempting to reconfigure\nslurmctld version 26.05.5 started\n"
	before := slurm.ParseControllerLog([]byte(log[:strings.Index(log, "Reconfigure")]))
	if d := cmp.Diff(slurm.ControllerEvents{Reconfigures: 1}, slurm.ParseControllerLog([]byte(log)).Sub(before)); d != "" {
		t.Errorf("Sub (-want +got):\n%s", d)
	}
}

// FuzzParseControllerLog: no input panics or gives an impossible count, and a start line
// appended after a complete line adds one start, unless a reconfigure is pending.
func FuzzParseControllerLog(f *testing.F) {
	f.Add([]byte("slurmctld version 22.05.8 started\n_slurm_rpc_reconfigure_controller: completed usec=1\n"))
	f.Add([]byte("slurmctld version 26.05.5 started\nReconfigure signal (SIGHUP) received\nAttempting to reconfigure\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev := slurm.ParseControllerLog(data)
		lines := strings.Count(string(data), "\n") + 1
		if ev.Reconfigures < 0 || ev.Starts < 0 || ev.Reconfigures+ev.Starts > lines {
			t.Fatalf("impossible counts %+v for %d lines", ev, lines)
		}
		done := append(append([]byte(nil), data...), "\nTerminate signal received\n"...)
		base := slurm.ParseControllerLog(done)
		more := slurm.ParseControllerLog(append(done, "slurmctld version 1 started\n"...))
		if pending := strings.Contains(string(data), "Attempting"); !pending && more.Starts != base.Starts+1 {
			t.Fatalf("starts %d after appending a start line to %q, want %d", more.Starts, data, base.Starts+1)
		}
	})
}
