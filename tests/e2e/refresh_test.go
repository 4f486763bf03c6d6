package e2e_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRefreshKeepsTheCluster: `juju refresh` of either charm (here with the same charm, as a
// fix release that changes nothing on the cluster's side) while a 2-node job runs: every unit
// comes back to the status it had, no daemon is restarted (slurmctld, slurmd and munged keep
// their PIDs), nothing is reconfigured, and the job completes.
func TestRefreshKeepsTheCluster(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 2)
	c.eventually(30*time.Second, "2 idle nodes", func() (bool, string) {
		n := c.nodes()
		return len(n) == 2 && strings.HasPrefix(n["slurmd-0"], "idle ") && strings.HasPrefix(n["slurmd-1"], "idle "), fmt.Sprint(n)
	})
	job := c.sbatch("slurmd", "-N2", "--wrap", "srun sleep 90")
	c.waitJobState(job, "RUNNING", time.Minute)
	units := []string{"slurmctld/0", "slurmd/0", "slurmd/1"}
	// The statuses settle on the running job (update-status runs every 5 s here), the
	// controller's too: its node counts change on its own update-status, which may come after
	// the slurmd units'.
	c.eventually(30*time.Second, "every unit active, the nodes busy", func() (bool, string) {
		st := c.statuses(units)
		ok := true
		for _, u := range units {
			ok = ok && strings.HasPrefix(st[u], "active: ")
		}
		return ok && strings.Contains(st["slurmd/0"], "mixed") && strings.Contains(st["slurmd/1"], "mixed") &&
			strings.Contains(st["slurmctld/0"], "(0 idle, 2 allocated"), fmt.Sprint(st)
	})
	before := c.statuses(units)
	pids := c.daemonPIDs()
	reconf0, starts0 := c.reconfigures()

	for _, app := range []struct{ name, path string }{{"slurmd", slurmdPath}, {"slurmctld", slurmctldPath}} {
		ctx, cancel := c.ctx(time.Minute)
		if err := c.m.Refresh(ctx, app.name, app.path); err != nil {
			cancel()
			t.Fatal(err)
		}
		cancel()
		c.waitIdle()
	}
	if s := c.jobState(job); s != "RUNNING" {
		t.Fatalf("job %s is %s after the refresh, want still RUNNING (the test's premise)", job, s)
	}
	if d := cmp.Diff(before, c.statuses(units)); d != "" {
		t.Errorf("unit statuses after the refresh (-before +after):\n%s", d)
	}
	if d := cmp.Diff(pids, c.daemonPIDs()); d != "" {
		t.Errorf("daemon PIDs after the refresh (-before +after): a daemon was restarted\n%s", d)
	}
	if reconf1, starts1 := c.reconfigures(); reconf1 != reconf0 || starts1 != starts0 {
		t.Errorf("refresh: reconfigures %d → %d, slurmctld starts %d → %d; want no change", reconf0, reconf1, starts0, starts1)
	}
	c.waitJobState(job, "COMPLETED", 2*time.Minute)
	// Later hooks (update-status) still see the same cluster.
	c.eventually(30*time.Second, "every unit active and idle again", func() (bool, string) {
		st := c.statuses(units)
		return st["slurmd/0"] == "active: node slurmd-0 idle" && st["slurmd/1"] == "active: node slurmd-1 idle" &&
			strings.HasPrefix(st["slurmctld/0"], "active: slurmctld up, 2 nodes (2 idle"), fmt.Sprint(st)
	})
}

// statuses are the units' workload statuses as "code: message".
func (c *cluster) statuses(units []string) map[string]string {
	st := map[string]string{}
	for _, u := range units {
		code, msg := c.unitStatus(u)
		st[u] = code + ": " + msg
	}
	return st
}

// daemonPIDs are the PIDs of slurmctld and munged on the controller and of slurmd and munged on
// each slurmd unit, from their pid files and pgrep (munged writes none where it is supervised).
func (c *cluster) daemonPIDs() map[string]string {
	pids := map[string]string{"slurmctld/0 slurmctld": c.ctlPID()}
	maps.Insert(pids, maps.All(map[string]string{
		"slurmctld/0 munged": strings.TrimSpace(c.exec("slurmctld/0", "pgrep", "-x", "munged")),
		"slurmd/0 slurmd":    strings.TrimSpace(c.exec("slurmd/0", "cat", "/run/slurmd.pid")),
		"slurmd/1 slurmd":    strings.TrimSpace(c.exec("slurmd/1", "cat", "/run/slurmd.pid")),
		"slurmd/0 munged":    strings.TrimSpace(c.exec("slurmd/0", "pgrep", "-x", "munged")),
		"slurmd/1 munged":    strings.TrimSpace(c.exec("slurmd/1", "pgrep", "-x", "munged")),
	}))
	return pids
}
