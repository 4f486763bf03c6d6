package e2e_test

import (
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/tests/model"
)

// The lifecycle tests again with every unit on a systemd machine (systemd-nspawn, booted from
// the Debian images of scripts/images.sh): the charms find no Pebble there and drive systemd
// over D-Bus, with the image's Slurm and munge.

func TestNodeLifecycleBookworm(t *testing.T) {
	t.Parallel()
	c := newClusterOn(t, model.BaseBookworm, 2)
	c.checkSystemd("slurmctld/0", "slurmctld")
	c.checkSystemd("slurmd/0", "slurmd")
	nodeLifecycle(t, c)
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

// TestNodeLifecycleTrixie is the node lifecycle on Debian 13 machines with Slurm 24.11, after
// checking that the charms chose auth/slurm: slurm.key on every machine and no munged.
func TestNodeLifecycleTrixie(t *testing.T) {
	t.Parallel()
	c := newClusterOn(t, model.BaseTrixie, 2)
	c.checkSystemd("slurmctld/0", "slurmctld")
	c.checkSystemd("slurmd/0", "slurmd")
	if v := c.slurm("scontrol", "-V"); !strings.Contains(v, " 24.11.") {
		t.Errorf("scontrol -V = %q, want Slurm 24.11", v)
	}
	for _, unit := range []string{"slurmctld/0", "slurmd/0"} {
		c.exec(unit, "test", "-s", "/etc/slurm/slurm.key")
		if out, _, _ := c.tryExec(unit, "systemctl", "is-active", "munge.service"); strings.TrimSpace(out) == "active" {
			t.Errorf("%s: munged runs under auth/slurm", unit)
		}
	}
	conf := c.exec("slurmctld/0", "cat", ctlConf)
	for _, want := range []string{"AuthType=auth/slurm", "CredType=cred/slurm"} {
		if !strings.Contains(conf, want) {
			t.Errorf("slurm.conf lacks %s", want)
		}
	}
	nodeLifecycle(t, c)
}

func TestPartitionsBookworm(t *testing.T) {
	t.Parallel()
	partitions(t, newClusterOn(t, model.BaseBookworm, 1, partitionsConfig))
}

func TestPartitionsTrixie(t *testing.T) {
	t.Parallel()
	partitions(t, newClusterOn(t, model.BaseTrixie, 1, partitionsConfig))
}

func TestRotateAuthKeyBookworm(t *testing.T) {
	t.Parallel()
	rotateAuthKey(t, newClusterOn(t, model.BaseBookworm, 2), "/etc/munge/munge.key")
}

// TestRotateAuthKeyTrixie rotates slurm.key (auth/slurm, Slurm 24.11).
func TestRotateAuthKeyTrixie(t *testing.T) {
	t.Parallel()
	rotateAuthKey(t, newClusterOn(t, model.BaseTrixie, 2), "/etc/slurm/slurm.key")
}
