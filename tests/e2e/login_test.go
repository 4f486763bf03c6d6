package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
	"github.com/charmed-slurm/operators/tests/model"
)

// TestLoginNodeMachines runs a login node (the sackd charm) beside a controller and two compute
// nodes on systemd machines of every release with sackd (Slurm 23.11 and later: Debian 13's
// 24.11, Debian 14's 26.05): from sackd/0 (no slurmd, no munge, no slurm.conf of its own)
// sinfo and squeue answer and sbatch and srun run on the compute nodes, before and after a key
// rotation and a controller restart with a new configuration; the controller's departure stops
// sackd and takes the key away, a new relation brings it back; the login unit's removal
// touches no job.
func TestLoginNodeMachines(t *testing.T) {
	t.Parallel()
	onReleases(t, []release{trixie, forky}, func(t *testing.T, r release) {
		c := newClusterOn(t, r.base, 2)
		c.checkRelease(r, "slurmctld/0", "slurmd/0")
		loginNode(t, c, r)
	})
}

// login runs argv on the login node as a user would: no SLURM_CONF, Slurm's clients find what
// sackd fetched.
func (c *cluster) login(argv ...string) string {
	c.t.Helper()
	return c.exec("sackd/0", argv...)
}

// loginReady waits until sackd/0 says it is ready.
func (c *cluster) loginReady(what string) {
	c.t.Helper()
	c.eventually(time.Minute, "sackd/0 ready "+what, func() (bool, string) {
		st, msg := c.unitStatus("sackd/0")
		return st == "active" && msg == "login node ready", st + ": " + msg
	})
}

// jobsFromLogin submits from the login node a batch job and an interactive step over both
// compute nodes, and lists the queue there, failing the test unless each runs on the compute
// nodes.
func (c *cluster) jobsFromLogin(when string) {
	c.t.Helper()
	t := c.t
	if got := strings.TrimSpace(c.login("sinfo", "-h", "-o", "%R %D %t")); got != "slurmd 2 idle" {
		t.Errorf("%s: sinfo on the login node: %q, want \"slurmd 2 idle\"", when, got)
	}
	c.srunFrom("sackd/0", when)
	id := strings.TrimSpace(c.login("sbatch", "--parsable", "-p", "slurmd", "-o", "/dev/null", "--wrap", "sleep 1"))
	if _, err := strconv.Atoi(id); err != nil {
		t.Fatalf("%s: sbatch on the login node printed %q", when, id)
	}
	queue := c.login("squeue", "-h", "-o", "%i %P")
	if !strings.Contains(queue, id+" slurmd") {
		t.Errorf("%s: squeue on the login node does not list job %s: %q", when, id, queue)
	}
	c.waitJobState(id, "COMPLETED", time.Minute)
	if nodes := field(c.slurm("scontrol", "show", "job", "-o", id), "NodeList"); !strings.HasPrefix(nodes, "slurmd-") {
		t.Errorf("%s: job %s ran on %q, want a compute node", when, id, nodes)
	}
}

// srunFrom runs an interactive step over both compute nodes from the login unit, failing the
// test unless it ran on two compute hosts (not the login node).
func (c *cluster) srunFrom(unit, when string) {
	c.t.Helper()
	self := strings.TrimSpace(c.exec(unit, "hostname"))
	hosts := strings.Fields(c.exec(unit, "srun", "-p", "slurmd", "-N2", "hostname"))
	if len(hosts) != 2 || hosts[0] == hosts[1] || hosts[0] == self || hosts[1] == self {
		c.t.Errorf("%s: srun -N2 hostname from %s printed %q, want the two compute hosts", when, self, hosts)
	}
}

// loginConf is the slurm.conf sackd/0 fetched from the controller; "" while it has none (a
// restarting sackd).
func (c *cluster) loginConf() string {
	out, _, _ := c.tryExec("sackd/0", "cat", "/run/slurm/conf/slurm.conf")
	return out
}

func loginNode(t *testing.T, c *cluster, r release) {
	c.deploy(sackdPath, "sackd", 1, nil)
	c.integrate("slurmctld", "sackd")
	c.waitActive()
	c.loginReady("after integrate")
	c.checkSystemd("sackd/0", "sackd")
	// The login node runs the release's sackd, and says so.
	if v := c.m.Status(c.bg()).Applications["sackd"].Version; !strings.HasPrefix(v, r.slurm+".") {
		t.Errorf("sackd's version %q, want Slurm %s", v, r.slurm)
	}
	// A login node: sackd runs as slurm; no slurmd, no munged, no slurm.conf of its own.
	if user := strings.TrimSpace(c.exec("sackd/0", "ps", "-o", "user=", "-C", "sackd")); user != "slurm" {
		t.Errorf("sackd runs as %q, want slurm", user)
	}
	for _, svc := range []string{"slurmd", "munge", "slurmctld"} {
		if out, _, _ := c.tryExec("sackd/0", "systemctl", "is-active", svc+".service"); strings.TrimSpace(out) == "active" {
			t.Errorf("%s runs on the login node", svc)
		}
	}
	c.exec("sackd/0", "test", "!", "-e", "/etc/slurm/slurm.conf")
	// The controller resolves the login node's name, which srun sends it, without DNS.
	self := strings.TrimSpace(c.login("hostname"))
	if got := strings.Fields(c.exec("slurmctld/0", "getent", "hosts", self)); len(got) < 2 || got[1] != self {
		t.Errorf("slurmctld/0 does not resolve the login node %s: %q", self, got)
	}
	c.jobsFromLogin("after integrate")
	if log := c.exec("slurmctld/0", "cat", ctlLogPath); strings.Contains(log, "Unable to resolve") {
		t.Errorf("slurmctld could not resolve a host after sruns from the login node:\n%s", grepLines(log, "resolve"))
	}
	c.recordLogin(r)

	// Key rotation: the controller restarts with the new key (auth/slurm); the login node's
	// sackd gets it through secret-changed.
	key := "/etc/slurm/slurm.key"
	before := c.exec("sackd/0", "sha256sum", key)
	c.runAction("slurmctld/0", "rotate-auth-key", nil)
	c.waitActive()
	c.loginReady("after the key rotation")
	ctlKey := strings.Fields(c.exec("slurmctld/0", "sha256sum", key))[0]
	if got := c.exec("sackd/0", "sha256sum", key); got == before || strings.Fields(got)[0] != ctlKey {
		t.Errorf("the login node's key is not the controller's new one")
	}
	c.eventually(30*time.Second, "2 idle nodes after rotation", func() (bool, string) {
		n := c.nodes()
		return strings.HasPrefix(n["slurmd-0"], "idle") && strings.HasPrefix(n["slurmd-1"], "idle"), fmt.Sprint(n)
	})
	c.jobsFromLogin("after the key rotation")

	// A controller restart with a new configuration: a generic resource the slurmd
	// application declares is a new GresTypes name, which slurmctld only takes with a restart.
	// sackd does not fetch the configuration again after a restart: the unit restarts it.
	pid := c.ctlPID()
	if err := c.m.SetConfig(c.bg(), "slurmd", map[string]string{"generic-resources": "Name=lic Count=4"}, nil); err != nil {
		t.Fatal(err)
	}
	gres := regexp.MustCompile(`(?m)^GresTypes=gpu,lic$`)
	c.eventually(2*time.Minute, "GresTypes=gpu,lic in the login node's configuration", func() (bool, string) {
		conf := c.loginConf()
		return gres.MatchString(conf), regexp.MustCompile(`(?m)^GresTypes=.*$`).FindString(conf)
	})
	if c.ctlPID() == pid {
		t.Errorf("slurmctld kept PID %s: the new GresTypes came without a restart, so this proves nothing about restarts", pid)
	}
	c.waitActive()
	c.loginReady("after the controller's restart")
	c.eventually(time.Minute, "2 idle nodes with lic", func() (bool, string) {
		n := c.nodes()
		return strings.HasPrefix(n["slurmd-0"], "idle") && strings.HasPrefix(n["slurmd-1"], "idle"), fmt.Sprint(n)
	})
	c.jobsFromLogin("after the controller's restart")
	c.login("srun", "-p", "slurmd", "--gres=lic:1", "true")

	// A restart with the same configuration (a crash, a reboot of the controller's machine):
	// the login node's configuration and key are still the controller's; it needs nothing.
	pid = c.ctlPID()
	c.exec("slurmctld/0", "systemctl", "restart", "slurmctld.service")
	c.eventually(30*time.Second, "slurmctld answering after its restart", func() (bool, string) {
		out, code, stderr := c.tryExec("sackd/0", "scontrol", "ping")
		return code == 0 && strings.Contains(out, "is UP") && c.ctlPID() != pid, out + stderr
	})
	c.jobsFromLogin("after a plain restart of the controller")

	// The controller's departure: sackd stops, the key and the cached configuration go.
	if err := c.m.RemoveRelation(c.bg(), "slurmctld", "sackd"); err != nil {
		t.Fatal(err)
	}
	c.eventually(time.Minute, "sackd/0 blocked without the relation", func() (bool, string) {
		st, msg := c.unitStatus("sackd/0")
		return st == "blocked" && msg == "waiting for slurmctld relation", st + ": " + msg
	})
	if out, _, _ := c.tryExec("sackd/0", "systemctl", "is-active", "sackd.service"); strings.TrimSpace(out) == "active" {
		t.Errorf("sackd still runs after the relation went")
	}
	c.exec("sackd/0", "test", "!", "-e", key)
	c.exec("sackd/0", "test", "!", "-e", "/run/slurm/conf/slurm.conf")
	if _, code, _ := c.tryExec("sackd/0", "timeout", "20", "sinfo"); code == 0 {
		t.Errorf("sinfo answers on a login node with no controller")
	}
	// The relation counts against sackd's limit of one until both sides' broken hooks have
	// run (Juju counts dying relations too): slurmctld's may still be under way here.
	c.waitIdle()
	c.integrate("slurmctld", "sackd")
	c.waitActive()
	c.loginReady("after a new relation")

	// Removing the login unit touches no job: one submitted from it runs on and completes.
	// The job runs until the test creates the file on its node.
	release := "/tmp/release-login-job"
	job := strings.TrimSpace(c.login("sbatch", "--parsable", "-p", "slurmd", "-w", "slurmd-0", "-o", "/dev/null", "--wrap",
		"while [ ! -e "+release+" ]; do sleep 0.1; done"))
	c.waitJobState(job, "RUNNING", 30*time.Second)
	reconf, starts := c.reconfigures()
	pid = c.ctlPID()
	if err := c.m.RemoveUnit(c.bg(), "sackd/0"); err != nil {
		t.Fatal(err)
	}
	c.eventually(2*time.Minute, "sackd/0 gone", func() (bool, string) {
		_, ok := c.m.Status(c.bg()).Applications["sackd"].Units["sackd/0"]
		return !ok, ""
	})
	if s := c.jobState(job); s != "RUNNING" {
		t.Errorf("job %s submitted from the removed login node is %s, want RUNNING", job, s)
	}
	c.exec("slurmd/0", "install", "-D", "-m", "0644", "/dev/null", release)
	c.waitJobState(job, "COMPLETED", time.Minute)
	if r, s := c.reconfigures(); r != reconf || s != starts || c.ctlPID() != pid {
		t.Errorf("removing the login unit: reconfigures %d → %d, starts %d → %d, pid %s → %s; want no change", reconf, r, starts, s, pid, c.ctlPID())
	}
}

// TestLoginNodeMixedReleases: a login node in the middle of an upgrade, held to the rule
// Slurm holds slurmd to (its own release and the three before it from 24.11, never a newer one).
//
//   - Wrong order (a login application on Debian 14, Slurm 26.05, related to a slurmctld on
//     Debian 13, 24.11): the unit is blocked naming both versions, sackd never runs and no key
//     is written; the controller is unaffected.
//   - Right order (slurmctld on Debian 14, the login application on Debian 13): the 24.11
//     login node submits to the 26.05 controller, and its jobs run; the controller leaves
//     MetricsType out of slurm.conf first (24.11's sackd exits on it) and says why.
func TestLoginNodeMixedReleases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		ctl, login release
		joins      bool
	}{
		{"newer-sackd-refused", trixie, forky, false},
		{"older-sackd-joins", forky, trixie, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClusterWith(t, tc.ctl.base, func(bm *model.BaseMachines) model.Provisioner {
				bm.Images[tc.login.base] = hoststest.Image(t, tc.login.suite)
				return bm
			}, 2)
			ctx, cancel := c.ctx(2 * time.Minute)
			defer cancel()
			if _, err := c.m.Deploy(ctx, model.DeployOptions{Charm: sackdPath, Name: "sackd", Base: tc.login.base}); err != nil {
				t.Fatal(err)
			}
			c.integrate("slurmctld", "sackd")
			c.waitIdle()
			if v := c.m.Status(c.bg()).Applications["sackd"].Version; !strings.HasPrefix(v, tc.login.slurm+".") {
				t.Fatalf("sackd's version %q, want Slurm %s", v, tc.login.slurm)
			}
			if tc.joins {
				c.loginReady("with a newer controller")
				c.jobsFromLogin("with a newer controller")
				c.metricsOffFor("login application sackd", tc.login, tc.ctl)
				c.neverRefusedConf("sackd/0", "sackd")
				return
			}
			code, msg := c.unitStatus("sackd/0")
			if code != "blocked" || !strings.Contains(msg, "sackd "+tc.login.slurm+".") ||
				!strings.Contains(msg, "is newer than slurmctld "+tc.ctl.slurm+".") || !strings.Contains(msg, "upgrade slurmctld first") {
				t.Errorf("sackd/0: %s %q, want blocked naming sackd %s and slurmctld %s", code, msg, tc.login.slurm, tc.ctl.slurm)
			}
			if out, _, _ := c.tryExec("sackd/0", "systemctl", "is-active", "sackd.service"); strings.TrimSpace(out) == "active" {
				t.Errorf("sackd runs on the refused login node")
			}
			c.exec("sackd/0", "test", "!", "-e", "/etc/slurm/slurm.key")
			if code, msg := c.unitStatus("slurmctld/0"); code != "active" {
				t.Errorf("slurmctld/0: %s %q", code, msg)
			}
		})
	}
}

// recordLogin records, when SLURM_RECORD_DIR is set (as for TestRecordSlurm: its
// real-<release> below it), what package slurm reads on a login node of release r: sinfo
// through sackd, and the same without it.
//
//	SLURM_RECORD_DIR=$PWD/libs/slurm/slurmtest go test -run TestLoginNodeMachines/forky ./tests/e2e/
func (c *cluster) recordLogin(r release) {
	c.t.Helper()
	dir := os.Getenv(recordEnv)
	if dir == "" {
		return
	}
	dir = filepath.Join(dir, "real-"+r.slurm)
	argv := []string{"sinfo", "-h", "-o", "%R"}
	save := func(name string) {
		stdout, code, stderr := c.tryExec("sackd/0", append([]string{"env", "SLURM_CONF=/run/slurm/conf/slurm.conf"}, argv...)...)
		for ext, data := range map[string]string{
			"argv": strings.Join(argv, "\n") + "\n", "stdout": stdout, "stderr": stderr, "rc": strconv.Itoa(code) + "\n",
		} {
			if err := os.WriteFile(filepath.Join(dir, name+"."+ext), []byte(data), 0o644); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	save("login-sinfo")
	// With sackd stopped (its cached configuration kept aside and put back for sinfo).
	c.exec("sackd/0", "cp", "-r", "/run/slurm/conf", "/root/conf-copy")
	c.exec("sackd/0", "systemctl", "stop", "sackd.service")
	c.exec("sackd/0", "sh", "-c", "mkdir -p /run/slurm && cp -r /root/conf-copy /run/slurm/conf")
	save("login-no-sack")
	c.exec("sackd/0", "rm", "-rf", "/run/slurm/conf", "/root/conf-copy")
	c.exec("sackd/0", "systemctl", "start", "sackd.service")
	c.loginReady("after recording")
}

// TestLoginNodeOldRelease deploys a login node where Slurm is 22.05 (Pebble hosts on Debian
// 12), which has no sackd: the unit blocks naming the version and what it needs, before and
// after the relation, and configures nothing; the controller is unaffected.
func TestLoginNodeOldRelease(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	c.deploy(sackdPath, "sackd", 1, nil)
	want := "Slurm 22.05.8 (installed here) has no sackd: a login node needs Slurm 23.11 (Debian 13) or later"
	blocked := func(when string) {
		c.eventually(time.Minute, "sackd/0 blocked "+when, func() (bool, string) {
			st, msg := c.unitStatus("sackd/0")
			return st == "blocked" && msg == want, st + ": " + msg
		})
	}
	blocked("after install")
	c.integrate("slurmctld", "sackd")
	c.waitIdle()
	blocked("after integrate")
	for _, p := range []string{"/etc/slurm/slurm.key", "/run/slurm"} {
		c.exec("sackd/0", "test", "!", "-e", p)
	}
	if out, _, _ := c.tryExec("sackd/0", "pgrep", "-x", "sackd"); strings.TrimSpace(out) != "" {
		t.Errorf("a sackd runs on the refused login node: %s", out)
	}
	if st, msg := c.unitStatus("slurmctld/0"); st != "active" {
		t.Errorf("slurmctld/0 %s: %s", st, msg)
	}
	if st := c.m.Status(c.bg()); st.Applications["sackd"].Version != "22.05.8" {
		t.Errorf("sackd's version %q, want 22.05.8", st.Applications["sackd"].Version)
	}
}

// grepLines are the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
