package autoscaler_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/autoscaler"
	"github.com/charmed-slurm/operators/autoscaler/jujucli"
	"github.com/charmed-slurm/operators/autoscaler/policy"
	"github.com/charmed-slurm/operators/libs/slurm"
)

var start = time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)

// fakeJuju is an application's units; it records every add-unit and remove-unit.
type fakeJuju struct {
	units   map[string]jujucli.Unit
	next    int
	addErr  error
	actions []string
}

func (f *fakeJuju) Status(ctx context.Context) (*jujucli.Status, error) {
	return &jujucli.Status{Applications: map[string]jujucli.Application{"slurmd": {Units: f.units}}}, nil
}

func (f *fakeJuju) AddUnit(ctx context.Context, app string, n int) error {
	f.actions = append(f.actions, fmt.Sprintf("add-unit %s -n %d", app, n))
	if f.addErr != nil {
		return f.addErr
	}
	for range n {
		f.units[fmt.Sprintf("slurmd/%d", f.next)] = jujucli.Unit{}
		f.next++
	}
	return nil
}

func (f *fakeJuju) RemoveUnit(ctx context.Context, units ...string) error {
	f.actions = append(f.actions, "remove-unit "+strings.Join(units, " "))
	for _, u := range units {
		f.units[u] = jujucli.Unit{Life: "dying"}
	}
	return nil
}

// fakeSlurm holds node records as scontrol prints them and the pending jobs; onDrain may
// change a node right after it is drained (a job landing at the last moment).
type fakeSlurm struct {
	nodes   map[string]string // name → "State=... Reason=... LastBusyTime=..."
	pending []slurm.PendingJob
	jobsOn  map[string]int
	onDrain func(node string)
	actions []string
}

func (f *fakeSlurm) node(name string) (slurm.Node, error) {
	rec, ok := f.nodes[name]
	if !ok {
		return slurm.Node{}, slurm.ErrUnknownNode
	}
	ns, err := slurm.ParseShowNode([]byte("NodeName=" + name + " " + rec))
	if err != nil {
		return slurm.Node{}, err
	}
	return ns[0], nil
}

func (f *fakeSlurm) PendingJobs(ctx context.Context) ([]slurm.PendingJob, error) {
	return f.pending, nil
}

func (f *fakeSlurm) Nodes(ctx context.Context) ([]slurm.Node, error) {
	var out []slurm.Node
	for name := range f.nodes {
		n, err := f.node(name)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func (f *fakeSlurm) ShowNode(ctx context.Context, name string) (slurm.Node, error) {
	return f.node(name)
}

func (f *fakeSlurm) JobsOnNode(ctx context.Context, node string) ([]slurm.Job, error) {
	return make([]slurm.Job, f.jobsOn[node]), nil
}

func (f *fakeSlurm) Drain(ctx context.Context, name, reason string) error {
	f.actions = append(f.actions, "drain "+name+" "+reason)
	f.nodes[name] = "State=IDLE+DRAIN+DYNAMIC_NORM Reason=" + reason + " [root@2026-11-23T20:00:00]"
	if f.onDrain != nil {
		f.onDrain(name)
	}
	return nil
}

func (f *fakeSlurm) Resume(ctx context.Context, name string) error {
	f.actions = append(f.actions, "resume "+name)
	f.nodes[name] = "State=IDLE+DYNAMIC_NORM LastBusyTime=2026-11-23T20:00:00"
	return nil
}

func (f *fakeSlurm) Reconsider(ctx context.Context, job slurm.PendingJob) error {
	f.actions = append(f.actions, "reconsider "+job.ID)
	return nil
}

const (
	idleSince = "State=IDLE+DYNAMIC_NORM LastBusyTime=2026-11-23T19:50:00" // idle 10m at start
	busyNode  = "State=ALLOCATED+DYNAMIC_NORM LastBusyTime=2026-11-23T19:50:00"
	ourDrain  = "State=IDLE+DRAIN+DYNAMIC_NORM Reason=autoscaler: idle, removing unit slurmd/1 [root@2026-11-23T19:59:00]"
)

type env struct {
	juju  *fakeJuju
	slurm *fakeSlurm
	now   time.Time
	lines []string
	s     *autoscaler.Scaler
}

func newEnv(units []string, nodes map[string]string, dry bool) *env {
	e := &env{juju: &fakeJuju{units: map[string]jujucli.Unit{}, next: len(units)}, slurm: &fakeSlurm{nodes: nodes, jobsOn: map[string]int{}}, now: start}
	for _, u := range units {
		e.juju.units[u] = jujucli.Unit{}
	}
	e.s = &autoscaler.Scaler{
		Juju:   e.juju,
		Slurm:  func(*jujucli.Status) (autoscaler.Slurm, error) { return e.slurm, nil },
		Apps:   []policy.App{{Name: "slurmd", Min: 1, Max: 4, IdleTime: time.Minute, ScaleOutStep: 2, ScaleInStep: 2, RegisterTimeout: 5 * time.Minute}},
		DryRun: dry,
		Now:    func() time.Time { return e.now },
		Report: func(l string) { e.lines = append(e.lines, l) },
	}
	return e
}

func (e *env) tick(t *testing.T) {
	t.Helper()
	if err := e.s.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestScaleInDrainsRechecksAndRemoves(t *testing.T) {
	t.Parallel()
	e := newEnv([]string{"slurmd/0", "slurmd/1"}, map[string]string{"slurmd-0": busyNode, "slurmd-1": idleSince}, false)
	e.tick(t)
	want := []string{"drain slurmd-1 autoscaler: idle, removing unit slurmd/1"}
	if d := cmp.Diff(want, e.slurm.actions); d != "" {
		t.Errorf("slurm actions (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"remove-unit slurmd/1"}, e.juju.actions); d != "" {
		t.Errorf("juju actions (-want +got):\n%s", d)
	}
}

func TestJobLandingAtTheLastMomentKeepsTheNode(t *testing.T) {
	t.Parallel()
	e := newEnv([]string{"slurmd/0", "slurmd/1"}, map[string]string{"slurmd-0": busyNode, "slurmd-1": idleSince}, false)
	e.slurm.onDrain = func(n string) {
		e.slurm.nodes[n] = "State=ALLOCATED+DRAIN+DYNAMIC_NORM Reason=autoscaler: idle [root@2026-11-23T20:00:00]"
		e.slurm.jobsOn[n] = 1
	}
	e.tick(t)
	if len(e.juju.actions) != 0 {
		t.Fatalf("removed a node a job landed on: %v", e.juju.actions)
	}
	// The job ends: the node is drained and idle, and the next decision removes it.
	e.slurm.nodes["slurmd-1"] = ourDrain
	e.slurm.jobsOn["slurmd-1"] = 0
	e.now = e.now.Add(10 * time.Second)
	e.tick(t)
	if d := cmp.Diff([]string{"remove-unit slurmd/1"}, e.juju.actions); d != "" {
		t.Errorf("juju actions (-want +got):\n%s", d)
	}
}

func TestJobStartedSinceTheDecisionKeepsTheNodeUndrained(t *testing.T) {
	t.Parallel()
	e := newEnv([]string{"slurmd/0", "slurmd/1"}, map[string]string{"slurmd-0": busyNode, "slurmd-1": idleSince}, false)
	// Nodes were read idle; the queue, read after, no longer has the job the scheduler just
	// started on slurmd-1: the check before the drain sees it.
	e.slurm.jobsOn["slurmd-1"] = 1
	e.tick(t)
	if len(e.slurm.actions)+len(e.juju.actions) != 0 {
		t.Fatalf("acted on a node that got a job: %v %v", e.slurm.actions, e.juju.actions)
	}
}

func TestRestartResumesFromSlurm(t *testing.T) {
	t.Parallel()
	// A previous autoscaler drained slurmd-1 and stopped before remove-unit: a new one, with
	// no memory, finishes the removal; with jobs pending it takes the node back instead.
	e := newEnv([]string{"slurmd/0", "slurmd/1"}, map[string]string{"slurmd-0": busyNode, "slurmd-1": ourDrain}, false)
	e.tick(t)
	if d := cmp.Diff([]string{"remove-unit slurmd/1"}, e.juju.actions); d != "" {
		t.Errorf("juju actions (-want +got):\n%s", d)
	}
	e = newEnv([]string{"slurmd/0", "slurmd/1"}, map[string]string{"slurmd-0": busyNode, "slurmd-1": ourDrain}, false)
	e.slurm.pending = []slurm.PendingJob{{ID: "9", Partitions: []string{"slurmd"}, Nodes: 1, Reason: "Resources"}}
	e.tick(t)
	if d := cmp.Diff([]string{"resume slurmd-1"}, e.slurm.actions); d != "" {
		t.Errorf("slurm actions (-want +got):\n%s", d)
	}
	if len(e.juju.actions) != 0 {
		t.Errorf("juju actions %v, want none", e.juju.actions)
	}
}

func TestAddUnitFailureBacksOff(t *testing.T) {
	t.Parallel()
	e := newEnv([]string{"slurmd/0"}, map[string]string{"slurmd-0": busyNode}, false)
	e.juju.addErr = errors.New("quota exceeded")
	e.slurm.pending = []slurm.PendingJob{{ID: "9", Partitions: []string{"slurmd"}, Nodes: 1, Reason: "Resources"}}
	if err := e.s.Tick(context.Background()); err == nil || !strings.Contains(err.Error(), "quota exceeded") {
		t.Fatalf("Tick() error = %v, want the add-unit failure", err)
	}
	e.now = e.now.Add(5 * time.Second) // within the first backoff (10s)
	e.tick(t)
	if len(e.juju.actions) != 1 {
		t.Fatalf("add-unit retried within its backoff: %v", e.juju.actions)
	}
	if !strings.Contains(e.lines[len(e.lines)-1], "add-unit failed 1 times (") {
		t.Errorf("last status line %q does not report the failure", e.lines[len(e.lines)-1])
	}
	e.juju.addErr = nil
	e.now = e.now.Add(10 * time.Second)
	e.tick(t)
	if d := cmp.Diff([]string{"add-unit slurmd -n 1", "add-unit slurmd -n 1"}, e.juju.actions); d != "" {
		t.Errorf("juju actions (-want +got):\n%s", d)
	}
}

func TestUnregisteredUnitRemovedAfterTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv([]string{"slurmd/0", "slurmd/1"}, map[string]string{"slurmd-0": busyNode}, false)
	e.tick(t) // slurmd/1 first seen
	e.now = e.now.Add(4 * time.Minute)
	e.tick(t)
	if len(e.juju.actions) != 0 {
		t.Fatalf("removed a unit before its register timeout: %v", e.juju.actions)
	}
	e.now = e.now.Add(time.Minute)
	e.tick(t)
	if d := cmp.Diff([]string{"remove-unit slurmd/1"}, e.juju.actions); d != "" {
		t.Errorf("juju actions (-want +got):\n%s", d)
	}
}

func TestDryRunOnlyReports(t *testing.T) {
	t.Parallel()
	e := newEnv([]string{"slurmd/0", "slurmd/1"}, map[string]string{"slurmd-0": busyNode, "slurmd-1": idleSince}, true)
	e.tick(t)
	if len(e.juju.actions)+len(e.slurm.actions) != 0 {
		t.Fatalf("dry run acted: %v %v", e.juju.actions, e.slurm.actions)
	}
	if d := cmp.Diff([]string{"dry run: slurmd: slurmd-1 idle 10m0s: removing"}, e.lines); d != "" {
		t.Errorf("status lines (-want +got):\n%s", d)
	}
}

func TestStatusLinesOnlyWhenTheyChange(t *testing.T) {
	t.Parallel()
	e := newEnv([]string{"slurmd/0"}, map[string]string{"slurmd-0": busyNode}, false)
	e.tick(t)
	e.tick(t)
	want := []string{"slurmd: 1 units (1 busy, 0 idle, 0 starting, 0 dying), no pending jobs: nothing to do"}
	if d := cmp.Diff(want, e.lines); d != "" {
		t.Errorf("status lines (-want +got):\n%s", d)
	}
}

func TestHeldJobsReconsideredOnceANodeIsIdle(t *testing.T) {
	t.Parallel()
	held := []slurm.PendingJob{
		{ID: "1", Partitions: []string{"slurmd"}, Nodes: 1, Reason: "PartitionConfig"},
		{ID: "2", Partitions: []string{"other"}, Nodes: 1, Reason: "PartitionConfig"},
		{ID: "3", Partitions: []string{"slurmd"}, Nodes: 1, Reason: "Dependency"},
		{ID: "4", Partitions: []string{"slurmd"}, Nodes: 2, Reason: "ReqNodeNotAvail, May be reserved for other job"},
		{ID: "5", Partitions: []string{"slurmd"}, Nodes: 1, Reason: "ReqNodeNotAvail, May be reserved for other job"},
	}
	// No node yet: add one, nothing to reconsider.
	e := newEnv(nil, map[string]string{}, false)
	e.s.Apps[0].Min, e.s.Apps[0].ScaleOutStep = 0, 1
	e.slurm.pending = held
	e.tick(t)
	if len(e.slurm.actions) != 0 {
		t.Fatalf("slurm actions %v with no node, want none", e.slurm.actions)
	}
	// The new unit's node is up: jobs 1 and 5 go back to the scheduler; job 4 needs 2 nodes.
	e.slurm.nodes["slurmd-0"] = "State=IDLE+DYNAMIC_NORM LastBusyTime=2026-11-23T20:00:00"
	e.tick(t)
	if d := cmp.Diff([]string{"reconsider 1", "reconsider 5"}, e.slurm.actions); d != "" {
		t.Errorf("slurm actions (-want +got):\n%s", d)
	}
}
