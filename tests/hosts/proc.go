package hosts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pollInterval is how often process and socket waits look again.
const pollInterval = 5 * time.Millisecond

// child is a process this package started and reaps.
type child struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait returned
	// inner is the process cmd forked into a new PID namespace (unshare --fork, nsenter
	// --pid), by its PID in this namespace, once known; 0 when cmd runs the program itself.
	inner int
}

func startChild(cmd *exec.Cmd) (*child, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM (to the inner process when there is one: nsenter does not pass signals
// on, and exits when its child does), waits up to grace, then SIGKILL and waits for the exit.
func (c *child) stop(grace time.Duration) {
	if c == nil || c.exited() {
		return
	}
	if c.inner > 0 {
		syscall.Kill(c.inner, syscall.SIGTERM)
	} else {
		c.cmd.Process.Signal(syscall.SIGTERM)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
		return
	case <-t.C:
	}
	if c.inner > 0 {
		syscall.Kill(c.inner, syscall.SIGKILL)
	}
	c.cmd.Process.Kill()
	<-c.done
}

// onlyChild returns the PID of pid's only child, or 0 while it has none (or several): the
// process that unshare --fork or nsenter --pid started in the new PID namespace.
func onlyChild(pid int) int {
	if c := children(pid); len(c) == 1 {
		return c[0]
	}
	return 0
}

// children lists the children of pid's main thread (/proc/<pid>/task/<pid>/children).
func children(pid int) []int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie (this machine's PID 1
// may not reap orphans).
func alive(pid int) bool {
	_, ok := procOf(pid)
	return ok
}

// procStat is what /proc/<pid>/stat says of a process that the hosts need: its command name
// (comm), its state letter, its parent and its start time (clock ticks after boot; 0 when the
// line stops before it), which tells a process from a later one given the same PID.
type procStat struct {
	comm  string
	state byte
	ppid  int
	start uint64
}

// readStat reads /proc/<pid>/stat; false when the process is gone or the file is not one.
func readStat(pid int) (procStat, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseStat(string(data))
}

// parseStat parses a /proc/<pid>/stat line: "pid (comm) state ppid ...", where comm may hold
// spaces and parentheses (the last ')' ends it).
func parseStat(s string) (procStat, bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, false
	}
	st := procStat{comm: s[open+1 : end], state: f[0][0], ppid: ppid}
	// starttime is field 22 of the line, f[19] after the comm.
	if len(f) > 19 {
		if st.start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
			return procStat{}, false
		}
	}
	return st, true
}

// A Proc is a process as the test process sees it, named across PID reuse: its PID and its
// start time.
type Proc struct {
	PID   int
	start uint64
}

// procOf is pid's Proc, false when pid is gone.
func procOf(pid int) (Proc, bool) {
	st, ok := readStat(pid)
	if !ok || st.state == 'Z' || st.state == 'X' {
		return Proc{}, false
	}
	return Proc{PID: pid, start: st.start}, true
}

// Running reports whether p still runs: its PID names the same process (same start time), not
// a zombie. It reads /proc/<pid>/stat once.
func (p Proc) Running() bool {
	if p.PID <= 0 {
		return false
	}
	q, ok := procOf(p.PID)
	return ok && q.start == p.start
}

// nsInode returns the inode of a namespace file (a /run/netns entry or a
// /proc/<pid>/ns link target).
func nsInode(path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// pidsInNetns lists the live processes whose network namespace has inode ino.
func pidsInNetns(ino uint64) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		link, err := os.Readlink("/proc/" + e.Name() + "/ns/net")
		if err != nil || link != "net:["+strconv.FormatUint(ino, 10)+"]" {
			continue
		}
		if alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killNetns terminates every process in the network namespace at nsPath:
// SIGTERM, up to grace for them to exit, then SIGKILL.
func killNetns(nsPath string, grace time.Duration) error {
	ino, err := nsInode(nsPath)
	if err != nil {
		return fmt.Errorf("cannot inspect network namespace: %w", err)
	}
	pids := pidsInNetns(ino)
	if len(pids) == 0 {
		return nil
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	if waitGone(ino, grace) {
		return nil
	}
	for _, pid := range pidsInNetns(ino) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if waitGone(ino, 10*time.Second) {
		return nil
	}
	return fmt.Errorf("cannot stop processes %v in network namespace %s", pidsInNetns(ino), nsPath)
}

// waitGone waits up to d for the namespace to hold no live process.
func waitGone(ino uint64, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if len(pidsInNetns(ino)) == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}
