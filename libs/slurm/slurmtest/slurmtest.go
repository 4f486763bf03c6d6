// Package slurmtest fakes Slurm's commands for unit tests of code that uses package slurm.
//
// [Runner] is a [slurm.Runner] that replays scripted outputs for exact argv and records
// every call. [Real] returns outputs recorded from real Slurm 22.05 commands (see
// capture.sh and the files under real/), so a fake answers as Slurm really does:
//
//	r := &slurmtest.Runner{}
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
// tests/e2e autoscale tests with SLURMTEST_RECORD).
package slurmtest

import (
	"context"
	"embed"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/charmed-slurm/operators/libs/slurm"
)

//go:embed real real-24.11
var realFS embed.FS

// Case is one scripted command: the exact argv and what it answers.
type Case struct {
	Argv   []string
	Output slurm.Output
	// Err, when set, is returned by Run instead of Output (the command could not run).
	Err error
}

// Real returns the recorded real Slurm 22.05 case name (a file stem under real/). It
// panics on an unknown name: that is a bug in the test.
func Real(name string) Case { return readCase("real", name) }

// Real2411 returns the recorded real Slurm 24.11 case name (a file stem under real-24.11/,
// recorded on Debian 13 machines under auth/slurm by tests/e2e's TestRecordSlurm2411, with
// nodes slurmd-0 and slurmd-1 in partition slurmd; slurmd-0 runs on host juju-1). The cases
// share 22.05's names, plus node-no-sack (a client command on a node whose slurmd is stopped),
// listjobs-by-hostname (listjobs without SLURMD_NODENAME), and, on a login node (sackd, no
// slurmd; tests/e2e TestLoginNodeMachines), login-sinfo (`sinfo -h -o %R` through sackd) and
// login-no-sack (the same with sackd stopped). It panics on an unknown name.
func Real2411(name string) Case { return readCase("real-24.11", name) }

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
		Output: slurm.Output{Stdout: read("stdout"), Stderr: read("stderr"), ExitCode: rc},
	}
}

// Call is one recorded Run.
type Call struct {
	Argv []string
	Env  []string
}

// Runner is a fake slurm.Runner. Cases for the same argv are answered in the order they
// were added; the last one keeps answering. A command with no case fails the Run with an
// error naming it. Safe for concurrent use.
type Runner struct {
	mu    sync.Mutex
	cases map[string][]Case
	calls []Call
}

// Expect adds cases.
func (r *Runner) Expect(cases ...Case) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cases == nil {
		r.cases = map[string][]Case{}
	}
	for _, c := range cases {
		k := key(c.Argv)
		r.cases[k] = append(r.cases[k], c)
	}
}

// Run implements slurm.Runner.
func (r *Runner) Run(ctx context.Context, argv []string, env []string) (slurm.Output, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, Call{Argv: slices.Clone(argv), Env: slices.Clone(env)})
	if err := ctx.Err(); err != nil {
		return slurm.Output{}, err
	}
	k := key(argv)
	cs := r.cases[k]
	if len(cs) == 0 {
		return slurm.Output{}, fmt.Errorf("slurmtest: unexpected command %q", argv)
	}
	c := cs[0]
	if len(cs) > 1 {
		r.cases[k] = cs[1:]
	}
	return c.Output, c.Err
}

// Calls returns the calls so far.
func (r *Runner) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func key(argv []string) string { return strings.Join(argv, "\x00") }
