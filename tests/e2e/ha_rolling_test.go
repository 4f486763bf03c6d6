package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/bench"
)

// TestAddControllerRolling: a controller added to a running 2-controller cluster (the primary
// in control) while a 2-node job runs and jobs are queued. The controllers restart one at a
// time for the new SlurmctldHost list (the charm's restart turns): the new one starts, the
// backup restarts, the primary, in control, last and in place. From a host, `scontrol ping`
// every 100 ms finds a controller answering throughout; the longest time with no controller
// in control (squeue served by a controller asked alone) is measured and logged; every job
// completes once, and the three controllers end up one active, two standing by.
func TestAddControllerRolling(t *testing.T) {
	t.Parallel()
	c := newHACluster(t)
	c.waitBothConfServers()
	c.waitIdleNodes(2)

	running, queued := c.runAndQueue(60*time.Second, 3)
	c.waitStateSaved(time.Now())
	started := map[string]uint64{}
	for _, u := range []string{"slurmctld/0", "slurmctld/1"} {
		started[u] = c.slurmctldStart(u)
	}

	// The probes run on slurmctld/1's host: its slurm.conf (the full list, rewritten as the
	// controllers change) for `scontrol ping`, and a copy per controller listing it alone, so
	// that a controller in standby refuses squeue at once.
	probe := &controlProbe{c: c, unit: "slurmctld/1"}
	for _, u := range []string{"slurmctld/0", "slurmctld/1"} {
		probe.add(u)
	}
	ctx, cancel := context.WithCancel(c.bg())
	defer cancel()
	pings := bench.StartPoller(ctx, 100*time.Millisecond, probe.ping)
	control := bench.StartPoller(ctx, 100*time.Millisecond, probe.inControl)

	t0 := time.Now()
	c.logHooksOnFailure("add-unit", t0)
	units, err := c.m.AddUnit(c.bg(), "slurmctld", 1)
	if err != nil {
		t.Fatal(err)
	}
	added := units[0]
	c.eventually(3*time.Minute, added+" listed in slurmctld/1's slurm.conf", func() (bool, string) {
		conf := c.exec("slurmctld/1", "cat", ctlConf)
		return strings.Count(conf, "SlurmctldHost=") == 3, conf
	})
	probe.add(added)
	c.eventually(4*time.Minute, "three controllers: one active, two standing by", func() (bool, string) {
		var msgs []string
		ok := true
		for i, u := range []string{"slurmctld/0", "slurmctld/1", added} {
			st, msg := c.unitStatus(u)
			msgs = append(msgs, u+": "+st+": "+msg)
			want := fmt.Sprintf("backup %d controller standing by (active: slurmctld/0)", i)
			if i == 0 {
				want = "active controller (primary of 3)"
			}
			ok = ok && st == "active" && strings.Contains(msg, want) && !strings.Contains(msg, "turn")
		}
		return ok, strings.Join(msgs, " | ")
	})
	c.waitActive()
	pingProbes, controlProbes := pings.Stop(), control.Stop()
	settled := time.Since(t0)

	_, pingGap := bench.Unanswered(pingProbes)
	total, longest := bench.Unanswered(controlProbes)
	t.Logf("add-unit → three controllers settled in %s; scontrol ping unanswered at most %s (%d probes); no controller in control: longest %s, total %s (%d probes)",
		settled.Round(100*time.Millisecond), pingGap.Round(10*time.Millisecond), len(pingProbes), longest.Round(10*time.Millisecond), total.Round(10*time.Millisecond), len(controlProbes))
	durs := bench.ProbeDurations(controlProbes)
	slices.Sort(durs)
	t.Logf("in-control probes: median %s, longest %s; runs without a controller in control: %v", durs[len(durs)/2].Round(time.Millisecond), durs[len(durs)-1].Round(time.Millisecond), gaps(controlProbes))
	// What the controllers logged of their restarts, to place the gap.
	for _, u := range []string{"slurmctld/0", "slurmctld/1", added} {
		out, _, _ := c.tryExec(u, "grep", "-E", "Terminate signal|started on cluster|Running as primary|running in background mode|Saving all slurm state|REQUEST_CONTROL|taking over", ctlLogPath)
		t.Logf("%s: %s", u, strings.TrimSpace(out))
	}
	if pingGap > 0 {
		t.Errorf("for %s no controller answered scontrol ping, want one answering throughout", pingGap)
	}

	// One at a time, the controller in control last: slurmctld/1 restarted before
	// slurmctld/0, each once (a new process), and the new one runs.
	now := map[string]uint64{}
	for _, u := range []string{"slurmctld/0", "slurmctld/1", added} {
		now[u] = c.slurmctldStart(u)
	}
	for _, u := range []string{"slurmctld/0", "slurmctld/1"} {
		if now[u] == started[u] {
			t.Errorf("%s: slurmctld not restarted for the new SlurmctldHost list", u)
		}
	}
	if now["slurmctld/0"] <= now["slurmctld/1"] {
		t.Errorf("slurmctld/0 (in control) started at tick %d, not after slurmctld/1 (tick %d)", now["slurmctld/0"], now["slurmctld/1"])
	}
	if ping := c.slurm("scontrol", "ping"); strings.Count(ping, "is UP") != 3 {
		t.Errorf("scontrol ping: %s", ping)
	}

	// No job lost: the running one and the queued ones complete once, and a new one runs.
	late := c.sbatch("slurmd", "-N1", "--wrap", "true")
	for _, id := range append([]string{running, late}, queued...) {
		c.waitJobState(id, "COMPLETED", 3*time.Minute)
		if out := c.slurm("scontrol", "show", "job", "-o", id); !strings.Contains(out, " Restarts=0 ") {
			t.Errorf("job %s ran again: %s", id, out)
		}
	}
}

// slurmctldStart is when the slurmctld on unit's host started, in clock ticks since boot
// (/proc/<pid>/stat, field 22): every host shares the test machine's kernel, so the values
// order the starts across hosts.
func (c *cluster) slurmctldStart(unit string) uint64 {
	c.t.Helper()
	pid := strings.TrimSpace(c.exec(unit, "pgrep", "-o", "-x", "slurmctld"))
	stat := c.exec(unit, "cat", "/proc/"+pid+"/stat")
	// The command name, field 2, is in parentheses and may hold spaces: count after it.
	fields := strings.Fields(stat[strings.LastIndex(stat, ")")+1:])
	if len(fields) < 20 {
		c.t.Fatalf("%s: /proc/%s/stat: %q", unit, pid, stat)
	}
	v, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		c.t.Fatalf("%s: /proc/%s/stat start time: %v", unit, pid, err)
	}
	return v
}

// controlProbe probes the controllers from one unit's host.
type controlProbe struct {
	c    *cluster
	unit string
	mu   sync.Mutex
	// confs are the one-controller copies of slurm.conf made on the host.
	confs []string
}

// add writes on the probe's host a copy of its slurm.conf listing unit's controller alone.
func (p *controlProbe) add(unit string) {
	c := p.c
	c.t.Helper()
	host := strings.TrimSpace(c.exec(unit, "hostname"))
	full := c.exec(p.unit, "cat", ctlConf)
	one, err := bench.OnlyController([]byte(full), host)
	if err != nil {
		c.t.Fatal(err)
	}
	path := "/etc/slurm/probe-" + host + ".conf"
	ctx, cancel := c.ctx(time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	// m.Exec gives no standard input: the content goes as an argument.
	code, err := c.m.Exec(ctx, p.unit, []string{"sh", "-c", `printf '%s' "$2" > "$1"`, "sh", path, string(one)}, &bytes.Buffer{}, &stderr)
	if err != nil || code != 0 {
		c.t.Fatalf("%s: cannot write %s: exit %d, %v: %s", p.unit, path, code, err, stderr.String())
	}
	p.mu.Lock()
	p.confs = append(p.confs, path)
	p.mu.Unlock()
}

// run runs argv on the probe's host within ctx and reports whether it exited 0.
func (p *controlProbe) run(ctx context.Context, argv ...string) (string, bool) {
	var out bytes.Buffer
	code, err := p.c.m.Exec(ctx, p.unit, argv, &out, &bytes.Buffer{})
	return out.String(), err == nil && code == 0
}

// ping: `scontrol ping` with the full slurm.conf lists a controller UP (a backup in standby
// answers pings too).
func (p *controlProbe) ping(ctx context.Context) bool {
	out, ok := p.run(ctx, "env", "SLURM_CONF="+ctlConf, "scontrol", "ping")
	return ok && strings.Contains(out, "is UP")
}

// inControl: a controller asked alone serves squeue (one in standby refuses it at once), all
// asked at the same time; the first answer ends the probe, none within a second fails it (a
// client whose controller is down retries its connection for longer).
func (p *controlProbe) inControl(ctx context.Context) bool {
	p.mu.Lock()
	confs := append([]string(nil), p.confs...)
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	results := make(chan bool, len(confs))
	for _, conf := range confs {
		go func() {
			_, ok := p.run(ctx, "env", "SLURM_CONF="+conf, "squeue", "-h", "-o", "%i")
			results <- ok
		}()
	}
	for range confs {
		if <-results {
			return true
		}
	}
	return false
}

// gaps are the runs of unanswered probes, "start–end" (clock time), for the log.
func gaps(probes []bench.Probe) []string {
	var out []string
	var from time.Time
	for _, p := range probes {
		switch {
		case !p.OK && from.IsZero():
			from = p.Start
		case p.OK && !from.IsZero():
			out = append(out, from.Format("15:04:05.000")+"–"+p.End.Format("15:04:05.000"))
			from = time.Time{}
		}
	}
	return out
}
