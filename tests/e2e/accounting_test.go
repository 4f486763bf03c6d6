package e2e_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
	"github.com/charmed-slurm/operators/tests/model"
)

// Accounting: slurmdbd (the slurmdbd charm) on a real MariaDB (the test database charm,
// tests/charms/mariadb, Debian's mariadb-server), related to a running cluster.

// TestAccounting on Pebble hosts (Slurm 22.05, MariaDB 10.11): accountingLifecycle.
func TestAccounting(t *testing.T) {
	t.Parallel()
	accountingLifecycle(t, newAccountingCluster(t, ""))
}

// TestAccountingMachines is TestAccounting on systemd machines: Debian 13 (Slurm 24.11,
// auth/slurm, MariaDB 11.8) and Debian 14 (Slurm 26.05, MariaDB 11.8).
func TestAccountingMachines(t *testing.T) {
	t.Parallel()
	onReleases(t, []release{trixie, forky}, func(t *testing.T, r release) {
		c := newAccountingCluster(t, r.base)
		c.checkRelease(r, "slurmctld/0", "slurmd/0")
		accountingLifecycle(t, c)
	})
}

// newAccountingCluster is a cluster on base with two CPU nodes (application slurmd) and one
// node with a fake GPU (application gpu).
func newAccountingCluster(t *testing.T, base string) *cluster {
	c := newClusterWith(t, base, func(bm *model.BaseMachines) model.Provisioner {
		return &gpuMachines{BaseMachines: bm, gpus: map[string]hosts.FakeGPUs{"gpu": {Model: "Tesla T4", Count: 1}}}
	}, 2)
	c.deploy(slurmdPath, "gpu", 1, nil)
	c.integrate("slurmctld", "gpu")
	c.waitActive()
	return c
}

// accountingLifecycle: relating slurmdbd to a cluster with a running and a queued job costs
// one slurmctld restart and no job; every job is then in sacct with its TRES; with slurmdbd
// stopped, jobs start and end, the controller's status says accounting is behind, and once
// slurmdbd is back every job is in sacct; removing the relation costs one restart and no job
// (a running and a queued one).
func accountingLifecycle(t *testing.T, c *cluster) {
	running := c.sbatch("slurmd", "--mem=64", "--wrap", "sleep 25")
	c.waitJobState(running, "RUNNING", time.Minute)
	queued := c.sbatch("slurmd", "--mem=64", "--dependency=afterok:"+running, "--wrap", "true")
	_, startsBefore := c.reconfigures()

	c.deploy(mariadbPath, "mariadb", 1, nil)
	c.deploy(slurmdbdPath, "slurmdbd", 1, nil)
	c.integrate("slurmdbd", "mariadb")
	c.integrate("slurmctld", "slurmdbd")
	c.waitActive()
	if _, starts := c.reconfigures(); starts != startsBefore+1 {
		t.Errorf("relating slurmdbd started slurmctld %d times, want once", starts-startsBefore)
	}
	if st := c.jobState(running); st != "RUNNING" && st != "COMPLETED" {
		t.Errorf("running job %s is %s after the restart", running, st)
	}
	conf := c.exec("slurmctld/0", "cat", ctlConf)
	for _, want := range []string{"AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageTRES=gres/gpu"} {
		if !strings.Contains(conf, want) {
			t.Errorf("slurm.conf lacks %s", want)
		}
	}
	c.checkDbdConf()
	c.waitJobState(running, "COMPLETED", time.Minute)
	c.waitJobState(queued, "COMPLETED", time.Minute)
	jobs := []string{running, queued}
	for range 3 {
		jobs = append(jobs, c.sbatch("slurmd", "--mem=64", "--wrap", "true"))
	}
	gpuJob := c.sbatch("gpu", "--mem=64", "--gres=gpu:1", "--wrap", "true")
	jobs = append(jobs, gpuJob)
	c.waitCompleted(jobs, 2*time.Minute)
	c.waitAccounted(jobs, time.Minute)
	if rec := c.accounted()[gpuJob]; !strings.Contains(rec, "gres/gpu=1") {
		t.Errorf("sacct of GPU job %s: %q, want gres/gpu=1 in its TRES", gpuJob, rec)
	}
	if out := c.slurm("sacctmgr", "-n", "-P", "show", "cluster", "format=cluster"); !strings.Contains(out, "charmed-slurm") {
		t.Errorf("sacctmgr shows clusters %q, want charmed-slurm registered", out)
	}

	// slurmdbd away: jobs run, the records wait in slurmctld's queue, the status says so.
	c.serviceCtl("slurmdbd/0", "stop", "slurmdbd")
	c.waitBlocked("slurmdbd/0", "slurmdbd was stopped outside the charm")
	var away []string
	for range 4 {
		away = append(away, c.sbatch("slurmd", "--mem=64", "--wrap", "true"))
	}
	c.waitCompleted(away, 2*time.Minute)
	c.eventually(time.Minute, "the controller's status to say accounting is behind", func() (bool, string) {
		_, msg := c.unitStatus("slurmctld/0")
		return strings.Contains(msg, "accounting behind"), msg
	})
	c.serviceCtl("slurmdbd/0", "start", "slurmdbd")
	c.waitAccounted(append(jobs, away...), 2*time.Minute)
	c.eventually(time.Minute, "the controller's status to say accounting caught up", func() (bool, string) {
		_, msg := c.unitStatus("slurmctld/0")
		return strings.Contains(msg, "accounting via slurmdbd"), msg
	})

	// Removing the relation: one restart, the running job keeps running and the queued one
	// starts after it.
	last := c.sbatch("slurmd", "--mem=64", "--wrap", "sleep 15")
	c.waitJobState(last, "RUNNING", time.Minute)
	lastQueued := c.sbatch("slurmd", "--mem=64", "--dependency=afterok:"+last, "--wrap", "true")
	_, startsBefore = c.reconfigures()
	if err := c.m.RemoveRelation(c.bg(), "slurmctld", "slurmdbd"); err != nil {
		t.Fatal(err)
	}
	c.waitIdle()
	// The hook that restarted slurmctld did not wait for it: a later run finds it answering
	// and sets the status back to active.
	c.eventually(time.Minute, "slurmctld active without accounting", func() (bool, string) {
		st, msg := c.unitStatus("slurmctld/0")
		return st == "active" && !strings.Contains(msg, "accounting"), st + ": " + msg
	})
	if _, starts := c.reconfigures(); starts != startsBefore+1 {
		t.Errorf("removing the slurmdbd relation started slurmctld %d times, want once", starts-startsBefore)
	}
	if st := c.jobState(last); st != "RUNNING" && st != "COMPLETED" {
		t.Errorf("running job %s is %s after the restart", last, st)
	}
	c.waitJobState(last, "COMPLETED", time.Minute)
	c.waitJobState(lastQueued, "COMPLETED", time.Minute)
	if conf := c.exec("slurmctld/0", "cat", ctlConf); !strings.Contains(conf, "AccountingStorageType=accounting_storage/none") {
		t.Errorf("slurm.conf still has accounting:\n%s", conf)
	}
}

// recordRE is a job's sacct record: COMPLETED, cpu and node allocated, and the 64 MB of
// memory it asked for.
var recordRE = regexp.MustCompile(`^COMPLETED \S*cpu=\d+,\S*node=\d+\S* \S*cpu=\d+,\S*mem=64M,node=\d+`)

// accounted is what sacct knows of each job: id → "state alloctres reqtres".
func (c *cluster) accounted() map[string]string {
	c.t.Helper()
	out, code, stderr := c.tryExec("slurmctld/0", "env", "SLURM_CONF="+ctlConf, "sacct", "-a", "-X", "-n", "-P", "-S", "2020-01-01", "-o", "JobID,State,AllocTRES,ReqTRES")
	got := map[string]string{}
	if code != 0 {
		got["sacct"] = strings.TrimSpace(stderr) // slurmdbd or its database away: wait on
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) == 4 {
			got[f[0]] = f[1] + " " + f[2] + " " + f[3]
		}
	}
	return got
}

// waitAccounted waits until sacct lists every job COMPLETED with its TRES: cpu and node
// allocated, and the 64 MB of memory it asked for (memory is allocated TRES only where
// memory is a consumable resource: SelectTypeParameters=CR_Core_Memory; the charm's default
// is CR_Core).
func (c *cluster) waitAccounted(jobs []string, d time.Duration) {
	c.t.Helper()
	c.eventually(d, "sacct to list jobs "+strings.Join(jobs, ","), func() (bool, string) {
		got := c.accounted()
		var missing []string
		for _, j := range jobs {
			rec, ok := got[j]
			if !ok || !recordRE.MatchString(rec) {
				missing = append(missing, j+"="+rec)
			}
		}
		return len(missing) == 0, "missing or incomplete: " + strings.Join(missing, " ")
	})
}

// checkDbdConf checks slurmdbd.conf's mode and owner, and that the password is in no relation
// data, status or log the model holds.
func (c *cluster) checkDbdConf() {
	c.t.Helper()
	if got := strings.TrimSpace(c.exec("slurmdbd/0", "stat", "-c", "%a %U", "/etc/slurm/slurmdbd.conf")); got != "600 slurm" {
		c.t.Errorf("slurmdbd.conf is %q, want \"600 slurm\"", got)
	}
	conf := c.exec("slurmdbd/0", "cat", "/etc/slurm/slurmdbd.conf")
	var pass string
	for _, line := range strings.Split(conf, "\n") {
		if v, ok := strings.CutPrefix(line, "StoragePass="); ok {
			pass = strings.Trim(v, `"`)
		}
	}
	if len(pass) < 16 {
		c.t.Fatalf("slurmdbd.conf has no password of the database's making: %q", pass)
	}
	state := c.m.State()
	blob := strings.Join(c.m.DebugLog(), "\n")
	for _, rel := range state.Relations {
		for _, bags := range []map[string]map[string]string{rel.AppData, rel.UnitData} {
			for _, bag := range bags {
				for k, v := range bag {
					blob += "\n" + k + "=" + v
				}
			}
		}
	}
	st := c.m.Status(c.bg())
	for _, a := range st.Applications {
		for _, u := range a.Units {
			blob += "\n" + u.WorkloadStatus.Message
		}
	}
	if strings.Contains(blob, pass) {
		c.t.Error("the database password appears in relation data, a status or the debug log")
	}
}

// serviceCtl stops or starts a service on unit's host: systemctl on a machine, Pebble on a
// Pebble host.
func (c *cluster) serviceCtl(unit, verb, service string) {
	c.t.Helper()
	st := c.m.Status(c.bg())
	app, _, _ := strings.Cut(unit, "/")
	if st.Machines[st.Applications[app].Units[unit].Machine].BootID != "" {
		c.exec(unit, "systemctl", verb, service+".service")
		return
	}
	bin, err := hoststest.PebbleBin()
	if err != nil {
		c.t.Fatal(err)
	}
	c.exec(unit, bin, verb, service)
}

// TestAccountingFaults on Pebble hosts: a database that shares no credentials, that is
// unreachable, that refuses the credentials blocks slurmdbd naming each problem, while
// slurmctld keeps scheduling; once the database is back the controller's queue drains.
// slurmdbd-conf-parameters that slurmdbd's parser refuses block it too, changing nothing.
func TestAccountingFaults(t *testing.T) {
	t.Parallel()
	accountingFaults(t, newCluster(t, 1))
}

func accountingFaults(t *testing.T, c *cluster) {
	c.deploy(mariadbPath, "mariadb", 1, map[string]string{"share-credentials": "false"})
	c.deploy(slurmdbdPath, "slurmdbd", 1, nil)
	c.integrate("slurmdbd", "mariadb")
	c.integrate("slurmctld", "slurmdbd")
	c.waitIdle()
	c.waitBlocked("slurmdbd/0", `database relation: invalid "secret-user" in database relation data: missing: the provider shared no credentials`)
	c.checkScheduling()

	if err := c.m.SetConfig(c.bg(), "mariadb", map[string]string{"share-credentials": "true"}, nil); err != nil {
		t.Fatal(err)
	}
	c.waitActive()
	jobs := []string{c.sbatch("slurmd", "--mem=64", "--wrap", "true")}
	c.waitCompleted(jobs, time.Minute)
	c.waitAccounted(jobs, time.Minute)

	// The database away: slurmdbd keeps running, slurmctld keeps scheduling and queues; once
	// the database is back the queue drains.
	c.serviceCtl("mariadb/0", "stop", "mariadb")
	c.waitBlocked("slurmdbd/0", "cannot reach the database at ")
	away := []string{c.sbatch("slurmd", "--mem=64", "--wrap", "true")}
	c.waitCompleted(away, time.Minute)
	c.checkScheduling()
	c.serviceCtl("mariadb/0", "start", "mariadb")
	c.waitAccounted(append(jobs, away...), 2*time.Minute)
	c.eventually(2*time.Minute, "slurmdbd/0 active again", func() (bool, string) {
		st, msg := c.unitStatus("slurmdbd/0")
		return st == "active", st + ": " + msg
	})

	// slurmdbd-conf-parameters through slurmdbd's own parser: a key it refuses blocks the unit
	// naming the key, slurmdbd.conf and the running slurmdbd stay as they were; a key it takes
	// is written and applied.
	confBefore := c.exec("slurmdbd/0", "cat", "/etc/slurm/slurmdbd.conf")
	pidBefore := c.exec("slurmdbd/0", "cat", "/run/slurmdbd/slurmdbd.pid")
	c.setDbdParameters("BogusKey=1")
	c.waitBlocked("slurmdbd/0", "slurmdbd-conf-parameters: slurmdbd refuses BogusKey")
	if got := c.exec("slurmdbd/0", "cat", "/etc/slurm/slurmdbd.conf"); got != confBefore {
		t.Errorf("a refused parameter changed slurmdbd.conf:\n%s", got)
	}
	if got := c.exec("slurmdbd/0", "cat", "/run/slurmdbd/slurmdbd.pid"); got != pidBefore {
		t.Errorf("a refused parameter restarted slurmdbd: pid %s, was %s", strings.TrimSpace(got), strings.TrimSpace(pidBefore))
	}
	c.setDbdParameters("PurgeJobAfter=12months")
	c.eventually(2*time.Minute, "slurmdbd/0 active with PurgeJobAfter", func() (bool, string) {
		st, msg := c.unitStatus("slurmdbd/0")
		return st == "active", st + ": " + msg
	})
	if got := c.dbdConfValue("PurgeJobAfter"); got != "12months" {
		t.Errorf("slurmdbd.conf has PurgeJobAfter=%s, want 12months", got)
	}
	more := []string{c.sbatch("slurmd", "--mem=64", "--wrap", "true")}
	c.waitCompleted(more, time.Minute)
	c.waitAccounted(append(append(jobs, away...), more...), 2*time.Minute)

	// Credentials the database no longer takes (changed behind the charms' back).
	user := c.dbdConfValue("StorageUser")
	c.exec("mariadb/0", "mariadb", "--no-defaults", "--socket=/run/mysqld/mysqld.sock", "-u", "root",
		"-e", "ALTER USER '"+user+"'@'%' IDENTIFIED BY 'not-the-password-any-more'")
	c.waitBlocked("slurmdbd/0", "refuses the credentials of user "+user)
	c.checkScheduling()
}

// setDbdParameters sets the slurmdbd application's slurmdbd-conf-parameters.
func (c *cluster) setDbdParameters(v string) {
	c.t.Helper()
	if err := c.m.SetConfig(c.bg(), "slurmdbd", map[string]string{"slurmdbd-conf-parameters": v}, nil); err != nil {
		c.t.Fatal(err)
	}
}

// waitBlocked waits until unit is blocked with a message containing want.
func (c *cluster) waitBlocked(unit, want string) {
	c.t.Helper()
	c.eventually(2*time.Minute, unit+" blocked: "+want, func() (bool, string) {
		st, msg := c.unitStatus(unit)
		return st == "blocked" && strings.Contains(msg, want), st + ": " + msg
	})
}

// checkScheduling runs a job to its end and checks the controller is active.
func (c *cluster) checkScheduling() {
	c.t.Helper()
	id := c.sbatch("slurmd", "--wrap", "true")
	c.waitJobState(id, "COMPLETED", time.Minute)
	if st, msg := c.unitStatus("slurmctld/0"); st != "active" {
		c.t.Errorf("slurmctld/0 is %s: %s", st, msg)
	}
}

// dbdConfValue is a key's value in slurmdbd.conf on slurmdbd/0.
func (c *cluster) dbdConfValue(key string) string {
	c.t.Helper()
	for _, line := range strings.Split(c.exec("slurmdbd/0", "cat", "/etc/slurm/slurmdbd.conf"), "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			return strings.Trim(v, `"`)
		}
	}
	c.t.Fatalf("slurmdbd.conf has no %s", key)
	return ""
}

// TestAccountingOlderSlurmdbd: a controller on Debian 13 (Slurm 24.11) related to slurmdbd on
// a Debian 12 machine (Slurm 22.05): slurmdbd blocks naming both versions and never starts,
// slurmctld gets no slurmdbd to turn accounting on with and keeps scheduling.
func TestAccountingOlderSlurmdbd(t *testing.T) {
	t.Parallel()
	c := newClusterWith(t, model.BaseTrixie, func(bm *model.BaseMachines) model.Provisioner {
		bm.Images[model.BaseBookworm] = hoststest.Image(t, "bookworm")
		return bm
	}, 1)
	c.deploy(mariadbPath, "mariadb", 1, nil)
	c.deployBase(slurmdbdPath, "slurmdbd", model.BaseBookworm)
	c.integrate("slurmdbd", "mariadb")
	c.integrate("slurmctld", "slurmdbd")
	c.waitIdle()
	c.waitBlocked("slurmdbd/0", "slurmdbd 22.05.8 is older than the controller's Slurm 24.11.")
	if out, _, _ := c.tryExec("slurmdbd/0", "systemctl", "is-active", "slurmdbd.service"); strings.TrimSpace(out) == "active" {
		t.Error("slurmdbd runs for a newer controller")
	}
	c.checkScheduling()
	if conf := c.exec("slurmctld/0", "cat", ctlConf); !strings.Contains(conf, "AccountingStorageType=accounting_storage/none") {
		t.Errorf("slurm.conf has accounting with an older slurmdbd:\n%s", conf)
	}
}

// deployBase deploys one unit of charm as name on a machine of base.
func (c *cluster) deployBase(charm, name, base string) {
	c.t.Helper()
	ctx, cancel := c.ctx(2 * time.Minute)
	defer cancel()
	if _, err := c.m.Deploy(ctx, model.DeployOptions{Charm: charm, Name: name, Units: 1, Base: base}); err != nil {
		c.t.Fatal(err)
	}
}
