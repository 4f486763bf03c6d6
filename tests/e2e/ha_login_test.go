package e2e_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// slurmctldHostRE matches the SlurmctldHost lines of a slurm.conf, and their host name.
var slurmctldHostRE = regexp.MustCompile(`(?m)^SlurmctldHost=([^(\s]+)`)

// TestLoginNodeFailoverMachines runs a login node (the sackd charm) against two controllers
// sharing their StateSaveLocation (Debian 14 machines, Slurm 26.05): its sackd runs with both
// controllers as --conf-server, primary first, and the configuration it fetched lists both
// SlurmctldHost lines. Then the primary's machine loses its power: from the login node, as a
// user would (no SLURM_CONF), sbatch is accepted once the backup is in control, squeue and
// sinfo answer, srun runs on the compute nodes, and the job runs once; the login unit's sackd
// is not restarted for it. During the outage, the login unit's sackd restarted fetches its
// configuration through the second --conf-server, and a login unit added joins (sbatch and
// srun from it run).
func TestLoginNodeFailoverMachines(t *testing.T) {
	t.Parallel()
	c := newHAMachines(t)
	c.deploy(sackdPath, "sackd", 1, nil)
	c.integrate("slurmctld", "sackd")
	c.waitActive()
	c.loginReady("with two controllers")
	c.checkSystemd("sackd/0", "sackd")

	want := c.waitBothConfServers()
	c.eventually(time.Minute, "sackd/0's sackd with both controllers", func() (bool, string) {
		out, _, _ := c.tryExec("sackd/0", "pgrep", "-a", "-x", "sackd")
		m := confServerRE.FindStringSubmatch(out)
		return m != nil && m[1] == want, out
	})
	var ctlHosts []string
	for _, u := range []string{"slurmctld/0", "slurmctld/1"} {
		ctlHosts = append(ctlHosts, strings.TrimSpace(c.exec(u, "hostname")))
	}
	var fetched []string
	for _, m := range slurmctldHostRE.FindAllStringSubmatch(c.loginConf(), -1) {
		fetched = append(fetched, m[1])
	}
	if strings.Join(fetched, " ") != strings.Join(ctlHosts, " ") {
		t.Fatalf("the configuration sackd/0 fetched lists SlurmctldHost %q, want %q", fetched, ctlHosts)
	}
	c.jobsFromLogin("with two controllers")
	sackdPID := strings.TrimSpace(c.exec("sackd/0", "pgrep", "-o", "-x", "sackd"))
	c.waitStateSaved(time.Now())

	c.powerCut("slurmctld/0")
	cut := time.Now()
	c.logHooksOnFailure("the power cut", cut)
	c.ctl = "slurmctld/1"
	var id string
	var accepted time.Duration
	c.eventually(90*time.Second, "sbatch from the login node accepted after the power cut", func() (bool, string) {
		out, code, stderr := c.tryExec("sackd/0", "sbatch", "--parsable", "-p", "slurmd", "-o", "/dev/null", "--wrap", "sleep 1")
		if code != 0 {
			return false, stderr
		}
		accepted = time.Since(cut)
		id = strings.TrimSpace(out)
		return true, ""
	})
	t.Logf("primary's power cut → first job accepted from the login node: %s (SlurmctldTimeout 10 s)", accepted.Round(100*time.Millisecond))
	if _, err := strconv.Atoi(id); err != nil {
		t.Fatalf("sbatch on the login node printed %q", id)
	}
	if accepted > 10*time.Second+20*time.Second {
		t.Errorf("the login node's sbatch took %s to be accepted, want within SlurmctldTimeout (10 s) plus a few seconds", accepted)
	}
	if queue := c.login("squeue", "-h", "-o", "%i %P"); !strings.Contains(queue, id+" slurmd") {
		t.Errorf("squeue on the login node after the failover does not list job %s: %q", id, queue)
	}
	if got := c.login("sinfo", "-h", "-o", "%R %D"); strings.TrimSpace(got) != "slurmd 2" {
		t.Errorf("sinfo on the login node after the failover: %q, want \"slurmd 2\"", got)
	}
	c.waitJobState(id, "COMPLETED", 90*time.Second)
	job := c.slurm("scontrol", "show", "job", "-o", id)
	if !strings.Contains(job, " Restarts=0 ") || !strings.HasPrefix(field(job, "NodeList"), "slurmd-") {
		t.Errorf("job %s from the login node did not run once on a compute node: %s", id, job)
	}
	// srun from the login node: the backup in control reaches the login node's srun by its
	// host name, as the primary did.
	c.srunFrom("sackd/0", "after the failover")
	if now := strings.TrimSpace(c.exec("sackd/0", "pgrep", "-o", "-x", "sackd")); now != sackdPID {
		t.Errorf("sackd/0's sackd restarted during the failover: pid %s, was %s", now, sackdPID)
	}

	// sackd started again while the primary is dead (the login machine rebooted) fetches the
	// configuration through the second --conf-server.
	restarted := time.Now().Unix()
	c.exec("sackd/0", "systemctl", "restart", "sackd.service")
	c.eventually(time.Minute, "sackd/0's configuration fetched again from the backup", func() (bool, string) {
		out, _, _ := c.tryExec("sackd/0", "stat", "-c", "%Y", "/run/slurm/conf/slurm.conf")
		sec, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		return err == nil && sec >= restarted, out
	})
	t.Logf("sackd/0 restarted during the outage: configuration fetched from the backup after %s", time.Since(time.Unix(restarted, 0)).Round(time.Second))
	if got := c.login("sinfo", "-h", "-o", "%R %D"); strings.TrimSpace(got) != "slurmd 2" {
		t.Errorf("sinfo on the login node after sackd's restart during the outage: %q, want \"slurmd 2\"", got)
	}

	// A login unit added while the primary is dead joins through the backup: its sackd
	// fetches the configuration there and its jobs run.
	added := time.Now()
	if _, err := c.m.AddUnit(c.bg(), "sackd", 1); err != nil {
		t.Fatal(err)
	}
	c.eventually(3*time.Minute, "sackd/1 ready during the outage", func() (bool, string) {
		st, msg := c.unitStatus("sackd/1")
		return st == "active" && msg == "login node ready", st + ": " + msg
	})
	t.Logf("sackd/1 added during the outage: ready after %s", time.Since(added).Round(time.Second))
	late := strings.TrimSpace(c.exec("sackd/1", "sbatch", "--parsable", "-p", "slurmd", "-o", "/dev/null", "--wrap", "true"))
	c.waitJobState(late, "COMPLETED", time.Minute)
	// The backup learnt the new login node's host name (from its own relation hook; the
	// leader is dead) and reaches its srun.
	c.srunFrom("sackd/1", "a login unit added during the outage")
}
