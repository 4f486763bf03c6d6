package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/service"
)

// slowRestarts makes a restarted slurmctld answer nothing (`scontrol ping` says DOWN, every
// command finds the controller unreachable) until answer is called, as a real one does for a
// second or more after its restart (it reads its saved state first) and for good when it
// cannot start with its configuration (slurmdbd's CLUSTER ID MISMATCH).
func (e *env) slowRestarts() (answer func()) {
	e.svc.OnStart(func(spec service.Spec) (bool, error) {
		if spec.Name == svcSlurmctld {
			e.slurm.SetUnreachable(true)
		}
		return true, nil
	})
	return func() { e.slurm.SetUnreachable(false) }
}

// fakeClock is a clock the test moves: it starts at the real time.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) advance(d time.Duration) { c.now = c.now.Add(d) }

// withClock gives e's charm a clock the test moves.
func (e *env) withClock() *fakeClock {
	c := &fakeClock{now: time.Now()}
	e.c.Clock = c.Now
	return c
}

// restartUnderWay checks that out (a hook's outcome) shows slurmctld restarting to what: the
// unit status says so, the state records it and the waiter watches it until its deadline.
func (e *env) restartUnderWay(out jujutest.State, what string) {
	e.t.Helper()
	want := jujuStatus(juju.StatusMaintenance, "slurmctld restarting to "+what+"; running jobs keep running")
	if d := cmp.Diff(want, out.UnitStatus); d != "" {
		e.t.Errorf("status (-want +got):\n%s", d)
	}
	st, err := e.c.loadState()
	if err != nil {
		e.t.Fatal(err)
	}
	if st.Restart == nil || st.Restart.What != what || st.Restart.Failed != "" {
		e.t.Fatalf("restart recorded: %+v, want one to %s under way", st.Restart, what)
	}
	if got := e.waiter.last().Restart; !got.Equal(st.Restart.Deadline) || !st.Restart.Deadline.Equal(st.Restart.At.Add(startWait)) {
		e.t.Errorf("the waiter watches the restart until %v, want %v (%v after the restart)", got, st.Restart.Deadline, startWait)
	}
}

// restartFinished checks that the restart to what is over: no record, nothing for the waiter
// to watch, and the log says it was done.
func (e *env) restartFinished(out jujutest.State, what string) {
	e.t.Helper()
	st, err := e.c.loadState()
	if err != nil {
		e.t.Fatal(err)
	}
	if st.Restart != nil {
		e.t.Errorf("restart still recorded: %+v", st.Restart)
	}
	if w := e.waiter.last(); !w.Restart.IsZero() {
		e.t.Errorf("the waiter still watches a restart: %+v", w)
	}
	if !logged(out, "restarted slurmctld to "+what+" (answering") {
		e.t.Errorf("no log line of the restart to %s: %+v", what, out.Logs)
	}
}

// logged reports whether a juju-log line of out starts with prefix.
func logged(out jujutest.State, prefix string) bool {
	for _, l := range out.Logs {
		if strings.HasPrefix(l.Message, prefix) {
			return true
		}
	}
	return false
}

// runRestartHook runs ev, a hook that restarts slurmctld, and fails the test if it waited
// (its context, a 20 s guard, ended; with a slurmctld that does not answer, any wait for it
// runs into the guard) or asked slurmctld anything (`scontrol ping`).
func (e *env) runRestartHook(in jujutest.State, ev juju.Event) jujutest.State {
	e.t.Helper()
	pings := e.slurm.count("scontrol", "ping")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := jujutest.Run(e.t, in, ev, func(_ context.Context, hc *juju.HookContext) error {
		return e.c.Router().Dispatch(ctx, hc)
	})
	if err != nil || ctx.Err() != nil {
		e.t.Fatalf("%s: %v (guard: %v): the hook waited", ev.Name, err, ctx.Err())
	}
	if n := e.slurm.count("scontrol", "ping") - pings; n != 0 {
		e.t.Errorf("the restarting hook pinged slurmctld %d times, want none", n)
	}
	return out
}

// restartCases are the hooks that restart slurmctld: slurmdbd's data (accounting on) and an
// application declaring a new generic resource name (GresTypes).
var restartCases = []struct {
	name  string
	setup func(e *env, in jujutest.State) (jujutest.State, juju.Event)
	what  string
}{
	{name: "accounting on", setup: func(e *env, in jujutest.State) (jujutest.State, juju.Event) {
		return withDbd(in, dbdBag(in.Version)), jujutest.RelationHook(juju.RelationChanged, dbdRel, "slurmdbd/0")
	}, what: "turn accounting on (slurmdbd at 10.0.0.9:6819)"},
	{name: "GresTypes", setup: func(e *env, in jujutest.State) (jujutest.State, juju.Event) {
		in.Relations = append(in.Relations, relation("slurmd:2", "fpga", computeGres(e.t, "fpga", "fpga"), "fpga/0"))
		return in, jujutest.RelationHook(juju.RelationChanged, "slurmd:2", "fpga/0")
	}, what: `apply GresTypes=gpu,fpga (was "gpu")`},
}

// TestRestartHookDoesNotWait: a hook that restarts slurmctld returns at once, even with a
// slurmctld that does not answer: it asks nothing of it, its status says the restart is under
// way, and the waiter watches it. A pass before slurmctld answers changes nothing (no second
// restart); the first pass after finishes it: logged, status active, nothing left to watch.
func TestRestartHookDoesNotWait(t *testing.T) {
	for _, tt := range restartCases {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			in := e.withApp("slurmd", "slurmd/0")
			answer := e.slowRestarts()
			in, ev := tt.setup(e, in)
			out := e.runRestartHook(in, ev)
			if n := e.svc.count("respawn slurmctld"); n != 1 {
				t.Errorf("%d restarts, want 1", n)
			}
			e.restartUnderWay(out, tt.what)

			out = e.run(out, jujutest.Hook(juju.UpdateStatus))
			e.restartUnderWay(out, tt.what)
			out = e.run(out, jujutest.Hook(juju.ConfigChanged))
			e.restartUnderWay(out, tt.what)
			if n := e.svc.count("respawn slurmctld"); n != 1 {
				t.Errorf("%d restarts after two passes while it restarts, want still 1", n)
			}

			answer()
			out = e.run(out, jujutest.Hook(juju.UpdateStatus))
			if out.UnitStatus.Code != juju.StatusActive {
				t.Errorf("status %+v after slurmctld answered", out.UnitStatus)
			}
			e.restartFinished(out, tt.what)
		})
	}
}

// TestRestartDeadline: a restart slurmctld has not answered by its deadline fails at the next
// pass. Accounting is turned off again, naming the failure, and slurmctld restarted without
// it, again without waiting; once it answers, the status is active and says why accounting is
// off, and no later hook turns it on again. A GresTypes restart blocks the unit naming the log
// (there is nothing to go back to: the names are in the partitions), the waiter stops
// watching it, and a later pass that finds slurmctld answering finishes it.
func TestRestartDeadline(t *testing.T) {
	fail := "slurmctld did not answer within 30s of its restart to %s (see /var/log/slurm/slurmctld.log): cannot ping slurmctld: slurm controller unreachable"
	t.Run("accounting on", func(t *testing.T) {
		e := newEnv(t)
		clock := e.withClock()
		in := e.withApp("slurmd", "slurmd/0")
		answer := e.slowRestarts()
		tt := restartCases[0]
		in, ev := tt.setup(e, in)
		out := e.run(in, ev)
		e.restartUnderWay(out, tt.what)

		clock.advance(startWait - time.Second)
		out = e.run(out, jujutest.Hook(juju.UpdateStatus))
		e.restartUnderWay(out, tt.what)
		clock.advance(time.Second)
		out = e.run(out, jujutest.Hook(juju.UpdateStatus))
		e.confLines("AccountingStorageType=accounting_storage/none", "!AccountingStorageHost=10.0.0.9")
		if n := e.svc.count("respawn slurmctld"); n != 2 {
			t.Errorf("%d restarts, want 2: on, then off again", n)
		}
		rollback := "turn accounting off again (slurmctld did not start with it)"
		e.restartUnderWay(out, rollback)

		answer()
		out = e.run(out, jujutest.Hook(juju.UpdateStatus))
		e.restartFinished(out, rollback)
		why := "; accounting off: " + strings.ReplaceAll(fail, "%s", tt.what)
		if !strings.HasSuffix(out.UnitStatus.Message, why) || out.UnitStatus.Code != juju.StatusActive {
			t.Errorf("status %+v, want active ending %q", out.UnitStatus, why)
		}
		out = e.run(out, jujutest.Hook(juju.ConfigChanged))
		if n := e.svc.count("respawn slurmctld"); n != 2 {
			t.Errorf("%d restarts after config-changed, want still 2", n)
		}
	})
	t.Run("GresTypes", func(t *testing.T) {
		e := newEnv(t)
		clock := e.withClock()
		in := e.withApp("slurmd", "slurmd/0")
		answer := e.slowRestarts()
		tt := restartCases[1]
		in, ev := tt.setup(e, in)
		out := e.run(in, ev)
		e.restartUnderWay(out, tt.what)
		clock.advance(startWait)
		out = e.run(out, jujutest.Hook(juju.UpdateStatus))
		want := jujuStatus(juju.StatusBlocked, strings.ReplaceAll(fail, "%s", tt.what))
		if d := cmp.Diff(want, out.UnitStatus); d != "" {
			t.Errorf("status (-want +got):\n%s", d)
		}
		if w := e.waiter.last(); !w.empty() {
			t.Errorf("the waiter still watches %+v after the restart failed", w)
		}
		out = e.run(out, jujutest.Hook(juju.ConfigChanged))
		if n := e.svc.count("respawn slurmctld"); n != 1 {
			t.Errorf("%d restarts, want 1: a failed restart is not retried by itself", n)
		}
		answer()
		out = e.run(out, jujutest.Hook(juju.UpdateStatus))
		e.restartFinished(out, tt.what)
		if out.UnitStatus.Code != juju.StatusActive {
			t.Errorf("status %+v after slurmctld answered", out.UnitStatus)
		}
	})
}

// TestHooksDuringRestart: while a restart is under way, a partition change is not
// reconfigured on top of it but once slurmctld answers (the restart may have read the older
// files), exactly once; a change that needs another restart (the slurmdbd relation gone)
// restarts again, replacing the record.
func TestHooksDuringRestart(t *testing.T) {
	e := newEnv(t)
	in := e.withApp("slurmd", "slurmd/0")
	answer := e.slowRestarts()
	tt := restartCases[0]
	in, ev := tt.setup(e, in)
	out := e.run(in, ev)
	reconf := e.slurm.count("scontrol", "reconfigure")

	out.Relations = append(out.Relations, relation("slurmd:2", "cpu", compute(t, "cpu", ""), "cpu/0"))
	out = e.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmd:2", "cpu/0"))
	if !e.exists(partitionPath("cpu")) {
		t.Fatal("partition cpu not written")
	}
	if n := e.slurm.count("scontrol", "reconfigure") - reconf; n != 0 {
		t.Errorf("%d reconfigures while slurmctld restarts, want none", n)
	}
	e.restartUnderWay(out, tt.what)
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	answer()
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	e.restartFinished(out, tt.what)
	if n := e.slurm.count("scontrol", "reconfigure") - reconf; n != 1 {
		t.Errorf("%d reconfigures once slurmctld answered, want 1", n)
	}
	if n := e.svc.count("respawn slurmctld"); n != 1 {
		t.Errorf("%d restarts, want 1", n)
	}

	// Accounting off while the restart that turned it on is under way: one more restart.
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	e.slowRestarts()
	out = e.run(out, jujutest.RelationHook(juju.RelationChanged, dbdRel, "slurmdbd/0")) // nothing new
	if n := e.svc.count("respawn slurmctld"); n != 1 {
		t.Errorf("%d restarts after slurmdbd's unchanged data, want 1", n)
	}
}
