package e2e_test

import (
	"strings"
	"testing"
	"time"
)

// TestBadConfigChangesNothing: partition-config values Slurm cannot read, keys the operator
// does not own and absurd sizes block the slurmd application naming the key; slurm-conf-
// parameters that pass the charm's key check but that Slurm's parser refuses block the
// controller naming the key. In every case slurm.conf, the partition and the running
// slurmctld stay as they were (no reconfigure, same PID, Slurm commands still work), and a
// good value afterwards applies with exactly one reconfigure.
func TestBadConfigChangesNothing(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	c.eventually(30*time.Second, "partition slurmd", func() (bool, string) {
		p := c.partition("slurmd")
		return strings.Contains(p, "TotalNodes=1"), p
	})
	part0 := c.partition("slurmd")
	conf0 := c.exec("slurmctld/0", "cat", ctlConf)
	reconf0, starts0 := c.reconfigures()
	pid0 := c.ctlPID()

	for _, tt := range []struct{ value, key string }{
		{"MaxTime=abc", "MaxTime"},
		{"MaxNodes=abc", "MaxNodes"},
		{"Default=maybe", "Default"},
		{"State=DOWN", "State"},
		{"MaxTime=1:00:00 AllowGroups=" + strings.Repeat("g", 10000), "AllowGroups"},
	} {
		if err := c.m.SetConfig(c.bg(), "slurmd", map[string]string{"partition-config": tt.value}, nil); err != nil {
			t.Fatal(err)
		}
		c.waitIdle()
		if st, msg := c.unitStatus("slurmd/0"); st != "blocked" || !strings.Contains(msg, tt.key) {
			t.Errorf("partition-config %.40s: slurmd/0 is %s %q, want blocked naming %s", tt.value, st, msg, tt.key)
		}
		if p := c.partition("slurmd"); p != part0 {
			t.Errorf("partition-config %.40s changed the partition:\n%s\nwas\n%s", tt.value, p, part0)
		}
	}

	// Keys the charm's checks know, values only Slurm's parser refuses.
	if err := c.m.SetConfig(c.bg(), "slurmctld", map[string]string{"slurm-conf-parameters": "MaxJobCount=abc"}, nil); err != nil {
		t.Fatal(err)
	}
	c.waitIdle()
	if st, msg := c.unitStatus("slurmctld/0"); st != "blocked" || !strings.Contains(msg, "slurm-conf-parameters") || !strings.Contains(msg, "MaxJobCount") {
		t.Errorf("slurm-conf-parameters MaxJobCount=abc: slurmctld/0 is %s %q, want blocked naming the option and MaxJobCount", st, msg)
	}
	if conf := c.exec("slurmctld/0", "cat", ctlConf); conf != conf0 {
		t.Errorf("slurm.conf changed although Slurm refuses it:\n%s", conf)
	}
	c.slurm("scontrol", "ping") // every Slurm command still reads the live file
	c.slurm("srun", "-p", "slurmd", "hostname")
	if reconf, starts := c.reconfigures(); reconf != reconf0 || starts != starts0 || c.ctlPID() != pid0 {
		t.Errorf("bad input reconfigured or restarted slurmctld: reconfigures %d → %d, starts %d → %d", reconf0, reconf, starts0, starts)
	}

	// Good values apply, one reconfigure each, and clear the statuses.
	if err := c.m.SetConfig(c.bg(), "slurmctld", map[string]string{"slurm-conf-parameters": "MaxJobCount=5000"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.m.SetConfig(c.bg(), "slurmd", map[string]string{"partition-config": "MaxTime=1:00:00"}, nil); err != nil {
		t.Fatal(err)
	}
	c.waitActive()
	c.eventually(15*time.Second, "MaxTime=01:00:00", func() (bool, string) {
		p := c.partition("slurmd")
		return field(p, "MaxTime") == "01:00:00", p
	})
	if !strings.Contains(c.slurm("scontrol", "show", "config"), "MaxJobCount             = 5000") {
		t.Errorf("MaxJobCount=5000 not applied")
	}
	if reconf, _ := c.reconfigures(); reconf != reconf0+2 {
		t.Errorf("%d reconfigures for two good changes, want 2", reconf-reconf0)
	}
}

// TestRemoveApplicationPendingJobs: a pending job of a removed application's partition can
// never run there; the controller names it in its status with the settle-jobs action instead
// of waiting in silence, and settle-jobs move-to queues it in another partition, after which
// the partition goes.
func TestRemoveApplicationPendingJobs(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, map[string]string{"slurm-conf-parameters": "MinJobAge=2"})
	c.deploy(slurmdPath, "gpu", 1, nil)
	c.integrate("slurmctld", "gpu")
	c.waitActive()
	c.eventually(30*time.Second, "gpu-0 idle", func() (bool, string) {
		n := c.nodes()["gpu-0"]
		return strings.HasPrefix(n, "idle gpu "), n
	})
	job := c.sbatch("gpu", "--hold", "--wrap", "true")
	c.waitJobState(job, "PENDING", 30*time.Second)
	if err := c.m.RemoveApplication(c.bg(), "gpu"); err != nil {
		t.Fatal(err)
	}
	c.eventually(time.Minute, "slurmctld names the pending job", func() (bool, string) {
		st, msg := c.unitStatus("slurmctld/0")
		return st == "blocked" && strings.Contains(msg, "pending jobs "+job) && strings.Contains(msg, "settle-jobs"), st + " " + msg
	})
	if p := c.partition("gpu"); field(p, "State") != "INACTIVE" {
		t.Errorf("partition gpu while its pending job waits: %s", p)
	}
	if run := c.runAction("slurmctld/0", "settle-jobs", map[string]string{"partition": "gpu", "move-to": "slurmd"}); run.Results["moved"] != job {
		t.Fatalf("settle-jobs: moved %v, want job %s", run.Results, job)
	}
	if out := c.slurm("squeue", "-h", "-j", job, "-o", "%P %T"); strings.TrimSpace(out) != "slurmd PENDING" {
		t.Errorf("moved job: %q, want it pending in partition slurmd", out)
	}
	c.eventually(2*time.Minute, "partition gpu gone", func() (bool, string) {
		p := c.partition("gpu")
		return p == "", p
	})
	c.slurm("scontrol", "release", job)
	c.waitJobState(job, "COMPLETED", time.Minute)
}

// TestReconfigureKeepsPartitionMembers: Slurm 22.05 drops a registered dynamic node from its
// NodeSet's partition when a reconfigure runs while the node table has a hole before it (a
// deleted node; SchedMD bug 16295). The controller checks and repairs every partition after
// its own reconfigures, so after each partition-config change every registered node of the
// application is in its partition, while units come and go.
func TestReconfigureKeepsPartitionMembers(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3)
	for round, step := range []struct {
		remove, maxTime string
		add             bool
	}{
		{remove: "slurmd/0", maxTime: "01:00:00"},
		{add: true, maxTime: "02:00:00"},
		{remove: "slurmd/1", maxTime: "03:00:00"},
		{remove: "slurmd/3", add: true, maxTime: "04:00:00"},
	} {
		if step.remove != "" {
			if err := c.m.RemoveUnit(c.bg(), step.remove); err != nil {
				t.Fatal(err)
			}
		}
		if step.add {
			if _, err := c.m.AddUnit(c.bg(), "slurmd", 1); err != nil {
				t.Fatal(err)
			}
		}
		c.waitActive()
		if err := c.m.SetConfig(c.bg(), "slurmd", map[string]string{"partition-config": "MaxTime=" + step.maxTime}, nil); err != nil {
			t.Fatal(err)
		}
		c.waitActive()
		c.eventually(15*time.Second, "MaxTime="+step.maxTime, func() (bool, string) {
			p := c.partition("slurmd")
			return field(p, "MaxTime") == step.maxTime, p
		})
		registered := c.nodeNames()
		part := field(c.partition("slurmd"), "Nodes")
		members := strings.TrimSpace(c.slurm("scontrol", "show", "hostnames", part))
		for _, n := range registered {
			if !strings.Contains("\n"+members+"\n", "\n"+n+"\n") {
				t.Errorf("round %d: registered node %s is not in partition slurmd (Nodes=%s)", round, n, part)
			}
		}
	}
}
