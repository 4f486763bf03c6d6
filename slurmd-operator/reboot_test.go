package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// TestStopIsNotRemoval: a bare stop (the machine shuts down or reboots) leaves the node's
// record, its state and slurmd alone.
func TestStopIsNotRemoval(t *testing.T) {
	e := newEnv(t)
	e.join()
	before := len(e.slurmCalls())
	if err := e.run(jujutest.Hook(juju.Stop)); err != nil {
		t.Fatal(err)
	}
	if got := e.slurmCalls()[before:]; len(got) != 0 {
		t.Errorf("stop ran Slurm commands: %q", got)
	}
	if !e.slurm.hasNode(node) {
		t.Error("stop deleted the node")
	}
	if st := e.savedState(); st.Departed || st.Applied == nil {
		t.Errorf("stop recorded a departure: %+v", st)
	}
	want := juju.WorkloadStatus{Code: juju.StatusMaintenance, Message: "node slurmd-3: machine going down"}
	if d := cmp.Diff(want, e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
}

// TestStartAfterReboot: start after the machine booted again repairs slurmd and munged when
// they did not come back, resumes a node Slurm set DOWN for an unexpected reboot and keeps an
// administrator's drain or down with its reason.
func TestStartAfterReboot(t *testing.T) {
	tests := []struct {
		name       string
		admin      []string // scontrol update of the node's record after the boot, if any
		daemonsUp  bool     // slurmd and munged started at boot (enabled)
		wantStatus string
		wantCalls  []string
	}{
		{"idle, daemons enabled", nil, true, "node slurmd-3 idle", nil},
		{"idle, daemons not running", nil, false, "node slurmd-3 idle", nil},
		{"unexpectedly rebooted", []string{"state=down", "reason=Node unexpectedly rebooted boot_time=1 last response=2"}, true,
			"node slurmd-3 idle", []string{"scontrol update nodename=slurmd-3 state=resume"}},
		{"drained", []string{"state=drain", "reason=memory test"}, true, "node slurmd-3 drained: memory test", nil},
		{"admin down", []string{"state=down", "reason=bad dimm"}, true, "node slurmd-3 down: bad dimm", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.join()
			if err := e.run(jujutest.Hook(juju.Stop)); err != nil {
				t.Fatal(err)
			}
			if !tt.daemonsUp {
				e.svc.Exit(SlurmdService)
				e.svc.Exit("munged")
			}
			if tt.admin != nil {
				e.slurm.update(node, tt.admin...)
			}
			before := len(e.slurmCalls())
			if err := e.run(jujutest.Hook(juju.Start)); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.wantCalls, e.slurmCalls()[before:]); d != "" {
				t.Errorf("slurm calls (-want +got):\n%s", d)
			}
			if !e.svc.Active(SlurmdService) || !e.svc.Active("munged") {
				t.Errorf("after start: slurmd active %v, munged active %v", e.svc.Active(SlurmdService), e.svc.Active("munged"))
			}
			want := juju.WorkloadStatus{Code: juju.StatusActive, Message: tt.wantStatus}
			if d := cmp.Diff(want, e.status()); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
			data, err := os.ReadFile(filepath.Join(e.root, RebootProgram))
			if err != nil || string(data) != rebootScript(node) {
				t.Errorf("RebootProgram: %q, %v", data, err)
			}
		})
	}
}
