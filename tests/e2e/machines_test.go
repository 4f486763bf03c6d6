package e2e_test

import (
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/tests/model"
)

// The scenarios again with every unit on a systemd machine (systemd-nspawn, booted from the
// Debian images of scripts/images.sh): the charms find no Pebble there and drive systemd over
// D-Bus, with the image's Slurm and munge. Each Test...Machines runs its scenario once per
// release, as a parallel subtest named after the release's suite (TestNodeLifecycleMachines/forky).

// release is a Debian release machines run, with what its Slurm must show.
type release struct {
	base  string // model base
	suite string // image suite, the subtest's name
	slurm string // Slurm's major.minor, as in `scontrol -V`
	// key is the auth key file the charms write: munge.key before Slurm 23.11, slurm.key
	// (auth/slurm, no munged) after.
	key string
	// holdsEmpty: Slurm accepts and holds a job sent to a NodeSet partition with no node
	// (22.05, 26.05; 24.11.5 rejects it).
	holdsEmpty bool
}

// The releases machines run, oldest first.
var (
	bookworm = release{model.BaseBookworm, "bookworm", "22.05", "/etc/munge/munge.key", true}
	trixie   = release{model.BaseTrixie, "trixie", "24.11", "/etc/slurm/slurm.key", false}
	forky    = release{model.BaseForky, "forky", "26.05", "/etc/slurm/slurm.key", true}
)

// authSlurm reports whether the release's Slurm runs auth/slurm (slurm.key, no munged).
func (r release) authSlurm() bool { return strings.HasSuffix(r.key, "slurm.key") }

// onReleases runs scenario as a parallel subtest per release.
func onReleases(t *testing.T, rs []release, scenario func(t *testing.T, r release)) {
	for _, r := range rs {
		t.Run(r.suite, func(t *testing.T) {
			t.Parallel()
			scenario(t, r)
		})
	}
}

// checkRelease fails the test unless the cluster runs r's Slurm with r's auth: slurm.key on
// every machine and no munged under auth/slurm (AuthType and CredType in slurm.conf).
func (c *cluster) checkRelease(r release, units ...string) {
	c.t.Helper()
	if v := c.slurm("scontrol", "-V"); !strings.Contains(v, " "+r.slurm+".") {
		c.t.Errorf("scontrol -V = %q, want Slurm %s", v, r.slurm)
	}
	for _, unit := range units {
		c.exec(unit, "test", "-s", r.key)
		if !r.authSlurm() {
			continue
		}
		if out, _, _ := c.tryExec(unit, "systemctl", "is-active", "munge.service"); strings.TrimSpace(out) == "active" {
			c.t.Errorf("%s: munged runs under auth/slurm", unit)
		}
	}
	if !r.authSlurm() {
		return
	}
	conf := c.exec("slurmctld/0", "cat", ctlConf)
	for _, want := range []string{"AuthType=auth/slurm", "CredType=cred/slurm"} {
		if !strings.Contains(conf, want) {
			c.t.Errorf("slurm.conf lacks %s", want)
		}
	}
}

// TestNodeLifecycleMachines is the node lifecycle on systemd machines of every release, after
// checking that the services run under systemd with the charms' drop-ins and that the charms
// chose the release's auth.
func TestNodeLifecycleMachines(t *testing.T) {
	t.Parallel()
	onReleases(t, []release{bookworm, trixie, forky}, func(t *testing.T, r release) {
		c := newClusterOn(t, r.base, 2)
		c.checkSystemd("slurmctld/0", "slurmctld")
		c.checkSystemd("slurmd/0", "slurmd")
		// The join leaves slurmd (and munged on 22.05) enabled at boot.
		daemons := []string{"slurmd"}
		if !r.authSlurm() {
			daemons = append(daemons, "munge")
		}
		for _, d := range daemons {
			out, _, _ := c.tryExec("slurmd/0", "systemctl", "is-enabled", d+".service")
			if got := strings.TrimSpace(out); got != "enabled" {
				t.Errorf("slurmd/0: systemctl is-enabled %s = %q, want enabled", d, got)
			}
		}
		c.checkRelease(r, "slurmctld/0", "slurmd/0")
		nodeLifecycle(t, c)
	})
}

// checkSystemd fails the test unless service runs as a systemd unit on unit's machine, with the
// charm's drop-in, and the machine's status shows its base.
func (c *cluster) checkSystemd(unit, service string) {
	c.t.Helper()
	if got := strings.TrimSpace(c.exec(unit, "systemctl", "is-active", service+".service")); got != "active" {
		c.t.Errorf("%s: systemctl is-active %s = %q, want active", unit, service, got)
	}
	if got := c.exec(unit, "systemctl", "cat", service+".service"); !strings.Contains(got, "10-charm.conf") {
		c.t.Errorf("%s: %s.service has no charm drop-in:\n%s", unit, service, got)
	}
	st := c.m.Status(c.bg())
	app, _, _ := strings.Cut(unit, "/")
	mid := st.Applications[app].Units[unit].Machine
	if b := st.Machines[mid].Base; b.Name != "debian" {
		c.t.Errorf("%s: machine %s has base %s@%s in status, want debian", unit, mid, b.Name, b.Channel)
	}
}

func TestPartitionsMachines(t *testing.T) {
	t.Parallel()
	onReleases(t, []release{bookworm, trixie, forky}, func(t *testing.T, r release) {
		partitions(t, newClusterOn(t, r.base, 1, partitionsConfig))
	})
}

// TestRotateAuthKeyMachines rotates munge.key (Slurm 22.05) or slurm.key (auth/slurm).
func TestRotateAuthKeyMachines(t *testing.T) {
	t.Parallel()
	onReleases(t, []release{bookworm, trixie, forky}, func(t *testing.T, r release) {
		rotateAuthKey(t, newClusterOn(t, r.base, 2), r.key)
	})
}
