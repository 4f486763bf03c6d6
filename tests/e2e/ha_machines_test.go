package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
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
	c.checkHAMachines("slurmctld/0", "slurmctld/1")
	return c
}

// checkHAMachines fails the test unless the controllers ctls and slurmd/0 run Slurm 26.05
// with auth/slurm, and slurmctld runs under systemd on each controller with its
// StateSaveLocation on the stand-in's sshfs mount.
func (c *cluster) checkHAMachines(ctls ...string) {
	c.t.Helper()
	c.checkRelease(forky, append(slices.Clone(ctls), "slurmd/0")...)
	for _, u := range ctls {
		c.checkSystemd(u, "slurmctld")
		if got := strings.TrimSpace(c.exec(u, "findmnt", "-n", "-o", "FSTYPE", "/mnt/slurmctld-statefs")); got != "fuse.sshfs" {
			c.t.Fatalf("%s: /mnt/slurmctld-statefs is %q, want the stand-in's sshfs mount", u, got)
		}
	}
}

// powerCut cuts the power of unit's machine (hosts.Machine.PowerCut).
func (c *cluster) powerCut(unit string) {
	c.t.Helper()
	m := c.net.Machine(c.machineOf(unit))
	if m == nil {
		c.t.Fatalf("no machine for %s", unit)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.PowerCut(ctx); err != nil {
		c.t.Fatal(err)
	}
}

// TestControllerFailoverMachines is TestControllerFailover on Debian 14 machines, the
// primary's machine losing its power (every process of it killed at once, no shutdown, its
// sshfs mount gone with it): the backup takes over within SlurmctldTimeout plus a few seconds,
// the running 2-node job completes, the queued jobs run once, sbatch is accepted, and a slurmd
// unit added during the outage joins through the second --conf-server. Then the leadership
// moves to the backup, as Juju moves it once the dead agent's lease expires, and nothing
// changes in Slurm.
func TestControllerFailoverMachines(t *testing.T) {
	t.Parallel()
	c := newHAMachines(t)
	controllerFailover(t, c, func() { c.powerCut("slurmctld/0") })

	// Juju elects another leader once the dead machine's agent stops renewing its lease
	// (about a minute; the local model moves it when told): the backup in control leads too,
	// and nothing changes in Slurm: same slurmctld, same slurmd processes, every node usable.
	pid := strings.TrimSpace(c.exec("slurmctld/1", "cat", "/run/slurmctld.pid"))
	slurmds := map[string]string{}
	for _, u := range []string{"slurmd/0", "slurmd/1", "slurmd/2"} {
		slurmds[u] = strings.TrimSpace(c.exec(u, "pgrep", "-o", "-x", "slurmd"))
	}
	moved := time.Now()
	if err := c.m.MoveLeader(c.bg(), "slurmctld/1"); err != nil {
		t.Fatal(err)
	}
	var elected time.Time
	c.eventually(2*time.Minute, "slurmctld/1 elected and through an update-status since", func() (bool, string) {
		var seen []string
		for _, r := range c.hookRuns("slurmctld/1", moved) {
			if r.Failed {
				t.Fatalf("slurmctld/1: %s failed after the leadership moved", r.Hook)
			}
			if r.Hook == "leader-elected" && elected.IsZero() {
				elected = r.Start
			}
			if r.Hook == "update-status" && !elected.IsZero() && r.Start.After(elected) {
				return true, ""
			}
			seen = append(seen, r.Hook)
		}
		return false, fmt.Sprint(seen)
	})
	if now := strings.TrimSpace(c.exec("slurmctld/1", "cat", "/run/slurmctld.pid")); now != pid {
		t.Errorf("slurmctld/1's slurmctld restarted as it became the leader: pid %s, was %s", now, pid)
	}
	for u, was := range slurmds {
		if now := strings.TrimSpace(c.exec(u, "pgrep", "-o", "-x", "slurmd")); now != was {
			t.Errorf("%s: slurmd restarted as slurmctld/1 became the leader (pid %s, was %s)", u, now, was)
		}
	}
	if st, msg := c.unitStatus("slurmctld/1"); st != "active" || !strings.Contains(msg, "active controller (backup 1 of 2)") {
		t.Errorf("slurmctld/1 leading: %s: %s", st, msg)
	}
	c.slurm("srun", "-p", "slurmd", "-N3", "true")
}

// TestObservabilityHAMachines relates two controllers (Debian 14 machines, shared storage) to
// the cos_agent stand-in and runs Prometheus with both units' scrape jobs and rules, as each
// unit's collector forwards them: every target of both controllers is up, each controller's
// slurm_* metrics are there under its juju_unit, and both say what the cluster is (two idle
// nodes), the backup standing by as the primary in control. Then the primary's machine loses
// its power: once the backup is in control its targets are up with the cluster's values and
// SlurmControllerDown is inactive; it never fires during the failover.
func TestObservabilityHAMachines(t *testing.T) {
	t.Parallel()
	c := newHAMachines(t)
	c.deploy(cosStandinPath, "cos", 1, nil)
	c.integrate("slurmctld", "cos")
	c.waitActive()
	c.waitIdle()
	units := []string{"slurmctld/0", "slurmctld/1"}
	data := map[string]cosagent.Data{}
	jobs := 0
	for _, u := range units {
		d := c.cosData(u)
		addr := strings.TrimSpace(c.exec(u, "hostname", "-I")) + ":6817"
		for _, j := range d.ScrapeJobs {
			for _, sc := range j.StaticConfigs {
				if !slices.Equal(sc.Targets, []string{addr}) {
					t.Errorf("%s: job %s scrapes %v, want its own controller %s", u, j.JobName, sc.Targets, addr)
				}
			}
		}
		if len(d.ScrapeJobs) == 0 {
			t.Fatalf("%s publishes no scrape job", u)
		}
		jobs += len(d.ScrapeJobs)
		data[u] = d
		if _, msg := c.unitStatus("cos/0"); !strings.Contains(msg, fmt.Sprintf("%s: %d scrape jobs", u, len(d.ScrapeJobs))) {
			t.Errorf("cos/0 status %q, want %s's %d scrape jobs", msg, u, len(d.ScrapeJobs))
		}
	}
	p := c.startPrometheus("cos/0", data)

	p.eventually(time.Minute, "every target of both controllers up", func() (bool, string) {
		up := p.query("up")
		ok := len(up) == jobs
		for _, s := range up {
			ok = ok && s.Value == 1
		}
		return ok, fmt.Sprint(up)
	})
	for _, u := range units {
		// Slurm 26.05.5 serves 199 slurm_* gauges (all five endpoints), the backup as the primary.
		if n := len(p.query(fmt.Sprintf(`group by (__name__) ({__name__=~"slurm_.+", juju_unit=%q})`, u))); n < 150 {
			t.Errorf("%s: %d slurm_* metric names, want the endpoints' 199", u, n)
		}
	}
	p.eventually(time.Minute, "two idle nodes from each controller", func() (bool, string) {
		v := p.query(`slurm_nodes_idle`)
		ok := len(v) == 2
		for _, s := range v {
			ok = ok && s.Value == 2 && s.Metric["job"] == "slurmctld_nodes" && s.Metric["slurm_cluster"] == "charmed-slurm"
		}
		return ok, fmt.Sprint(v)
	})
	if got := p.query(`max by (slurm_cluster) (up{job=~".+_nodes"})`); len(got) != 1 || got[0].Value != 1 {
		t.Errorf("SlurmControllerDown's expression over both controllers: %v, want one cluster up", got)
	}

	// The primary's machine loses its power: its targets go down; once the backup is in
	// control its targets are up and say what the cluster is, and SlurmControllerDown (a
	// cluster none of whose controllers answers) is inactive. In between, for the seconds of
	// the failover, no controller may answer: the alert may go pending, never fire (its
	// threshold, 2 minutes by default, is for that).
	c.powerCut("slurmctld/0")
	cut := time.Now()
	var inControl, settled time.Time
	var backupDown, pending []string // what the polls saw during the failover
	p.eventually(2*time.Minute, "the backup in control, its targets up, the primary's down", func() (bool, string) {
		up := p.query("up")
		ok := len(up) == jobs
		for _, s := range up {
			want := map[string]float64{"slurmctld/0": 0, "slurmctld/1": 1}[s.Metric["juju_unit"]]
			ok = ok && s.Value == want
			if s.Metric["juju_unit"] == "slurmctld/1" && s.Value == 0 {
				backupDown = append(backupDown, fmt.Sprintf("%s at +%s", s.Metric["job"], time.Since(cut).Round(time.Second)))
			}
		}
		for _, a := range p.alerts("SlurmControllerDown") {
			if a.State == "firing" {
				t.Errorf("SlurmControllerDown fired during the failover (+%s)", time.Since(cut).Round(time.Second))
			}
			pending = append(pending, fmt.Sprintf("%s at +%s", a.State, time.Since(cut).Round(time.Second)))
		}
		if inControl.IsZero() {
			if _, code, _ := c.tryExec("slurmctld/1", "env", "SLURM_CONF="+ctlConf, "sbatch", "--parsable", "-p", "slurmd", "-o", "/dev/null", "--wrap", "true"); code == 0 {
				inControl = time.Now()
			}
		}
		settled = time.Now()
		return ok && !inControl.IsZero(), fmt.Sprint(up, " backup in control: ", !inControl.IsZero())
	})
	t.Logf("primary's power cut → the backup accepted a job after %s; its targets seen down during the failover: %v; SlurmControllerDown seen: %v",
		inControl.Sub(cut).Round(100*time.Millisecond), backupDown, pending)
	p.eventually(time.Minute, "the alert rules evaluated with the backup in control", func() (bool, string) {
		last := p.lastEvaluation("SlurmControllerDown")
		return last.After(settled), last.String()
	})
	if a := p.alerts("SlurmControllerDown"); len(a) != 0 {
		t.Errorf("SlurmControllerDown with the backup in control: %v", a)
	}
	p.eventually(time.Minute, "two idle nodes from the backup", func() (bool, string) {
		v := p.query(`slurm_nodes_idle{juju_unit="slurmctld/1"}`)
		return len(v) == 1 && v[0].Value == 2, fmt.Sprint(v)
	})
}

// lastEvaluation is when Prometheus last evaluated every rule group holding the alert rule
// named alert: the earliest of their last evaluations (each unit's rule file has its groups;
// zero when one has not been evaluated, or none holds the rule).
func (p *prom) lastEvaluation(alert string) time.Time {
	p.c.t.Helper()
	code, body := p.get("/api/v1/rules", nil)
	var resp struct {
		Status string
		Data   struct {
			Groups []struct {
				Rules          []struct{ Name string }
				LastEvaluation time.Time
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || code != 200 || resp.Status != "success" {
		p.c.t.Fatalf("rules: HTTP %d %s (%v)", code, body, err)
	}
	var first time.Time
	found := false
	for _, g := range resp.Data.Groups {
		for _, r := range g.Rules {
			if r.Name == alert && (!found || g.LastEvaluation.Before(first)) {
				first, found = g.LastEvaluation, true
			}
		}
	}
	return first
}
