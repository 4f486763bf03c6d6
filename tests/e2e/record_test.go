package e2e_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// recordEnv names the directory TestRecordSlurm writes into: each release's recordings go to
// its real-<release> below it, as libs/slurm/slurmtest keeps them:
//
//	SLURM_RECORD_DIR=$PWD/libs/slurm/slurmtest go test -run TestRecordSlurm/forky ./tests/e2e/
const recordEnv = "SLURM_RECORD_DIR"

// TestRecordSlurm is not a check but the recorder of real Slurm 24.11 and 26.05 outputs, on
// machines of Debian 13 and 14 run by the charms (auth/slurm): the cases of
// slurmtest/capture.sh for 22.05 that the operators rely on, under the same names, with node
// names slurmd-0 and slurmd-1 and partition slurmd, and a few of their own. Each case is
// <case>.{argv,stdout,stderr,rc}.
func TestRecordSlurm(t *testing.T) {
	dir := os.Getenv(recordEnv)
	if dir == "" {
		t.Skip("recorder of real Slurm 24.11 and 26.05 outputs; set " + recordEnv)
	}
	onReleases(t, []release{trixie, forky}, func(t *testing.T, r release) {
		recordSlurm(t, r, filepath.Join(dir, "real-"+r.slurm))
	})
}

// recordSlurm records release r's outputs into out.
func recordSlurm(t *testing.T, r release, out string) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	c := newClusterOn(t, r.base, 2)
	// capEnv runs argv on unit with env (and SLURM_CONF on the controller) and records it under
	// name: the argv file holds argv alone, as package slurm runs it.
	capEnv := func(unit, name string, env []string, argv ...string) string {
		t.Helper()
		if unit == "slurmctld/0" {
			env = append(env, "SLURM_CONF="+ctlConf)
		}
		full := append(append([]string{"env"}, env...), argv...)
		stdout, code, stderr := c.tryExec(unit, full...)
		for ext, data := range map[string]string{
			"argv": strings.Join(argv, "\n") + "\n", "stdout": stdout, "stderr": stderr, "rc": strconv.Itoa(code) + "\n",
		} {
			if err := os.WriteFile(filepath.Join(out, name+"."+ext), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return stdout
	}
	capOn := func(unit, name string, argv ...string) string { t.Helper(); return capEnv(unit, name, nil, argv...) }
	ctl := func(name string, argv ...string) string { t.Helper(); return capOn("slurmctld/0", name, argv...) }
	state := func(node string) string { return field(c.slurm("scontrol", "show", "node", "-o", node), "State") }
	const q = "%i|%T|%P|%u|%N|%j"
	const active = "RUNNING,COMPLETING,CONFIGURING,SUSPENDED"

	c.eventually(30*time.Second, "2 idle nodes", func() (bool, string) {
		return state("slurmd-0") == "IDLE+DYNAMIC_NORM" && state("slurmd-1") == "IDLE+DYNAMIC_NORM", state("slurmd-0")
	})
	ctl("scontrol-V", "scontrol", "-V")
	capOn("slurmd/0", "slurmd-V", "slurmd", "-V")
	ctl("slurmctld-V", "slurmctld", "-V")
	capOn("slurmd/0", "slurmd-C", "slurmd", "-C")
	// slurmd -C where Slurm's own GPU detection finds two GPUs (its fake_gpus.conf beside the
	// slurm.conf it reads): 26.05 prints them, as Gres= and one line per detection method.
	fake := slurmdConfCache + "/fake_gpus.conf"
	c.exec("slurmd/0", "sh", "-c", `printf %s "$1" >"$2"`, "sh", string(fakeGPUsConf(2)), fake)
	capEnv("slurmd/0", "slurmd-C-gpus", []string{"SLURM_CONF=" + slurmdConfCache + "/slurm.conf"}, "slurmd", "-C")
	c.exec("slurmd/0", "rm", fake)
	ctl("ping-up", "scontrol", "ping")
	ctl("show-node-idle", "scontrol", "show", "node", "-o", "slurmd-1")
	job := c.sbatch("slurmd", "-w", "slurmd-0", "-J", "sleep|pipe job", "--wrap", "sleep 300")
	c.waitJobState(job, "RUNNING", 30*time.Second)
	ctl("show-node-allocated", "scontrol", "show", "node", "-o", "slurmd-0")
	ctl("squeue-node-running", "squeue", "-h", "-w", "slurmd-0", "-t", active, "-o", q)
	ctl("partition-records", "squeue", "-h", "-t", "all", "-p", "slurmd", "-o", q)
	// scontrol finds the node's slurmstepds by node name: slurmd-0 runs on host juju-1.
	capEnv("slurmd/0", "listjobs", []string{"SLURMD_NODENAME=slurmd-0"}, "scontrol", "listjobs", "--json")
	capOn("slurmd/0", "listjobs-by-hostname", "scontrol", "listjobs", "--json")
	ctl("drain-busy", "scontrol", "update", "nodename=slurmd-0", "state=drain", "reason=unit slurmd/0 removed")
	ctl("show-node-draining", "scontrol", "show", "node", "-o", "slurmd-0")
	ctl("delete-busy", "scontrol", "delete", "nodename=slurmd-0")
	ctl("resume-idle", "scontrol", "update", "nodename=slurmd-1", "state=resume")
	c.slurm("scancel", job)
	c.eventually(time.Minute, "slurmd-0 drained", func() (bool, string) {
		s := state("slurmd-0")
		return s == "IDLE+DRAIN+DYNAMIC_NORM", s
	})
	ctl("show-node-drained", "scontrol", "show", "node", "-o", "slurmd-0")
	ctl("squeue-node-empty", "squeue", "-h", "-w", "slurmd-0", "-t", active, "-o", q)
	ctl("show-node-unknown", "scontrol", "show", "node", "-o", "nodeX")
	ctl("delete-unknown", "scontrol", "delete", "nodename=nodeX")
	ctl("update-unknown", "scontrol", "update", "nodename=nodeX", "state=drain", "reason=x")
	ctl("squeue-node-unknown", "squeue", "-h", "-w", "nodeX", "-t", active, "-o", q)
	ctl("update-bad-state", "scontrol", "update", "nodename=slurmd-1", "state=bogus")
	ctl("partition-unknown", "scontrol", "update", "partitionname=nope", "state=INACTIVE")
	ctl("reconfigure", "scontrol", "reconfigure")
	// A drained node whose slurmd is stopped is deleted.
	c.exec("slurmd/0", "systemctl", "stop", "slurmd.service")
	ctl("delete-drained", "scontrol", "delete", "nodename=slurmd-0")
	ctl("show-node-deleted", "scontrol", "show", "node", "-o", "slurmd-0")
	// On a node whose slurmd is stopped, client commands have no sack socket (auth/slurm).
	capEnv("slurmd/0", "node-no-sack", []string{"SLURM_CONF=/var/spool/slurmd/conf-cache/slurm.conf"}, "scontrol", "ping")
	ctl("show-node-all", "scontrol", "show", "node", "-o")
	// slurmctld's own log: one start, the charm's reconfigure and the one above.
	ctl("slurmctld-log", "cat", ctlLogPath)
}
