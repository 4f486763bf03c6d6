package e2e_test

import (
	"testing"
	"time"
)

// TestControllerHAMachines runs the controller HA scenarios proved one cluster each on Pebble
// hosts (Slurm 22.05) one after the other on one cluster of Debian 14 machines (Slurm 26.05,
// systemd, auth/slurm, the shared StateSaveLocation on sshfs), each through the Pebble test's
// own scenario function, to keep the suite's time down:
//
//  1. no shared storage: a second controller unit stays blocked naming the mount relation and
//     runs no slurmctld (TestBackupNeedsStorage);
//  2. the storage related: the state moves, that unit becomes the backup standing by;
//  3. the primary's slurmctld stopped (systemctl stop) while a 2-node job runs and jobs are
//     queued: the backup takes control; started again (systemctl start), the primary takes
//     control back, the backup stands by, the heartbeat names the primary alone, every job
//     runs once (TestControllerComesBack);
//  4. the leadership moved to the backup and back while a job runs: no slurmctld or slurmd
//     restarts (TestLeaderMoves);
//  5. remove-unit of the backup standing by: the primary keeps its PID, the slurmd units
//     restart with it alone while a 2-node job runs, which completes once
//     (TestRemoveBackupController);
//  6. a controller added again (slurmctld/2), then remove-unit of the controller in control:
//     the backup takes control (with no takeover request: the leaving unit's cannot
//     authenticate, docs/ha.md), every job saved before the removal runs once
//     (TestRemoveActiveController).
func TestControllerHAMachines(t *testing.T) {
	t.Parallel()
	start := time.Now()
	last := start
	phase := func(name string) {
		t.Logf("phase %s: %s (%s since the start)", name, time.Since(last).Round(time.Second), time.Since(start).Round(time.Second))
		last = time.Now()
	}
	c := newHABase(t, forky.base)
	phase("one controller, two slurmd units")

	backupNeedsStorage(t, c, 2)
	phase("a second controller without shared storage")

	c.relateStorage(2)
	c.waitStandingBy("slurmctld/1")
	c.checkHAMachines("slurmctld/0", "slurmctld/1")
	phase("the storage related, slurmctld/1 the backup")

	controllerComesBack(t, c, func(verb string) { c.exec("slurmctld/0", "systemctl", verb, "slurmctld.service") })
	phase("the primary's slurmctld stopped and started again")

	leaderMoves(t, c, "slurmctld/1", "slurmctld/0")
	phase("the leadership moved to the backup and back")

	removeBackupController(t, c, "slurmctld/1")
	phase("remove-unit of the backup standing by")

	if _, err := c.m.AddUnit(c.bg(), "slurmctld", 1); err != nil {
		t.Fatal(err)
	}
	c.waitActive()
	c.waitStandingBy("slurmctld/2")
	c.waitConfServers("slurmctld/0", "slurmctld/2")
	phase("a controller added again")

	// The leaving unit asks for the takeover while its slurmctld still runs: under auth/slurm
	// its scontrol authenticates through that slurmctld's sack socket (docs/ha.md).
	removeActiveController(t, c, "slurmctld/2", true)
	phase("remove-unit of the controller in control")
}
