package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// TestUnitStatus: the one function that words the unit's status, from the state and what a
// hook observed, in its order of precedence.
func TestUnitStatus(t *testing.T) {
	running := &Applied{Conf: "CPUs=4 Gres=gpu:tesla_t4:2 Feature=slurmd"}
	idle := &slurm.Node{Name: node, State: slurm.NodeState{Base: "IDLE"}}
	drained := &slurm.Node{Name: node, State: slurm.NodeState{Base: "IDLE", Flags: []string{"DRAIN"}}, Reason: "maint"}
	unreachableErr := fmt.Errorf("cannot show node: %w", slurm.ErrControllerUnreachable)
	tests := []struct {
		name   string
		st     State
		cfgErr error
		o      observed
		want   juju.WorkloadStatus
	}{
		{name: "configuration first", st: State{Applied: running}, cfgErr: errors.New("partition-config: bad"), o: observed{node: idle},
			want: juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "partition-config: bad"}},
		{name: "machine going down", st: State{Applied: running}, o: observed{goingDown: true},
			want: juju.WorkloadStatus{Code: juju.StatusMaintenance, Message: "node slurmd-3: machine going down"}},
		{name: "bad controller data", o: observed{dataErr: errors.New("controllers: bad")},
			want: juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "slurmctld relation: controllers: bad"}},
		{name: "controller data pending", o: observed{dataPending: true},
			want: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmctld data"}},
		{name: "departed, relation gone", st: State{Departed: true}, o: observed{noRelation: true, left: unreachableErr},
			want: juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "waiting for slurmctld relation"}},
		{name: "departed, controller unreachable", st: State{Departed: true}, o: observed{left: unreachableErr},
			want: juju.WorkloadStatus{Code: juju.StatusMaintenance, Message: "node slurmd-3 left drained: controller unreachable"}},
		{name: "departed, munged down", st: State{Departed: true}, o: observed{left: errors.New("munged down on this host")},
			want: juju.WorkloadStatus{Code: juju.StatusMaintenance, Message: "node slurmd-3 left for the controller to delete: munged down on this host"}},
		{name: "departed", st: State{Departed: true}, o: observed{node: idle},
			want: juju.WorkloadStatus{Code: juju.StatusMaintenance, Message: "node slurmd-3 removed"}},
		{name: "installed", o: observed{installed: true},
			want: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmctld relation"}},
		{name: "no relation", o: observed{noRelation: true},
			want: juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "waiting for slurmctld relation"}},
		{name: "no controller address", st: State{Applied: running}, o: observed{noController: true},
			want: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmctld: no controller address"}},
		{name: "held for GRES", st: State{Applied: running, GresWaiting: []string{"fpga"}}, o: observed{gresHeld: true},
			want: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmctld to manage GRES fpga"}},
		{name: "never started, GRES waiting", st: State{GresWaiting: []string{"fpga"}},
			want: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmctld to manage GRES fpga"}},
		{name: "never started, version refused", st: State{VersionRefused: "slurmd 26.05.5 is newer than slurmctld 24.11.5", GresWaiting: []string{"fpga"}},
			want: juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "slurmd 26.05.5 is newer than slurmctld 24.11.5"}},
		{name: "never started", want: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmctld data"}},
		{name: "running, version refused", st: State{Applied: running, VersionRefused: "slurmctld 22.05.8 is too old"}, o: observed{node: idle},
			want: juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "node slurmd-3 idle, 2× gpu:tesla_t4; slurmctld 22.05.8 is too old"}},
		{name: "daemons down", st: State{Applied: running}, o: observed{daemonsDown: "slurmd and munged down"},
			want: juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "node slurmd-3: slurmd and munged down"}},
		{name: "idle", st: State{Applied: running}, o: observed{node: idle},
			want: juju.WorkloadStatus{Code: juju.StatusActive, Message: "node slurmd-3 idle, 2× gpu:tesla_t4"}},
		{name: "drained, GRES waiting, staged", st: State{Applied: running, GresWaiting: []string{"fpga"}, StagedNodeConfig: "Weight=2"}, o: observed{node: drained},
			want: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "node slurmd-3 drained: maint, 2× gpu:tesla_t4; waiting for slurmctld to manage GRES fpga; node-config staged for the next reboot"}},
		{name: "did not register", st: State{Applied: running}, o: observed{unregistered: true},
			want: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for node slurmd-3 to register"}},
		{name: "unknown node", st: State{Applied: running}, o: observed{nodeErr: slurm.ErrUnknownNode},
			want: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for node slurmd-3 to register"}},
		{name: "no configuration fetched", st: State{Applied: running}, o: observed{nodeErr: errNoConf},
			want: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmd on slurmd-3 to fetch its configuration"}},
		{name: "controller unreachable", st: State{Applied: running}, o: observed{nodeErr: unreachableErr},
			want: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "node slurmd-3: controller unreachable"}},
		{name: "other error", st: State{Applied: running}, o: observed{nodeErr: errors.New("boom")},
			want: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "node slurmd-3: cannot read its state"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := unitStatus(&tt.st, tt.cfgErr, node, tt.o)
			if d := cmp.Diff(tt.want, juju.WorkloadStatus{Code: code, Message: msg}); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
		})
	}
}
