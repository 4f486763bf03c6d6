package slurm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

// fakeClock advances one second each time it is read, so bounds are reached after a known
// number of steps, whatever the machine's speed.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Second)
	return c.now
}

// guard cancels ctx after max commands: a removal whose bound is gone would otherwise
// never end, and the test fails on the context's error instead.
func guard(t *testing.T, c *slurmtest.Cluster, max int, also func(argv []string)) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	n := 0
	c.Before(func(argv []string) {
		n++
		if n > max {
			cancel()
		}
		if also != nil {
			also(argv)
		}
	})
	return ctx
}

// guardedNode1 is a cluster with node node1, setup applied (its function runs before each
// command), a context cancelled after 200 commands (guard), and a remover recording the
// nodes it stopped.
func guardedNode1(t *testing.T, setup func(c *slurmtest.Cluster) func(argv []string)) (*slurmtest.Cluster, context.Context, *slurm.Remover, *[]string) {
	t.Helper()
	c := slurmtest.NewCluster()
	c.AddNode("node1")
	ctx := guard(t, c, 200, setup(c))
	stopped := new([]string)
	return c, ctx, newRemover(c, stopped), stopped
}

func newRemover(c *slurmtest.Cluster, stopped *[]string) *slurm.Remover {
	return &slurm.Remover{
		Client:   &slurm.Client{Runner: c, Conf: "/etc/slurm/slurm.conf"},
		Interval: time.Millisecond,
		Stop: func(_ context.Context, node string) error {
			*stopped = append(*stopped, node)
			return nil
		},
		Now: (&fakeClock{}).Now,
	}
}

func TestRemove(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		setup     func(c *slurmtest.Cluster) // node1 exists unless setup deletes it
		policy    slurm.JobPolicy
		reason    string
		endJobsAt int // end every job on the Nth squeue (0: never)
		wantErr   error
		wantGone  bool
		wantStop  []string
		progress  []int
		cancelled []string
		noNode    bool
	}{
		{name: "idle node", reason: "unit slurmd/1 removed", wantGone: true, wantStop: []string{"node1"}, progress: []int{0}},
		{name: "waits for the jobs", reason: "unit slurmd/1 removed", setup: func(c *slurmtest.Cluster) { c.StartJob("node1"); c.StartJob("node1") },
			endJobsAt: 3, wantGone: true, wantStop: []string{"node1"}, progress: []int{2, 0}},
		{name: "unknown node still stops the daemon", noNode: true, reason: "x", wantGone: true, wantStop: []string{"node1"}},
		{name: "refuse jobs", policy: slurm.RefuseJobs, setup: func(c *slurmtest.Cluster) { c.StartJob("node1") },
			wantErr: slurm.ErrNodeBusy, progress: []int{1}},
		{name: "cancel jobs", policy: slurm.CancelJobs, reason: "deleted by the delete-node action", setup: func(c *slurmtest.Cluster) { c.StartJob("node1") },
			wantGone: true, wantStop: []string{"node1"}, progress: []int{1, 0}, cancelled: []string{"1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := slurmtest.NewCluster()
			if !tt.noNode {
				c.AddNode("node1")
			}
			if tt.setup != nil {
				tt.setup(c)
			}
			squeues := 0
			ctx := guard(t, c, 1000, func(argv []string) {
				if argv[0] == "squeue" {
					squeues++
					if squeues == tt.endJobsAt {
						for _, id := range []string{"1", "2"} {
							c.EndJob(id)
						}
					}
				}
			})
			var stopped []string
			var progress []int
			m := newRemover(c, &stopped)
			m.Progress = func(node string, jobs int) { progress = append(progress, jobs) }
			var cancelling []string
			m.Cancelling = func(node string, jobs []string) { cancelling = append(cancelling, jobs...) }
			r := &slurm.Removal{Node: "node1", Reason: tt.reason, Jobs: tt.policy}
			err := m.Remove(ctx, r)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Remove: %v, want %v", err, tt.wantErr)
			}
			if _, ok := c.Node("node1"); ok == tt.wantGone {
				t.Errorf("node1 known: %v, want gone: %v", ok, tt.wantGone)
			}
			if d := cmp.Diff(tt.wantStop, stopped); d != "" {
				t.Errorf("stopped (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.progress, progress); d != "" {
				t.Errorf("progress (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.cancelled, r.Cancelled); d != "" {
				t.Errorf("cancelled (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.cancelled, cancelling); d != "" {
				t.Errorf("told cancelling (-want +got):\n%s", d)
			}
		})
	}
}

// TestRemoveOrder: Committing runs once the node has no job, before anything is stopped or
// deleted; the daemon stops before the delete, or after it with DeleteFirst (auth/slurm: the
// node's client commands need its slurmd); a node found unknown still has its daemon stopped.
func TestRemoveOrder(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		deleteFirst bool
		noNode      bool
		want        []string
	}{
		{name: "stop, then delete", want: []string{"committing", "stop", "scontrol delete"}},
		{name: "delete first", deleteFirst: true, want: []string{"committing", "scontrol delete", "stop"}},
		{name: "unknown node", noNode: true, want: []string{"committing", "stop"}},
		{name: "unknown node, delete first", deleteFirst: true, noNode: true, want: []string{"committing", "stop"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := slurmtest.NewCluster()
			if !tt.noNode {
				c.AddNode("node1")
				c.StartJob("node1")
			}
			var order []string
			ctx := guard(t, c, 200, func(argv []string) {
				if argv[0] == "squeue" {
					c.EndJob("1")
				}
				if len(argv) > 1 && argv[1] == "delete" {
					order = append(order, "scontrol delete")
				}
			})
			m := &slurm.Remover{
				Client:      &slurm.Client{Runner: c, Conf: "/etc/slurm/slurm.conf"},
				Interval:    time.Millisecond,
				DeleteFirst: tt.deleteFirst,
				Stop: func(context.Context, string) error {
					order = append(order, "stop")
					return nil
				},
				Committing: func(context.Context, string) error {
					order = append(order, "committing")
					return nil
				},
			}
			if err := m.Remove(ctx, &slurm.Removal{Node: "node1", Reason: "unit slurmd/1 removed"}); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, order); d != "" {
				t.Errorf("order (-want +got):\n%s", d)
			}
			if _, ok := c.Node("node1"); ok {
				t.Error("node1 not deleted")
			}
		})
	}
}

// TestRemoveCommittingFails: a Committing that fails leaves the removal waiting, nothing
// stopped or deleted, and a Remove gives up with its error; Abort still resumes the node.
func TestRemoveCommittingFails(t *testing.T) {
	t.Parallel()
	c, ctx, m, stopped := guardedNode1(t, func(*slurmtest.Cluster) func([]string) { return nil })
	boom := errors.New("cannot save")
	m.Committing = func(context.Context, string) error { return boom }
	r := &slurm.Removal{Node: "node1", Reason: "reconfiguring node1"}
	err := m.Remove(ctx, r)
	var re *slurm.RemovalError
	if !errors.Is(err, boom) || !errors.As(err, &re) || re.Phase != slurm.RemovalWait {
		t.Fatalf("Remove: %v, want the Committing error in the wait phase", err)
	}
	if len(*stopped) != 0 {
		t.Errorf("stopped %q", *stopped)
	}
	if err := m.Abort(ctx, r); err != nil {
		t.Fatal(err)
	}
	if n, ok := c.Node("node1"); !ok || n.State.Drain() {
		t.Errorf("node1 after Abort: %+v (known %v)", n, ok)
	}
}

// TestRemoveRetriesAreBounded: an unreachable controller is retried for UnreachableFor, a
// delete that Slurm keeps refusing as busy (here a job starts on the node right after the
// wait saw none) for BusyFor: 5 s of the fake clock, a handful of steps. Then the removal
// gives up with a *RemovalError naming the cause, and the node is neither stopped nor
// deleted. Without a bound the retries go on until the guard cancels the context, and the
// test fails.
func TestRemoveRetriesAreBounded(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		setup   func(c *slurmtest.Cluster) func(argv []string)
		bound   func(m *slurm.Remover)
		want    error
		stopped []string
	}{
		{name: "unreachable controller", want: slurm.ErrControllerUnreachable,
			setup: func(c *slurmtest.Cluster) func([]string) { c.SetUnreachable(true); return nil },
			bound: func(m *slurm.Remover) { m.UnreachableFor = 5 * time.Second }},
		{name: "busy delete", want: slurm.ErrNodeBusy, stopped: []string{"node1"},
			setup: func(c *slurmtest.Cluster) func([]string) {
				started := false
				return func(argv []string) {
					if argv[1] == "delete" && !started {
						started = true
						c.StartJob("node1")
					}
				}
			},
			bound: func(m *slurm.Remover) { m.BusyFor = 5 * time.Second }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, ctx, m, stopped := guardedNode1(t, tt.setup)
			tt.bound(m)
			err := m.Remove(ctx, &slurm.Removal{Node: "node1", Reason: "unit slurmd/1 removed"})
			var re *slurm.RemovalError
			if !errors.As(err, &re) || !errors.Is(err, tt.want) || ctx.Err() != nil {
				t.Fatalf("Remove: %v (ctx %v), want a *RemovalError for %v before the guard", err, ctx.Err(), tt.want)
			}
			if n := len(c.Calls()); n > 20 {
				t.Errorf("%d commands for a 5 s bound at 1 s a step", n)
			}
			if _, ok := c.Node("node1"); !ok {
				t.Error("node deleted")
			}
			if d := cmp.Diff(tt.stopped, *stopped); d != "" {
				t.Errorf("stopped (-want +got):\n%s", d)
			}
		})
	}
}

// TestRemoveUnreachableRecovers: a controller back within the bound is no failure.
func TestRemoveUnreachableRecovers(t *testing.T) {
	t.Parallel()
	c := slurmtest.NewCluster()
	c.AddNode("node1")
	c.SetUnreachable(true)
	calls := 0
	ctx := guard(t, c, 200, func([]string) {
		if calls++; calls == 3 {
			c.SetUnreachable(false)
		}
	})
	var stopped []string
	m := newRemover(c, &stopped)
	m.UnreachableFor = 5 * time.Second
	if err := m.Remove(ctx, &slurm.Removal{Node: "node1", Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string(nil), c.NodeNames()); d != "" {
		t.Errorf("nodes left (-want +got):\n%s", d)
	}
}

// TestRemoveWaitEndsWithContext: jobs are waited for as long as ctx allows; its end gives a
// *RemovalError with the jobs' count, and the node stays (drained).
func TestRemoveWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	c := slurmtest.NewCluster()
	c.AddNode("node1")
	c.StartJob("node1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	var stopped []string
	m := newRemover(c, &stopped)
	r := &slurm.Removal{Node: "node1", Reason: "unit slurmd/1 removed"}
	err := m.Remove(ctx, r)
	var re *slurm.RemovalError
	if !errors.As(err, &re) || !errors.Is(err, context.DeadlineExceeded) || re.Jobs != 1 || re.Phase != slurm.RemovalWait {
		t.Fatalf("Remove: %#v", err)
	}
	if !strings.Contains(err.Error(), "1 jobs still running on node node1") {
		t.Errorf("error %q", err)
	}
	if n, ok := c.Node("node1"); !ok || !n.State.Drain() || n.Reason != "unit slurmd/1 removed" {
		t.Errorf("node1 = %+v, %v; want drained", n, ok)
	}
	// Abort resumes the node this removal drained.
	if err := m.Abort(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Node("node1"); n.State.Drain() {
		t.Errorf("node1 still drained after Abort: %v", n.State)
	}
}

// TestStepAcrossHooks is the reconcile's use: one Step per hook, the Removal kept as JSON
// in between.
func TestStepAcrossHooks(t *testing.T) {
	t.Parallel()
	c := slurmtest.NewCluster()
	c.AddNode("slurmd-1")
	job := c.StartJob("slurmd-1")
	m := &slurm.Remover{Client: &slurm.Client{Runner: c, Conf: "/etc/slurm/slurm.conf"}}
	step := hookSteps(t, m, slurm.Removal{Node: "slurmd-1", Reason: "unit slurmd/1 removed"})
	for range 2 {
		if step() {
			t.Fatal("removed with a job running")
		}
	}
	if n, _ := c.Node("slurmd-1"); !n.State.Drain() {
		t.Errorf("not drained: %v", n.State)
	}
	c.EndJob(job)
	if !step() {
		t.Fatal("not removed once idle")
	}
	if len(c.NodeNames()) != 0 {
		t.Errorf("nodes left: %v", c.NodeNames())
	}
}

// hookSteps returns a function making one Step of r per call, as one hook each: the
// Removal goes through JSON between calls, as a charm's state does. It reports whether the
// node is gone.
func hookSteps(t *testing.T, m *slurm.Remover, r slurm.Removal) func() bool {
	saved, _ := json.Marshal(r)
	return func() bool {
		t.Helper()
		var r slurm.Removal
		if err := json.Unmarshal(saved, &r); err != nil {
			t.Fatal(err)
		}
		done, err := m.Step(context.Background(), &r)
		if err != nil {
			t.Fatal(err)
		}
		saved, _ = json.Marshal(r)
		return done
	}
}

// TestRestore: a re-registered node gets the state it had before the removal.
func TestRestore(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		down      bool
		drain     string
		wantState string
		reason    string
	}{
		{name: "idle stays idle", wantState: "IDLE+DYNAMIC_NORM"},
		{name: "drained again", drain: "maintenance", wantState: "IDLE+DRAIN+DYNAMIC_NORM", reason: "maintenance"},
		{name: "down again", down: true, wantState: "DOWN+DYNAMIC_NORM", reason: "restored after reconfiguration"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := slurmtest.NewCluster()
			c.AddNode("n")
			m := &slurm.Remover{Client: &slurm.Client{Runner: c, Conf: "/etc/slurm/slurm.conf"}}
			ctx := context.Background()
			if tt.drain != "" {
				_ = m.Client.Drain(ctx, "n", tt.drain)
			}
			if tt.down {
				_ = m.Client.UpdateNode(ctx, "n", slurm.NodeUpdate{State: "down"})
			}
			r := &slurm.Removal{Node: "n", Reason: "reconfiguring node n"}
			if err := m.Remove(ctx, r); err != nil {
				t.Fatal(err)
			}
			c.AddNode("n") // slurmd registers again
			if err := m.Restore(ctx, r); err != nil {
				t.Fatal(err)
			}
			n, _ := c.Node("n")
			if d := cmp.Diff([]string{tt.wantState, tt.reason}, []string{n.State.String(), n.Reason}); d != "" {
				t.Errorf("state (-want +got):\n%s", d)
			}
		})
	}
}

// TestRemoveStuckNode: a node that stays busy while squeue shows no job on it (Slurm 22.05
// bug 16434: ALLOCATED for ever after a job that ran during a reconfigure) is, after
// StuckFor (5 s of the fake clock), stopped, set DOWN with a reason naming the removal and
// deleted; whether it wedges before the wait sees it idle or only at the delete. Without
// the bound the removal waits until the guard cancels it, and the test fails.
func TestRemoveStuckNode(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		setup func(c *slurmtest.Cluster) func(argv []string)
	}{
		{name: "stuck before the wait", setup: func(c *slurmtest.Cluster) func([]string) {
			c.StartJob("node1")
			c.Wedge("node1")
			return nil
		}},
		{name: "stuck at the delete", setup: func(c *slurmtest.Cluster) func([]string) {
			wedged := false
			return func(argv []string) {
				if argv[1] == "delete" && !wedged {
					wedged = true
					c.Wedge("node1")
				}
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, ctx, m, stopped := guardedNode1(t, tt.setup)
			m.StuckFor = 5 * time.Second
			r := &slurm.Removal{Node: "node1", Reason: "unit slurmd/1 removed"}
			if err := m.Remove(ctx, r); err != nil {
				t.Fatalf("Remove: %v", err)
			}
			if len(c.NodeNames()) != 0 || !r.Stuck || !r.Downed {
				t.Errorf("nodes left %v, stuck %v, downed %v", c.NodeNames(), r.Stuck, r.Downed)
			}
			if d := cmp.Diff([]string{"node1"}, *stopped); d != "" {
				t.Errorf("stopped (-want +got):\n%s", d)
			}
			var tail [][]string
			for _, call := range c.Calls() {
				if call.Argv[0] == "scontrol" && (call.Argv[1] == "update" || call.Argv[1] == "delete") {
					tail = append(tail, call.Argv)
				}
			}
			want := [][]string{
				{"scontrol", "update", "nodename=node1", "state=down", "reason=unit slurmd/1 removed: busy with no job (Slurm bug 16434), set down to delete it"},
				{"scontrol", "delete", "nodename=node1"},
			}
			if len(tail) < 2 {
				t.Fatalf("commands %v", tail)
			}
			if d := cmp.Diff(want, tail[len(tail)-2:]); d != "" {
				t.Errorf("last commands (-want +got):\n%s", d)
			}
			if n := len(c.Calls()); n > 40 {
				t.Errorf("%d commands for a 5 s bound at 1 s a read", n)
			}
		})
	}
}

// TestStepStuckNodeAcrossHooks: the reconcile's use, one Step per hook: the time a node has
// been busy with no job is kept in the Removal between Steps; a job on the node restarts
// it, and a node with a job is never set down.
func TestStepStuckNodeAcrossHooks(t *testing.T) {
	t.Parallel()
	c := slurmtest.NewCluster()
	c.AddNode("slurmd-1")
	job := c.StartJob("slurmd-1")
	clock := &fakeClock{}
	m := &slurm.Remover{Client: &slurm.Client{Runner: c, Conf: "/etc/slurm/slurm.conf"}, StuckFor: 3 * time.Second, Now: clock.Now}
	step := hookSteps(t, m, slurm.Removal{Node: "slurmd-1", Reason: "unit slurmd/1 removed"})
	for i := range 5 {
		if step() {
			t.Fatalf("step %d: removed with a job running", i)
		}
	}
	c.Wedge("slurmd-1")
	c.EndJob(job)
	for range 2 {
		if step() {
			t.Fatal("stuck node removed before StuckFor")
		}
	}
	if n, _ := c.Node("slurmd-1"); n.State.Down() {
		t.Fatal("set down before StuckFor")
	}
	for i := 0; i < 3 && !step(); i++ {
	}
	if len(c.NodeNames()) != 0 {
		t.Errorf("stuck node not removed after StuckFor: %v", c.NodeNames())
	}
}

// TestRemoveWaitBacksOff: with MaxInterval, the checks of a node's jobs grow apart while the
// jobs run (Interval doubling up to MaxInterval), so that many waiting removals do not flood
// the controller; without it they stay Interval apart.
func TestRemoveWaitBacksOff(t *testing.T) {
	t.Parallel()
	checks := func(max time.Duration) int {
		c := slurmtest.NewCluster()
		c.AddNode("node1")
		c.StartJob("node1")
		n := 0
		c.Before(func(argv []string) {
			if argv[0] == "squeue" {
				n++
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
		defer cancel()
		var stopped []string
		m := newRemover(c, &stopped)
		m.MaxInterval = max
		_ = m.Remove(ctx, &slurm.Removal{Node: "node1", Reason: "r"})
		return n
	}
	// 1, 2, 4, ..., 64 ms, then 64 ms apart: at most 13 checks in 400 ms.
	if got := checks(64 * time.Millisecond); got > 13 {
		t.Errorf("%d checks of the jobs in 400 ms with MaxInterval 64 ms, want at most 13", got)
	}
	if got := checks(0); got <= 13 {
		t.Errorf("%d checks of the jobs in 400 ms at a 1 ms interval, want the wait not to back off", got)
	}
}

// TestDrainListed: the drain phase from a node as the caller listed it records what Step's
// own read records (prior drain, down, reason), drains only a node the listing shows not
// drained, runs no `scontrol show node`, moves the removal to the wait phase, and a Step
// from there finishes the removal once the job ends; a node gone before its drain is done;
// a removal past its drain phase is refused.
func TestDrainListed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		drainBefore string // the node drained with this reason before it is listed
		wantCmds    []string
		wantDrained bool
	}{
		{name: "not drained", wantCmds: []string{"update"}, wantDrained: true},
		{name: "drained by its unit", drainBefore: "unit slurmd/1 removed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := slurmtest.NewCluster()
			c.AddNode("slurmd-1")
			job := c.StartJob("slurmd-1")
			m := &slurm.Remover{Client: &slurm.Client{Runner: c, Conf: "/etc/slurm/slurm.conf"}}
			ctx := context.Background()
			if tt.drainBefore != "" {
				_ = m.Client.Drain(ctx, "slurmd-1", tt.drainBefore)
			}
			listed, err := m.Client.ShowNode(ctx, "slurmd-1")
			if err != nil {
				t.Fatal(err)
			}
			var cmds []string
			c.Before(func(argv []string) { cmds = append(cmds, argv[1]) })
			r := &slurm.Removal{Node: "slurmd-1", Reason: "unit slurmd/1 removed"}
			done, err := m.DrainListed(ctx, r, listed)
			c.Before(nil)
			if err != nil || done {
				t.Fatalf("DrainListed: done %v, %v", done, err)
			}
			if d := cmp.Diff(tt.wantCmds, cmds); d != "" {
				t.Errorf("commands (-want +got):\n%s", d)
			}
			want := slurm.Removal{Node: "slurmd-1", Reason: "unit slurmd/1 removed", Phase: slurm.RemovalWait,
				Drained: tt.wantDrained, WasDrain: tt.drainBefore != "", PriorReason: tt.drainBefore}
			if d := cmp.Diff(want, *r); d != "" {
				t.Errorf("removal (-want +got):\n%s", d)
			}
			if n, _ := c.Node("slurmd-1"); !n.State.Drain() {
				t.Errorf("not drained: %v", n.State)
			}
			if _, err := m.DrainListed(ctx, r, listed); err == nil {
				t.Error("a second DrainListed, in the wait phase, did not fail")
			}
			c.EndJob(job)
			if done, err := m.Step(ctx, r); err != nil || !done {
				t.Errorf("Step once idle: done %v, %v", done, err)
			}
		})
	}
	t.Run("gone", func(t *testing.T) {
		t.Parallel()
		c := slurmtest.NewCluster()
		c.AddNode("slurmd-1")
		m := &slurm.Remover{Client: &slurm.Client{Runner: c, Conf: "/etc/slurm/slurm.conf"}}
		listed, err := m.Client.ShowNode(context.Background(), "slurmd-1")
		if err != nil {
			t.Fatal(err)
		}
		c.Run(context.Background(), []string{"scontrol", "delete", "nodename=slurmd-1"}, nil)
		r := &slurm.Removal{Node: "slurmd-1", Reason: "unit slurmd/1 removed"}
		if done, err := m.DrainListed(context.Background(), r, listed); err != nil || !done || r.Phase != slurm.RemovalDone {
			t.Errorf("gone node: done %v, %v, phase %q", done, err, r.Phase)
		}
	})
}
