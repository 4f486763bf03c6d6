package e2e_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
	"github.com/charmed-slurm/operators/tests/model"
)

// TestMixedReleases: a cluster in the middle of an upgrade. Slurm accepts daemons of its own
// release and the three before it (24.11 on), never a newer one.
//
//   - Wrong order (a slurmd application on Debian 14, Slurm 26.05, related to a slurmctld on
//     Debian 13, 24.11): the unit is blocked with a message naming both versions, slurmd never
//     starts on its machine and no node record of it exists; an application of the
//     controller's release beside it joins as usual.
//   - Right order (the controller first: slurmctld on Debian 14, a slurmd application on
//     Debian 13): the 24.11 node joins the 26.05 controller and runs jobs; the controller,
//     which had metrics on, leaves MetricsType out of slurm.conf first (24.11's slurmd exits
//     on it) and says why.
func TestMixedReleases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		ctl, app release
		joins    bool
	}{
		{"newer-slurmd-refused", trixie, forky, false},
		{"older-slurmd-joins", forky, trixie, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mixedReleases(t, tc.ctl, tc.app, tc.joins)
		})
	}
}

// metricsOffFor checks, on a controller of release ctl that serves OpenMetrics, that
// slurm.conf carries no metrics key (an older slurmd or sackd would exit on it) while who runs
// the older release old, and that the controller's status says so.
func (c *cluster) metricsOffFor(who string, old, ctl release) {
	c.t.Helper()
	if !slurmAtLeast(ctl.slurm, 25, 11) {
		return
	}
	if conf := c.exec("slurmctld/0", "cat", ctlConf); strings.Contains(conf, "Metrics") {
		c.t.Errorf("slurm.conf keeps a metrics key beside %s on Slurm %s:\n%s", who, old.slurm, conf)
	}
	want := "metrics off: " + who + " runs Slurm " + old.slurm + "; metrics need 25.11 on every node"
	c.eventually(30*time.Second, "slurmctld/0's status to say metrics are off", func() (bool, string) {
		_, msg := c.unitStatus("slurmctld/0")
		return strings.Contains(msg, want), msg
	})
}

// neverRefusedConf checks that daemon on unit's machine never read a configuration it could
// not parse (as 24.11's did on 26.05's MetricsType: "Parsing error at unrecognized key", fatal):
// the unit waited for the controller to leave such keys out before it started the daemon.
func (c *cluster) neverRefusedConf(unit, daemon string) {
	c.t.Helper()
	journal := c.exec(unit, "journalctl", "--no-pager", "-o", "cat", "-u", daemon+".service")
	if strings.Contains(journal, "unrecognized key") {
		c.t.Errorf("%s's %s read a configuration it cannot parse:\n%s", unit, daemon, journal)
	}
	if !strings.Contains(c.exec(unit, "systemctl", "is-active", daemon+".service"), "active") {
		c.t.Errorf("%s's %s is not active", unit, daemon)
	}
}

// slurmAtLeast reports whether release ("26.05") is major.minor or later.
func slurmAtLeast(release string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(release, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// mixedReleases deploys slurmctld on ctl's machines and a slurmd application "other" on app's,
// beside a slurmd application "same" of ctl's release, and checks that other joins or not.
func mixedReleases(t *testing.T, ctl, app release, joins bool) {
	c := newClusterWith(t, ctl.base, func(bm *model.BaseMachines) model.Provisioner {
		bm.Images[app.base] = hoststest.Image(t, app.suite)
		return bm
	}, 1)
	ctx, cancel := c.ctx(2 * time.Minute)
	defer cancel()
	if _, err := c.m.Deploy(ctx, model.DeployOptions{Charm: slurmdPath, Name: "other", Base: app.base}); err != nil {
		t.Fatal(err)
	}
	c.integrate("slurmctld", "other")
	c.waitIdle()
	if v := strings.TrimSpace(c.exec("other/0", "slurmd", "-V")); !strings.Contains(v, " "+app.slurm+".") {
		t.Fatalf("other/0: slurmd -V = %q, want Slurm %s", v, app.slurm)
	}
	if joins {
		c.waitActive()
		c.eventually(30*time.Second, "other-0 idle", func() (bool, string) {
			n := c.slurm("scontrol", "show", "node", "-o", "other-0")
			return idle(n) && field(n, "Version") == strings.TrimPrefix(strings.TrimSpace(c.exec("other/0", "slurmd", "-V")), "slurm-wlm "), n
		})
		c.slurm("srun", "-p", "other", "true")
		c.slurm("srun", "-p", "slurmd", "true")
		c.metricsOffFor("slurmd application other", app, ctl)
		c.neverRefusedConf("other/0", "slurmd")
		return
	}
	code, msg := c.unitStatus("other/0")
	want := fmt.Sprintf("is newer than slurmctld %s.", ctl.slurm)
	if code != "blocked" || !strings.Contains(msg, "slurmd "+app.slurm+".") || !strings.Contains(msg, want) || !strings.Contains(msg, "upgrade slurmctld first") {
		t.Errorf("other/0: %s %q, want blocked naming slurmd %s and slurmctld %s", code, msg, app.slurm, ctl.slurm)
	}
	if out, _, _ := c.tryExec("other/0", "systemctl", "is-active", "slurmd.service"); strings.TrimSpace(out) == "active" {
		t.Errorf("other/0: slurmd runs")
	}
	if names := c.nodeNames(); slices.Contains(names, "other-0") {
		t.Errorf("node other-0 has a record: %v", names)
	}
	// The rest of the cluster is untouched.
	if code, msg := c.unitStatus("slurmd/0"); code != "active" {
		t.Errorf("slurmd/0: %s %q", code, msg)
	}
	c.slurm("srun", "-p", "slurmd", "true")
}
