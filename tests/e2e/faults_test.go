package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/model"
)

// TestNodeConfigRefused: a node-config Slurm refuses (or that claims more than the machine has)
// fails the action with the reason and leaves the node as it was, drain reason included; a
// reset brings the node back to its pre-config state.
func TestNodeConfigRefused(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	c.eventually(30*time.Second, "slurmd-0 idle", func() (bool, string) {
		n := c.nodes()["slurmd-0"]
		return strings.HasPrefix(n, "idle slurmd "), n
	})
	// An administrator's drain, which every outcome below must keep.
	c.slurm("scontrol", "update", "nodename=slurmd-0", "state=drain", "reason=admin hold")
	before := c.slurm("scontrol", "show", "node", "-o", "slurmd-0")
	mem, err := strconv.Atoi(field(before, "RealMemory"))
	if err != nil {
		t.Fatalf("RealMemory of slurmd-0: %v in %s", err, before)
	}
	cpus, err := strconv.Atoi(field(before, "CPUTot"))
	if err != nil {
		t.Fatalf("CPUTot of slurmd-0: %v in %s", err, before)
	}
	same := func(what string) {
		t.Helper()
		c.eventually(15*time.Second, what+": slurmd-0 as before", func() (bool, string) {
			n := c.slurm("scontrol", "show", "node", "-o", "slurmd-0")
			ok := field(n, "State") == field(before, "State") && reason(n) == "admin hold" &&
				field(n, "RealMemory") == field(before, "RealMemory") && field(n, "CPUTot") == field(before, "CPUTot") &&
				field(n, "TmpDisk") == field(before, "TmpDisk")
			return ok, n
		})
		// slurmd runs with the old --conf: the node answers the controller.
		c.exec("slurmd/0", "env", "SLURM_CONF=/var/spool/slurmd/conf-cache/slurm.conf", "scontrol", "show", "slurmd")
	}

	for _, tc := range []struct {
		name, params, want string
	}{
		{"RealMemory above the machine", fmt.Sprintf("Weight=3 RealMemory=%d", mem*64), "RealMemory"},
		{"CPUs above the machine", fmt.Sprintf("CPUs=%d", cpus*64), "CPUs"},
		// Nothing in slurmd -C to compare with: Slurm itself refuses the registration.
		{"TmpDisk above the disk", "TmpDisk=999999999", "TmpDisk"},
	} {
		run := c.tryAction("slurmd/0", "node-config", map[string]string{"parameters": tc.params})
		t.Logf("%s: node-config %q: %s: %s", tc.name, tc.params, run.Status, run.Message)
		if run.Status != "failed" || !strings.Contains(run.Message, tc.want) {
			t.Errorf("%s: node-config %q: status %q message %q, want failed naming %s", tc.name, tc.params, run.Status, run.Message, tc.want)
		}
		same(tc.name)
	}

	// reset=true after a successful change → the machine's baseline, still drained by the admin.
	c.runAction("slurmd/0", "node-config", map[string]string{"parameters": "Weight=9"})
	if n := c.slurm("scontrol", "show", "node", "-o", "slurmd-0"); field(n, "Weight") != "9" || reason(n) != "admin hold" {
		t.Errorf("after node-config Weight=9: %s, want Weight=9 and reason \"admin hold\"", n)
	}
	c.runAction("slurmd/0", "node-config", map[string]string{"reset": "true"})
	same("reset")
	if n := c.slurm("scontrol", "show", "node", "-o", "slurmd-0"); field(n, "Weight") != field(before, "Weight") {
		t.Errorf("after reset: Weight=%s, want %s", field(n, "Weight"), field(before, "Weight"))
	}
	c.slurm("scontrol", "update", "nodename=slurmd-0", "state=resume")
	c.slurm("srun", "-p", "slurmd", "-w", "slurmd-0", "true")
}

// reason is the Reason of one scontrol show -o line, without the "[user@time]" suffix.
func reason(line string) string {
	_, r, ok := strings.Cut(line, " Reason=")
	if !ok {
		return ""
	}
	if i := strings.Index(r, " ["); i >= 0 {
		r = r[:i]
	}
	return r
}

// TestDeadHost: a host whose supervisor and daemons die is reported as such by its unit (not as
// an unreachable controller); removing the unit completes, and the controller deletes the node
// once Slurm marks it down.
func TestDeadHost(t *testing.T) {
	t.Parallel()
	// SlurmdTimeout: Slurm marks a silent node DOWN after this many seconds (default 300);
	// MinJobAge: finished job records, which hold a partition being removed, go after 2 s.
	c := newCluster(t, 2, map[string]string{"slurm-conf-parameters": "SlurmdTimeout=10 MinJobAge=2"})
	c.eventually(30*time.Second, "2 idle nodes", func() (bool, string) {
		n := c.nodes()
		return strings.HasPrefix(n["slurmd-0"], "idle ") && strings.HasPrefix(n["slurmd-1"], "idle "), fmt.Sprint(n)
	})
	// A job runs on the node whose host dies; Slurm ends it (NODE_FAIL) once it marks the node
	// down, and only then may the node record go.
	job := c.sbatch("slurmd", "-w", "slurmd-1", "--no-requeue", "--wrap", "sleep 600")
	c.waitJobState(job, "RUNNING", 30*time.Second)
	c.killHost("slurmd/1", "pebble", "slurmd", "munged")
	killed := time.Now()

	c.eventually(90*time.Second, "slurmd/1 reports its own daemons down", func() (bool, string) {
		st, msg := c.unitStatus("slurmd/1")
		return st != "active" && strings.Contains(msg, "munged") && strings.Contains(msg, "down") &&
			!strings.Contains(msg, "controller"), st + ": " + msg
	})
	t.Logf("dead host reported %s after the kill", time.Since(killed).Round(time.Millisecond))
	if st, msg := c.unitStatus("slurmd/0"); st != "active" {
		t.Errorf("slurmd/0 (alive) is %s %q, want active", st, msg)
	}

	if err := c.m.RemoveUnit(c.bg(), "slurmd/1"); err != nil {
		t.Fatal(err)
	}
	removing := time.Now()
	c.eventually(3*time.Minute, "slurmd/1 removed and its node deleted", func() (bool, string) {
		st := c.m.Status(c.bg())
		u, ok := st.Applications["slurmd"].Units["slurmd/1"]
		names := c.nodeNames()
		if js := c.jobState(job); js == "RUNNING" && !slices.Contains(names, "slurmd-1") {
			t.Errorf("node slurmd-1 deleted while Slurm still ran job %s on it", job)
		}
		if ok {
			return false, fmt.Sprintf("unit %s %s: %s; nodes %v", u.JujuStatus.Current, u.WorkloadStatus.Current, u.WorkloadStatus.Message, names)
		}
		return cmp.Equal(names, []string{"slurmd-0"}), fmt.Sprint(names)
	})
	t.Logf("unit removed and node deleted %s after remove-unit", time.Since(removing).Round(time.Millisecond))
	c.slurm("srun", "-p", "slurmd", "-N1", "true")

	// destroy with a dead host: every application goes, without waiting out the timeout.
	c.killHost("slurmd/0", "pebble", "slurmd", "munged")
	var stdout, stderr bytes.Buffer
	destroying := time.Now()
	if code := c.m.RunCLI(c.bg(), model.Request{Argv: []string{"destroy", "--timeout", "2m"}}, &stdout, &stderr); code != 0 || strings.Contains(stderr.String(), "did not go in time") {
		t.Errorf("destroy with a dead host: exit %d: %s", code, stderr.String())
	}
	t.Logf("destroy took %s", time.Since(destroying).Round(time.Millisecond))
	if st := c.m.Status(c.bg()); len(st.Applications) != 0 {
		t.Errorf("after destroy: applications %v remain", st.Applications)
	}
}

// killHost kills with SIGKILL the processes named in names (their comm) that run in unit's
// host: the host's own supervisor and daemons, which the model started for this test.
func (c *cluster) killHost(unit string, names ...string) {
	c.t.Helper()
	netns := strings.TrimSpace(c.exec(unit, "readlink", "/proc/self/ns/net"))
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		c.t.Fatal(err)
	}
	var killed []string
	for _, d := range dirs {
		if ns, err := os.Readlink(filepath.Join(d, "ns", "net")); err != nil || ns != netns {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil || !slices.Contains(names, strings.TrimSpace(string(comm))) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			killed = append(killed, strings.TrimSpace(string(comm)))
		}
	}
	slices.Sort(killed)
	for _, n := range names {
		if !slices.Contains(killed, n) {
			c.t.Fatalf("%s: killed %v, want %v", unit, killed, names)
		}
	}
}
