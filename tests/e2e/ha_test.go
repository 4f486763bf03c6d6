package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
	"github.com/charmed-slurm/operators/tests/model"
)

// sftpPort is the storage host's sftp-server port (plain TCP, test networks only).
const sftpPort = 7022

// addStorage starts a storage host ("storage-0") serving a directory of its own through
// OpenSSH's sftp-server over plain TCP, and returns the filesystem-client stand-in's endpoint
// for it. The server is stopped with the test, not before: the end of ServeSFTP's context
// stops it, and a controller added minutes later must still mount the share (with c.bg()'s
// 3 minutes, TestControllerHAMachines's slurmctld/2, added 6 minutes in, got no mount).
func (c *cluster) addStorage() string {
	c.t.Helper()
	h := hoststest.AddHost(c.t, c.net, "storage-0")
	c.storage = h
	srv, err := h.ServeSFTP(context.Background(), shareDir, sftpPort)
	if err != nil {
		c.t.Fatalf("storage-0: %v", err)
	}
	c.t.Cleanup(srv.Close)
	return srv.Endpoint
}

// shareDir is the storage host's shared directory (private to the storage host).
const shareDir = "/var/tmp/slurmctld-share"

// waitStateSaved waits until every change slurmctld made to its jobs before t is on the
// shared storage, for the backup that takes over. slurmctld batches state saves
// (src/slurmctld/state_save.c): a change is saved at once when the last save is SAVE_MAX_WAIT
// (5 s) old, else at that age (its save thread looks every second). So a save after t holds
// every change before t; and when none comes within stateSaveQuiet of t, none was pending at
// t (a pending save runs within about 6 s of the last, which was before t), so the last save
// already holds them. Waiting for a save after t alone fails when the last change was saved
// at once, before t: no other save comes.
func (c *cluster) waitStateSaved(t time.Time) {
	c.t.Helper()
	c.eventually(30*time.Second, "job_state saved after "+t.Format(time.TimeOnly), func() (bool, string) {
		out, err := c.storage.Run(c.bg(), "stat", "-c", "%.9Y", shareDir+"/checkpoint/job_state")
		if err != nil {
			return false, string(out)
		}
		mtime, err := parseMtime(strings.TrimSpace(string(out)))
		if err != nil {
			return false, err.Error()
		}
		if mtime.After(t) {
			return true, ""
		}
		if since := time.Since(t); since > stateSaveQuiet {
			c.t.Logf("job_state last saved at %s, no save since %s (%s): none was pending", mtime.Format("15:04:05.000"), t.Format("15:04:05.000"), since.Round(time.Second))
			return true, ""
		}
		return false, "last saved at " + mtime.Format("15:04:05.000")
	})
}

// stateSaveQuiet is how long after a time with no job_state save the last save holds every
// change before it: SAVE_MAX_WAIT (5 s), the save thread's one-second look, and a margin for
// a loaded machine.
const stateSaveQuiet = 10 * time.Second

// parseMtime parses `stat -c %.9Y`: seconds since the epoch, a dot and nine digits.
func parseMtime(s string) (time.Time, error) {
	sec, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) != 9 {
		return time.Time{}, fmt.Errorf("stat printed %q, want seconds and nine digits", s)
	}
	secs, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("stat printed %q: %w", s, err)
	}
	nanos, err := strconv.ParseInt(frac, 10, 64)
	if err != nil || nanos < 0 {
		return time.Time{}, fmt.Errorf("stat printed %q, want seconds and nine digits", s)
	}
	return time.Unix(secs, nanos), nil
}

var confServerRE = regexp.MustCompile(`--conf-server (\S+)`)

// runAndQueue submits a 2-node exclusive job that sleeps for d and waits until it runs, then
// queues n one-node jobs behind it: the HA scenarios' jobs that must run once across a change
// of controller.
func (c *cluster) runAndQueue(d time.Duration, n int) (running string, queued []string) {
	c.t.Helper()
	running = c.sbatch("slurmd", "-N2", "--exclusive", "--wrap", fmt.Sprintf("sleep %d", int(d.Seconds())))
	c.waitJobState(running, "RUNNING", 30*time.Second)
	for range n {
		queued = append(queued, c.sbatch("slurmd", "-N1", "--wrap", "sleep 1"))
	}
	return running, queued
}

// confServers is the --conf-server argument of the slurmd running on unit's host.
func (c *cluster) confServers(unit string) string {
	c.t.Helper()
	out, _, _ := c.tryExec(unit, "pgrep", "-a", "-x", "slurmd")
	if m := confServerRE.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}

// newHACluster is a cluster of two slurmd units and two controllers sharing their
// StateSaveLocation through the filesystem-client stand-in (sshfs from a storage host), with
// SlurmctldTimeout 10 s.
func newHACluster(t *testing.T) *cluster {
	t.Helper()
	return newHAClusterOn(t, "")
}

// newHAClusterOn is newHACluster with every unit on a systemd machine of base, or on Pebble
// hosts when base is "" (the storage host is a Pebble host either way).
func newHAClusterOn(t *testing.T, base string) *cluster {
	t.Helper()
	return newHAClusterWith(t, base, "SlurmctldTimeout=10")
}

// newHAClusterWith is newHAClusterOn with slurmctld's slurm-conf-parameters params.
func newHAClusterWith(t *testing.T, base, params string) *cluster {
	t.Helper()
	c := newHABaseWith(t, base, params)
	c.relateStorage(2)
	if _, err := c.m.AddUnit(c.bg(), "slurmctld", 1); err != nil {
		t.Fatal(err)
	}
	c.waitActive()
	c.waitStandingBy("slurmctld/1")
	return c
}

// newHABase is a cluster of one controller and two slurmd units, with SlurmctldTimeout 10 s,
// on machines of base (Pebble hosts when base is ""): newHAClusterOn's before the storage.
func newHABase(t *testing.T, base string) *cluster {
	t.Helper()
	return newHABaseWith(t, base, "SlurmctldTimeout=10")
}

// newHABaseWith is newHABase with slurmctld's slurm-conf-parameters params.
func newHABaseWith(t *testing.T, base, params string) *cluster {
	t.Helper()
	c := newClusterFrom(t, clusterOptions{base: base, units: 2, ctlConfig: map[string]string{"slurm-conf-parameters": params}})
	c.waitIdleNodes(2)
	return c
}

// relateStorage starts the storage host, deploys the filesystem-client stand-in for it and
// relates it to slurmctld, then checks that the controller's StateSaveLocation moved to the
// shared storage with its n idle nodes.
func (c *cluster) relateStorage(n int) {
	c.t.Helper()
	ep := c.addStorage()
	c.deploy(fsClientPath, "filesystem-client", 0, map[string]string{"endpoint": ep})
	c.integrate("slurmctld", "filesystem-client")
	c.waitActive()
	if got := c.slurm("scontrol", "show", "config"); !strings.Contains(got, "StateSaveLocation       = /mnt/slurmctld-statefs/checkpoint") {
		c.t.Fatalf("StateSaveLocation not moved to the shared storage:\n%s", got)
	}
	c.waitIdleNodes(n) // the state moved with the nodes in it
}

// waitStandingBy waits until slurmctld/0 says it is the primary in control of two
// controllers and backup says it stands by.
func (c *cluster) waitStandingBy(backup string) {
	c.t.Helper()
	c.eventually(60*time.Second, "slurmctld/0 active and "+backup+" standing by", func() (bool, string) {
		s0, m0 := c.unitStatus("slurmctld/0")
		s1, m1 := c.unitStatus(backup)
		return strings.Contains(m0, "active controller (primary of 2)") && strings.Contains(m1, "backup 1 controller standing by (active: slurmctld/0)"),
			s0 + ": " + m0 + " | " + s1 + ": " + m1
	})
}

// TestControllerFailover: the primary controller's host dies while a 2-node job runs and jobs
// are queued; the backup takes over within SlurmctldTimeout plus a few seconds, the running
// job completes, the queued jobs run, sbatch is accepted, and a slurmd unit added during the
// outage joins through the second --conf-server.
func TestControllerFailover(t *testing.T) {
	t.Parallel()
	c := newHACluster(t)
	controllerFailover(t, c, func() { c.killHost("slurmctld/0", "pebble", "slurmctld", "munged", "sshfs") })

	// destroy with the primary's host dead: every application goes, without waiting out the
	// timeout.
	var stdout, stderr bytes.Buffer
	if code := c.m.RunCLI(c.bg(), model.Request{Argv: []string{"destroy", "--timeout", "2m"}}, &stdout, &stderr); code != 0 {
		t.Errorf("destroy with a dead controller host: exit %d: %s", code, stderr.String())
	}
}

// controllerFailover is TestControllerFailover's scenario on c (newHACluster's), with kill
// making the primary's host die.
func controllerFailover(t *testing.T, c *cluster, kill func()) {
	t.Helper()
	c.waitBothConfServers()
	c.waitIdleNodes(2)
	ping := c.slurm("scontrol", "ping")
	if strings.Count(ping, "is UP") != 2 {
		t.Fatalf("scontrol ping: %s", ping)
	}

	running, queued := c.runAndQueue(40*time.Second, 3)
	if s := c.jobState(queued[0]); s != "PENDING" {
		t.Fatalf("queued job %s is %s, want PENDING", queued[0], s)
	}
	c.waitStateSaved(time.Now())

	kill()
	killed := time.Now()
	c.logHooksOnFailure("the kill", killed)
	c.ctl = "slurmctld/1"
	var tookOver, accepted time.Duration // killed → first job accepted
	var late string
	c.eventually(60*time.Second, "slurmctld/1 in control", func() (bool, string) {
		out, code, stderr := c.tryExec("slurmctld/1", "env", "SLURM_CONF="+ctlConf, "sbatch", "--parsable", "-p", "slurmd", "-o", "/dev/null", "--wrap", "true")
		if code != 0 {
			return false, stderr
		}
		accepted = time.Since(killed)
		late = strings.TrimSpace(out)
		return true, ""
	})
	tookOver = accepted
	t.Logf("primary killed → first job accepted by the backup: %s (SlurmctldTimeout 10 s)", tookOver.Round(100*time.Millisecond))
	if tookOver > 10*time.Second+20*time.Second {
		t.Errorf("the backup took %s to take over, want within SlurmctldTimeout (10 s) plus a few seconds", tookOver)
	}

	// A slurmd unit added during the outage joins through the second --conf-server.
	if _, err := c.m.AddUnit(c.bg(), "slurmd", 1); err != nil {
		t.Fatal(err)
	}
	c.waitJobState(running, "COMPLETED", 90*time.Second)
	for _, id := range append(queued, late) {
		c.waitJobState(id, "COMPLETED", 90*time.Second)
	}
	// Ran once each: nothing requeued from a stale state.
	for _, id := range append(queued, running, late) {
		if out := c.slurm("scontrol", "show", "job", "-o", id); !strings.Contains(out, " Restarts=0 ") {
			t.Errorf("job %s ran again: %s", id, out)
		}
	}
	c.eventually(90*time.Second, "slurmd-2 joined", func() (bool, string) {
		n := c.nodes()
		return strings.HasPrefix(n["slurmd-2"], "idle "), fmt.Sprint(n)
	})
	c.slurm("srun", "-p", "slurmd", "-N3", "true")
	c.eventually(30*time.Second, "slurmctld/1 says it is the active controller", func() (bool, string) {
		st, msg := c.unitStatus("slurmctld/1")
		return st == "active" && strings.Contains(msg, "active controller (backup 1 of 2)"), st + ": " + msg
	})
}

// logHooksOnFailure logs, if the test fails, the hooks each unit of an HA cluster ran after
// what happened at t0, and their statuses.
func (c *cluster) logHooksOnFailure(what string, t0 time.Time) {
	c.t.Cleanup(func() {
		if !c.t.Failed() {
			return
		}
		c.t.Logf("%sthe hooks that ran after %s, and the statuses", hoststest.DumpMarker, what)
		for _, u := range []string{"slurmd/0", "slurmd/1", "slurmctld/0", "slurmctld/1", "slurmctld/2", "filesystem-client/0", "filesystem-client/1", "filesystem-client/2"} {
			runs := c.hookRuns(u, t0)
			for _, r := range runs {
				c.t.Logf("after %s: %s ran %s at %s (failed %v)", what, u, r.Hook, r.Start.Format("15:04:05.000"), r.Failed)
			}
			st, msg := c.unitStatus(u)
			if len(runs) == 0 && st == "" {
				continue // never there, or gone before
			}
			c.t.Logf("%s: %s: %s", u, st, msg)
		}
	})
}

// logOnFailure follows file on unit's host from now on (`tail -F`, in the background) and logs
// what it read if the test fails: a leaving unit's host, and its log with it, is gone by then.
// It returns what it read so far.
func (c *cluster) logOnFailure(unit, file string) func() string {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var buf bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.m.Exec(ctx, unit, []string{"tail", "-n", "0", "-F", file}, w, io.Discard)
	}()
	c.t.Cleanup(func() {
		cancel()
		<-done
		if c.t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			c.t.Logf("%s%s: %s from before the failure:\n%s", hoststest.DumpMarker, unit, file, buf.String())
		}
	})
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

// writerFunc is an io.Writer from a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// waitBothConfServers waits until both slurmd units run with both controllers as
// --conf-server, primary first, and returns that argument.
func (c *cluster) waitBothConfServers() string {
	c.t.Helper()
	return c.waitConfServers("slurmctld/0", "slurmctld/1")
}

// waitConfServers is waitBothConfServers with the controllers primary and backup.
func (c *cluster) waitConfServers(primary, backup string) string {
	c.t.Helper()
	want := strings.TrimSpace(c.exec(primary, "hostname", "-I")) + ":6817," + strings.TrimSpace(c.exec(backup, "hostname", "-I")) + ":6817"
	c.eventually(60*time.Second, "slurmd units with both controllers", func() (bool, string) {
		a, b := c.confServers("slurmd/0"), c.confServers("slurmd/1")
		return a == want && b == want, a + " " + b
	})
	return want
}

// pebbleCtl runs `pebble <verb> <service>` on a Pebble host.
func (c *cluster) pebbleCtl(unit, verb, service string) {
	c.t.Helper()
	bin, err := hoststest.PebbleBin()
	if err != nil {
		c.t.Fatal(err)
	}
	c.exec(unit, "env", "PEBBLE="+hosts.PebbleDir, bin, verb, service)
}

// roleChanges are the last n lines of a slurmctld log that say how its role changed: a start,
// standby, a takeover, control asked for or given back, a stop.
func roleChanges(log string, n int) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		for _, s := range []string{"slurmctld version", "background mode", "taking over", "Running as primary", "REQUEST_CONTROL", "REQUEST_TAKEOVER", "REQUEST_SHUTDOWN", "Terminate signal", "Saving all slurm state", "relinquish"} {
			if strings.Contains(line, s) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}

// onlyPrimaryInControl checks, over two heartbeat periods (SlurmctldTimeout 10 s: one every
// 2.5 s), that the heartbeat names the primary (index 0) at every read and keeps being
// written, and that scontrol ping finds both controllers up: a backup that kept control
// beside the primary would write its own index in between.
func (c *cluster) onlyPrimaryInControl() {
	c.t.Helper()
	seen := map[int64]bool{}
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		at, index, ok := c.heartbeat()
		if !ok {
			continue // being replaced
		}
		if index != 0 {
			c.t.Fatalf("the heartbeat names controller %d at %s with the primary back in control", index, time.Unix(at, 0).Format(time.TimeOnly))
		}
		seen[at] = true
	}
	if len(seen) < 2 {
		c.t.Errorf("the heartbeat was written %d times in 6 s, want one every 2.5 s", len(seen))
	}
	if ping := c.slurm("scontrol", "ping"); strings.Count(ping, " is UP") != 2 {
		c.t.Errorf("scontrol ping with the primary back: %s", ping)
	}
}

// heartbeat reads the heartbeat the controller in control writes on the shared storage: its
// time and the controller's SlurmctldHost index (two big-endian 64-bit words; docs/ha.md);
// ok is false while it is absent or short (the controller replacing it).
func (c *cluster) heartbeat() (at, index int64, ok bool) {
	c.t.Helper()
	out, err := c.storage.Run(c.bg(), "od", "-A", "n", "-t", "u1", "-v", shareDir+"/checkpoint/heartbeat")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(out))
	if len(f) != 16 {
		return 0, 0, false
	}
	var words [2]int64
	for i, b := range f {
		v, err := strconv.ParseInt(b, 10, 64)
		if err != nil {
			c.t.Fatalf("heartbeat: od printed %q", out)
		}
		words[i/8] = words[i/8]<<8 | v
	}
	return words[0], words[1], true
}

// controllerComesBack is TestControllerComesBack's scenario on c (slurmctld/0 the primary in
// control, slurmctld/1 the backup standing by), with ctl(verb) stopping ("stop") and starting
// ("start") the primary's slurmctld through its supervisor. While a 2-node job runs and jobs
// are queued, the primary's slurmctld stops and the backup takes control; started again, the
// primary takes control back: the backup went back to standby and the heartbeat names the
// primary alone; every job runs once.
func controllerComesBack(t *testing.T, c *cluster, ctl func(verb string)) {
	t.Helper()
	c.waitIdleNodes(2)
	running, queued := c.runAndQueue(30*time.Second, 2)
	c.waitStateSaved(time.Now())

	ctl("stop")
	stopped := time.Now()
	c.logHooksOnFailure("the primary's stop", stopped)
	c.ctl = "slurmctld/1"
	var during string
	c.eventually(60*time.Second, "the backup accepting jobs", func() (bool, string) {
		out, code, stderr := c.tryExec("slurmctld/1", "env", "SLURM_CONF="+ctlConf, "sbatch", "--parsable", "-p", "slurmd", "-o", "/dev/null", "--wrap", "true")
		during = strings.TrimSpace(out)
		return code == 0, stderr
	})
	t.Logf("primary stopped → first job accepted by the backup: %s", time.Since(stopped).Round(100*time.Millisecond))
	c.eventually(30*time.Second, "slurmctld/1 active", func() (bool, string) {
		_, msg := c.unitStatus("slurmctld/1")
		return strings.Contains(msg, "active controller (backup 1 of 2)"), msg
	})

	ctl("start")
	back := time.Now()
	c.ctl = "slurmctld/0"
	c.eventually(60*time.Second, "slurmctld/0 in control again and slurmctld/1 standing by", func() (bool, string) {
		_, m0 := c.unitStatus("slurmctld/0")
		_, m1 := c.unitStatus("slurmctld/1")
		return strings.Contains(m0, "active controller (primary of 2)") && strings.Contains(m1, "standing by (active: slurmctld/0)"), m0 + " | " + m1
	})
	t.Logf("primary started again → in control, the backup standing by: %s", time.Since(back).Round(100*time.Millisecond))
	// No split brain: the backup gives control back (it runs in background mode again). Slurm
	// 26.05's backup may still be relinquishing when the primary's REQUEST_CONTROL wait ends
	// ("backup not completely done relinquishing control": docs/ha.md), and the primary in
	// control before it is back in background mode (seen at load 20-30 in CI): wait for it,
	// bounded, while the heartbeat check below finds any writes of the backup meanwhile.
	c.eventuallyEvery(60*time.Second, time.Second, "slurmctld/1 back in background mode after its takeover", func() (bool, string) {
		log := c.exec("slurmctld/1", "cat", ctlLogPath)
		return strings.Count(log, "slurmctld running in background mode") >= 2, roleChanges(log, 8)
	})
	t.Logf("the primary started again → the backup back in background mode: %s", time.Since(back).Round(100*time.Millisecond))
	for _, u := range []string{"slurmctld/0", "slurmctld/1"} {
		t.Logf("%s: its last changes of role:\n%s", u, roleChanges(c.exec(u, "cat", ctlLogPath), 8))
	}
	c.onlyPrimaryInControl()
	for _, id := range append(append([]string{running}, queued...), during) {
		c.waitJobState(id, "COMPLETED", 90*time.Second)
		if out := c.slurm("scontrol", "show", "job", "-o", id); !strings.Contains(out, " Restarts=0 ") {
			t.Errorf("job %s ran again: %s", id, out)
		}
	}
	c.waitIdleNodes(2)
	c.slurm("srun", "-p", "slurmd", "-N2", "true")
}

// TestControllerComesBack: the primary's slurmctld stops while a job runs; the backup takes
// over; the primary's slurmctld starts again and takes control back from the backup (Slurm's
// REQUEST_CONTROL at the primary's start): one active controller, the same jobs and nodes, the
// backup standing by again. Then the lasting takeover: the takeover action on the backup
// while a job runs hands it control for good (35 s watched: the primary's slurmctld stays
// down, its unit standing down), the job completes once, and takeover on the primary gives
// control back to it.
func TestControllerComesBack(t *testing.T) {
	t.Parallel()
	c := newHACluster(t)
	controllerComesBack(t, c, func(verb string) { c.pebbleCtl("slurmctld/0", verb, "slurmctld") })

	// The lasting takeover (docs/ha.md): the takeover action on the backup while a job runs.
	// Slurm's takeover shuts the primary's slurmctld down (REQUEST_SHUTDOWN: it saves its
	// state and exits 0) and the backup takes control; the primary's supervisor does not
	// restart it (on-success: ignore) and its hooks do not start it (the backup's record in
	// the peer relation): the backup stays in control, longer than Pebble's restart back-off.
	job := c.sbatch("slurmd", "-N1", "--wrap", "sleep 45")
	c.waitJobState(job, "RUNNING", 30*time.Second)
	shutdowns := strings.Count(c.exec("slurmctld/0", "cat", ctlLogPath), "REQUEST_SHUTDOWN")
	run, err := c.m.Run(c.bg(), "slurmctld/1", "takeover", nil)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "completed" || run.Results["in-control"] != "slurmctld/1" {
		t.Fatalf("takeover on slurmctld/1: %s %s %v", run.Status, run.Message, run.Results)
	}
	took := time.Now()
	t.Logf("takeover on slurmctld/1: %v", run.Results)
	if !strings.Contains(c.exec("slurmctld/1", "cat", ctlLogPath), "REQUEST_TAKEOVER") || strings.Count(c.exec("slurmctld/0", "cat", ctlLogPath), "REQUEST_SHUTDOWN") <= shutdowns {
		t.Error("no REQUEST_TAKEOVER in the backup's log or no new REQUEST_SHUTDOWN in the primary's")
	}
	c.ctl = "slurmctld/1"
	const standing = "standing by, slurmctld stopped: control handed to slurmctld/1 by its takeover action (run takeover on this unit to take it back)"
	c.eventually(30*time.Second, "slurmctld/0 standing down", func() (bool, string) {
		_, m0 := c.unitStatus("slurmctld/0")
		return m0 == standing, m0
	})
	for time.Since(took) < 35*time.Second {
		_, m1 := c.unitStatus("slurmctld/1")
		if !strings.Contains(m1, "active controller (backup 1 of 2)") {
			t.Fatalf("%s after the takeover, slurmctld/1: %s", time.Since(took).Round(time.Second), m1)
		}
		if out, code, _ := c.tryExec("slurmctld/0", "pgrep", "-x", "slurmctld"); code == 0 {
			t.Fatalf("%s after the takeover, slurmctld runs again on slurmctld/0: %s", time.Since(took).Round(time.Second), out)
		}
		time.Sleep(2 * time.Second)
	}
	if _, m0 := c.unitStatus("slurmctld/0"); m0 != standing {
		t.Errorf("slurmctld/0: %q, want %q", m0, standing)
	}
	c.waitJobState(job, "COMPLETED", 90*time.Second)
	if out := c.slurm("scontrol", "show", "job", "-o", job); !strings.Contains(out, " Restarts=0 ") {
		t.Errorf("job %s ran again: %s", job, out)
	}

	// takeover on the old primary: its slurmctld starts and takes control back, the backup
	// stands by.
	run, err = c.m.Run(c.bg(), "slurmctld/0", "takeover", nil)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "completed" || run.Results["in-control"] != "slurmctld/0" {
		t.Fatalf("takeover on slurmctld/0: %s %s %v", run.Status, run.Message, run.Results)
	}
	t.Logf("takeover on slurmctld/0: %v", run.Results)
	c.ctl = "slurmctld/0"
	c.eventually(60*time.Second, "slurmctld/0 in control again and slurmctld/1 standing by", func() (bool, string) {
		_, m0 := c.unitStatus("slurmctld/0")
		_, m1 := c.unitStatus("slurmctld/1")
		return strings.Contains(m0, "active controller (primary of 2)") && strings.Contains(m1, "standing by (active: slurmctld/0)"), m0 + " | " + m1
	})
	c.slurm("srun", "-p", "slurmd", "-N2", "true")
}

// TestBackupNeedsStorage: without shared storage a second controller unit stays blocked naming
// the missing relation and runs no slurmctld; the first stays the only controller.
func TestBackupNeedsStorage(t *testing.T) {
	t.Parallel()
	backupNeedsStorage(t, newCluster(t, 1), 1)
}

// backupNeedsStorage is TestBackupNeedsStorage's scenario on c, a cluster of one controller
// and n slurmd units without shared storage: slurmctld/1 added.
func backupNeedsStorage(t *testing.T, c *cluster, n int) {
	t.Helper()
	if _, err := c.m.AddUnit(c.bg(), "slurmctld", 1); err != nil {
		t.Fatal(err)
	}
	c.eventually(2*time.Minute, "slurmctld/1 blocked for want of shared storage", func() (bool, string) {
		st, msg := c.unitStatus("slurmctld/1")
		return st == "blocked" && strings.Contains(msg, "integrate slurmctld with filesystem-client (mount relation)"), st + ": " + msg
	})
	c.waitIdle()
	if out, code, _ := c.tryExec("slurmctld/1", "pgrep", "-x", "slurmctld"); code == 0 {
		t.Errorf("slurmctld runs on slurmctld/1 without shared storage: %s", out)
	}
	if st, msg := c.unitStatus("slurmctld/0"); st != "active" || strings.Contains(msg, "of 2") {
		t.Errorf("slurmctld/0: %s: %s", st, msg)
	}
	if ping := c.slurm("scontrol", "ping"); strings.Count(ping, "Slurmctld(") != 1 {
		t.Errorf("more than one controller configured: %s", ping)
	}
	c.waitIdleNodes(n)
}

// TestRemoveActiveController: remove-unit of the controller in control (the primary, also the
// leader) while a 2-node job runs and jobs are queued, probing with sbatch from just before
// remove-unit (no wait for a state save). The leaving unit hands control to the backup with
// Slurm's takeover before its slurmctld stops (REQUEST_TAKEOVER in the backup's log, not a
// wait for SlurmctldTimeout); the backup becomes the leader and the only controller; the
// slurmd units restart with it alone as --conf-server while the job runs, and every job
// accepted runs once. The time from remove-unit to the first job the backup accepted is
// logged (docs/ha.md).
func TestRemoveActiveController(t *testing.T) {
	t.Parallel()
	removeActiveController(t, newHACluster(t), "slurmctld/1", true)
}

// removeActiveController is TestRemoveActiveController's scenario on c: slurmctld/0, the
// primary in control and the leader, removed with backup standing by. takeover says whether
// the test requires the leaving unit's takeover request in the backup's log; without it, the
// backup's way to control (the request, SlurmctldTimeout, or its restart as the new leader
// for its one-controller list, whichever comes first) is only logged.
func removeActiveController(t *testing.T, c *cluster, backup string, takeover bool) {
	t.Helper()
	addr1 := strings.TrimSpace(c.exec(backup, "hostname", "-I"))
	running, queued := c.runAndQueue(60*time.Second, 2)
	pids := map[string]string{}
	for _, u := range []string{"slurmd/0", "slurmd/1"} {
		pids[u] = strings.TrimSpace(c.exec(u, "pgrep", "-o", "-x", "slurmd"))
	}

	c.ctl = backup
	primaryLog := c.logOnFailure("slurmctld/0", ctlLogPath)
	// Probe with sbatch on the backup's host from just before remove-unit until slurmctld/0 is
	// gone and the backup leads alone, with no wait for a state save: the leaving primary
	// hands control over with Slurm's takeover before its slurmctld stops, and saves its
	// whole state as it gives up control, so every job accepted, by either controller, runs.
	// Each probe has a name of its own: a job lost with the primary would otherwise hide
	// behind the next job given its id again.
	var submitted []string
	names := map[string]string{}
	accepted := map[string]time.Time{}
	var lastOK time.Time
	var longest time.Duration
	probe := func(from time.Time) {
		name := fmt.Sprintf("probe-%d", len(names))
		out, code, _ := c.tryExec(backup, "env", "SLURM_CONF="+ctlConf, "sbatch", "--parsable", "-J", name, "-p", "slurmd", "-o", "/dev/null", "--wrap", "true")
		now := time.Now()
		if code != 0 {
			return
		}
		id := strings.TrimSpace(out)
		if _, dup := names[id]; dup {
			t.Errorf("job id %s given twice (to %s and %s): the first job was lost", id, names[id], name)
		}
		names[id] = name
		accepted[id] = now
		submitted = append(submitted, id)
		if !lastOK.IsZero() {
			from = lastOK
		}
		if d := now.Sub(from); d > longest {
			longest = d
		}
		lastOK = now
	}
	probe(time.Now())
	if err := c.m.RemoveUnit(c.bg(), "slurmctld/0"); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	c.logHooksOnFailure("remove-unit", removed)
	gone := false
	deadline := time.Now().Add(3 * time.Minute)
	for !gone || time.Since(lastOK) > time.Second {
		if time.Now().After(deadline) {
			st, msg := c.unitStatus(backup)
			t.Fatalf("slurmctld/0 not gone or %s not leading alone within 3m: %s: %s", backup, st, msg)
		}
		probe(removed)
		if !gone {
			st0, _ := c.unitStatus("slurmctld/0")
			st, msg := c.unitStatus(backup)
			gone = st0 == "" && st == "active" && strings.HasPrefix(msg, "slurmctld up")
		}
		time.Sleep(300 * time.Millisecond)
	}
	// The first probe the backup accepted (its log has the submission).
	backupLog := c.exec(backup, "cat", ctlLogPath)
	first := ""
	var timeline []string
	for _, id := range submitted {
		by := "primary"
		if strings.Contains(backupLog, "_slurm_rpc_submit_batch_job: JobId="+id+" ") {
			by = "backup"
			if first == "" {
				first = id
			}
		}
		timeline = append(timeline, fmt.Sprintf("%s %s by the %s at %+.1fs", names[id], id, by, accepted[id].Sub(removed).Seconds()))
	}
	t.Logf("probes accepted (from remove-unit): %s", strings.Join(timeline, "; "))
	if first == "" {
		t.Errorf("no probe accepted by the backup (%d submitted)", len(submitted))
	} else {
		t.Logf("remove-unit of the active controller → first job accepted by the backup: %s (job %s); longest time without sbatch accepted %s; %d probes accepted", accepted[first].Sub(removed).Round(100*time.Millisecond), first, longest.Round(100*time.Millisecond), len(submitted))
	}
	switch {
	case takeover && !strings.Contains(backupLog, "REQUEST_TAKEOVER"):
		t.Error("the backup took control without a takeover request (it waited out SlurmctldTimeout)")
	case !takeover:
		t.Logf("%s took control:\n%s", backup, roleChanges(backupLog, 6))
	}
	// The primary gave up control on the backup's REQUEST_SHUTDOWN and saved its whole state.
	var steps []string
	saved := false
	for _, line := range strings.Split(primaryLog(), "\n") {
		for _, m := range []string{"REQUEST_SHUTDOWN", "Terminate signal", "Saving all slurm state", "_slurm_rpc_submit_batch_job"} {
			if strings.Contains(line, m) {
				steps = append(steps, line)
				saved = saved || m == "Saving all slurm state"
			}
		}
	}
	t.Logf("the primary's log from remove-unit (at %s):\n%s", removed.Format("15:04:05.000"), strings.Join(steps, "\n"))
	if !saved {
		t.Error("no \"Saving all slurm state\" in the leaving primary's log")
	}

	// The slurmd units follow the controller that stays, restarted while the job runs.
	want := addr1 + ":6817"
	c.eventually(2*time.Minute, "slurmd units with "+backup+" alone", func() (bool, string) {
		a, b := c.confServers("slurmd/0"), c.confServers("slurmd/1")
		return a == want && b == want, a + " " + b
	})
	if s := c.jobState(running); s != "RUNNING" {
		t.Logf("job %s is %s once the slurmd units restarted (not a proof that a restart keeps it)", running, s)
	}
	for u, pid := range pids {
		if now := strings.TrimSpace(c.exec(u, "pgrep", "-o", "-x", "slurmd")); now == pid {
			t.Errorf("%s: slurmd not restarted for the new --conf-server (pid %s)", u, pid)
		}
	}
	for _, id := range append(append([]string{running}, queued...), submitted...) {
		c.waitJobState(id, "COMPLETED", 2*time.Minute)
		out := c.slurm("scontrol", "show", "job", "-o", id)
		if !strings.Contains(out, " Restarts=0 ") {
			t.Errorf("job %s ran again: %s", id, out)
		}
		if name, ok := names[id]; ok && !strings.Contains(out, " JobName="+name+" ") {
			t.Errorf("job %s is not the probe %s submitted (lost with the primary): %s", id, name, out)
		}
	}
	c.waitIdleNodes(2)
	c.slurm("srun", "-p", "slurmd", "-N2", "true")
}

// TestRemoveBackupController: remove-unit of the backup standing by while a job runs leaves the
// primary untouched (same slurmctld PID, no start and no reconfigure in its log), the slurmd
// units restart with the primary alone as --conf-server while the job runs, and the job
// completes once: a slurmd restart for a changed controller list keeps running jobs.
func TestRemoveBackupController(t *testing.T) {
	t.Parallel()
	removeBackupController(t, newHACluster(t), "slurmctld/1")
}

// removeBackupController is TestRemoveBackupController's scenario on c: backup, standing by
// while slurmctld/0 (the leader) is in control, removed.
func removeBackupController(t *testing.T, c *cluster, backup string) {
	t.Helper()
	addr0 := strings.TrimSpace(c.exec("slurmctld/0", "hostname", "-I"))
	running := c.sbatch("slurmd", "-N2", "--exclusive", "--wrap", "sleep 120")
	c.waitJobState(running, "RUNNING", 30*time.Second)
	pid := c.ctlPID()
	reconfigures, starts := c.reconfigures()
	slurmds := map[string]string{}
	for _, u := range []string{"slurmd/0", "slurmd/1"} {
		slurmds[u] = strings.TrimSpace(c.exec(u, "pgrep", "-o", "-x", "slurmd"))
	}

	if err := c.m.RemoveUnit(c.bg(), backup); err != nil {
		t.Fatal(err)
	}
	c.eventually(2*time.Minute, backup+" gone", func() (bool, string) {
		st, msg := c.unitStatus(backup)
		return st == "", st + ": " + msg
	})
	want := addr0 + ":6817"
	c.eventually(2*time.Minute, "slurmd units with slurmctld/0 alone", func() (bool, string) {
		a, b := c.confServers("slurmd/0"), c.confServers("slurmd/1")
		return a == want && b == want, a + " " + b
	})
	for u, was := range slurmds {
		if now := strings.TrimSpace(c.exec(u, "pgrep", "-o", "-x", "slurmd")); now == was {
			t.Errorf("%s: slurmd not restarted for the new --conf-server (pid %s)", u, was)
		}
	}
	if s := c.jobState(running); s != "RUNNING" {
		t.Errorf("job %s is %s after the slurmd restarts, want RUNNING (started before them)", running, s)
	}
	c.waitIdle()
	if got := c.ctlPID(); got != pid {
		t.Errorf("the primary's slurmctld restarted: pid %s, was %s", got, pid)
	}
	if r, s := c.reconfigures(); r != reconfigures || s != starts {
		t.Errorf("the primary's slurmctld: %d reconfigures and %d starts, want %d and %d", r, s, reconfigures, starts)
	}
	if st, msg := c.unitStatus("slurmctld/0"); st != "active" || !strings.HasPrefix(msg, "slurmctld up") {
		t.Errorf("slurmctld/0: %s: %s", st, msg)
	}
	c.waitJobState(running, "COMPLETED", 3*time.Minute)
	if out := c.slurm("scontrol", "show", "job", "-o", running); !strings.Contains(out, " Restarts=0 ") || !strings.Contains(out, " ExitCode=0:0 ") {
		t.Errorf("job %s ran again or failed: %s", running, out)
	}
	c.waitIdleNodes(2)
	c.slurm("srun", "-p", "slurmd", "-N2", "true")
}

// TestLeaderMoves: Juju moves the leadership from slurmctld/0 (primary, in control) to the
// backup slurmctld/1 while a 2-node job runs: neither slurmctld starts, stops or reconfigures
// (same PIDs, no start or reconfigure in their logs), slurmctld/0 stays in control, the slurmd
// units keep both controllers, primary first, without restarting, and the job completes once.
func TestLeaderMoves(t *testing.T) {
	t.Parallel()
	leaderMoves(t, newHACluster(t), "slurmctld/1")
}

// leaderMoves is TestLeaderMoves's scenario on c, the leadership moved to each unit of to in
// turn while the job runs.
func leaderMoves(t *testing.T, c *cluster, to ...string) {
	t.Helper()
	want := c.waitBothConfServers()
	c.waitIdle()
	running := c.sbatch("slurmd", "-N2", "--exclusive", "--wrap", "sleep 30")
	c.waitJobState(running, "RUNNING", 30*time.Second)
	untouched := c.controllersUntouched()
	slurmds := map[string]string{}
	for _, u := range []string{"slurmd/0", "slurmd/1"} {
		slurmds[u] = strings.TrimSpace(c.exec(u, "pgrep", "-o", "-x", "slurmd"))
	}

	for _, u := range to {
		moved := time.Now()
		c.logHooksOnFailure("the leadership move to "+u, moved)
		if err := c.m.MoveLeader(c.bg(), u); err != nil {
			t.Fatal(err)
		}
		c.eventually(time.Minute, u+" ran leader-elected", func() (bool, string) {
			for _, r := range c.hookRuns(u, moved) {
				if r.Hook == "leader-elected" {
					return true, ""
				}
			}
			return false, ""
		})
		c.waitIdle()
	}
	untouched()
	for u, pid := range slurmds {
		if now := strings.TrimSpace(c.exec(u, "pgrep", "-o", "-x", "slurmd")); now != pid {
			t.Errorf("%s: slurmd restarted (pid %s, was %s)", u, now, pid)
		}
		if got := c.confServers(u); got != want {
			t.Errorf("%s: --conf-server %s, want %s", u, got, want)
		}
	}
	c.eventually(30*time.Second, "slurmctld/0 in control, slurmctld/1 standing by", func() (bool, string) {
		_, m0 := c.unitStatus("slurmctld/0")
		_, m1 := c.unitStatus("slurmctld/1")
		return strings.Contains(m0, "active controller (primary of 2)") && strings.Contains(m1, "backup 1 controller standing by (active: slurmctld/0)"), m0 + " | " + m1
	})
	c.waitJobState(running, "COMPLETED", 90*time.Second)
	if out := c.slurm("scontrol", "show", "job", "-o", running); !strings.Contains(out, " Restarts=0 ") {
		t.Errorf("job %s ran again: %s", running, out)
	}
	c.slurm("srun", "-p", "slurmd", "-N2", "true")
}

// controllersUntouched snapshots slurmctld on slurmctld/0 and slurmctld/1 (its PID, the starts
// and reconfigures in its log) and returns a check that neither has since been started,
// stopped or reconfigured.
func (c *cluster) controllersUntouched() func() {
	c.t.Helper()
	units := []string{"slurmctld/0", "slurmctld/1"}
	pids, logs := map[string]string{}, map[string]slurm.ControllerEvents{}
	for _, u := range units {
		pids[u] = strings.TrimSpace(c.exec(u, "pgrep", "-o", "-x", "slurmctld"))
		logs[u] = slurm.ParseControllerLog([]byte(c.exec(u, "cat", ctlLogPath)))
	}
	return func() {
		c.t.Helper()
		for _, u := range units {
			if now := strings.TrimSpace(c.exec(u, "pgrep", "-o", "-x", "slurmctld")); now != pids[u] {
				c.t.Errorf("%s: slurmctld pid %s, was %s", u, now, pids[u])
			}
			ev := slurm.ParseControllerLog([]byte(c.exec(u, "cat", ctlLogPath)))
			if ev.Starts != logs[u].Starts || ev.Reconfigures != logs[u].Reconfigures {
				c.t.Errorf("%s: %d starts and %d reconfigures in slurmctld's log, were %d and %d", u, ev.Starts, ev.Reconfigures, logs[u].Starts, logs[u].Reconfigures)
			}
		}
	}
}
