package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Controller high availability on systemd machines (Debian 14, Slurm 26.05): the controllers
// and slurmd units are machines booted from the forky image, the filesystem-client stand-in
// mounts the shared StateSaveLocation with the image's sshfs through the machine's /dev/fuse,
// and systemd runs every daemon (docs/ha.md).

// newHAMachines is newHACluster on Debian 14 machines, after checking that both controllers
// run Slurm 26.05 under systemd with auth/slurm, and that their StateSaveLocation is the sshfs
// mount.
func newHAMachines(t *testing.T) *cluster {
	t.Helper()
	c := newHAClusterOn(t, forky.base)
	c.checkRelease(forky, "slurmctld/0", "slurmctld/1", "slurmd/0")
	for _, u := range []string{"slurmctld/0", "slurmctld/1"} {
		c.checkSystemd(u, "slurmctld")
		if got := strings.TrimSpace(c.exec(u, "findmnt", "-n", "-o", "FSTYPE", "/mnt/slurmctld-statefs")); got != "fuse.sshfs" {
			t.Fatalf("%s: /mnt/slurmctld-statefs is %q, want the stand-in's sshfs mount", u, got)
		}
	}
	return c
}

// TestControllerFailoverMachines is TestControllerFailover on Debian 14 machines, the
// primary's machine losing its power (every process of it killed at once, no shutdown, its
// sshfs mount gone with it): the backup takes over within SlurmctldTimeout plus a few seconds,
// the running 2-node job completes, the queued jobs run once, sbatch is accepted, and a slurmd
// unit added during the outage joins through the second --conf-server.
func TestControllerFailoverMachines(t *testing.T) {
	c := newHAMachines(t)
	controllerFailover(t, c, func() {
		m := c.net.Machine(c.machineOf("slurmctld/0"))
		if m == nil {
			t.Fatalf("no machine for slurmctld/0")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := m.PowerCut(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
