// Package e2e_test runs the slurmctld and slurmd charms together under the local model, on real
// hosts (network namespaces supervised by Pebble) with real munged, slurmctld and slurmd 22.05.
// Every test here needs root and network namespaces: without them it skips with the reason,
// and under CI=true it fails instead.
package e2e_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestNodeLifecycle walks the life of dynamic nodes: integrate, jobs, add-unit with no
// reconfigure, remove-unit while a job runs (the job completes, then the node goes), removal of
// an idle unit, and node-config.
func TestNodeLifecycle(t *testing.T) {
	t.Parallel()
	nodeLifecycle(t, newCluster(t, 2))
}

// nodeLifecycle is TestNodeLifecycle on cluster c (two slurmd units), whatever its machines.
func nodeLifecycle(t *testing.T, c *cluster) {

	// integrate → every node IDLE in the application's partition, and jobs run on them.
	c.eventually(30*time.Second, "2 idle nodes", func() (bool, string) {
		n := c.nodes()
		return len(n) == 2 && strings.HasPrefix(n["slurmd-0"], "idle slurmd ") && strings.HasPrefix(n["slurmd-1"], "idle slurmd "), fmt.Sprint(n)
	})
	out := c.slurm("srun", "-p", "slurmd", "-N2", "hostname")
	if got := len(strings.Fields(out)); got != 2 {
		t.Errorf("srun -N2 hostname printed %q, want two host names", out)
	}

	// add-unit ×3 → three more IDLE nodes, with no reconfigure and no slurmctld restart.
	reconf0, starts0 := c.reconfigures()
	pid0 := c.ctlPID()
	ctx, cancel := c.ctx(2 * time.Minute)
	if _, err := c.m.AddUnit(ctx, "slurmd", 3); err != nil {
		t.Fatal(err)
	}
	cancel()
	c.waitActive()
	c.waitIdleNodes(5)
	reconf1, starts1 := c.reconfigures()
	if reconf1 != reconf0 || starts1 != starts0 || c.ctlPID() != pid0 {
		t.Errorf("add-unit ×3: reconfigures %d → %d, slurmctld starts %d → %d, pid %s → %s; want no change",
			reconf0, reconf1, starts0, starts1, pid0, c.ctlPID())
	}
	c.slurm("srun", "-p", "slurmd", "-N5", "true")

	// remove-unit while a job runs on it → the job completes, then the node disappears.
	// The job runs until the test releases it, creating the file on the job's node.
	release := filepath.Join(t.TempDir(), "release")
	job := c.sbatch("slurmd", "-w", "slurmd-4", "--wrap", "while [ ! -e "+release+" ]; do sleep 0.1; done")
	c.waitJobState(job, "RUNNING", 30*time.Second)
	ctx, cancel = c.ctx(2 * time.Minute)
	removed := time.Now()
	if err := c.m.RemoveUnit(ctx, "slurmd/4"); err != nil {
		t.Fatal(err)
	}
	cancel()
	c.eventually(15*time.Second, "slurmd-4 draining", func() (bool, string) {
		s := c.nodes()["slurmd-4"]
		return strings.HasPrefix(s, "draining") || strings.HasPrefix(s, "drained"), s
	})
	// The controller's status counts the node as draining while its job runs: its
	// relation-departed sets the status as its wait begins. The lag is logged
	// (docs/benchmarks.md, status lag).
	c.eventually(30*time.Second, "slurmctld's status counting slurmd-4 as draining", func() (bool, string) {
		_, msg := c.unitStatus("slurmctld/0")
		return strings.Contains(msg, "1 draining"), msg
	})
	t.Logf("status lag: remove-unit → slurmctld's status counts the node as draining: %.2f s", time.Since(removed).Seconds())
	if s := c.jobState(job); s != "RUNNING" {
		t.Errorf("job %s is %s while its node drains, want RUNNING", job, s)
	}
	if s := c.nodes()["slurmd-4"]; !strings.HasPrefix(s, "draining") {
		t.Errorf("slurmd-4 is %q while its job runs, want draining (never deleted with a running job)", s)
	}
	c.exec("slurmd/4", "install", "-D", "-m", "0644", "/dev/null", release)
	c.waitJobState(job, "COMPLETED", time.Minute)
	c.eventually(30*time.Second, "slurmd-4 deleted", func() (bool, string) {
		names := c.nodeNames()
		for _, n := range names {
			if n == "slurmd-4" {
				return false, fmt.Sprint(names)
			}
		}
		return true, ""
	})
	// No hook of a departed unit reaches the controller any more: its removal waiter sees the
	// node gone and wakes it (juju-exec), or its next update-status does (every 5 s here).
	// Logged, not asserted.
	deleted := time.Now()
	c.eventually(30*time.Second, "slurmctld's status without slurmd-4", func() (bool, string) {
		_, msg := c.unitStatus("slurmctld/0")
		return strings.HasPrefix(msg, "slurmctld up, 4 nodes") && !strings.Contains(msg, "draining"), msg
	})
	t.Logf("status lag: node deleted → slurmctld's status without it: %.2f s (see above)", time.Since(deleted).Seconds())

	// remove-unit of an idle unit → its node is deleted promptly.
	ctx, cancel = c.ctx(2 * time.Minute)
	if err := c.m.RemoveUnit(ctx, "slurmd/3"); err != nil {
		t.Fatal(err)
	}
	cancel()
	c.waitIdle()
	c.eventually(10*time.Second, "no stale node records", func() (bool, string) {
		names := c.nodeNames()
		return cmp.Equal(names, []string{"slurmd-0", "slurmd-1", "slurmd-2"}), fmt.Sprint(names)
	})

	// node-config: a forbidden key fails the action and leaves the node as it was.
	before := c.slurm("scontrol", "show", "node", "-o", "slurmd-1")
	run := c.tryAction("slurmd/1", "node-config", map[string]string{"parameters": "Weight=5 NodeAddr=1.2.3.4"})
	if run.Status != "failed" || !strings.Contains(run.Message, "NodeAddr") {
		t.Errorf("node-config NodeAddr: status %q message %q, want failed naming NodeAddr", run.Status, run.Message)
	}
	if after := c.slurm("scontrol", "show", "node", "-o", "slurmd-1"); field(after, "Weight") != field(before, "Weight") || field(after, "State") != field(before, "State") {
		t.Errorf("node changed by a refused node-config:\nbefore %s\nafter  %s", before, after)
	}
	// A valid one re-registers the node with the new values, back in its previous state.
	c.runAction("slurmd/1", "node-config", map[string]string{"parameters": "Weight=7 Features=fast"})
	c.eventually(15*time.Second, "slurmd-1 re-registered", func() (bool, string) {
		n := c.slurm("scontrol", "show", "node", "-o", "slurmd-1")
		return field(n, "Weight") == "7" && strings.Contains(field(n, "AvailableFeatures"), "fast") &&
			strings.Contains(field(n, "AvailableFeatures"), "slurmd") && field(n, "State") == "IDLE+DYNAMIC_NORM", n
	})
	c.slurm("srun", "-p", "slurmd", "-w", "slurmd-1", "true")
}

// field returns key's value in one line of scontrol show -o output.
func field(line, key string) string {
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok && k == key {
			return v
		}
	}
	return ""
}
