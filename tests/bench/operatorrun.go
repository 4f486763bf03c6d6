package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/canonical/pebble/client"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/tests/charmpack"
	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/model"
)

// TimedProvisioner wraps a Provisioner and records how long each NewMachine took, by unit.
type TimedProvisioner struct {
	model.Provisioner
	mu      sync.Mutex
	created map[string]time.Duration
	done    map[string]time.Time
}

// NewMachine implements model.Provisioner.
func (p *TimedProvisioner) NewMachine(ctx context.Context, id, unit string) (model.Machine, error) {
	t0 := time.Now()
	m, err := p.Provisioner.NewMachine(ctx, id, unit)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.created == nil {
		p.created, p.done = map[string]time.Duration{}, map[string]time.Time{}
	}
	p.created[unit], p.done[unit] = time.Since(t0), time.Now()
	return m, err
}

// Created returns how long unit's machine took to create and when it was ready.
func (p *TimedProvisioner) Created(unit string) (time.Duration, time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.created[unit]
	return d, p.done[unit], ok
}

// tracer keeps the model's progress and log lines with their times.
type tracer struct {
	mu    sync.Mutex
	lines []traceLine
}

type traceLine struct {
	at   time.Time
	text string
}

func (t *tracer) log(line string) {
	t.mu.Lock()
	t.lines = append(t.lines, traceLine{time.Now(), line})
	t.mu.Unlock()
}

// since renders the lines logged since t0 that mention any of subjects, with their offsets.
func (t *tracer) since(t0 time.Time, subjects ...string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, l := range t.lines {
		if l.at.Before(t0) {
			continue
		}
		for _, s := range subjects {
			if strings.Contains(l.text, s) {
				out = append(out, fmt.Sprintf("+%7.3fs %s", l.at.Sub(t0).Seconds(), l.text))
				break
			}
		}
	}
	return out
}

// opCluster is a local model on real hosts running the two charms.
type opCluster struct {
	m     *model.Model
	net   *hosts.Network
	prov  *TimedProvisioner
	trace *tracer
	ctl   *hosts.Host
	sc    *slurm.Client
	poll  time.Duration
	// onMachines: the units are on systemd machines (no Pebble to trace).
	onMachines bool
}

// hostname is the name of unit's host or machine.
func (c *opCluster) hostname(unit string) (string, error) {
	st := c.m.State()
	u, ok := st.Units[unit]
	if !ok {
		return "", fmt.Errorf("no unit %s", unit)
	}
	ms, ok := st.Machines[u.Machine]
	if !ok || ms.Hostname == "" {
		return "", fmt.Errorf("unit %s has no machine yet", unit)
	}
	return ms.Hostname, nil
}

// host is the Pebble host of unit.
func (c *opCluster) host(unit string) (*hosts.Host, error) {
	name, err := c.hostname(unit)
	if err != nil {
		return nil, err
	}
	h := c.net.Host(name)
	if h == nil {
		return nil, fmt.Errorf("no host %s", name)
	}
	return h, nil
}

// unitPath is the path of inside on unit's host or machine, seen from here, or "" while the
// unit has none yet.
func (c *opCluster) unitPath(unit, inside string) string {
	if c.onMachines {
		if m, err := c.machine(unit); err == nil {
			return m.Path(inside)
		}
		return ""
	}
	if h, err := c.host(unit); err == nil {
		return h.Path(inside)
	}
	return ""
}

// machine is the systemd machine of unit.
func (c *opCluster) machine(unit string) (*hosts.Machine, error) {
	name, err := c.hostname(unit)
	if err != nil {
		return nil, err
	}
	m := c.net.Machine(name)
	if m == nil {
		return nil, fmt.Errorf("no machine %s", name)
	}
	return m, nil
}

// startModel starts a local model called name on network n, its state in a short temporary
// directory (Unix socket paths are short), running update-status every updateStatus; machines
// makes its provisioner from that directory.
// stop closes the model and removes the directory; given the run's error, it keeps the model's
// last lines in rep as trace traceName.
func startModel(ctx context.Context, n *hosts.Network, tools, name string, updateStatus time.Duration, onMachines bool, machines func(dir string) model.Provisioner) (c *opCluster, stop func(rep *Report, traceName string, err *error), err error) {
	dir, err := os.MkdirTemp("", "bm")
	if err != nil {
		return nil, nil, err
	}
	c = &opCluster{net: n, prov: &TimedProvisioner{Provisioner: machines(dir)}, trace: &tracer{}, poll: 20 * time.Millisecond, onMachines: onMachines}
	c.m, err = model.New(ctx, model.Options{Dir: dir, Name: name, Tools: model.ToolsBeside(tools), Machines: c.prov,
		UpdateStatusInterval: updateStatus, Log: c.trace.log})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return c, func(rep *Report, traceName string, err *error) {
		if cerr := c.m.Close(); cerr != nil && *err == nil {
			*err = cerr
		}
		os.RemoveAll(dir)
		if *err != nil {
			rep.Traces = appendTrace(rep.Traces, traceName, c.trace.tail(60))
		}
	}, nil
}

// hostMachines is startModel's provisioner of Pebble hosts on n: hosts keep their own /tmp, so
// the model's directory and the hook tools beside tools are bound into each.
func hostMachines(n *hosts.Network, tools string) func(dir string) model.Provisioner {
	return func(dir string) model.Provisioner {
		return &model.HostMachines{Network: n, Binds: []string{dir, filepath.Dir(tools)}}
	}
}

// deploy deploys slurmctld and one slurmd unit, integrates them, waits (up to timeout) until
// both are active and slurmd/0's node is IDLE, and records prefix+"deploy_s" (where says on
// what the units run).
func (c *opCluster) deploy(ctx context.Context, rep *Report, ctldCharm, slurmdCharm, prefix, where string, timeout time.Duration) error {
	t0 := time.Now()
	for _, app := range []struct{ charm, name string }{{ctldCharm, "slurmctld"}, {slurmdCharm, "slurmd"}} {
		if _, err := c.m.Deploy(ctx, model.DeployOptions{Charm: app.charm, Name: app.name}); err != nil {
			return err
		}
	}
	if _, err := c.m.Integrate(ctx, "slurmctld", "slurmd"); err != nil {
		return err
	}
	if err := c.wait(ctx, timeout, model.AllActive); err != nil {
		return fmt.Errorf("cluster not active: %w", err)
	}
	rep.Add(Figure{Name: prefix + "deploy_s", Value: time.Since(t0).Seconds(), Unit: "s",
		Note: "deploy slurmctld + 1 slurmd, integrate → all active (" + where + " included)"})
	if c.onMachines {
		m, err := c.machine("slurmctld/0")
		if err != nil {
			return err
		}
		c.sc = &slurm.Client{Runner: command.Exec{Command: m.Command}, Conf: ControllerConf}
	} else {
		h, err := c.host("slurmctld/0")
		if err != nil {
			return err
		}
		c.ctl = h
		c.sc = &slurm.Client{Runner: command.Exec{Command: h.Command}, Conf: ControllerConf}
	}
	if err := c.waitIdle(withTimeout(ctx, timeout), slurmd.NodeName("slurmd/0")); err != nil {
		return fmt.Errorf("slurmd/0 never idle: %w", err)
	}
	return nil
}

func (c *opCluster) wait(ctx context.Context, d time.Duration, until func(*model.Status) bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return c.m.Wait(ctx, model.WaitOptions{Until: until})
}

// waitIdle waits until node is IDLE.
func (c *opCluster) waitIdle(ctx context.Context, node string) error {
	return Poll(ctx, c.poll, func() (bool, string) {
		n, err := c.sc.ShowNode(ctx, node)
		if err != nil {
			return false, err.Error()
		}
		return n.State.Base == slurm.StateIdle && !n.State.NotResponding() && !n.State.Drain(), n.State.String()
	})
}

// waitGone waits until the controller has no record of node.
func (c *opCluster) waitGone(ctx context.Context, node string) error {
	return Poll(ctx, c.poll, func() (bool, string) {
		n, err := c.sc.ShowNode(ctx, node)
		if errors.Is(err, slurm.ErrUnknownNode) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, n.State.String()
	})
}

// ctlEvents reads what the controller's own files say: the reconfigures and starts in its
// slurmctld.log, and the main slurmctld's PID from its PID file (the PID inside the controller
// host's PID namespace; slurmctld's helper slurmscriptd has the same name, so no pidof).
func (c *opCluster) ctlEvents() (slurm.ControllerEvents, string) {
	return controllerEvents(c.ctl)
}

func controllerEvents(ctl *hosts.Host) (slurm.ControllerEvents, string) {
	log, _ := os.ReadFile(ctl.Path("/var/log/slurm/slurmctld.log"))
	pid, _ := os.ReadFile(ctl.ProcPath(ControllerPIDFile))
	return slurm.ParseControllerLog(log), strings.TrimSpace(string(pid))
}

// modelParts are what every model of a run needs: juju-local with the hook tools beside it
// (jujuc, model.ToolsBeside) and the two charms, packed.
type modelParts struct {
	tools, ctld, slurmd string
}

// modelParts builds the model's parts once per run (timed as part "build"), into a directory
// of their own under scratch: systemd machines bind-mount it, so it must not be the directory
// that holds their roots, and Pebble hosts bind it too (hostMachines).
func (o *RunOptions) modelParts(ctx context.Context, rep *Report, root, scratch string) (modelParts, error) {
	if o.built != nil {
		return *o.built, nil
	}
	o.progress("build: juju-local, the hook tools and the charms, once for every part")
	var mp modelParts
	err := o.timed(rep, "build", func() (err error) {
		dir := filepath.Join(scratch, "model")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if mp.tools, err = model.BuildBinaries(ctx, filepath.Join(root, "tests"), dir); err != nil {
			return err
		}
		mp.ctld, mp.slurmd = filepath.Join(dir, "slurmctld.charm"), filepath.Join(dir, "slurmd.charm")
		return packCharms(ctx, root, map[string]string{"slurmctld-operator": mp.ctld, "slurmd-operator": mp.slurmd})
	})
	if err != nil {
		return modelParts{}, err
	}
	o.built = &mp
	return mp, nil
}

// packCharms packs each charm directory (relative to root) into its file.
func packCharms(ctx context.Context, root string, charms map[string]string) error {
	for src, out := range charms {
		if err := charmpack.Pack(ctx, charmpack.Options{Dir: filepath.Join(root, src), Out: out}); err != nil {
			return err
		}
	}
	return nil
}

func runOperators(ctx context.Context, opts *RunOptions, rep *Report, root, scratch string, raw *RawCluster) (err error) {
	mp, err := opts.modelParts(ctx, rep, root, scratch)
	if err != nil {
		return err
	}
	tools := mp.tools
	n, err := newNetwork(ctx, opts, scratch, "op")
	if err != nil {
		return err
	}
	defer func() {
		if cerr := n.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	c, stop, err := startModel(ctx, n, tools, "bench", time.Minute, false, hostMachines(n, tools))
	if err != nil {
		return err
	}
	defer stop(rep, "failure (last 60 model lines)", &err)

	opts.progress("operators: deploying slurmctld and 1 slurmd, integrating")
	if err := c.deploy(ctx, rep, mp.ctld, mp.slurmd, "", "hosts", 3*time.Minute); err != nil {
		return err
	}

	var errs []error
	var units []string
	if opts.part("join") || opts.part("leave") {
		var rj rawJoiner
		if raw != nil {
			rj = raw
		}
		// Part leave needs units to remove: without part join it adds them untimed as joins.
		part := "join"
		if !opts.part("join") {
			part = "leave"
		}
		errs = append(errs, opts.timed(rep, part, func() (err error) {
			units, err = c.joinLeave(ctx, opts, rep, rj, "", false)
			return err
		}))
	}
	for _, p := range []struct {
		name string
		run  func() error
	}{
		{"leave", func() error {
			if err := c.leaveIdle(ctx, opts, rep, units); err != nil {
				return err
			}
			return c.leaveAfterJob(ctx, opts, rep)
		}},
		{"scale", func() error { return c.scale(ctx, opts, rep, raw) }},
		{"autoscale", func() error { return c.autoscaleBurst(ctx, opts, rep, root, scratch, tools, mp.slurmd) }},
		// Last: it sets the controller's MinJobAge.
		{"busy", func() error { return c.busy(ctx, opts, rep, mp.slurmd) }},
	} {
		if !opts.part(p.name) || errors.Join(errs...) != nil {
			continue
		}
		errs = append(errs, opts.timed(rep, p.name, p.run))
	}
	return errors.Join(errs...)
}

func withTimeout(ctx context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(ctx, d)
	_ = cancel // released when the parent ends; the waits here are short
	return ctx
}

func appendTrace(m map[string][]string, name string, lines []string) map[string][]string {
	if m == nil {
		m = map[string][]string{}
	}
	m[name] = lines
	return m
}

// times returns when the lines logged since t0 that match were logged.
func (t *tracer) times(t0 time.Time, match func(string) bool) []time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []time.Time
	for _, l := range t.lines {
		if !l.at.Before(t0) && match(l.text) {
			out = append(out, l.at)
		}
	}
	return out
}

// count returns how many lines so far match.
func (t *tracer) count(match func(string) bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, l := range t.lines {
		if match(l.text) {
			n++
		}
	}
	return n
}

func (t *tracer) tail(n int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	start := max(len(t.lines)-n, 0)
	t0 := time.Time{}
	if len(t.lines) > 0 {
		t0 = t.lines[0].at
	}
	for _, l := range t.lines[start:] {
		out = append(out, fmt.Sprintf("+%7.3fs %s", l.at.Sub(t0).Seconds(), l.text))
	}
	return out
}

// joinOne adds one slurmd unit and returns it, its join time from add-unit to IDLE, and its
// host's provisioning time (provisioned).
func (c *opCluster) joinOne(ctx context.Context) (unit string, total, host time.Duration, t0 time.Time, err error) {
	t0 = time.Now()
	units, err := c.m.AddUnit(ctx, "slurmd", 1)
	if err != nil {
		return "", 0, 0, t0, err
	}
	unit = units[0]
	wctx := withTimeout(ctx, 2*time.Minute)
	if err := AwaitLog(wctx, SlurmdWrote(func() string { return c.unitPath(unit, SlurmdLogFile) })); err != nil {
		return unit, 0, 0, t0, fmt.Errorf("%s never idle: slurmd wrote no log: %w", unit, err)
	}
	if err := c.waitIdle(wctx, slurmd.NodeName(unit)); err != nil {
		return unit, 0, 0, t0, fmt.Errorf("%s never idle: %w", unit, err)
	}
	total = time.Since(t0)
	host, _ = c.provisioned(unit, t0)
	return unit, total, host, t0, nil
}

// agentStarted matches the model's line for the start of the agent's service on unit's
// machine (tests/model: "<unit>: agent of machine <id> started").
func agentStarted(unit string) func(string) bool {
	return func(l string) bool {
		return strings.HasPrefix(l, unit+": agent of machine ") && strings.HasSuffix(l, " started")
	}
}

// provisioned is how long unit's host took from t0 until a hook could run on it, excluded
// from join_s: on a systemd machine until the model started its agent's service (Juju's
// machine agent is up before a unit is assigned to the machine; agent is that service's
// start, from the machine's creation), on a Pebble host until the host was created.
func (c *opCluster) provisioned(unit string, t0 time.Time) (host, agent time.Duration) {
	created, done, _ := c.prov.Created(unit)
	if at := c.trace.times(t0, agentStarted(unit)); len(at) > 0 {
		return at[0].Sub(t0), at[0].Sub(done)
	}
	return created, 0
}

// rawJoiner is a raw cluster whose joins are interleaved with the operators': RawCluster
// (Pebble hosts) or MachineRaw (systemd machines). Join returns the time from slurmd's start
// request to IDLE and the (excluded) time to prepare the host or machine.
type rawJoiner interface {
	Join(ctx context.Context) (join, prepare time.Duration, err error)
}

// joinLeave measures samples joins (each after a raw one when raw is set) and returns the
// units it added; figure names start with prefix ("" for Pebble hosts, "trixie." for trixie
// machines). On Pebble hosts the cluster grows by one node per join and the units stay (the
// caller's leaveIdle removes them, last unit first); on machines, with leave, each unit leaves
// right after its join (a systemd machine holds a dozen inotify instances, and every machine
// of the host's root user shares one budget, fs.inotify.max_user_instances: 128 by default),
// so the cluster stays at two nodes.
func (c *opCluster) joinLeave(ctx context.Context, opts *RunOptions, rep *Report, raw rawJoiner, prefix string, leave bool) ([]string, error) {
	samples := opts.Samples
	if c.onMachines {
		samples = opts.MachineSamples
	}
	if raw != nil {
		opts.progress("operators: %d %sjoins one after the other, each after a raw join", samples, prefix)
	} else {
		opts.progress("operators: %d %sjoins one after the other", samples, prefix)
	}
	var joins, hostsC, totals, rawJoins, rawHosts, leaves, agents []time.Duration
	var units []string
	var pts []Point
	traces := map[string][]string{}
	defer func() {
		addRawJoins(rep, prefix, rawJoins, rawHosts)
		c.addJoins(rep, prefix, joins, hostsC, totals, pts)
		if len(agents) > 0 {
			ms := Millis(agents)
			rep.Add(Figure{Name: prefix + "agent_start_ms", Value: Median(ms), Unit: "ms", Samples: len(ms), Values: ms,
				Note: "the local model's start of the machine agent's stand-in (jujud-machine-<id>, systemd-run) on a new machine: part of host_create_s, as Juju's agent is up before the unit is assigned"})
		}
		if len(joins) > 0 {
			// The trace of the median join says where the time goes.
			med := medianIndex(Seconds(joins))
			rep.Traces = appendTrace(rep.Traces, prefix+"join "+units[med]+" (median sample)", traces[units[med]])
		}
		addLeaves(rep, prefix, leaves)
	}()
	for i := 0; i < samples; i++ {
		if raw != nil {
			// Interleaved: a raw sample and an operator sample in turn, so that the machine's
			// load drifts over both alike.
			d, hc, err := raw.Join(ctx)
			if err != nil {
				return units, err
			}
			rawJoins, rawHosts = append(rawJoins, d), append(rawHosts, hc)
		}
		unit, total, host, t0, err := c.joinOne(ctx)
		if err != nil {
			return units, err
		}
		units = append(units, unit)
		joins, hostsC, totals = append(joins, total-host), append(hostsC, host), append(totals, total)
		nodes := i + 2
		if c.onMachines {
			nodes = 2
		}
		pts = append(pts, Point{Nodes: nodes, Seconds: (total - host).Seconds()})
		if err := c.wait(ctx, 2*time.Minute, nil); err != nil {
			return units, err
		}
		traces[unit] = c.trace.since(t0, subjects(unit, "slurmctld/0")...)
		if c.onMachines {
			if _, agent := c.provisioned(unit, t0); agent > 0 {
				agents = append(agents, agent)
			}
			traces[unit] = c.machineTrace(ctx, unit, t0, total, traces[unit])
		} else {
			traces[unit] = append(traces[unit], pebbleChanges(c, unit, t0)...)
		}
		if leave && c.onMachines {
			d, err := c.leaveOne(ctx, rep, prefix, unit, i == samples/2)
			if d > 0 {
				leaves = append(leaves, d)
			}
			if err != nil {
				return units, err
			}
		}
	}
	return units, nil
}

// leaveIdle removes units one after the other, last first, each when the model has settled,
// and adds the idle-leave figures.
func (c *opCluster) leaveIdle(ctx context.Context, opts *RunOptions, rep *Report, units []string) error {
	opts.progress("operators: %d leaves of idle units", len(units))
	var leaves []time.Duration
	defer func() { addLeaves(rep, "", leaves) }()
	for i := len(units) - 1; i >= 0; i-- {
		d, err := c.leaveOne(ctx, rep, "", units[i], i == len(units)/2)
		if d > 0 {
			leaves = append(leaves, d)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// leaveOne removes unit and returns the time until its node record is gone; then it waits
// for the model to settle and checks the node stays gone. With traced the leave's trace goes
// into rep.
func (c *opCluster) leaveOne(ctx context.Context, rep *Report, prefix, unit string, traced bool) (time.Duration, error) {
	t0 := time.Now()
	if err := c.m.RemoveUnit(ctx, unit); err != nil {
		return 0, err
	}
	if err := c.waitGone(withTimeout(ctx, 2*time.Minute), slurmd.NodeName(unit)); err != nil {
		return 0, fmt.Errorf("%s never gone: %w", unit, err)
	}
	d := time.Since(t0)
	if err := c.wait(ctx, 2*time.Minute, nil); err != nil {
		return d, err
	}
	c.checkGone(ctx, rep, slurmd.NodeName(unit), "an idle leave")
	if traced {
		rep.Traces = appendTrace(rep.Traces, prefix+"leave "+unit+" (idle)", c.trace.since(t0, subjects(unit, "slurmctld/0")...))
	}
	return d, nil
}

// addLeaves adds the idle-leave figures (names starting with prefix) of leaves.
func addLeaves(rep *Report, prefix string, leaves []time.Duration) {
	if len(leaves) == 0 {
		return
	}
	ls := Summarize(Seconds(leaves))
	rep.Add(Figure{Name: prefix + "leave_idle_s", Value: ls.Median, Unit: "s", Samples: ls.N, Values: Seconds(leaves), Target: Max(1.0),
		Note: "remove-unit of an idle unit → node record gone (median)"},
		Figure{Name: prefix + "leave_idle_s.p90", Value: ls.P90, Unit: "s", Samples: ls.N})
}

// addJoins adds the operator join figures (names starting with prefix) and their series.
func (c *opCluster) addJoins(rep *Report, prefix string, joins, hostsC, totals []time.Duration, pts []Point) {
	if len(joins) == 0 {
		return
	}
	js, hs, ts := Summarize(Seconds(joins)), Summarize(Seconds(hostsC)), Summarize(Seconds(totals))
	hostNote, series := "the local model's host provisioning (netns, mounts, Pebble): excluded from join_s", "add-unit (operators)"
	if c.onMachines {
		hostNote = "the local model's machine provisioning (netns, overlay root, systemd-nspawn boot until systemd reports running): excluded from join_s"
		series = "add-unit (operators, " + strings.TrimSuffix(prefix, ".") + " machines)"
	}
	rep.Add(
		Figure{Name: prefix + "join_s.median", Value: js.Median, Unit: "s", Samples: js.N, Values: Seconds(joins),
			Note: "add-unit → node IDLE through the operators, host creation excluded"},
		Figure{Name: prefix + "join_s.p90", Value: js.P90, Unit: "s", Samples: js.N},
		Figure{Name: prefix + "host_create_s", Value: hs.Median, Unit: "s", Samples: hs.N, Values: Seconds(hostsC), Note: hostNote},
		Figure{Name: prefix + "join_total_s", Value: ts.Median, Unit: "s", Samples: ts.N, Values: Seconds(totals), Note: "add-unit → IDLE including host creation"},
	)
	rep.Series = append(rep.Series, Series{Name: series, Points: pts})
}

// pebbleChanges renders the Pebble changes (service starts) on unit's host with their spawn
// and ready times relative to t0: how long the operator waited on Pebble.
func pebbleChanges(c *opCluster, unit string, t0 time.Time) []string {
	h, err := c.host(unit)
	if err != nil {
		return []string{"pebble: " + err.Error()}
	}
	pc, err := client.New(&client.Config{Socket: h.PebbleSocket()})
	if err != nil {
		return []string{"pebble: " + err.Error()}
	}
	chs, err := pc.Changes(&client.ChangesOptions{Selector: client.ChangesAll})
	if err != nil {
		return []string{"pebble: " + err.Error()}
	}
	sort.Slice(chs, func(i, j int) bool { return chs[i].SpawnTime.Before(chs[j].SpawnTime) })
	var out []string
	for _, ch := range chs {
		out = append(out, PebbleChangeLine(t0, ch.Summary, ch.Status, ch.SpawnTime, ch.ReadyTime))
	}
	return out
}

// PebbleChangeLine renders a Pebble change with its spawn and ready times relative to t0; a
// change still in progress has no ready time (Pebble's zero time) and says so.
func PebbleChangeLine(t0 time.Time, summary, status string, spawn, ready time.Time) string {
	readyText := "not ready yet"
	if !ready.IsZero() {
		readyText = fmt.Sprintf("ready at %+.3fs", ready.Sub(t0).Seconds())
	}
	return fmt.Sprintf("%+8.3fs pebble change %q spawned; %s (%s)", spawn.Sub(t0).Seconds(), summary, readyText, status)
}

// subjects are the trace prefixes of units: progress lines ("slurmd/1: ...") and debug-log
// lines ("unit-slurmd-1: ...").
func subjects(units ...string) []string {
	var out []string
	for _, u := range units {
		out = append(out, u+":", "unit-"+strings.ReplaceAll(u, "/", "-")+":")
	}
	return out
}

// checkGone notes in rep when node has come back after it was deleted.
func (c *opCluster) checkGone(ctx context.Context, rep *Report, node, when string) {
	if n, err := c.sc.ShowNode(ctx, node); err == nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("node %s came back after %s (state %s): it was deleted while its slurmd still ran", node, when, n.State))
	}
}

func medianIndex(xs []float64) int {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	return idx[(len(idx)-1)/2]
}

// leaveAfterJob measures job end → node gone for a unit removed while a job runs on it.
func (c *opCluster) leaveAfterJob(ctx context.Context, opts *RunOptions, rep *Report) error {
	samples := opts.Samples
	opts.progress("operators: %d leaves with a running job", samples)
	var leaves []time.Duration
	for i := 0; i < samples; i++ {
		unit, _, _, _, err := c.joinOne(ctx)
		if err != nil {
			return err
		}
		if err := c.wait(ctx, 2*time.Minute, nil); err != nil {
			return err
		}
		node := slurmd.NodeName(unit)
		h, err := c.host(unit)
		if err != nil {
			return err
		}
		out, err := c.ctl.RunEnv(ctx, []string{"SLURM_CONF=" + ControllerConf}, "sbatch", "--parsable", "-p", "slurmd", "-w", node,
			"-o", "/dev/null", "--wrap", "while [ ! -e /var/lib/juju/bench-release ]; do sleep 0.02; done")
		if err != nil {
			return fmt.Errorf("cannot submit a job to %s: %w", node, err)
		}
		job := strings.TrimSpace(string(out))
		if err := Poll(withTimeout(ctx, time.Minute), c.poll, func() (bool, string) {
			jobs, err := c.sc.JobsOnNode(ctx, node)
			if err != nil {
				return false, err.Error()
			}
			return len(jobs) == 1 && jobs[0].State == "RUNNING", fmt.Sprint(jobs)
		}); err != nil {
			return fmt.Errorf("job %s never ran on %s: %w", job, node, err)
		}
		if err := c.m.RemoveUnit(ctx, unit); err != nil {
			return err
		}
		// The operator drains the node and waits for the job.
		if err := Poll(withTimeout(ctx, time.Minute), c.poll, func() (bool, string) {
			n, err := c.sc.ShowNode(ctx, node)
			if err != nil {
				return false, err.Error()
			}
			return n.State.Drain(), n.State.String()
		}); err != nil {
			return fmt.Errorf("%s never drained: %w", node, err)
		}
		t0 := time.Now()
		if err := os.WriteFile(h.Path("/var/lib/juju/bench-release"), nil, 0o644); err != nil {
			return err
		}
		if err := c.waitGone(withTimeout(ctx, 2*time.Minute), node); err != nil {
			return fmt.Errorf("%s never gone after its job ended: %w", node, err)
		}
		leaves = append(leaves, time.Since(t0))
		if i == 0 {
			rep.Traces = appendTrace(rep.Traces, "leave "+unit+" after its job", c.trace.since(t0.Add(-time.Second), subjects(unit, "slurmctld/0")...))
		}
		if err := c.wait(ctx, 2*time.Minute, nil); err != nil {
			return err
		}
		c.checkGone(ctx, rep, node, "a leave after a job")
	}
	ls := Summarize(Seconds(leaves))
	rep.Add(Figure{Name: "leave_after_job_s", Value: ls.Median, Unit: "s", Samples: ls.N, Values: Seconds(leaves), Target: Max(1.0),
		Note: "job end → node record gone, unit removed while the job ran (median)"},
		Figure{Name: "leave_after_job_s.p90", Value: ls.P90, Unit: "s", Samples: ls.N})
	return nil
}
