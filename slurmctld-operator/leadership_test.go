package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// scontrol runs a Slurm command on e's fake cluster as another party would (not the charm: it
// is not among e.slurm's recorded calls).
func (e *env) scontrol(args ...string) {
	e.t.Helper()
	res, err := e.slurm.Cluster.Run(context.Background(), append([]string{"scontrol"}, args...), []string{"SLURM_CONF=" + confPath})
	if err != nil || res.ExitCode != 0 {
		e.t.Fatalf("scontrol %q: %v %s", args, err, res.Stderr)
	}
}

// slurmctldUntouched snapshots e's slurmctld and returns a check that it has since been
// neither started, restarted, stopped nor reconfigured (who names the unit in the errors).
func (e *env) slurmctldUntouched(t *testing.T, who string) func() {
	runs := func() int {
		return e.svc.count("start slurmctld") + e.svc.restarts("slurmctld") + e.svc.count("stop slurmctld")
	}
	before, reconf := runs(), e.slurm.count("scontrol", "reconfigure")
	return func() {
		t.Helper()
		if n := runs() - before; n != 0 {
			t.Errorf("%s started, restarted or stopped slurmctld %d times", who, n)
		}
		if n := e.slurm.count("scontrol", "reconfigure") - reconf; n != 0 {
			t.Errorf("%s reconfigured slurmctld %d times", who, n)
		}
	}
}

// withPeer is in with the peer relation (slurmctld/1 a peer, no shared storage): the leader
// writes its application bag there.
func withPeer(in jujutest.State) jujutest.State {
	in.Relations = append(in.Relations, jujutest.Relation{ID: "slurmctld-peers:0", RemoteApp: "slurmctld",
		RemoteUnits: map[string]map[string]string{"slurmctld/1": {"hostname": "ctl1", "address": "10.0.0.2"}}})
	return in
}

// leaderWork is work a leader leaves under way, as a table case of TestLeaderRecordsHandedOver.
type leaderWork struct {
	name string
	// start sets the work under way on e's leader and returns the state after it.
	start func(e *env) jujutest.State
	// handedOver checks the records of the unit leading again right after leader-elected
	// (before: the records it had as the former leader).
	handedOver func(t *testing.T, e *env, before, after *charmState)
	// finish lets the work end in Slurm (updateStatus runs an update-status of the new
	// leader); end checks, after one more update-status, that it ended once.
	finish func(e *env, updateStatus func())
	end    func(t *testing.T, e *env, st *charmState, out jujutest.State)
}

// TestLeaderRecordsHandedOver: the leadership leaves the unit while work is under way (a busy
// departed unit's node, a partition being removed, accounting on, a rolling reboot): as a
// follower the unit drops every leader record and does no leader work (no drain, delete,
// partition change, reboot or reconfigure) and its waiter watches none; leading again
// (leader-elected) it takes them over from Slurm, the relations and the peer bag, neither
// restarting nor reconfiguring slurmctld, and the work ends once: the node deleted only once
// its job has ended, the partition removed once its job records are gone, accounting still
// on, every node rebooted once.
func TestLeaderRecordsHandedOver(t *testing.T) {
	for _, tc := range []leaderWork{{
		name: "departed unit's busy node",
		start: func(e *env) jujutest.State {
			in, departed := e.departedWithJob(false) // drained by the leader, the unit could not
			return e.run(in, departed)
		},
		handedOver: func(t *testing.T, e *env, before, after *charmState) {
			if len(before.Pending) == 0 {
				t.Fatal("no node pending before the move")
			}
			if d := cmp.Diff(pendingUnits(before), pendingUnits(after)); d != "" {
				t.Errorf("pending nodes (-former leader +new):\n%s", d)
			}
		},
		finish: func(e *env, updateStatus func()) {
			updateStatus()
			if !e.slurm.hasNode("slurmd-1") {
				e.t.Error("the new leader deleted a node whose job runs")
			}
			e.slurm.EndJobs()
		},
		end: func(t *testing.T, e *env, st *charmState, _ jujutest.State) {
			if e.slurm.hasNode("slurmd-1") || len(st.Pending) != 0 {
				t.Errorf("node slurmd-1 left once its job ended (pending %v)", st.Pending)
			}
		},
	}, {
		name: "partition being removed",
		start: func(e *env) jujutest.State {
			in := e.withApp("slurmd", "slurmd/0")
			in.Relations = append(in.Relations, relation("slurmd:2", "gpu", compute(e.t, "gpu", ""), "gpu/0"))
			in = e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:2", "gpu/0"))
			e.slurm.addNode("gpu-0", "gpu", false)
			e.slurm.addJob("gpu", "gpu-0")
			out := e.run(in, jujutest.RelationHook(juju.RelationBroken, "slurmd:2", ""))
			out.Relations = slices.DeleteFunc(out.Relations, func(r jujutest.Relation) bool { return r.ID == "slurmd:2" })
			return out
		},
		handedOver: func(t *testing.T, e *env, before, after *charmState) {
			if len(before.Removing) == 0 {
				t.Fatal("no partition being removed before the move")
			}
			if d := cmp.Diff(sortedKeys(before.Removing), sortedKeys(after.Removing)); d != "" {
				t.Errorf("partitions being removed (-former leader +new):\n%s", d)
			}
			if !strings.Contains(e.read(partitionPath("gpu")), "State=INACTIVE") {
				t.Errorf("the new leader's include of gpu:\n%s", e.read(partitionPath("gpu")))
			}
		},
		finish: func(e *env, updateStatus func()) {
			updateStatus()
			if !e.exists(partitionPath("gpu")) {
				e.t.Error("the new leader removed a partition whose job runs")
			}
			e.slurm.EndJobs()
			e.slurm.PurgeJobs()
		},
		end: func(t *testing.T, e *env, st *charmState, _ jujutest.State) {
			if e.exists(partitionPath("gpu")) || e.slurm.hasNode("gpu-0") || len(st.Removing) != 0 || slices.Contains(st.Apps, "gpu") {
				t.Errorf("partition gpu not removed: apps %v, removing %v, nodes %v", st.Apps, st.Removing, e.slurm.NodeNames())
			}
			if n := e.slurm.count("scontrol", "delete", "nodename=gpu-0"); n != 1 {
				t.Errorf("gpu-0 deleted %d times, want once", n)
			}
		},
	}, {
		name: "accounting",
		start: func(e *env) jujutest.State {
			in := withDbd(e.started(), dbdBag(slurmVersionOf(e)))
			out := e.run(in, jujutest.RelationHook(juju.RelationChanged, dbdRel, "slurmdbd/0"))
			return e.run(out, jujutest.Hook(juju.UpdateStatus)) // the restart answered
		},
		handedOver: func(t *testing.T, e *env, before, after *charmState) {
			if before.Accounting == nil || before.Accounting.storage() == "" {
				t.Fatalf("accounting not on before the move: %+v", before.Accounting)
			}
			if d := cmp.Diff(before.Accounting, after.Accounting); d != "" {
				t.Errorf("accounting (-former leader +new):\n%s", d)
			}
			if after.AccountingRunning != before.AccountingRunning {
				t.Errorf("accounting running %q, was %q", after.AccountingRunning, before.AccountingRunning)
			}
		},
		end: func(t *testing.T, e *env, st *charmState, out jujutest.State) {
			e.confLines("AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=10.0.0.9")
			if !strings.Contains(out.UnitStatus.Message, "accounting via slurmdbd") {
				t.Errorf("status %q", out.UnitStatus.Message)
			}
		},
	}, {
		name: "rolling reboot",
		start: func(e *env) jujutest.State {
			in := withPeer(e.withApp("slurmd", "slurmd/0", "slurmd/1", "slurmd/2"))
			for _, n := range []string{"slurmd-0", "slurmd-1", "slurmd-2"} {
				e.slurm.addNode(n, "slurmd", false)
			}
			in.Action = jujutest.ActionState{Params: map[string]any{"nodes": "slurmd-[0-2]", "max-unavailable": 1, "reason": "rebuild"}}
			out := e.run(in, jujutest.ActionEvent("reboot"))
			if out.Action.Failed {
				e.t.Fatalf("reboot: %s", out.Action.Message)
			}
			out.Action = jujutest.ActionState{}
			// The former leader asked slurmd-1 too, in a hook whose write of the plan to the
			// peer bag Juju then refused (the leadership had moved).
			e.scontrol("reboot", "ASAP", "nextstate=resume", "reason=rebuild", "slurmd-1")
			return out
		},
		handedOver: func(t *testing.T, e *env, before, after *charmState) {
			if before.Reboots == nil {
				t.Fatal("no rolling reboot before the move")
			}
			if d := cmp.Diff(before.Reboots, after.Reboots); d != "" {
				t.Errorf("rolling reboot (-former leader +new):\n%s", d)
			}
		},
		finish: func(e *env, updateStatus func()) {
			e.slurm.Rebooted("slurmd-0")
			updateStatus() // slurmd-1 is rebooting already: waited for, not asked
			e.slurm.Rebooted("slurmd-1")
			updateStatus() // slurmd-2 asked
			e.slurm.Rebooted("slurmd-2")
		},
		end: func(t *testing.T, e *env, st *charmState, out jujutest.State) {
			want := [][]string{rebootCall("rebuild", "slurmd-0"), rebootCall("rebuild", "slurmd-2")}
			if d := cmp.Diff(want, e.slurm.reboots()); d != "" {
				t.Errorf("reboots the charm asked (-want +got; slurmd-1 by the former leader):\n%s", d)
			}
			if st.Reboots != nil {
				t.Errorf("rolling reboot not over: %+v", st.Reboots)
			}
			if bag := peerAppBag(out); bag[peerKeyReboots] != "" {
				t.Errorf("the plan stays in the peer bag: %s", bag[peerKeyReboots])
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			out := tc.start(e)
			before, err := e.c.loadState()
			if err != nil {
				t.Fatal(err)
			}
			leaderWork := func() int {
				n := 0
				for _, c := range e.slurm.commands() {
					if len(c) > 1 && c[0] == "scontrol" && slices.Contains([]string{"delete", "reboot", "update", "reconfigure"}, c[1]) {
						n++
					}
				}
				return n
			}
			work := leaderWork()
			untouched := e.slurmctldUntouched(t, "the unit losing and regaining the leadership")

			// The leadership moves away: the follower drops the records and does no leader work.
			out.Leader = false
			out = e.run(out, jujutest.Hook(juju.UpdateStatus))
			st, err := e.c.loadState()
			if err != nil {
				t.Fatal(err)
			}
			if st.Led || st.Pending != nil || st.Removing != nil || st.Reboots != nil || st.Accounting != nil {
				t.Errorf("a follower keeps leader records: led %v, pending %v, removing %v, reboots %+v, accounting %+v", st.Led, st.Pending, st.Removing, st.Reboots, st.Accounting)
			}
			if n := leaderWork() - work; n != 0 {
				t.Errorf("the former leader did %d pieces of leader work: %v", n, e.slurm.commands())
			}
			if w := e.waiter.last(); len(w.Nodes)+len(w.Partitions) != 0 {
				t.Errorf("the former leader's waiter still watches %+v", w)
			}

			// It leads again: leader-elected takes the records over.
			out.Leader = true
			out = e.run(out, jujutest.Hook(juju.LeaderElected))
			after, err := e.c.loadState()
			if err != nil {
				t.Fatal(err)
			}
			tc.handedOver(t, e, before, after)
			untouched()
			if tc.finish != nil {
				tc.finish(e, func() { out = e.run(out, jujutest.Hook(juju.UpdateStatus)) })
			}
			out = e.run(out, jujutest.Hook(juju.UpdateStatus))
			if st, err = e.c.loadState(); err != nil {
				t.Fatal(err)
			}
			tc.end(t, e, st, out)
		})
	}
}

// pendingUnits are the departed units of the pending nodes, by node.
func pendingUnits(st *charmState) map[string]string {
	out := map[string]string{}
	for n, p := range st.Pending {
		out[n] = p.Unit + " of " + p.App
	}
	return out
}

// slurmVersionOf is the Slurm version e's controller reports.
func slurmVersionOf(e *env) string {
	st, err := e.c.loadState()
	if err != nil || st.SlurmVersion == "" {
		e.t.Fatalf("no Slurm version in the state: %v", err)
	}
	return st.SlurmVersion
}

// TestNewLeaderAdoptsDepartedNodes: a new leader takes over the removal of a node only when
// Slurm shows it drained with the reason a departing unit's removal gives, and its unit is in
// no slurmd relation: not a node drained for another reason, nor one whose unit is still
// related (its relation-departed, queued, records it), nor an idle one.
func TestNewLeaderAdoptsDepartedNodes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reason  string // drain reason; "" leaves the node idle
		related bool   // slurmd/1 is still in the relation
		adopted bool
	}{
		{name: "drained by its departing unit", reason: "unit slurmd/1 removed", adopted: true},
		{name: "drained for another reason", reason: "maintenance"},
		{name: "another unit's reason", reason: "unit slurmd/2 removed"},
		{name: "unit still related", reason: "unit slurmd/1 removed", related: true},
		{name: "not drained"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			in := e.withApp("slurmd", "slurmd/0", "slurmd/1")
			e.slurm.addNode("slurmd-0", "slurmd", false)
			e.slurm.addNode("slurmd-1", "slurmd", false)
			e.slurm.addJob("slurmd", "slurmd-1")
			if tc.reason != "" {
				e.scontrol("update", "nodename=slurmd-1", "state=drain", "reason="+tc.reason)
			}
			if !tc.related {
				delete(in.Relations[0].RemoteUnits, "slurmd/1")
			}
			in.Leader = false
			out := e.run(in, jujutest.Hook(juju.UpdateStatus))
			out.Leader = true
			e.run(out, jujutest.Hook(juju.LeaderElected))
			st, err := e.c.loadState()
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			if tc.adopted {
				want["slurmd-1"] = "slurmd/1 of slurmd"
			}
			if d := cmp.Diff(want, pendingUnits(st)); d != "" {
				t.Errorf("pending (-want +got):\n%s", d)
			}
			if !e.slurm.hasNode("slurmd-1") {
				t.Error("a node whose job runs was deleted")
			}
			if w := e.waiter.last(); tc.adopted != slices.Contains(w.Nodes, "slurmd-1") {
				t.Errorf("waiter watches %+v", w)
			}
		})
	}
}

// TestNewLeaderAdoptsNodesOnceSlurmAnswers: a new leader that cannot read Slurm's nodes
// (slurmctld unreachable) takes the removals over at the next hook that can.
func TestNewLeaderAdoptsNodesOnceSlurmAnswers(t *testing.T) {
	e := newEnv(t)
	in := e.withApp("slurmd", "slurmd/0")
	e.slurm.addNode("slurmd-1", "slurmd", false)
	e.scontrol("update", "nodename=slurmd-1", "state=drain", "reason=unit slurmd/1 removed")
	in.Leader = false
	out := e.run(in, jujutest.Hook(juju.UpdateStatus))
	e.slurm.SetUnreachable(true)
	out.Leader = true
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	st, err := e.c.loadState()
	if err != nil {
		t.Fatal(err)
	}
	if !st.Led || !st.AdoptNodes || len(st.Pending) != 0 {
		t.Fatalf("unreachable Slurm: led %v, adopt-nodes %v, pending %v", st.Led, st.AdoptNodes, st.Pending)
	}
	e.slurm.SetUnreachable(false)
	e.run(out, jujutest.Hook(juju.UpdateStatus))
	if st, err = e.c.loadState(); err != nil {
		t.Fatal(err)
	}
	if st.AdoptNodes || e.slurm.hasNode("slurmd-1") {
		t.Errorf("adopt-nodes %v, nodes %v: the idle departed node should be deleted", st.AdoptNodes, e.slurm.NodeNames())
	}
}

// TestRebootPlanPeerData: the rolling reboot goes through the peer bag unchanged, and a bag
// value that is not a plan the reboot action could make is refused.
func TestRebootPlanPeerData(t *testing.T) {
	plan := &rebootPlan{Reason: "rebuild", Max: 2, Queued: []string{"slurmd-2"}, Asked: map[string]string{"slurmd-0": "2026-11-22T22:10:48", "slurmd-1": ""}, Done: 3, Since: time.Date(2026, 11, 26, 11, 0, 0, 0, time.UTC)}
	raw, err := encodeRebootPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRebootPlan(raw)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(plan, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if raw, err := encodeRebootPlan(nil); raw != "" || err != nil {
		t.Errorf("no plan: %q, %v", raw, err)
	}
	for _, tc := range []struct{ name, raw, err string }{
		{"not JSON", "{", "unexpected EOF"},
		{"unknown field", `{"reason":"r","max-unavailable":1,"nodes":["a"]}`, `unknown field "nodes"`},
		{"trailing", `{"reason":"r","max-unavailable":1}{}`, "trailing data"},
		{"no max", `{"reason":"r","queued":["a"]}`, "max-unavailable 0"},
		{"negative done", `{"reason":"r","max-unavailable":1,"done":-1}`, "done -1"},
		{"no reason", `{"max-unavailable":1}`, "reason"},
		{"quoted reason", `{"reason":"a\"b","max-unavailable":1}`, "reason"},
		{"bad node", `{"reason":"r","max-unavailable":1,"queued":["a,b"]}`, `node "a,b"`},
		{"twice", `{"reason":"r","max-unavailable":1,"queued":["a"],"asked":{"a":""}}`, `node "a"`},
		{"bad boot time", `{"reason":"r","max-unavailable":1,"asked":{"a":"x y"}}`, "boot time"},
		{"too big", `{"reason":"` + strings.Repeat("r", maxRebootPlanSize) + `","max-unavailable":1}`, "over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeRebootPlan(tc.raw); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("decodeRebootPlan: %v, want an error with %q", err, tc.err)
			}
		})
	}
}

func FuzzDecodeRebootPlan(f *testing.F) {
	f.Add(`{"reason":"rebuild","max-unavailable":1,"queued":["slurmd-1"],"asked":{"slurmd-0":"2026-11-22T22:10:48"}}`)
	f.Add(`{"reason":"r","max-unavailable":0}`)
	f.Fuzz(func(t *testing.T, raw string) {
		plan, err := decodeRebootPlan(raw)
		if err != nil || plan == nil {
			return
		}
		again, err := encodeRebootPlan(plan)
		if err != nil {
			t.Fatalf("a decoded plan does not encode: %v", err)
		}
		back, err := decodeRebootPlan(again)
		if err != nil {
			t.Fatalf("a plan encoded again does not decode: %v", err)
		}
		if d := cmp.Diff(plan, back, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("round trip (-first +second):\n%s", d)
		}
	})
}

// TestRebootSkipsNodesBootedSince: a queued node that Slurm shows booted since the plan began
// (rebooted under a leader whose record of it was lost) and back in service is counted done,
// not asked again; one booted before is asked.
func TestRebootSkipsNodesBootedSince(t *testing.T) {
	for _, tc := range []struct {
		name   string
		since  time.Time
		asked  bool
		doneBy int
	}{
		// The fake's nodes booted at 2026-11-22T22:10:48, and 23:0n:00 after each reboot.
		{name: "booted before the plan", since: time.Date(2026, 11, 22, 23, 30, 0, 0, time.Local), asked: true},
		{name: "booted since the plan", since: time.Date(2026, 11, 22, 22, 30, 0, 0, time.Local), doneBy: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			in := e.withApp("slurmd", "slurmd/0")
			e.slurm.addNode("slurmd-0", "slurmd", false)
			e.slurm.Rebooted("slurmd-0")
			e.c.Clock = func() time.Time { return tc.since }
			in.Action = jujutest.ActionState{Params: map[string]any{"nodes": "slurmd-0", "reason": "rebuild"}}
			out := e.run(in, jujutest.ActionEvent("reboot"))
			if out.Action.Failed {
				t.Fatalf("reboot: %s", out.Action.Message)
			}
			if got := len(e.slurm.reboots()) > 0; got != tc.asked {
				t.Errorf("slurmd-0 asked to reboot: %v, want %v", got, tc.asked)
			}
			st, err := e.c.loadState()
			if err != nil {
				t.Fatal(err)
			}
			if done := tc.doneBy == 1; done != (st.Reboots == nil) {
				t.Errorf("plan %+v, want it over: %v", st.Reboots, done)
			}
		})
	}
}

// TestHALeaderChangeMidWork: as TestHALeaderChange, with a partition being removed (its job
// still running) and accounting on when the leadership moves to the running backup. The
// leader shared the partition's INACTIVE include with the backups in the hook that set it
// (not at its next configure hook); the new leader takes the removal and accounting over,
// writes byte for byte the files it runs with, and neither restarts nor reconfigures
// slurmctld; the partition goes under it once its job records are gone. The former leader,
// a follower now, does none of it.
func TestHALeaderChangeMidWork(t *testing.T) {
	e, leader := haLeader(t, 0)
	ver := slurmVersionOf(e)
	leader = e.run(withDbd(leader, dbdBag(ver)), jujutest.RelationHook(juju.RelationChanged, dbdRel, "slurmdbd/0"))
	leader = e.run(leader, jujutest.Hook(juju.UpdateStatus)) // the accounting restart answers
	leader.Relations = append(leader.Relations, relation("slurmd:2", "gpu", compute(t, "gpu", ""), "gpu/0"))
	leader = e.run(leader, jujutest.RelationHook(juju.RelationChanged, "slurmd:2", "gpu/0"))
	e.slurm.addNode("gpu-0", "gpu", false)
	e.slurm.addJob("gpu", "gpu-0")
	shared := peerAppBag(leader)[peerKeyConf]
	leader = e.run(leader, jujutest.RelationHook(juju.RelationBroken, "slurmd:2", ""))
	leader.Relations = slices.DeleteFunc(leader.Relations, func(r jujutest.Relation) bool { return r.ID == "slurmd:2" })
	bag := peerAppBag(leader)
	if bag[peerKeyConf] == shared || !strings.Contains(bag[peerKeyConf], "State=INACTIVE") {
		t.Fatalf("the leader did not share the INACTIVE include of gpu in its relation-broken hook:\n%s", bag[peerKeyConf])
	}
	before, err := e.c.loadState()
	if err != nil {
		t.Fatal(err)
	}

	// The backup runs the leader's files, then leads.
	b, in := haBackup(t, leader)
	in.Relations = append(in.Relations, relation("slurmd:1", "slurmd", compute(t, "slurmd", ""), "slurmd/0"))
	in = withDbd(in, dbdBag(ver))
	out := b.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
	writeHeartbeat(t, b, 0)
	b.slurm.addNode("gpu-0", "gpu", false)
	b.slurm.addJob("gpu", "gpu-0")
	conf, gpu := b.read(confPath), b.read(partitionPath("gpu"))
	untouched := b.slurmctldUntouched(t, "the new leader")
	out.Leader = true
	out = b.run(out, jujutest.Hook(juju.LeaderElected))
	untouched()
	if d := cmp.Diff(conf+gpu, b.read(confPath)+b.read(partitionPath("gpu"))); d != "" {
		t.Errorf("the new leader's files differ from those it ran with (-before +after):\n%s", d)
	}
	after, err := b.c.loadState()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before.Accounting, after.Accounting); d != "" {
		t.Errorf("accounting (-former leader +new):\n%s", d)
	}
	if after.AccountingRunning != before.AccountingRunning {
		t.Errorf("accounting running %q on the new leader, %q on the former", after.AccountingRunning, before.AccountingRunning)
	}
	if d := cmp.Diff(sortedKeys(before.Removing), sortedKeys(after.Removing)); d != "" {
		t.Errorf("partitions being removed (-former leader +new):\n%s", d)
	}

	// The former leader, a follower, does no leader work; the new leader removes the partition.
	leader.Leader = false
	work := e.slurm.count("scontrol", "delete") + e.slurm.count("scontrol", "reconfigure") + e.slurm.count("scontrol", "update")
	e.slurm.EndJobs()
	e.slurm.PurgeJobs()
	e.run(leader, jujutest.Hook(juju.UpdateStatus))
	if n := e.slurm.count("scontrol", "delete") + e.slurm.count("scontrol", "reconfigure") + e.slurm.count("scontrol", "update") - work; n != 0 {
		t.Errorf("the former leader did %d pieces of leader work", n)
	}
	b.slurm.EndJobs()
	b.slurm.PurgeJobs()
	b.run(out, jujutest.Hook(juju.UpdateStatus))
	if b.exists(partitionPath("gpu")) || b.slurm.hasNode("gpu-0") {
		t.Errorf("the new leader did not remove partition gpu: nodes %v", b.slurm.NodeNames())
	}
}
