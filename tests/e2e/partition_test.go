package e2e_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPartitions covers partition-config (one reconfigure when valid; blocked naming the key and
// the old partition intact when not), a second slurmd application (a second partition), and
// remove-application (the partition goes only after its jobs end; slurmctld keeps running).
func TestPartitions(t *testing.T) {
	t.Parallel()
	partitions(t, newCluster(t, 1, partitionsConfig))
}

// partitionsConfig is the controller's config for partitions: completed job records are kept
// for MinJobAge; keep it short so removal does not wait 5 min.
var partitionsConfig = map[string]string{"slurm-conf-parameters": "MinJobAge=2"}

// partitions is TestPartitions on cluster c (one slurmd unit, partitionsConfig), whatever its
// machines.
func partitions(t *testing.T, c *cluster) {
	// Its one node (on Slurm 24.11 Nodes= also lists the charm's FUTURE records,
	// slurmd-future[1-8], which are never up).
	c.eventually(30*time.Second, "partition slurmd", func() (bool, string) {
		p := c.partition("slurmd")
		return slices.Contains(strings.Split(field(p, "Nodes"), ","), "slurmd-0"), p
	})

	// Valid partition-config → the partition changes with exactly one reconfigure.
	reconf0, starts0 := c.reconfigures()
	pid0 := c.ctlPID()
	if err := c.m.SetConfig(c.bg(), "slurmd", map[string]string{"partition-config": "MaxTime=1:00:00 DefaultTime=10:00"}, nil); err != nil {
		t.Fatal(err)
	}
	c.waitActive()
	c.eventually(15*time.Second, "MaxTime=01:00:00", func() (bool, string) {
		p := c.partition("slurmd")
		return field(p, "MaxTime") == "01:00:00" && field(p, "DefaultTime") == "00:10:00", p
	})
	if reconf1, _ := c.reconfigures(); reconf1 != reconf0+1 {
		t.Errorf("valid partition-config: %d reconfigures, want exactly 1", reconf1-reconf0)
	}

	// Invalid partition-config → blocked naming the key; the partition keeps its values.
	if err := c.m.SetConfig(c.bg(), "slurmd", map[string]string{"partition-config": "MaxTime=2:00:00 MaxTme=5"}, nil); err != nil {
		t.Fatal(err)
	}
	c.waitIdle()
	if st, msg := c.unitStatus("slurmd/0"); st != "blocked" || !strings.Contains(msg, "MaxTme") {
		t.Errorf("invalid partition-config: status %s %q, want blocked naming MaxTme", st, msg)
	}
	if p := c.partition("slurmd"); field(p, "MaxTime") != "01:00:00" {
		t.Errorf("invalid partition-config changed the partition: %s", p)
	}
	if err := c.m.SetConfig(c.bg(), "slurmd", map[string]string{"partition-config": "MaxTime=1:00:00 DefaultTime=10:00"}, nil); err != nil {
		t.Fatal(err)
	}
	c.waitActive()

	// A second slurmd application → a second partition with its own node.
	c.deploy(slurmdPath, "gpu", 1, map[string]string{"partition-config": "MaxTime=30:00"})
	c.integrate("slurmctld", "gpu")
	c.waitActive()
	c.eventually(30*time.Second, "gpu-0 idle in partition gpu", func() (bool, string) {
		n := c.nodes()["gpu-0"]
		return strings.HasPrefix(n, "idle gpu "), n
	})
	c.slurm("srun", "-p", "gpu", "hostname")

	// remove-application while a job runs in its partition → the partition stays until the job
	// ends, then goes; slurmctld is never restarted.
	// The job runs until the test lets it go, creating the file on the job's node.
	release := filepath.Join(t.TempDir(), "release")
	job := c.sbatch("gpu", "--wrap", "while [ ! -e "+release+" ]; do sleep 0.1; done")
	c.waitJobState(job, "RUNNING", 30*time.Second)
	removed := make(chan error, 1)
	go func() { removed <- c.m.RemoveApplication(context.Background(), "gpu") }()
	c.eventually(time.Minute, "partition gpu inactive", func() (bool, string) {
		p := c.partition("gpu")
		return field(p, "State") == "INACTIVE", p
	})
	if s := c.jobState(job); s != "RUNNING" {
		t.Errorf("job %s is %s while its partition is being removed, want RUNNING", job, s)
	}
	if p := c.partition("gpu"); p == "" {
		t.Errorf("partition gpu removed while its job %s runs", job)
	}
	c.exec("gpu/0", "install", "-D", "-m", "0644", "/dev/null", release)
	c.waitJobState(job, "COMPLETED", time.Minute)
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	c.eventually(2*time.Minute, "partition gpu gone", func() (bool, string) {
		p := c.partition("gpu")
		return p == "", p
	})
	c.waitIdle()
	if _, starts := c.reconfigures(); starts != starts0 || c.ctlPID() != pid0 {
		t.Errorf("slurmctld restarted during the test (starts %d → %d, pid %s → %s)", starts0, starts, pid0, c.ctlPID())
	}
	for _, n := range c.nodeNames() {
		if strings.HasPrefix(n, "gpu-") {
			t.Errorf("stale node record %s after remove-application", n)
		}
	}
	// The first partition still works.
	c.slurm("srun", "-p", "slurmd", "hostname")
}

// TestRotateAuthKey: a new key reaches every node, which comes back IDLE, and jobs still run.
func TestRotateAuthKey(t *testing.T) {
	t.Parallel()
	rotateAuthKey(t, newCluster(t, 2), "/etc/munge/munge.key")
}

// rotateAuthKey is TestRotateAuthKey on cluster c (two slurmd units) whose auth key is key
// (munge.key before Slurm 23.11, slurm.key after).
func rotateAuthKey(t *testing.T, c *cluster, key string) {
	c.eventually(30*time.Second, "2 idle nodes", func() (bool, string) {
		n := c.nodes()
		return strings.HasPrefix(n["slurmd-0"], "idle") && strings.HasPrefix(n["slurmd-1"], "idle"), ""
	})
	keyBefore := c.exec("slurmd/0", "sha256sum", key)
	c.runAction("slurmctld/0", "rotate-auth-key", nil)
	c.waitActive()
	ctlKey := strings.Fields(c.exec("slurmctld/0", "sha256sum", key))[0]
	for _, u := range []string{"slurmd/0", "slurmd/1"} {
		k := c.exec(u, "sha256sum", key)
		if k == keyBefore || strings.Fields(k)[0] != ctlKey {
			t.Errorf("%s: key not rotated to the controller's", u)
		}
	}
	c.eventually(30*time.Second, "2 idle nodes after rotation", func() (bool, string) {
		n := c.nodes()
		return strings.HasPrefix(n["slurmd-0"], "idle") && strings.HasPrefix(n["slurmd-1"], "idle"), ""
	})
	c.slurm("srun", "-p", "slurmd", "-N2", "hostname")
}
