// Package slurmtest fakes Slurm's commands for unit tests of code that uses package slurm.
//
// [Real] returns outputs recorded from real Slurm 22.05 commands (see capture.sh and the
// files under real/) as Cases of libs/command/commandtest's argv-replay fake, so a fake
// answers as Slurm really does:
//
//	r := &commandtest.Runner{}
//	r.Expect(slurmtest.Real("delete-busy"))          // scontrol delete nodename=node1 → busy
//	c := &slurm.Client{Runner: r, Conf: "/etc/slurm/slurm.conf"}
//	err := c.DeleteNode(ctx, "node1")                // errors.Is(err, slurm.ErrNodeBusy)
//
// [Cluster] is a stateful fake controller built on those recordings: it keeps nodes and
// jobs, applies the commands package slurm runs and answers each with the recorded real
// output for that situation (TestClusterAgreesWithRealSlurm checks that it does). Use it
// for tests of code that drives nodes over several commands: the removal protocol, the
// charms' hooks.
//
// Recorded cases (real/<case>.argv): scontrol-V, slurmd-V, slurmctld-V, slurmd-C, ping-up, ping-down,
// show-node-{idle,allocated,draining,completing,drained,down,notresponding,all,none,
// unknown,deleted,unreachable}, squeue-node-{running,completing,empty,unknown,unreachable},
// squeue-partition, drain-busy, delete-{busy,drained,unknown,unreachable},
// update-{unknown,unreachable,bad-state}, resume-idle, partition-{inactive,unknown},
// reconfigure, reconfigure-unreachable, listjobs, sinfo-notresponding, checkconf-{ok,refused},
// squeue-pending, squeue-pending-no-nodes, squeue-pending-future-24.11 (Slurm 24.11; recorded by
// tests/e2e autoscale tests with SLURMTEST_RECORD). [Real2411] and [Real2605] give those of
// Slurm 24.11 and 26.05.
package slurmtest

import (
	"embed"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/command/commandtest"
)

//go:embed real real-24.11 real-26.05
var realFS embed.FS

// Case is one scripted command (commandtest.Case): Real and its kin return them.
type Case = commandtest.Case

// Runner is commandtest.Runner, the argv-replay fake, under the name the Slurm tests know
// it by.
type Runner = commandtest.Runner

// Call is commandtest.Call.
type Call = commandtest.Call

// Real returns the recorded real Slurm 22.05 case name (a file stem under real/). It
// panics on an unknown name: that is a bug in the test.
func Real(name string) Case { return readCase("real", name) }

// Real2411 returns the recorded real Slurm 24.11 case name (a file stem under real-24.11/,
// recorded on Debian 13 machines under auth/slurm by tests/e2e's TestRecordSlurm, with
// nodes slurmd-0 and slurmd-1 in partition slurmd; slurmd-0 runs on host juju-1). The cases
// share 22.05's names, plus node-no-sack (a client command on a node whose slurmd is stopped),
// listjobs-by-hostname (listjobs without SLURMD_NODENAME), slurmd-C-gpus (slurmd -C where
// Slurm's own GPU detection would find two GPUs), slurmctld-log (slurmctld.log after one
// start and two reconfigures), and, on a login node (sackd, no slurmd; recorded by tests/e2e
// TestLoginNodeMachines with SLURM_RECORD_DIR set), login-sinfo (`sinfo -h -o %R` through sackd) and login-no-sack (the
// same with sackd stopped). It panics on an unknown name.
func Real2411(name string) Case { return readCase("real-24.11", name) }

// Real2605 is Real2411 for Slurm 26.05 (real-26.05/, recorded the same way on Debian 14
// machines, login-sinfo and login-no-sack too).
func Real2605(name string) Case { return readCase("real-26.05", name) }

// readCase reads case name under dir.
func readCase(dir, name string) Case {
	read := func(ext string) []byte {
		b, err := realFS.ReadFile(path.Join(dir, name+"."+ext))
		if err != nil {
			panic(fmt.Sprintf("slurmtest: no recorded case %q: %v", name, err))
		}
		return b
	}
	rc, err := strconv.Atoi(strings.TrimSpace(string(read("rc"))))
	if err != nil {
		panic(fmt.Sprintf("slurmtest: recorded case %q: bad rc: %v", name, err))
	}
	return Case{
		Argv:   strings.Split(strings.TrimSuffix(string(read("argv")), "\n"), "\n"),
		Output: command.Output{Stdout: read("stdout"), Stderr: read("stderr"), ExitCode: rc},
	}
}
