package main

import (
	"testing"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// TestRelationIDsOncePerHook: no hook lists an endpoint's relations twice (relation-ids costs
// a hook-tool call; Juju's answer is fixed for the hook), on a leader with a slurmd
// application, shared storage and a backup, and on the backup that is elected leader.
func TestRelationIDsOncePerHook(t *testing.T) {
	e, leader := haLeader(t, 0)
	b, backup := haBackup(t, leader)
	backup.Relations = append(backup.Relations, relation("slurmd:1", "slurmd", compute(t, "slurmd", ""), "slurmd/0"))
	backup = b.run(backup, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
	writeHeartbeat(t, b, 0)
	backup.Leader = true
	for _, tc := range []struct {
		who string
		e   *env
		in  jujutest.State
		ev  juju.Event
	}{
		{"leader", e, leader, jujutest.Hook(juju.LeaderElected)},
		{"leader", e, leader, jujutest.Hook(juju.ConfigChanged)},
		{"leader", e, leader, jujutest.Hook(juju.Start)},
		{"leader", e, leader, jujutest.Hook(juju.UpdateStatus)},
		{"leader", e, leader, jujutest.Hook(juju.UpgradeCharm)},
		{"leader", e, leader, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0")},
		{"leader", e, leader, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/1")},
		{"new leader", b, backup, jujutest.Hook(juju.LeaderElected)},
	} {
		listed := map[string]int{}
		_, calls, err := tc.e.runTools(tc.in, tc.ev, func(args []string) bool {
			if args[0] == "relation-ids" && len(args) > 1 {
				listed[args[1]]++
			}
			return false
		})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.who, tc.ev.Name, err)
		}
		for endpoint, n := range listed {
			if n > 1 {
				t.Errorf("%s %s: relation-ids %s ran %d times: %q", tc.who, tc.ev.Name, endpoint, n, calls)
			}
		}
	}
}
