package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// helperEnv makes the test binary, run as `<test binary> slurmctld-removal-waiter`, a stand-in
// waiter (TestMain): it takes the lock, records its start and waits for SIGTERM.
const helperEnv = "SLURMCTLD_TEST_WAITER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" && len(os.Args) > 1 && os.Args[1] == waiterCommand {
		os.Exit(helperWaiter())
	}
	os.Exit(m.Run())
}

// helperWaiter takes the waiter's lock in its working directory (the charm directory), writes
// its pid in it, appends a line to "starts" and waits for SIGTERM; it exits at once if the
// lock is held.
func helperWaiter() int {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	lock, err := os.OpenFile(lockFileName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 1
	}
	w := &removalWaiter{}
	if !w.tryLock(lock) {
		return 0
	}
	f, err := os.OpenFile("starts", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 1
	}
	fmt.Fprintln(f, os.Getpid())
	f.Close()
	select {
	case <-sig:
	case <-time.After(time.Minute): // never outlive the test by much
	}
	return 0
}

// fakeWaiter records what the hooks hand to the removal waiter.
type fakeWaiter struct {
	mu      sync.Mutex
	watched []watchList
	stops   int
}

func (f *fakeWaiter) Watch(_ context.Context, w watchList) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watched = append(f.watched, w)
	return nil
}

func (f *fakeWaiter) Stop(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops++
	return nil
}

// last is the list the last hook handed over (empty when none did).
func (f *fakeWaiter) last() watchList {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.watched) == 0 {
		return watchList{}
	}
	return f.watched[len(f.watched)-1]
}

func (f *fakeWaiter) stopCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stops
}

// TestHooksHandTheirRemovalsToTheWaiter: every hook of the leader ends by handing the
// removals it leaves under way to the waiter, an empty list once none is left, and always an
// empty list on a unit that does not lead; upgrade-charm, stop and remove end the waiter.
func TestHooksHandTheirRemovalsToTheWaiter(t *testing.T) {
	e := newEnv(t)
	in, departed := e.departedWithJob(true)
	out := e.run(in, departed)
	if d := cmp.Diff(watchList{Nodes: []string{"slurmd-1"}}, e.waiter.last()); d != "" {
		t.Errorf("after relation-departed (-want +got):\n%s", d)
	}
	out = e.run(out, jujutest.RelationHook(juju.RelationBroken, "slurmd:1", ""))
	if d := cmp.Diff(watchList{Nodes: []string{"slurmd-1"}, Partitions: []string{"slurmd"}}, e.waiter.last()); d != "" {
		t.Errorf("after relation-broken (-want +got):\n%s", d)
	}
	standby := out
	standby.Leader = false
	e.run(standby, jujutest.Hook(juju.UpdateStatus))
	if !e.waiter.last().empty() {
		t.Errorf("a unit that does not lead handed over %+v, want nothing", e.waiter.last())
	}
	e.slurm.EndJobs()
	e.slurm.PurgeJobs()
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if !e.waiter.last().empty() {
		t.Errorf("after every removal finished: %+v, want an empty list", e.waiter.last())
	}
	for i, kind := range []juju.Kind{juju.UpgradeCharm, juju.Stop, juju.Remove} {
		e.run(out, jujutest.Hook(kind))
		if e.waiter.stopCount() != i+1 {
			t.Errorf("%s: %d stops, want %d", kind, e.waiter.stopCount(), i+1)
		}
	}
}

func TestWaiterEnv(t *testing.T) {
	got := waiterEnv([]string{"PATH=/var/lib/juju/tools/unit-slurmctld-0:/usr/bin", "JUJU_CONTEXT_ID=slurmctld/0-update-status-1",
		"JUJU_UNIT_NAME=slurmctld/0", "JUJU_CHARM_DIR=/var/lib/juju/agents/unit-slurmctld-0/charm", "JUJU_DISPATCH_PATH=hooks/update-status",
		"JUJU_AGENT_SOCKET_ADDRESS=@/x", "JUJU_RELATION_ID=slurmd:1", "LANG=C.UTF-8", "HOME=/root"})
	want := []string{"PATH=/var/lib/juju/tools/unit-slurmctld-0:/usr/bin", "JUJU_UNIT_NAME=slurmctld/0",
		"JUJU_CHARM_DIR=/var/lib/juju/agents/unit-slurmctld-0/charm", "LANG=C.UTF-8"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("waiter environment (-want +got):\n%s", d)
	}
}

// newProcWaiter is a procWaiter over a fresh charm directory whose waiter is the test binary
// as helperWaiter.
func newProcWaiter(t *testing.T) *procWaiter {
	t.Helper()
	dir := t.TempDir()
	p := &procWaiter{Dir: dir, Exe: os.Args[0], Env: append(os.Environ(), helperEnv+"=1"),
		LookPath: func(string) (string, error) { return "/usr/bin/juju-exec", nil }}
	t.Cleanup(func() {
		if err := p.Stop(context.Background()); err != nil {
			t.Errorf("cannot stop the waiter: %v", err)
		}
	})
	return p
}

// starts is how many waiters started in p's directory.
func starts(p *procWaiter) int {
	data, _ := os.ReadFile(filepath.Join(p.Dir, "starts"))
	return strings.Count(string(data), "\n")
}

// eventually polls cond every 10 ms for at most 10 s (a bound for a broken waiter, not a
// timing assertion).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 10 s", what)
}

// TestProcWaiter: Watch writes the watch list and starts one waiter, not a second while it
// runs; an empty list removes the file and starts none; Stop ends the waiter and frees the
// lock.
func TestProcWaiter(t *testing.T) {
	p := newProcWaiter(t)
	ctx := context.Background()
	if err := p.Watch(ctx, watchList{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p.Dir, watchFileName)); !errors.Is(err, os.ErrNotExist) || starts(p) != 0 {
		t.Fatalf("an empty list wrote a watch file (%v) or started a waiter (%d)", err, starts(p))
	}
	list := watchList{Nodes: []string{"slurmd-1"}, Partitions: []string{"gpu"}}
	if err := p.Watch(ctx, list); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a waiter started", func() bool { return starts(p) == 1 })
	if got, err := readWatch(p.Dir); err != nil || !cmp.Equal(list, got) {
		t.Errorf("watch file %+v (%v), want %+v", got, err, list)
	}
	if err := p.Watch(ctx, watchList{Nodes: []string{"slurmd-1"}}); err != nil {
		t.Fatal(err)
	}
	if held, err := p.lockHeld(); err != nil || !held {
		t.Fatalf("lock held: %v %v, want the first waiter to hold it", held, err)
	}
	if starts(p) != 1 {
		t.Errorf("%d waiters started, want one while the first runs", starts(p))
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if held, err := p.lockHeld(); err != nil || held {
		t.Errorf("lock held after Stop: %v %v", held, err)
	}
	if err := p.Watch(ctx, watchList{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p.Dir, watchFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("watch file left for an empty list: %v", err)
	}
}

// TestProcWaiterNoJujuExec: without juju-exec no waiter starts, and Watch says so.
func TestProcWaiterNoJujuExec(t *testing.T) {
	p := newProcWaiter(t)
	p.LookPath = func(string) (string, error) {
		return "", errors.New(`exec: "juju-exec": executable file not found in $PATH`)
	}
	err := p.Watch(context.Background(), watchList{Nodes: []string{"slurmd-1"}})
	if err == nil || !strings.Contains(err.Error(), "juju-exec") {
		t.Errorf("error %v, want one naming juju-exec", err)
	}
	if starts(p) != 0 {
		t.Errorf("a waiter started")
	}
}

// TestProcWaiterStopsOnlyAWaiter: Stop never signals a process that holds the lock but is no
// waiter (a reused pid, an administrator's flock).
func TestProcWaiterStopsOnlyAWaiter(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1)")
	}
	p := newProcWaiter(t)
	cmd := exec.Command("flock", filepath.Join(p.Dir, lockFileName), "sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) } // flock and its sleep
	defer cmd.Wait()
	defer kill()
	eventually(t, "flock holds the lock", func() bool { held, _ := p.lockHeld(); return held })
	os.WriteFile(filepath.Join(p.Dir, lockFileName), []byte(fmt.Sprintln(cmd.Process.Pid)), 0o600)
	if err := p.Stop(context.Background()); err == nil || !strings.Contains(err.Error(), "not a waiter") {
		t.Errorf("Stop of a lock held by flock: %v, want a refusal", err)
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the flock process was signalled: %v", err)
	}
	kill()
	eventually(t, "lock free", func() bool { held, _ := p.lockHeld(); return !held })
}

// fakeExec stands for juju-exec: it records each call and plays the charm's pass with charm.
type fakeExec struct {
	mu    sync.Mutex
	calls [][]string
	charm func()
}

func (f *fakeExec) Run(_ context.Context, argv []string, _ []string) (command.Output, error) {
	f.mu.Lock()
	f.calls = append(f.calls, slices.Clone(argv))
	f.mu.Unlock()
	if f.charm != nil {
		f.charm()
	}
	return command.Output{}, nil
}

func (f *fakeExec) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// waiterEnv is a removalWaiter over e's Slurm with a charm directory holding a dispatch and
// list, and juju-exec played by x.
func (e *env) removalWaiter(list watchList, x *fakeExec) (*removalWaiter, *bytes.Buffer) {
	e.t.Helper()
	dir := e.t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dispatch"), []byte("v1"), 0o755); err != nil {
		e.t.Fatal(err)
	}
	p := &procWaiter{Dir: dir}
	if err := p.writeWatch(context.Background(), list); err != nil {
		e.t.Fatal(err)
	}
	var log bytes.Buffer
	return &removalWaiter{
		Dir: dir, Unit: "slurmctld/0", Client: &slurm.Client{Runner: e.slurm, Conf: confPath}, Runner: x,
		JujuExec: "/usr/bin/juju-exec", Interval: time.Millisecond, Refresh: time.Hour, IdleGrace: time.Nanosecond, Log: &log,
	}, &log
}

// onCall runs then[n] at the waiter's nth Slurm call (each check makes one or two), and
// cancel, when set, at the last one; it returns the count of calls so far.
func (e *env) onCall(then map[int]func()) func() int {
	var mu sync.Mutex
	calls := 0
	e.slurm.Before(func([]string) {
		mu.Lock()
		calls++
		f := then[calls]
		mu.Unlock()
		if f != nil {
			f()
		}
	})
	e.t.Cleanup(func() { e.slurm.Before(nil) })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return calls
	}
}

// runWaiter runs w with a guard: the test fails if it has not ended after 10 s.
func runWaiter(t *testing.T, w *removalWaiter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the waiter did not end by itself")
	}
}

// TestRemovalWaiterWakesWhenARemovalCanProceed: the waiter polls Slurm while a departed
// unit's node runs a job and a removed partition holds a job record, wakes the charm through
// juju-exec (its update-status, in a hook context) once each can proceed and not before, and
// ends when the charm has nothing left for it to watch.
func TestRemovalWaiterWakesWhenARemovalCanProceed(t *testing.T) {
	e := newEnv(t)
	e.started()
	e.slurm.addNode("slurmd-1", "slurmd", true)
	job := e.slurm.addJob("slurmd", "slurmd-1")
	e.slurm.AddPartition("gpu")
	e.slurm.addJob("gpu", "")
	x := &fakeExec{}
	w, log := e.removalWaiter(watchList{Nodes: []string{"slurmd-1"}, Partitions: []string{"gpu"}}, x)
	x.charm = func() {
		// The charm's pass: the idle node goes, then the partition without job records.
		list, _ := readWatch(w.Dir)
		if _, known := e.slurm.Node("slurmd-1"); known && len(list.Nodes) > 0 {
			if n, _ := e.slurm.Node("slurmd-1"); n.State.Busy() {
				t.Error("woken while the node is busy")
			}
			e.slurm.Run(context.Background(), []string{"scontrol", "delete", "nodename=slurmd-1"}, []string{"SLURM_CONF=" + confPath})
			list.Nodes = nil
		} else if recs, _ := w.Client.PartitionJobRecords(context.Background(), "gpu"); len(recs) == 0 {
			list.Partitions = nil
		} else {
			t.Error("woken while partition gpu holds job records")
		}
		(&procWaiter{Dir: w.Dir}).writeWatch(context.Background(), list)
	}
	calls := e.onCall(map[int]func(){
		10: func() { e.slurm.EndJob(job) },
		40: func() { e.slurm.EndJobs(); e.slurm.PurgeJobs() },
	})
	runWaiter(t, w)
	if n := calls(); n < 40 {
		t.Errorf("the waiter ended after %d Slurm calls, before the partition's records went", n)
	}
	want := [][]string{{"/usr/bin/juju-exec", "slurmctld/0", wakeCommands}, {"/usr/bin/juju-exec", "slurmctld/0", wakeCommands}}
	if d := cmp.Diff(want, x.calls); d != "" {
		t.Errorf("juju-exec calls (-want +got):\n%s\nlog:\n%s", d, log)
	}
	for _, l := range []string{"waking the charm: node slurmd-1 has no job", "waking the charm: partition gpu has no job record", "nothing left to watch: ending"} {
		if !strings.Contains(log.String(), l) {
			t.Errorf("log lacks %q:\n%s", l, log)
		}
	}
	if held, _ := (&procWaiter{Dir: w.Dir}).lockHeld(); held {
		t.Error("lock still held")
	}
}

// TestRemovalWaiterEnds: the waiter ends by itself, without waking the charm, when another
// waiter holds the lock, when nothing is left to watch and when the charm's dispatch changes;
// after its lifetime it lets go of the lock and wakes the charm, whose hook starts the next
// waiter.
func TestRemovalWaiterEnds(t *testing.T) {
	for _, tt := range []struct {
		name  string
		list  watchList
		setup func(e *env, w *removalWaiter)
		wakes int
		log   string
	}{
		{name: "another waiter holds the lock", list: watchList{Nodes: []string{"slurmd-1"}}, setup: func(e *env, w *removalWaiter) {
			f, err := os.OpenFile(filepath.Join(w.Dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				e.t.Fatal(err)
			}
			e.t.Cleanup(func() { f.Close() })
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				e.t.Fatal(err)
			}
		}},
		{name: "nothing to watch", log: "nothing left to watch: ending"},
		{name: "the charm's dispatch changed", list: watchList{Nodes: []string{"slurmd-1"}}, setup: func(e *env, w *removalWaiter) {
			e.onCall(map[int]func(){3: func() { os.WriteFile(filepath.Join(w.Dir, "dispatch"), []byte("v2 longer"), 0o755) }})
		}, log: "the charm's dispatch changed or is gone: ending"},
		{name: "the unit's charm directory is gone", list: watchList{Nodes: []string{"slurmd-1"}}, setup: func(e *env, w *removalWaiter) {
			e.onCall(map[int]func(){3: func() { os.Remove(filepath.Join(w.Dir, "dispatch")) }})
		}, log: "the charm's dispatch changed or is gone: ending"},
		{name: "lifetime over", list: watchList{Nodes: []string{"slurmd-1"}}, setup: func(e *env, w *removalWaiter) {
			w.Life = time.Nanosecond
		}, wakes: 1, log: "waking the charm: lifetime over"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.started()
			e.slurm.addNode("slurmd-1", "slurmd", true)
			e.slurm.addJob("slurmd", "slurmd-1") // never ends
			x := &fakeExec{}
			w, log := e.removalWaiter(tt.list, x)
			if tt.setup != nil {
				tt.setup(e, w)
			}
			runWaiter(t, w)
			if x.count() != tt.wakes {
				t.Errorf("%d wakes, want %d", x.count(), tt.wakes)
			}
			if !strings.Contains(log.String(), tt.log) {
				t.Errorf("log lacks %q:\n%s", tt.log, log)
			}
		})
	}
}

// TestRemovalWaiterWakesOncePerChange: a removal that can proceed but that the charm does not
// finish (here it does nothing) wakes the charm once, not at every check; only a refresh
// (every Refresh) wakes it again.
func TestRemovalWaiterWakesOncePerChange(t *testing.T) {
	for _, tt := range []struct {
		name    string
		refresh time.Duration
		check   func(wakes int) bool
		want    string
	}{
		{name: "no refresh due", refresh: time.Hour, check: func(n int) bool { return n == 1 }, want: "one wake"},
		{name: "refresh at every check", refresh: time.Nanosecond, check: func(n int) bool { return n >= 10 }, want: "a wake at every check"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.started()
			e.slurm.addNode("slurmd-1", "slurmd", true) // idle: its removal can proceed
			x := &fakeExec{}
			w, log := e.removalWaiter(watchList{Nodes: []string{"slurmd-1"}}, x)
			w.Refresh = tt.refresh
			ctx, cancel := context.WithCancel(context.Background())
			e.onCall(map[int]func(){30: cancel})
			if err := w.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if !tt.check(x.count()) {
				t.Errorf("%d wakes in 30 checks, want %s\n%s", x.count(), tt.want, log)
			}
		})
	}
}

// TestRemovalWaiterLeavesIdleNodesToTheirUnits: a departed unit's node whose last job ended
// less than unitGrace ago is the unit's to delete: the charm is not woken for it. A node gone
// meanwhile wakes the charm (its status drops the node) once the other has gone too, in one
// wake (goneBatch: the units of a busy scale-in delete their nodes all at once); or, while
// the other stays, after goneBatch; and at once when the other node still runs a job.
func TestRemovalWaiterLeavesIdleNodesToTheirUnits(t *testing.T) {
	for _, tt := range []struct {
		name string
		// job runs a job on slurmd-1; deleteOther deletes slurmd-1 at the 20th call;
		// ticking advances the clock 100 ms at each reading (with a grace of an hour).
		job, deleteOther, ticking bool
		want                      string // the one wake's reason
	}{
		{name: "the other deleted too", deleteOther: true, want: "node slurmd-1 is gone; node slurmd-2 is gone"},
		{name: "the other stays", ticking: true, want: "node slurmd-2 is gone"},
		{name: "the other runs a job", job: true, want: "node slurmd-2 is gone"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.started()
			e.slurm.addNode("slurmd-1", "slurmd", true) // idle
			e.slurm.addNode("slurmd-2", "slurmd", true)
			if tt.job {
				e.slurm.addJob("slurmd", "slurmd-1")
			}
			x := &fakeExec{}
			w, log := e.removalWaiter(watchList{Nodes: []string{"slurmd-1", "slurmd-2"}}, x)
			w.IdleGrace = 0 // unitGrace
			if tt.ticking {
				w.IdleGrace = time.Hour
			}
			now := fakeLastBusy().Add(2 * time.Second) // the nodes' last job ended 2 s ago
			var mu sync.Mutex
			w.Now = func() time.Time {
				mu.Lock()
				defer mu.Unlock()
				if tt.ticking {
					now = now.Add(100 * time.Millisecond)
				}
				return now
			}
			w.GoneBatch = time.Second
			x.charm = func() {
				(&procWaiter{Dir: w.Dir}).writeWatch(context.Background(), watchList{})
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			del := func(node string) func() {
				return func() {
					e.slurm.Run(ctx, []string{"scontrol", "delete", "nodename=" + node}, []string{"SLURM_CONF=" + confPath})
				}
			}
			then := map[int]func(){10: del("slurmd-2"), 60: cancel}
			if tt.deleteOther {
				then[20] = del("slurmd-1")
			}
			e.onCall(then)
			if err := w.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if x.count() != 1 || !strings.Contains(log.String(), "waking the charm: "+tt.want+"\n") {
				t.Errorf("%d wakes, want one for %q:\n%s", x.count(), tt.want, log)
			}
			if strings.Contains(log.String(), "has no job") {
				t.Errorf("woken for an idle node within its grace:\n%s", log)
			}
		})
	}
}

// fakeLastBusy is the LastBusyTime slurmtest's nodes show (recorded from real 22.05), read as
// the charm reads it.
func fakeLastBusy() time.Time {
	t, err := time.ParseInLocation("2006-01-02T15:04:05", "2026-11-22T22:19:28", time.Local)
	if err != nil {
		panic(err)
	}
	return t
}

// TestRemovalWaiterWatchesARestart: while a restarted slurmctld does not answer, the waiter
// asks it nothing else (the removals cannot be asked about) and does not wake the charm; it
// wakes it once slurmctld answers, or once the restart's deadline has passed without an
// answer, and ends when the charm's pass leaves nothing to watch. With two controllers, the
// restarted one (the watch list's host) must answer: the other answering is not enough.
func TestRemovalWaiterWatchesARestart(t *testing.T) {
	for _, tt := range []struct {
		name     string
		deadline time.Duration // from now
		answerAt int           // the Slurm call at which slurmctld answers again (0: never)
		host     string        // the restarted controller's, with ctl and ctl1 configured ("": one)
		why      string
	}{
		{name: "slurmctld answers", deadline: time.Hour, answerAt: 10, why: "slurmctld answers again"},
		{name: "deadline passed", deadline: -time.Second, why: "slurmctld has not answered by its restart's deadline"},
		{name: "a backup's answers, the primary's did", deadline: time.Hour, answerAt: 10, host: "ctl1", why: "slurmctld answers again"},
		{name: "the primary's answers, the backup's did", deadline: time.Hour, answerAt: 10, host: "ctl", why: "slurmctld answers again"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.started()
			e.slurm.addNode("slurmd-1", "slurmd", true) // idle: its removal can proceed
			down := func(d bool) {
				switch {
				case tt.host == "":
					e.slurm.SetUnreachable(d)
				case d:
					e.slurm.SetControllers([]string{"ctl", "ctl1"}, tt.host)
				default:
					e.slurm.SetControllers([]string{"ctl", "ctl1"})
				}
			}
			down(true)
			x := &fakeExec{}
			w, log := e.removalWaiter(watchList{Nodes: []string{"slurmd-1"}, Restart: time.Now().Add(tt.deadline), Host: tt.host}, x)
			var mu sync.Mutex
			calls, others := 0, 0
			e.slurm.Before(func(argv []string) {
				mu.Lock()
				defer mu.Unlock()
				if calls++; calls == tt.answerAt {
					down(false)
				}
				if strings.Join(argv, " ") != "scontrol ping" {
					others++
				}
			})
			defer e.slurm.Before(nil)
			answered := func() bool { return answers(context.Background(), w.Client, tt.host) == nil }
			x.charm = func() {
				if tt.answerAt > 0 && !answered() {
					t.Error("woken while slurmctld does not answer, before the deadline")
				}
				(&procWaiter{Dir: w.Dir}).writeWatch(context.Background(), watchList{})
			}
			runWaiter(t, w)
			if x.count() != 1 || !strings.Contains(log.String(), "waking the charm: "+tt.why) {
				t.Errorf("%d wakes, want one for %q:\n%s", x.count(), tt.why, log)
			}
			mu.Lock()
			defer mu.Unlock()
			if tt.answerAt > 0 && calls < tt.answerAt {
				t.Errorf("woken after %d Slurm calls, before slurmctld answered", calls)
			}
			if tt.answerAt == 0 && others > 0 {
				t.Errorf("%d Slurm calls besides scontrol ping while slurmctld does not answer", others)
			}
		})
	}
}
