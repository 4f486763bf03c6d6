package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/tests/charmpack"
	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
	"github.com/charmed-slurm/operators/tests/model"
)

// Built once by TestMain, into one directory: the juju-local CLI, the hook tools (jujuc) and
// the packed charms.
var (
	toolsBin      string
	jujucBin      string
	slurmctldPath string
	slurmdPath    string
	// fsClientPath is the test-only filesystem-client stand-in (tests/charms/filesystem-client).
	fsClientPath string
	sackdPath    string
	slurmdbdPath string
	mariadbPath  string
	// cosStandinPath is the cos_agent requirer stand-in (tests/charms/cos-agent).
	cosStandinPath string
)

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	tmp, err := os.MkdirTemp("", "e2ebuild")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(filepath.Dir(file))) // the repository root
	if toolsBin, err = model.BuildBinaries(context.Background(), filepath.Join(root, "tests"), tmp); err != nil {
		return 0, err
	}
	jujucBin = model.ToolsBeside(toolsBin)
	ctx := context.Background()
	slurmctldPath = filepath.Join(tmp, "slurmctld.charm")
	slurmdPath = filepath.Join(tmp, "slurmd.charm")
	fsClientPath = filepath.Join(tmp, "filesystem-client.charm")
	sackdPath = filepath.Join(tmp, "sackd.charm")
	slurmdbdPath = filepath.Join(tmp, "slurmdbd.charm")
	mariadbPath = filepath.Join(tmp, "mariadb.charm")
	cosStandinPath = filepath.Join(tmp, "cos-agent-standin.charm")
	for dir, out := range map[string]string{"slurmctld-operator": slurmctldPath, "slurmd-operator": slurmdPath, "sackd-operator": sackdPath,
		"slurmdbd-operator": slurmdbdPath, "tests/charms/mariadb": mariadbPath, "tests/charms/filesystem-client": fsClientPath,
		"tests/charms/cos-agent": cosStandinPath} {
		if err := charmpack.Pack(ctx, charmpack.Options{Dir: filepath.Join(root, dir), Out: out}); err != nil {
			return 0, err
		}
	}
	return m.Run(), nil
}

// ctlConf is the controller's slurm.conf, which every client command on the controller uses.
const ctlConf = "/etc/slurm/slurm.conf"

// cluster is a local model on real hosts running the two charms.
type cluster struct {
	t     *testing.T
	m     *model.Model
	trace *trace
	// net is the hosts' network (hosts the test adds itself, such as a storage host).
	net *hosts.Network
	// ctl is the controller unit whose host runs the client commands ("" for slurmctld/0).
	ctl string
	// storage is the storage host of the controllers' shared StateSaveLocation (addStorage).
	storage *hosts.Host
}

// ctlUnit is the controller unit whose host runs the client commands.
func (c *cluster) ctlUnit() string {
	if c.ctl == "" {
		return "slurmctld/0"
	}
	return c.ctl
}

// trace keeps the model's progress lines with their times.
type trace struct {
	mu    sync.Mutex
	lines []model.TimedLine
}

func (tr *trace) log(line string) {
	tr.mu.Lock()
	tr.lines = append(tr.lines, model.TimedLine{At: time.Now(), Text: line})
	tr.mu.Unlock()
}

// hookRuns are the hooks (and juju-exec commands) unit ran that started after t0.
func (c *cluster) hookRuns(unit string, t0 time.Time) []model.HookRun {
	c.trace.mu.Lock()
	lines := append([]model.TimedLine(nil), c.trace.lines...)
	c.trace.mu.Unlock()
	var out []model.HookRun
	for _, r := range model.HookRuns(lines) {
		if r.Unit == unit && !r.Start.Before(t0) {
			out = append(out, r)
		}
	}
	return out
}

// newCluster deploys slurmctld (with ctlConfig, if given) and n units of slurmd (application "slurmd"), integrates them and
// waits until every unit is active.
func newCluster(t *testing.T, n int, ctlConfig ...map[string]string) *cluster {
	t.Helper()
	return newClusterOn(t, "", n, ctlConfig...)
}

// newClusterOn is newCluster with every unit on a systemd machine of base (model.BaseBookworm,
// model.BaseTrixie), or on Pebble hosts when base is "".
func newClusterOn(t *testing.T, base string, n int, ctlConfig ...map[string]string) *cluster {
	t.Helper()
	return newClusterWith(t, base, nil, n, ctlConfig...)
}

// newClusterWith is newClusterOn with the machines' provisioner wrapped by wrap (nil: none),
// for tests that prepare a machine before its unit's install hook; with wrap, Pebble hosts
// (base "") come from a BaseMachines too.
func newClusterWith(t *testing.T, base string, wrap func(*model.BaseMachines) model.Provisioner, n int, ctlConfig ...map[string]string) *cluster {
	t.Helper()
	var cfg map[string]string
	if len(ctlConfig) > 0 {
		cfg = ctlConfig[0]
	}
	return newClusterFrom(t, clusterOptions{base: base, wrap: wrap, units: n, ctlConfig: cfg})
}

// clusterOptions are newClusterFrom's: newClusterWith's arguments, and the update-status
// interval (5 s when zero).
type clusterOptions struct {
	base         string
	wrap         func(*model.BaseMachines) model.Provisioner
	units        int
	ctlConfig    map[string]string
	updateStatus time.Duration
}

// newClusterFrom deploys slurmctld and o.units units of slurmd as newClusterWith does.
func newClusterFrom(t *testing.T, o clusterOptions) *cluster {
	t.Helper()
	base, wrap, n := o.base, o.wrap, o.units
	if o.updateStatus == 0 {
		o.updateStatus = 5 * time.Second
	}
	net := hoststest.New(t)
	dir, err := os.MkdirTemp("", "e2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) // runs after the model's close below
	// What the units' hosts and machines share with the test: the model's directory and the
	// tools (every other path under /tmp is theirs).
	binds := []string{dir, filepath.Dir(toolsBin)}
	var machines model.Provisioner = &model.HostMachines{Network: net, Binds: binds}
	if base != "" || wrap != nil {
		bm := &model.BaseMachines{Network: net, Default: base, Binds: binds}
		if base != "" {
			suite, ok := model.ImageSuite(base)
			if !ok {
				t.Fatalf("no image for base %q", base)
			}
			bm.Images = map[string]string{base: hoststest.Image(t, suite)}
		}
		machines = bm
		if wrap != nil {
			machines = wrap(bm)
		}
	}
	tr := &trace{}
	m, err := model.New(context.Background(), model.Options{
		Dir: dir, Name: "e2e", Tools: jujucBin, Referee: model.RefereeBeside(toolsBin),
		Machines:             machines,
		UpdateStatusInterval: o.updateStatus,
		Log:                  tr.log,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, m: m, trace: tr, net: net}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(hoststest.DumpMarker + "the model's debug log, slurmctld's and slurmd's logs")
			c.dumpDebug()
		}
		if err := m.Close(); err != nil {
			t.Errorf("cannot close model: %v", err)
		}
	})
	c.deploy(slurmctldPath, "slurmctld", 1, o.ctlConfig)
	if n > 0 {
		c.deploy(slurmdPath, "slurmd", n, nil)
		c.integrate("slurmctld", "slurmd")
	}
	c.waitActive()
	return c
}

func (c *cluster) ctx(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

func (c *cluster) deploy(charm, name string, n int, cfg map[string]string) {
	c.t.Helper()
	ctx, cancel := c.ctx(2 * time.Minute)
	defer cancel()
	if _, err := c.m.Deploy(ctx, model.DeployOptions{Charm: charm, Name: name, Units: n, Config: cfg}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) integrate(a, b string) {
	c.t.Helper()
	ctx, cancel := c.ctx(time.Minute)
	defer cancel()
	if _, err := c.m.Integrate(ctx, a, b); err != nil {
		c.t.Fatal(err)
	}
}

// waitIdle waits until no hook runs or is queued; the bound only keeps a broken cluster from
// hanging the suite.
func (c *cluster) waitIdle() {
	c.t.Helper()
	ctx, cancel := c.ctx(3 * time.Minute)
	defer cancel()
	if err := c.m.Wait(ctx, model.WaitOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) waitActive() {
	c.t.Helper()
	ctx, cancel := c.ctx(3 * time.Minute)
	defer cancel()
	if err := c.m.Wait(ctx, model.WaitOptions{Until: model.AllActive}); err != nil {
		c.t.Fatal(err)
	}
}

// unitStatus returns a unit's workload status and message.
func (c *cluster) unitStatus(unit string) (string, string) {
	st := c.m.Status(context.Background())
	app, _, _ := strings.Cut(unit, "/")
	a, ok := st.Applications[app]
	if !ok {
		return "", ""
	}
	u, ok := a.Units[unit]
	if !ok {
		return "", ""
	}
	return u.WorkloadStatus.Current, u.WorkloadStatus.Message
}

// runAction runs action name on unit with params and returns its run; an action that does
// not complete fails the test, naming its status, message and results.
func (c *cluster) runAction(unit, name string, params map[string]string) *model.ActionRun {
	c.t.Helper()
	run := c.tryAction(unit, name, params)
	if run.Status != "completed" {
		c.t.Fatalf("%s on %s: %s %q results %v", name, unit, run.Status, run.Message, run.Results)
	}
	return run
}

// tryAction runs action name on unit with params and returns its run, whatever its status;
// only an action the model cannot run fails the test.
func (c *cluster) tryAction(unit, name string, params map[string]string) *model.ActionRun {
	c.t.Helper()
	run, err := c.m.Run(c.bg(), unit, name, params)
	if err != nil {
		c.t.Fatal(err)
	}
	return run
}

// exec runs argv on a unit's host and returns its stdout; a non-zero exit fails the test.
func (c *cluster) exec(unit string, argv ...string) string {
	c.t.Helper()
	out, code, stderr := c.tryExec(unit, argv...)
	if code != 0 {
		c.t.Fatalf("%s: %q exited %d: %s", unit, argv, code, stderr)
	}
	return out
}

func (c *cluster) tryExec(unit string, argv ...string) (string, int, string) {
	ctx, cancel := c.ctx(time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code, err := c.m.Exec(ctx, unit, argv, &stdout, &stderr)
	if err != nil {
		c.t.Fatalf("%s: cannot exec %q: %v", unit, argv, err)
	}
	return stdout.String(), code, stderr.String()
}

// slurm runs a Slurm client command on the controller.
func (c *cluster) slurm(argv ...string) string {
	c.t.Helper()
	return c.exec(c.ctlUnit(), append([]string{"env", "SLURM_CONF=" + ctlConf}, argv...)...)
}

// nodes maps node name → "state partition features" from sinfo on the controller.
func (c *cluster) nodes() map[string]string {
	c.t.Helper()
	out := c.slurm("sinfo", "-h", "-N", "-o", "%N %T %R %f")
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		got[f[0]] = strings.Join(f[1:], " ")
	}
	return got
}

// waitIdleNodes waits (30 s at most) until the controller counts n IDLE nodes, in any partition.
func (c *cluster) waitIdleNodes(n int) {
	c.t.Helper()
	c.eventually(30*time.Second, fmt.Sprintf("%d idle nodes", n), func() (bool, string) {
		idle, seen := c.idleNodes()
		return idle == n, seen
	})
}

// idleNodes counts the IDLE nodes sinfo shows.
func (c *cluster) idleNodes() (int, string) {
	c.t.Helper()
	n := c.nodes()
	idle := 0
	for _, v := range n {
		if strings.HasPrefix(v, "idle ") {
			idle++
		}
	}
	return idle, fmt.Sprint(n)
}

var (
	nodeNameRE = regexp.MustCompile(`^NodeName=(\S+)`)
	jobStateRE = regexp.MustCompile(`JobState=(\S+)`)
)

// nodeNames lists every node record the controller holds (in any partition or none).
func (c *cluster) nodeNames() []string {
	c.t.Helper()
	out := c.slurm("scontrol", "show", "node", "-o")
	var names []string
	for _, line := range strings.Split(out, "\n") {
		if m := nodeNameRE.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		}
	}
	sort.Strings(names)
	return names
}

// eventually polls cond until it holds or d passes; cond describes what it last saw.
func (c *cluster) eventually(d time.Duration, what string, cond func() (bool, string)) {
	c.t.Helper()
	c.eventuallyEvery(d, 100*time.Millisecond, what, cond)
}

// eventuallyEvery is eventually polling every interval.
func (c *cluster) eventuallyEvery(d, interval time.Duration, what string, cond func() (bool, string)) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last string
	for {
		ok, seen := cond()
		if ok {
			return
		}
		last = seen
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s; last seen: %s", what, last)
		}
		<-tick.C
	}
}

// ctlLogPath is slurmctld's log on the controller host; ctlWaiterLog the controller charm's
// removal waiter's.
const (
	ctlLogPath   = "/var/log/slurm/slurmctld.log"
	ctlWaiterLog = "/var/lib/juju/agents/unit-slurmctld-0/charm/.slurmctld-waiter.log"
)

// reconfigures counts the reconfigures slurmctld has applied, and starts the times it
// started other than for a reconfigure (slurm.ParseControllerLog: from 23.11 a reconfigure
// starts a new process, with the same PID as the charm runs it, attached), from its own log. A
// log that records no start fails the test: the counts would otherwise compare equal whatever
// slurmctld did.
func (c *cluster) reconfigures() (reconfigures, starts int) {
	c.t.Helper()
	ev := slurm.ParseControllerLog([]byte(c.exec("slurmctld/0", "cat", ctlLogPath)))
	if ev.Starts == 0 {
		c.t.Fatalf("%s on slurmctld/0 records no start of slurmctld", ctlLogPath)
	}
	return ev.Reconfigures, ev.Starts
}

// ctlPID is the main slurmctld's PID on the controller host (its pid file: slurmctld also forks
// a helper, slurmscriptd, under the same name).
func (c *cluster) ctlPID() string {
	return strings.TrimSpace(c.exec("slurmctld/0", "cat", "/run/slurmctld.pid"))
}

// sbatch submits a batch job to partition p and returns its id.
func (c *cluster) sbatch(p string, args ...string) string {
	c.t.Helper()
	argv := append([]string{"sbatch", "--parsable", "-p", p, "-o", "/dev/null"}, args...)
	return strings.TrimSpace(c.slurm(argv...))
}

// jobState is a job's state from the controller (records stay for MinJobAge after the end).
func (c *cluster) jobState(id string) string {
	out, code, _ := c.tryExec(c.ctlUnit(), "env", "SLURM_CONF="+ctlConf, "scontrol", "show", "job", "-o", id)
	if code != 0 {
		return "GONE"
	}
	if m := jobStateRE.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return "UNKNOWN"
}

func (c *cluster) waitJobState(id, state string, d time.Duration) {
	c.t.Helper()
	c.eventually(d, "job "+id+" "+state, func() (bool, string) {
		s := c.jobState(id)
		return s == state, s
	})
}

// dumpDebug logs the model's debug log and the tail of slurmctld's log. It runs in a cleanup
// before the model is closed, so it never fails the test: a FailNow here would skip the close.
func (c *cluster) dumpDebug() {
	for _, l := range c.m.DebugLog() {
		c.t.Log(l)
	}
	ctx, cancel := c.ctx(time.Minute)
	defer cancel()
	var wlog bytes.Buffer
	if _, err := c.m.Exec(ctx, "slurmctld/0", []string{"cat", ctlWaiterLog}, &wlog, io.Discard); err == nil && wlog.Len() > 0 {
		c.t.Log("removal waiter's log:\n" + wlog.String())
	}
	var out bytes.Buffer
	st := c.m.Status(ctx)
	var ctls []string
	if a, ok := st.Applications["slurmctld"]; ok {
		for u := range a.Units {
			ctls = append(ctls, u)
		}
		sort.Strings(ctls)
	}
	for _, unit := range ctls {
		out.Reset()
		if _, err := c.m.Exec(ctx, unit, []string{"cat", ctlLogPath}, &out, io.Discard); err != nil {
			c.t.Logf("%s: no slurmctld.log: %v", unit, err)
		} else if log := out.String(); log != "" {
			lines := strings.Split(log, "\n")
			if len(lines) > 80 {
				lines = lines[len(lines)-80:]
			}
			c.t.Logf("%s: slurmctld.log (tail):\n%s", unit, strings.Join(lines, "\n"))
		}
	}
	// On systemd machines, what systemd says of each unit's daemons, and slurmd's own log.
	for _, a := range st.Applications {
		for unit, u := range a.Units {
			if st.Machines[u.Machine].BootID == "" { // a Pebble host: slurmd's own log
				if strings.HasPrefix(unit, "slurmd/") {
					out.Reset()
					c.m.Exec(ctx, unit, []string{"tail", "-n", "25", "/var/log/slurm/slurmd.log"}, &out, &out)
					c.t.Logf("%s: slurmd.log (tail):\n%s", unit, out.String())
				}
				continue
			}
			out.Reset()
			c.m.Exec(ctx, unit, []string{"sh", "-c", "systemctl --no-pager status slurmd.service slurmctld.service munge.service slurmdbd.service mariadb.service; journalctl --no-pager -n 40 -o short-precise -u slurmd -u slurmctld -u munge -u slurmdbd -u mariadb; tail -n 30 /var/log/slurm/slurmd.log /var/log/slurm/slurmdbd.log"}, &out, &out)
			c.t.Logf("%s: systemd and slurmd:\n%s", unit, out.String())
		}
	}
}

// bg is the context of one action or model call; the bound only keeps a broken cluster from
// hanging the suite.
func (c *cluster) bg() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	c.t.Cleanup(cancel)
	return ctx
}

// partition returns scontrol's one-line description of partition p, or "" when there is none.
func (c *cluster) partition(p string) string {
	out, code, _ := c.tryExec("slurmctld/0", "env", "SLURM_CONF="+ctlConf, "scontrol", "show", "partition", "-o", p)
	if code != 0 {
		return ""
	}
	return strings.TrimSpace(out)
}
