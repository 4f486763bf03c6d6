package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/charmed-slurm/operators/libs/atomicfile"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/poll"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// The waiter. A controller hook never waits for Slurm: what it cannot finish in one pass (a
// departed unit's node still runs jobs, a removed application's partition still holds job
// records, a restarted slurmctld does not answer yet) finishes from a later event. Juju gives
// a machine charm no timer but update-status (every 5 minutes by default), so the leader's
// hooks start a small process, the waiter, which holds no machine lock: it watches Slurm and,
// when a removal can proceed, or slurmctld answers after a restart (or has not by the
// restart's deadline), asks Juju to run the charm's update-status handler through juju-exec,
// which takes the machine lock and runs one pass like any hook. The hooks tell it what to
// watch (the watch file); at most one waiter runs per unit (the lock file, an flock it holds);
// it ends when nothing is left to watch, when the charm's dispatch changes or goes (an
// upgrade, the unit's removal; upgrade-charm, stop and remove also end it) and after its
// lifetime, and it writes what it does to its log file, all in the unit's charm directory.
// Its command and file names keep the word "removal" they were born with: a waiter of the
// previous charm is recognised by them.

// Files of the waiter in the unit's charm directory, and dispatch's first argument that makes
// it the waiter.
const (
	waiterCommand = "slurmctld-removal-waiter"
	watchFileName = ".slurmctld-waiter.json"
	lockFileName  = ".slurmctld-waiter.lock"
	waiterLogName = ".slurmctld-waiter.log"
)

// wakeCommands is what the waiter asks juju-exec to run in the unit's hook context: the
// charm's update-status handler, the one pass over every removal and the restart under way
// that update-status makes.
const wakeCommands = `JUJU_DISPATCH_PATH=hooks/update-status exec "$JUJU_CHARM_DIR/dispatch"`

// Bounds of the waiter (removalWaiter's zero values).
const (
	// defaultRefresh: while removals are under way, the charm is woken at least this often,
	// to refresh the job counts its status shows and to move on what the waiter's cheap
	// checks do not see (a node of Slurm bug 16434, busy with no job).
	defaultRefresh = time.Minute
	// defaultWaiterLife: a waiter ends after this long; the charm it wakes last starts the
	// next one, from the charm's current dispatch.
	defaultWaiterLife = time.Hour
	// unitGrace: a departed unit's node whose last job ended (LastBusyTime) less than this
	// ago is its unit's to delete, which it does within a fraction of a second; the
	// controller, the safety net, is woken for it and steps it only after that.
	unitGrace = 10 * time.Second
	// goneBatch: a wake for nodes gone alone (the charm would only drop them from its
	// status) waits while another watched node is about to go by its unit's hand (its jobs
	// completing, or idle within unitGrace), at most this long after the first such wake was
	// held: after a busy scale-in's jobs end, the units delete their nodes within a few
	// seconds, all at once, and one wake once they have replaces one in the middle of it
	// (1.0-1.7 s each among the 32 units' own hooks on a loaded 2-core machine, make bench
	// part busy) and one after.
	goneBatch = 5 * time.Second
	// wakeTimeout bounds a juju-exec: it waits for the machine lock (hooks of the unit run
	// first) and for one pass of the charm.
	wakeTimeout = 10 * time.Minute
	// stopWait bounds the wait for a waiter told to end (SIGTERM, then SIGKILL).
	stopWait = 10 * time.Second
	// maxWaiterLog is the size beyond which a new waiter empties its log.
	maxWaiterLog = 1 << 20
)

// watchList is what the waiter must watch for this state: on the leader every removal under
// way, and on every unit the slurmctld restart under way until it has failed (update-status
// still looks at a failed one).
func (s *charmState) watchList(leader bool) watchList {
	var w watchList
	if leader {
		w = watchList{Nodes: sortedKeys(s.Pending), Partitions: sortedKeys(s.Removing), Turn: s.TurnDeadline}
	}
	if r := s.Restart; r != nil && r.Failed == "" {
		w.Restart, w.Host = r.Deadline, r.Host
	}
	return w
}

// procWaiter is a unit's waiter: a process started from the charm's dispatch by a hook,
// outliving it, with its files in the charm directory.
type procWaiter struct {
	// Dir is the unit's charm directory; Exe the charm's dispatch in it.
	Dir, Exe string
	// Env is the waiter's environment: no hook context's variables.
	Env []string
	// LookPath finds juju-exec (exec.LookPath: Juju's /usr/bin, the local model's tools
	// directory, both on the hook's PATH).
	LookPath func(string) (string, error)
}

// waiterEnv is the waiter's environment from a hook's: what finds the programs and names the
// unit, and nothing of the hook's context (a juju-exec from a process with JUJU_CONTEXT_ID
// would be refused, and the context is gone with the hook).
func waiterEnv(hookEnv []string) []string {
	keep := []string{"PATH", "LANG", "JUJU_UNIT_NAME", "JUJU_CHARM_DIR", "JUJU_MODEL_NAME", "JUJU_MODEL_UUID", "JUJU_MACHINE_ID", "JUJU_VERSION"}
	var env []string
	for _, kv := range hookEnv {
		if k, _, ok := strings.Cut(kv, "="); ok && slices.Contains(keep, k) {
			env = append(env, kv)
		}
	}
	return env
}

// Watch implements Waiter: it writes the watch file (removes it for an empty list) and, when
// there is something to watch and no waiter holds the lock, starts one. The order matters: a
// waiter about to end lets go of its lock before its last look at the file, so it either sees
// this list or leaves the lock free for the one started here.
func (p *procWaiter) Watch(ctx context.Context, w watchList) error {
	if err := p.writeWatch(ctx, w); err != nil {
		return err
	}
	if w.empty() {
		return nil
	}
	held, err := p.lockHeld()
	if err != nil || held {
		return err
	}
	if _, err := p.LookPath("juju-exec"); err != nil {
		return fmt.Errorf("cannot start the removal waiter: %w", err)
	}
	return p.start()
}

// writeWatch makes the watch file hold w, writing only when that changes it.
func (p *procWaiter) writeWatch(ctx context.Context, w watchList) error {
	path := filepath.Join(p.Dir, watchFileName)
	if w.empty() {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot remove the waiter's watch list: %w", err)
		}
		return nil
	}
	data, err := json.Marshal(w)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return nil
	}
	if err := atomicfile.Write(ctx, path, data, atomicfile.Options{Mode: 0o600}); err != nil {
		return fmt.Errorf("cannot write the waiter's watch list: %w", err)
	}
	return nil
}

// readWatch reads the watch file; none is an empty list.
func readWatch(dir string) (watchList, error) {
	var w watchList
	data, err := os.ReadFile(filepath.Join(dir, watchFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return w, nil
	}
	if err != nil {
		return w, fmt.Errorf("cannot read the waiter's watch list: %w", err)
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return w, fmt.Errorf("cannot read the waiter's watch list %s: %w", filepath.Join(dir, watchFileName), err)
	}
	return w, nil
}

// lockHeld reports whether a waiter holds the lock file.
func (p *procWaiter) lockHeld() (bool, error) {
	f, err := os.OpenFile(filepath.Join(p.Dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false, fmt.Errorf("cannot open the waiter's lock: %w", err)
	}
	defer f.Close() // releases the lock taken below
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("cannot check the waiter's lock: %w", err)
	}
	return false, nil
}

// start starts a waiter in its own session, its output in its log, and does not wait for it.
func (p *procWaiter) start() error {
	log, err := os.OpenFile(filepath.Join(p.Dir, waiterLogName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("cannot open the waiter's log: %w", err)
	}
	defer log.Close()
	cmd := exec.Command(p.Exe, waiterCommand)
	cmd.Dir, cmd.Env = p.Dir, p.Env
	// Files, not pipes: nothing of the hook waits for the waiter's output (Juju's runner
	// waits for every writer of the hook's output to close it).
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start the removal waiter: %w", err)
	}
	return cmd.Process.Release()
}

// Stop implements Waiter: the process holding the lock, if it is a waiter, is sent SIGTERM,
// then SIGKILL after stopWait, and Stop returns once the lock is free.
func (p *procWaiter) Stop(ctx context.Context) error {
	held, err := p.lockHeld()
	if err != nil || !held {
		return err
	}
	data, err := os.ReadFile(filepath.Join(p.Dir, lockFileName))
	if err != nil {
		return fmt.Errorf("cannot read the waiter's lock: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || !isWaiter(pid) {
		return fmt.Errorf("cannot stop the removal waiter: the lock's holder %q is not a waiter", strings.TrimSpace(string(data)))
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("cannot stop the removal waiter (pid %d): %w", pid, err)
		}
		wctx, cancel := context.WithTimeout(ctx, stopWait)
		err := poll.Until(wctx, 20*time.Millisecond, func(context.Context) (bool, error) {
			held, err := p.lockHeld()
			return !held, err
		})
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
	return fmt.Errorf("cannot stop the removal waiter (pid %d): it still holds its lock", pid)
}

// isWaiter reports whether process pid is a waiter: its first argument is waiterCommand.
func isWaiter(pid int) bool {
	if pid <= 0 {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(string(data), "\x00")
	return len(args) >= 2 && args[1] == waiterCommand
}

// removalWaiter is the waiter process: every Interval it reads the watch list and asks Slurm,
// cheaply, whether what the charm left can proceed: a restarted slurmctld answers (`scontrol
// ping`) or its restart's deadline has passed; a node is gone, or is not busy (`scontrol show
// node`: not ALLOCATED, MIXED or COMPLETING) and its LastBusyTime is IdleGrace ago; a
// partition has no job record left (`squeue -t all -p`). While a restarted slurmctld does not
// answer, the removals are not asked about. It wakes the charm when that set is not empty and
// it or the watch list changed since the last wake (a pass that could not finish everything
// is followed by another), and at least every Refresh while it watches anything.
type removalWaiter struct {
	// Dir is the unit's charm directory (watch list, lock, dispatch); Unit the unit.
	Dir, Unit string
	// Client asks Slurm; Runner runs juju-exec, found at JujuExec.
	Client   *slurm.Client
	Runner   command.Runner
	JujuExec string
	// Interval is the pause between checks; Refresh, Life, IdleGrace, GoneBatch:
	// defaultRefresh, defaultWaiterLife, unitGrace, goneBatch when zero.
	Interval, Refresh, Life, IdleGrace, GoneBatch time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Log receives the waiter's lines.
	Log io.Writer
}

func (w *removalWaiter) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *removalWaiter) logf(format string, args ...any) {
	if w.Log != nil {
		fmt.Fprintf(w.Log, "%s %s\n", w.now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
	}
}

// Run is the waiter's life. It returns nil when it ends as it should (another waiter holds
// the lock, nothing left to watch, the charm changed, its lifetime is over, ctx ended).
func (w *removalWaiter) Run(ctx context.Context) error {
	lock, err := os.OpenFile(filepath.Join(w.Dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("cannot open the waiter's lock: %w", err)
	}
	defer lock.Close()
	if !w.tryLock(lock) {
		return nil // another waiter runs
	}
	dispatch := filepath.Join(w.Dir, "dispatch")
	exe, err := fileID(dispatch)
	if err != nil {
		return fmt.Errorf("cannot find the charm's dispatch: %w", err)
	}
	w.logf("started (pid %d) for %s", os.Getpid(), w.Unit)
	start := w.now()
	refresh, life := charm.Or(w.Refresh, defaultRefresh), charm.Or(w.Life, defaultWaiterLife)
	woke := start // the hook that started this waiter has just made its pass
	var lastWake string
	var held time.Time // when a wake for nodes gone alone was first held (goneBatch), or zero
	for ctx.Err() == nil {
		if id, err := fileID(dispatch); err != nil || id != exe {
			w.logf("the charm's dispatch changed or is gone: ending")
			return nil
		}
		list, err := readWatch(w.Dir)
		if err != nil {
			return err
		}
		if list.empty() {
			// Let go of the lock before the last look: a hook that writes a list after
			// that look finds the lock free and starts a waiter.
			syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
			if list, err = readWatch(w.Dir); err != nil || list.empty() {
				w.logf("nothing left to watch: ending")
				return err
			}
			if !w.tryLock(lock) {
				return nil
			}
			continue
		}
		if w.now().Sub(start) >= life {
			// The charm woken last finds the lock free and starts the next waiter.
			syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
			w.logf("watched for %s: ending, the charm starts the next waiter", life)
			w.wake(ctx, "lifetime over")
			return nil
		}
		ready, hold, err := w.ready(ctx, list)
		key := fmt.Sprintf("%s %v", ready, list)
		if !hold {
			held = time.Time{}
		} else if held.IsZero() {
			held = w.now()
		}
		switch {
		case err != nil:
			w.logf("cannot check what it watches: %v", err)
		case ready != "" && key != lastWake && (!hold || w.now().Sub(held) >= charm.Or(w.GoneBatch, goneBatch)):
			w.wake(ctx, ready)
			woke, lastWake, held = w.now(), key, time.Time{}
		case w.now().Sub(woke) >= refresh:
			w.wake(ctx, "refresh")
			woke = w.now()
		}
		if err := poll.Sleep(ctx, w.Interval); err != nil {
			return nil
		}
	}
	return nil
}

// tryLock takes the lock without waiting and writes this process's id in it.
func (w *removalWaiter) tryLock(lock *os.File) bool {
	if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false
	}
	lock.Truncate(0)
	lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return true
}

// ready lists what of list can proceed now, in words ("" for none), and whether its wake may
// be held (goneBatch): what can proceed is nodes gone, nothing else, while another watched
// node is about to go by its unit's hand (its jobs completing, or idle within its grace).
func (w *removalWaiter) ready(ctx context.Context, list watchList) (string, bool, error) {
	var out []string
	if !list.Turn.IsZero() && !w.now().Before(list.Turn) {
		out = append(out, "a controller's restart turn ran out")
	}
	if !list.Restart.IsZero() {
		err := answers(ctx, w.Client, list.Host)
		switch {
		case err == nil:
			out = append(out, "slurmctld answers again")
		case !w.now().Before(list.Restart):
			return strings.Join(append(out, "slurmctld has not answered by its restart's deadline"), "; "), false, nil
		default:
			return strings.Join(out, "; "), false, nil // nothing else can be asked of it yet
		}
	}
	gone, soon := 0, false
	if len(list.Nodes) > 0 {
		nodes, err := w.Client.Nodes(ctx)
		if err != nil {
			return "", false, err
		}
		for _, name := range list.Nodes {
			i := slices.IndexFunc(nodes, func(n slurm.Node) bool { return n.Name == name })
			switch {
			case i < 0:
				out = append(out, "node "+name+" is gone")
				gone++
			case nodes[i].State.Busy():
				soon = soon || nodes[i].State.Has(slurm.FlagCompleting)
			default:
				last, ok, err := nodes[i].LastBusy(time.Local)
				if err != nil || !ok || w.now().Sub(last) >= charm.Or(w.IdleGrace, unitGrace) {
					out = append(out, "node "+name+" has no job")
				} else {
					soon = true
				}
			}
		}
	}
	for _, p := range list.Partitions {
		jobs, err := w.Client.PartitionJobRecords(ctx, p)
		if err != nil {
			return "", false, err
		}
		if len(jobs) == 0 {
			out = append(out, "partition "+p+" has no job record")
		}
	}
	return strings.Join(out, "; "), soon && gone > 0 && gone == len(out), nil
}

// wake runs the charm's update-status handler in a hook context through juju-exec, and logs
// why and how it went.
func (w *removalWaiter) wake(ctx context.Context, why string) {
	w.logf("waking the charm: %s", why)
	ctx, cancel := context.WithTimeout(ctx, wakeTimeout)
	defer cancel()
	out, err := w.Runner.Run(ctx, []string{w.JujuExec, w.Unit, wakeCommands}, nil)
	switch {
	case err != nil:
		w.logf("cannot run juju-exec: %v", err)
	case out.ExitCode != 0:
		w.logf("juju-exec exited %d: %s", out.ExitCode, strings.TrimSpace(string(out.Stderr)))
	}
}

// fileID identifies a file's content as installed: device, inode, size and modification time.
func fileID(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("cannot identify %s", path)
	}
	return fmt.Sprintf("%d:%d:%d:%d", st.Dev, st.Ino, fi.Size(), fi.ModTime().UnixNano()), nil
}
