package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		args     []string
		want     string
		code     int
	}{
		{"26.05 reconfigure", "slurmctld version 26.05.5 started\nProcessing Reconfiguration Request\nReconfigure signal (SIGHUP) received\nAttempting to reconfigure\nslurmctld version 26.05.5 started\n", nil, "1 1\n", 0},
		{"22.05 reconfigure and restart", "slurmctld version 22.05.8 started\nProcessing Reconfiguration Request\n_slurm_rpc_reconfigure_controller: completed usec=1\nslurmctld version 22.05.8 started\n", nil, "1 2\n", 0},
		{"empty", "", nil, "0 0\n", 0},
		{"arguments", "", []string{"x"}, "", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tt.args, strings.NewReader(tt.in), &out, &errOut); code != tt.code || out.String() != tt.want {
				t.Errorf("run = %d %q (%s), want %d %q", code, out.String(), errOut.String(), tt.code, tt.want)
			}
		})
	}
}
