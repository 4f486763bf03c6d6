package main

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// release is a slurmd unit's databag saying it runs Slurm 22.05.8, as a unit publishes it at
// the end of its first relation hook.
var release = map[string]string{"slurm_version": "22.05.8"}

// computeReleased is the ComputeData of application app as the slurmd charm's leader publishes it:
// with its Slurm release, the sign that its units publish theirs.
func computeReleased(t *testing.T, app, extra string) map[string]string {
	t.Helper()
	bag := compute(t, app, extra)
	bag["slurm_version"] = "22.05.8"
	return bag
}

// withJoined is a leader with application slurmd, whose unit slurmd/0 joined (its node
// registered, its release published), after an update-status.
func (e *env) withJoined() jujutest.State {
	e.t.Helper()
	in := e.started()
	rel := relation("slurmd:1", "slurmd", computeReleased(e.t, "slurmd", ""), "slurmd/0")
	rel.RemoteUnits["slurmd/0"] = release
	in.Relations = []jujutest.Relation{rel}
	e.slurm.addNode("slurmd-0", "slurmd", false)
	for _, ev := range []juju.Event{
		jujutest.RelationHook(juju.RelationCreated, "slurmd:1", ""),
		jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/0"),
		jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"),
		jujutest.Hook(juju.UpdateStatus),
	} {
		in = e.run(in, ev)
	}
	if want := "slurmctld up, 1 nodes (1 idle, 0 allocated, 0 drained)"; in.UnitStatus.Message != want {
		e.t.Fatalf("status %q, want %q", in.UnitStatus.Message, want)
	}
	return in
}

// addUnit adds unit slurmd/<n> to the slurmd relation of in, with databag bag.
func addUnit(in jujutest.State, unit string, bag map[string]string) jujutest.State {
	in.Relations = slices.Clone(in.Relations)
	r := &in.Relations[0]
	r.RemoteUnits = maps.Clone(r.RemoteUnits)
	r.RemoteUnits[unit] = bag
	return in
}

// TestJoiningUnitKeepsCounts: while a slurmd unit joins (its relation-joined and the
// relation-changed that follows, before it published its release at the end of its first
// relation hook, once its node registered), the controller's hooks for it change nothing in
// Slurm and read no node list: their status shows the counts the last status read, in
// turn and with the reads ahead alike. The relation-changed of the unit's publication
// reads the list, with its node.
func TestJoiningUnitKeepsCounts(t *testing.T) {
	for _, ahead := range []bool{false, true} {
		name := "in turn"
		if ahead {
			name = "read ahead"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.c.AskLeaderEarly, e.c.ReadAhead = ahead, ahead
			in := addUnit(e.withJoined(), "slurmd/1", map[string]string{})
			shows := e.slurm.count("scontrol", "show", "node")
			was := in.UnitStatus
			for _, ev := range []juju.Event{
				jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/1"),
				jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/1"),
			} {
				in = e.run(in, ev)
				if n := e.slurm.count("scontrol", "show", "node") - shows; n != 0 {
					t.Errorf("%s of a joining unit read the nodes %d times: %q", ev.Name, n, e.slurm.commands())
				}
				if d := cmp.Diff(was, in.UnitStatus); d != "" {
					t.Errorf("%s: status (-want +got):\n%s", ev.Name, d)
				}
			}
			// Its node registered; its first relation hook ends with its release.
			e.slurm.addNode("slurmd-1", "slurmd", false)
			in = addUnit(in, "slurmd/1", release)
			in = e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/1"))
			if n := e.slurm.count("scontrol", "show", "node") - shows; n != 1 {
				t.Errorf("the unit's publication read the nodes %d times, want once", n)
			}
			if want := "slurmctld up, 2 nodes (2 idle, 0 allocated, 0 drained)"; in.UnitStatus.Message != want {
				t.Errorf("status %q, want %q", in.UnitStatus.Message, want)
			}
			// Another unit's join keeps the new counts.
			in = addUnit(in, "slurmd/2", map[string]string{})
			in = e.run(in, jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/2"))
			if want := "slurmctld up, 2 nodes (2 idle, 0 allocated, 0 drained)"; in.UnitStatus.Message != want {
				t.Errorf("status %q, want %q", in.UnitStatus.Message, want)
			}
		})
	}
}

// TestJoiningUnitReadsNodes: a joining unit's hook reads the node list as any other when the
// counts cannot be kept: the hook changed Slurm (its application's partition changed with
// it: reconfigured), the unit's application runs an older slurmd charm (its units publish no
// release: no later hook would count the node), the last status showed no counts (slurmctld
// was not running), or the last hook failed.
func TestJoiningUnitReadsNodes(t *testing.T) {
	for _, tt := range []struct {
		summary string
		// before changes the model and host before the joining unit's relation-changed.
		before func(t *testing.T, e *env, in jujutest.State) jujutest.State
		want   string // the status after it
	}{{
		summary: "partition changed",
		before: func(t *testing.T, e *env, in jujutest.State) jujutest.State {
			in.Relations = slices.Clone(in.Relations)
			in.Relations[0].RemoteAppData = computeReleased(t, "slurmd", "MaxTime=1:00:00")
			e.slurm.addNode("slurmd-1", "slurmd", false)
			return in
		},
		want: "slurmctld up, 2 nodes (2 idle, 0 allocated, 0 drained)",
	}, {
		summary: "older slurmd charm",
		before: func(t *testing.T, e *env, in jujutest.State) jujutest.State {
			in.Relations = slices.Clone(in.Relations)
			in.Relations[0].RemoteAppData = compute(t, "slurmd", "")
			in = e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
			e.slurm.addNode("slurmd-1", "slurmd", false)
			return in
		},
		want: "slurmctld up, 2 nodes (2 idle, 0 allocated, 0 drained)",
	}, {
		summary: "no counts shown last",
		before: func(t *testing.T, e *env, in jujutest.State) jujutest.State {
			if err := e.svc.Stop(t.Context(), svcSlurmctld); err != nil {
				t.Fatal(err)
			}
			in = e.run(in, jujutest.Hook(juju.UpdateStatus))
			if in.UnitStatus.Message != "slurmctld is not running" {
				t.Fatalf("status %q with slurmctld stopped", in.UnitStatus.Message)
			}
			if err := e.svc.Start(t.Context(), svcSlurmctld); err != nil {
				t.Fatal(err)
			}
			e.slurm.addNode("slurmd-1", "slurmd", false)
			return in
		},
		want: "slurmctld up, 2 nodes (2 idle, 0 allocated, 0 drained)",
	}, {
		summary: "failed hook",
		before: func(t *testing.T, e *env, in jujutest.State) jujutest.State {
			e.slurm.addNode("slurmd-1", "slurmd", false)
			// update-status reads the new counts, then fails to show them.
			out, _, err := e.runTools(in, jujutest.Hook(juju.UpdateStatus), func(args []string) bool { return args[0] == "status-set" })
			if err == nil {
				t.Fatal("update-status did not fail")
			}
			return out
		},
		want: "slurmctld up, 2 nodes (2 idle, 0 allocated, 0 drained)",
	}} {
		t.Run(tt.summary, func(t *testing.T) {
			e := newEnv(t)
			in := addUnit(e.withJoined(), "slurmd/1", map[string]string{})
			in = tt.before(t, e, in)
			shows := e.slurm.count("scontrol", "show", "node")
			in = e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/1"))
			if e.slurm.count("scontrol", "show", "node") == shows {
				t.Errorf("the joining unit's relation-changed read no nodes")
			}
			if in.UnitStatus.Message != tt.want {
				t.Errorf("status %q, want %q", in.UnitStatus.Message, tt.want)
			}
		})
	}
}

// TestKeepsCounts: a hook keeps the counts only for a unit still joining whose
// application's charm publishes releases, after a status that showed counts, when it has
// neither changed Slurm (forgot the list) nor read the list itself.
func TestKeepsCounts(t *testing.T) {
	joined := jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/1")
	joined.Endpoint, joined.RemoteApp = "slurmd", "slurmd"
	changed := joined
	changed.Kind = juju.RelationChanged
	departed := joined
	departed.Kind = juju.RelationDeparted
	appChanged := changed
	appChanged.RemoteUnit = ""
	releases := map[string]nodeRelease{"slurmd": {Relation: "slurmd:1", Version: "22.05.8"}, "slurmd/0": {Relation: "slurmd:1", Version: "22.05.8"}}
	counts := &nodeCounts{Nodes: 1, Idle: 1}
	for _, tt := range []struct {
		summary  string
		ev       juju.Event
		releases map[string]nodeRelease
		counts   *nodeCounts
		forgot   bool
		read     bool
		want     bool
	}{
		{summary: "joined", ev: joined, releases: releases, counts: counts, want: true},
		{summary: "changed", ev: changed, releases: releases, counts: counts, want: true},
		{summary: "departed", ev: departed, releases: releases, counts: counts},
		{summary: "application's data changed", ev: appChanged, releases: releases, counts: counts},
		{summary: "unit published", ev: changed, releases: map[string]nodeRelease{"slurmd": releases["slurmd"], "slurmd/1": releases["slurmd/0"]}, counts: counts},
		{summary: "older charm", ev: changed, releases: map[string]nodeRelease{"slurmd": {Relation: "slurmd:1"}}, counts: counts},
		{summary: "application unknown", ev: changed, counts: counts},
		{summary: "no counts", ev: changed, releases: releases},
		{summary: "Slurm changed", ev: changed, releases: releases, counts: counts, forgot: true},
		{summary: "list read", ev: changed, releases: releases, counts: counts, read: true},
	} {
		t.Run(tt.summary, func(t *testing.T) {
			h := &hook{hc: &juju.HookContext{Event: tt.ev}, st: &charmState{SlurmdReleases: tt.releases, NodeCounts: tt.counts}}
			if tt.forgot {
				h.nodes.forget()
			}
			h.nodes.read = tt.read
			if got := h.keepsCounts(); got != tt.want {
				t.Errorf("keepsCounts() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCountNodes: the counts the status shows; FUTURE records are no nodes.
func TestCountNodes(t *testing.T) {
	st := func(base string, flags ...string) slurm.NodeState {
		return slurm.NodeState{Base: base, Flags: flags}
	}
	nodes := []slurm.Node{
		{Name: "a", State: st(slurm.StateIdle)},
		{Name: "b", State: st(slurm.StateAllocated)},
		{Name: "c", State: st(slurm.StateIdle, slurm.FlagDrain)},
		{Name: "d", State: st(slurm.StateAllocated, slurm.FlagDrain)},
		{Name: "e", State: st(slurm.StateDown)},
		{Name: "f", State: st(slurm.StateFuture)},
	}
	want := nodeCounts{Nodes: 5, Idle: 1, Alloc: 1, Drained: 1, Draining: 1, Down: 1}
	if d := cmp.Diff(want, countNodes(nodes)); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
}

// statusCounter counts the service manager's status queries of slurmctld (each a D-Bus call
// on systemd).
type statusCounter struct {
	service.Manager
	mu sync.Mutex
	n  int
}

func (s *statusCounter) Status(ctx context.Context, name string) (service.Status, error) {
	if name == svcSlurmctld {
		s.mu.Lock()
		s.n++
		s.mu.Unlock()
	}
	return s.Manager.Status(ctx, name)
}

// TestJoiningUnitAsksOnce: the relation-changed of a joining unit, whose application's data
// is unchanged, asks the service manager once whether slurmctld runs (for the status), not
// also before applying nothing.
func TestJoiningUnitAsksOnce(t *testing.T) {
	e := newEnv(t)
	in := addUnit(e.withJoined(), "slurmd/1", map[string]string{})
	sc := &statusCounter{Manager: e.svc}
	e.c.Services = sc
	in = e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/1"))
	if sc.n != 1 {
		t.Errorf("slurmctld's service status asked %d times, want once", sc.n)
	}
	if want := "slurmctld up, 1 nodes (1 idle, 0 allocated, 0 drained)"; in.UnitStatus.Message != want {
		t.Errorf("status %q, want %q", in.UnitStatus.Message, want)
	}
}
