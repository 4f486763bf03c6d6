package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/systemd"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
	"github.com/charmed-slurm/operators/tests/model"
)

// MachineRaw is Slurm's own limit on systemd machines booted from one image, measured as
// RawCluster measures it on Pebble hosts: a controller machine runs slurmctld under systemd
// on RawConf with the auth the image's Slurm uses (auth/slurm with /etc/slurm/slurm.key from
// 23.11; auth/munge with munged before), and each compute machine is prepared (booted, key in
// place, munged running where munge is used, slurmd's unit given the drop-in the slurmd charm
// writes, with -Z --conf-server --conf) before `systemctl start slurmd` is timed until the node
// is IDLE on the controller.
type MachineRaw struct {
	net   *hosts.Network
	image string
	feat  slurm.Features
	key   []byte
	ctl   *hosts.Machine
	sc    *slurm.Client
	poll  time.Duration
	conf  string
	nodes int
	// reloads are the times of the `systemctl daemon-reload` that followed each compute
	// machine's slurmd drop-in (in the preparation, not in raw_join_s).
	reloads []time.Duration
}

// NewMachineRaw boots the controller machine of a raw cluster on n from image.
func NewMachineRaw(ctx context.Context, n *hosts.Network, image string) (*MachineRaw, error) {
	ctl, err := n.AddMachine(ctx, hosts.MachineOptions{Name: "rawctl", Image: image})
	if err != nil {
		return nil, err
	}
	out, err := ctl.Run(ctx, "slurmd", "-V")
	if err != nil {
		return nil, err
	}
	v, err := slurm.ParseVersion(strings.TrimSpace(string(out)))
	if err != nil {
		return nil, err
	}
	key := make([]byte, 1024)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	r := &MachineRaw{net: n, image: image, feat: slurm.FeaturesOf(v), key: key, ctl: ctl, poll: 20 * time.Millisecond,
		conf: "RealMemory=1000 CPUs=1 Feature=raw",
		sc:   &slurm.Client{Runner: command.Exec{Command: ctl.Command}, Conf: ControllerConf}}
	if err := r.prepareAuth(ctx, ctl); err != nil {
		return nil, err
	}
	conf := strings.NewReplacer("@CTL@", ctl.Name, "@ADDR@", ctl.Addr.String(),
		"AuthType=auth/munge", "AuthType="+r.feat.AuthType, "CredType=cred/munge", "CredType="+r.feat.CredType).Replace(RawConf)
	if err := writeMachineFile(ctl, ControllerConf, conf, 0o644); err != nil {
		return nil, err
	}
	if r.feat.CgroupDisabled {
		// As the slurmctld charm serves it (slurmctld-operator/cgroup.go): without it 26.05's
		// slurmd autodetects cgroup/v2 and exits on these machines' hybrid hierarchy.
		if err := writeMachineFile(ctl, RawCgroupConf, "CgroupPlugin=disabled\n", 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(ctl.Path("/var/spool/slurmctld"), 0o755); err != nil {
		return nil, err
	}
	spec := service.Spec{Name: "slurmctld", Command: []string{"/usr/sbin/slurmctld", "-D", "-f", ControllerConf}}
	if _, err := configureUnit(ctx, ctl, spec); err != nil {
		return nil, err
	}
	if _, err := ctl.Run(ctx, "systemctl", "start", "slurmctld"); err != nil {
		return nil, err
	}
	err = Poll(ctx, 20*time.Millisecond, func() (bool, string) {
		cs, err := r.sc.Ping(ctx)
		if err != nil {
			return false, err.Error()
		}
		return len(cs) > 0 && cs[0].Up, fmt.Sprint(cs)
	})
	if err != nil {
		log, _ := os.ReadFile(ctl.Path("/var/log/slurm/slurmctld.log"))
		return nil, fmt.Errorf("slurmctld on machine %s not up: %w\n%s", ctl.Name, err, log)
	}
	return r, nil
}

// prepareAuth installs the cluster's key on m as the charms do (owner and mode of
// slurm.Features' key file) and starts munged where the Slurm version uses munge.
func (r *MachineRaw) prepareAuth(ctx context.Context, m *hosts.Machine) error {
	owner, mode := "slurm:slurm", os.FileMode(0o600)
	if r.feat.Munge {
		owner, mode = "munge:munge", 0o400
	}
	if err := writeMachineFile(m, r.feat.AuthKeyFile, string(r.key), mode); err != nil {
		return err
	}
	if _, err := m.Run(ctx, "chown", owner, r.feat.AuthKeyFile); err != nil {
		return err
	}
	if r.feat.Munge {
		if _, err := m.Run(ctx, "systemctl", "start", "munge"); err != nil {
			return err
		}
	}
	return nil
}

// writeMachineFile writes a file of machine m (a path inside it), creating its directory.
func writeMachineFile(m *hosts.Machine, inside, content string, mode os.FileMode) error {
	p := m.Path(inside)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		return err
	}
	return os.Chmod(p, mode)
}

// configureUnit gives spec's packaged unit on m the drop-in and environment file the charms'
// systemd backend writes (libs/service/systemd), then reloads systemd and returns how long
// `systemctl daemon-reload` took.
func configureUnit(ctx context.Context, m *hosts.Machine, spec service.Spec) (time.Duration, error) {
	dropIn, err := systemd.DropIn(spec)
	if err != nil {
		return 0, err
	}
	if err := writeMachineFile(m, systemd.DropInFile(spec.Name), dropIn, 0o644); err != nil {
		return 0, err
	}
	if err := writeMachineFile(m, systemd.EnvironmentFile(spec.Name), systemd.EnvironmentFileContent(spec), 0o644); err != nil {
		return 0, err
	}
	t0 := time.Now()
	_, err = m.Run(ctx, "systemctl", "daemon-reload")
	return time.Since(t0), err
}

// Join prepares one more compute machine (timed as prepare: creation, boot, key, munged,
// unit drop-in) and then starts its slurmd with `systemctl start slurmd`; join is the time from
// that command until the node is IDLE. Then the machine is removed and its node deleted (not
// timed): the raw cluster holds one compute machine at most (see opCluster.joinLeave on the
// inotify budget machines share).
func (r *MachineRaw) Join(ctx context.Context) (join, prepare time.Duration, err error) {
	r.nodes++
	name := fmt.Sprintf("raw%d", r.nodes)
	t0 := time.Now()
	m, err := r.net.AddMachine(ctx, hosts.MachineOptions{Name: name, Image: r.image})
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		rerr := r.net.RemoveMachine(name)
		if rerr == nil {
			_, rerr = r.ctl.Run(context.WithoutCancel(ctx), "env", "SLURM_CONF="+ControllerConf, "scontrol", "delete", "nodename="+name)
		}
		if err == nil && rerr != nil {
			err = fmt.Errorf("cannot remove raw machine %s: %w", name, rerr)
		}
	}()
	if err := r.prepareAuth(ctx, m); err != nil {
		return 0, 0, err
	}
	spec := service.Spec{Name: "slurmd", Command: []string{"/usr/sbin/slurmd", "-D", "-Z", "-N", name,
		"--conf-server", netip.AddrPortFrom(r.ctl.Addr, 6817).String(), "--conf", r.conf}}
	reload, err := configureUnit(ctx, m, spec)
	if err != nil {
		return 0, 0, err
	}
	r.reloads = append(r.reloads, reload)
	prepare = time.Since(t0)
	logged := SlurmdWrote(func() string { return m.Path(SlurmdLogFile) })
	join, err = TimeToIdle(withTimeout(ctx, time.Minute), r.sc, name, r.poll, logged, func(ctx context.Context) error {
		_, err := m.Run(ctx, "systemctl", "start", "slurmd")
		return err
	})
	if err != nil {
		return 0, prepare, fmt.Errorf("cannot measure raw join of machine %s: %w", name, err)
	}
	return join, prepare, nil
}

// runMachines runs the machine parts: for each suite asked for (hoststest.Suites:
// "bookworm", "trixie", ...), the raw and operator joins interleaved and the idle leaves on
// machines of that suite ("<suite>"), the scale-outs on new machines ("<suite>-scale"), and
// "reboot" on machines of opts.RebootOn, in the same model as that suite's other parts.
func runMachines(ctx context.Context, opts *RunOptions, rep *Report, root, scratch string) error {
	var errs []error
	for _, suite := range hoststest.Suites {
		join, scale, reboot := opts.part(suite), opts.part(suite+"-scale"), opts.part("reboot") && opts.RebootOn == suite
		if !join && !scale && !reboot {
			continue
		}
		err := opts.setup(rep, suite+"-setup", func() error {
			return runSuite(ctx, opts, rep, root, scratch, suite, join, scale, reboot)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s machines: %w", suite, err))
			opts.progress("%s machines failed: %v", suite, err)
		}
	}
	return errors.Join(errs...)
}

// runSuite deploys the two charms on machines of suite (and, with join, a raw cluster on
// machines of the same image beside them) and runs the join/leave and reboot measurements.
// Every machine and namespace it made is gone when it returns, also on ctx's end: the model is
// closed and both networks with it (hosts.Network.Close stops each machine by its nspawn PID).
func runSuite(ctx context.Context, opts *RunOptions, rep *Report, root, scratch, suite string, join, scale, reboot bool) (err error) {
	base, ok := model.SuiteBase(suite)
	if !ok {
		return fmt.Errorf("no base for suite %q", suite)
	}
	mp, err := opts.modelParts(ctx, rep, root, scratch)
	if err != nil {
		return err
	}
	opts.progress("%s: image (scripts/images.sh)", suite)
	image, err := hoststest.EnsureImage(ctx, root, suite)
	if err != nil {
		return err
	}
	var raw *MachineRaw
	if join {
		opts.progress("%s: raw controller machine", suite)
		rn, err := newNetwork(ctx, opts, scratch, "raw-"+suite)
		if err != nil {
			return err
		}
		defer rn.Close()
		if raw, err = NewMachineRaw(ctx, rn, image); err != nil {
			return fmt.Errorf("raw cluster: %w", err)
		}
	}
	n, err := newNetwork(ctx, opts, scratch, "op-"+suite)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := n.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	// The slurmctld charm ends a rolling reboot's record at the update-status after the node is
	// back, and refuses the next reboot action until then: a shorter interval with reboots.
	updateStatus := time.Minute
	if reboot {
		updateStatus = 10 * time.Second
	}
	c, stop, err := startModel(ctx, n, mp.tools, "bench-"+suite, updateStatus, true, func(dir string) model.Provisioner {
		return &model.BaseMachines{Network: n, Images: map[string]string{base: image}, Default: base, Binds: []string{dir, filepath.Dir(mp.tools)}}
	})
	if err != nil {
		return err
	}
	defer stop(rep, suite+" failure (last 60 model lines)", &err)
	prefix := suite + "."
	opts.progress("%s: deploying slurmctld and 1 slurmd on machines, integrating", suite)
	if err := c.deploy(ctx, rep, mp.ctld, mp.slurmd, prefix, suite+" machines", 5*time.Minute); err != nil {
		return err
	}
	var errs []error
	if join {
		err := opts.timed(rep, suite, func() error {
			_, err := c.joinLeave(ctx, opts, rep, raw, prefix, true)
			return err
		})
		if err != nil {
			errs = append(errs, err)
		}
		if len(raw.reloads) > 0 {
			ms := Millis(raw.reloads)
			rep.Add(Figure{Name: prefix + "daemon_reload_ms", Value: Median(ms), Unit: "ms", Samples: len(ms), Values: ms,
				Note: "`systemctl daemon-reload` on a fresh " + suite + " machine (a floor: the charm's systemd backend reloads on Configure and on Enable)"})
		}
	}
	if scale && len(errs) == 0 {
		err := opts.timed(rep, suite+"-scale", func() error {
			for _, n := range opts.MachineScales {
				if err := c.machineScale(ctx, opts, rep, prefix, n); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	if reboot && len(errs) == 0 {
		err := opts.timed(rep, "reboot", func() error { return c.reboots(ctx, opts, rep, "reboot."+prefix, "slurmd/0") })
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Reboot kinds, in the order each sample runs them.
const (
	// RebootInside is `systemctl reboot` inside the machine (a kernel update's reboot, or
	// Slurm's RebootProgram run by hand): Juju sees it only after the fact and runs start
	// (then config-changed) once the machine is back.
	RebootInside = "inside"
	// RebootJuju is `juju-local reboot <unit>` (Model.Reboot): the unit runs stop, the machine
	// reboots, the unit runs start then config-changed after the boot.
	RebootJuju = "juju"
	// RebootSlurm is the slurmctld charm's reboot action on the node (scontrol reboot ASAP
	// nextstate=resume): Slurm drains it, its slurmd runs the slurmd charm's RebootProgram, and
	// the node returns to service when slurmd registers after the boot.
	RebootSlurm = "slurm"
)

// reboots reboots unit's machine opts.RebootSamples times in each way, interleaved (inside,
// juju, slurm, inside, ...), and adds the figures RebootFigures makes.
func (c *opCluster) reboots(ctx context.Context, opts *RunOptions, rep *Report, prefix, unit string) error {
	kinds := []string{RebootInside, RebootJuju, RebootSlurm}
	opts.progress("%s: %d reboots of %s's machine in each way (%s), interleaved", strings.TrimSuffix(prefix, "."), opts.RebootSamples, unit, strings.Join(kinds, ", "))
	var samples []RebootSample
	defer func() { rep.Add(RebootFigures(prefix, samples)...) }()
	traces := map[string][][]string{}
	for range opts.RebootSamples {
		for _, kind := range kinds {
			s, trace, err := c.rebootOnce(ctx, unit, kind)
			if err != nil {
				return err
			}
			samples = append(samples, s)
			traces[kind] = append(traces[kind], trace)
		}
	}
	if n := c.trace.count(func(l string) bool { return strings.HasPrefix(l, unit+": hook failed: ") }); n > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %d hooks of %s failed during the reboots (then retried): the local model ran them while the machine was down from an inside reboot, before its boot watcher saw it (see the model's trace)", strings.TrimSuffix(prefix, "."), n, unit))
	}
	for _, kind := range kinds {
		var idle []float64
		for _, s := range samples {
			if s.Kind == kind {
				idle = append(idle, s.ToIdle.Seconds())
			}
		}
		if len(idle) > 0 {
			rep.Traces = appendTrace(rep.Traces, prefix+kind+" reboot of "+unit+" (median sample)", traces[kind][medianIndex(idle)])
		}
	}
	return nil
}

// rebootOnce reboots unit's machine in the given way and measures it (RebootSample), then
// waits until the model has seen the new boot and run the hooks that follow it.
func (c *opCluster) rebootOnce(ctx context.Context, unit, kind string) (RebootSample, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	s := RebootSample{Kind: kind}
	mach, err := c.machine(unit)
	if err != nil {
		return s, nil, err
	}
	node := slurmd.NodeName(unit)
	n, err := c.sc.ShowNode(ctx, node)
	if err != nil {
		return s, nil, err
	}
	startedBefore, _ := n.Get("SlurmdStartTime")
	if kind == RebootSlurm {
		// The controller refuses a reboot action while its last rolling reboot is recorded as
		// under way: the record ends at the update-status after the node came back.
		if err := c.wait(ctx, 2*time.Minute, func(st *model.Status) bool {
			return !strings.Contains(st.Applications["slurmctld"].Units["slurmctld/0"].WorkloadStatus.Message, "; rebooting")
		}); err != nil {
			return s, nil, fmt.Errorf("the last rolling reboot never ended: %w", err)
		}
	}
	boots := mach.Boots()
	done := make(chan error, 1)
	t0 := time.Now()
	switch kind {
	case RebootInside:
		go func() {
			// systemctl may be cut off by the shutdown it starts: its error says nothing.
			mach.Command(ctx, []string{"systemctl", "reboot"}).Run()
			done <- nil
		}()
	case RebootJuju:
		go func() { done <- c.m.Reboot(ctx, unit) }()
	case RebootSlurm:
		run, err := c.m.Run(ctx, "slurmctld/0", "reboot", map[string]string{"nodes": node, "reason": "bench", "max-unavailable": "1"})
		if err == nil && (run.Status != "completed" || fmt.Sprint(run.Results["nodes"]) != node) {
			err = fmt.Errorf("reboot action %s: %s (results %v)", run.Status, run.Message, run.Results)
		}
		if err != nil {
			return s, nil, err
		}
		done <- nil
	default:
		return s, nil, fmt.Errorf("unknown reboot kind %q", kind)
	}
	// IDLE again: a new slurmd (its start time changed) registered, responding, not drained,
	// no reboot pending. A failed request ends the wait.
	var failed error
	requested := false
	err = Poll(ctx, c.poll, func() (bool, string) {
		if !requested {
			select {
			case failed = <-done:
				requested = true
				if failed != nil {
					return true, ""
				}
			default:
			}
		}
		n, err := c.sc.ShowNode(ctx, node)
		if err != nil {
			return false, err.Error()
		}
		started, _ := n.Get("SlurmdStartTime")
		st := n.State
		return started != startedBefore && st.Base == slurm.StateIdle && !st.NotResponding() && !st.Drain() && !st.Rebooting(),
			st.String() + " SlurmdStartTime=" + started
	})
	s.ToIdle = time.Since(t0)
	if !requested && err == nil {
		select {
		case failed = <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if failed != nil {
		return s, nil, fmt.Errorf("%s reboot of %s: %w", kind, unit, failed)
	}
	if err != nil {
		return s, nil, fmt.Errorf("%s not idle again after a %s reboot: %w", node, kind, err)
	}
	if mach.Boots() <= boots {
		return s, nil, fmt.Errorf("%s reboot of %s: the machine did not reboot", kind, unit)
	}
	if err := mach.WaitBooted(ctx); err != nil {
		return s, nil, err
	}
	bt, err := mach.BootTimes(ctx)
	if err != nil {
		return s, nil, err
	}
	s.BootDone, s.SystemdBoot = bt.Finished.Sub(t0), bt.Duration()
	id, err := mach.BootID(ctx)
	if err != nil {
		return s, nil, err
	}
	// The model has recorded the new boot and run the unit's hooks after it. A hook the
	// model started while the machine was down from an inside reboot (before its boot watcher
	// saw the reboot) fails and is retried after 5 s, as Juju retries: wait through it.
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Minute)
	defer wcancel()
	if err := c.m.Wait(wctx, model.WaitOptions{AllowErrors: true, Until: func(st *model.Status) bool {
		app, _, _ := strings.Cut(unit, "/")
		u, ok := st.Applications[app].Units[unit]
		return ok && st.Machines[u.Machine].BootID == id && u.WorkloadStatus.Current != "error" && u.JujuStatus.Current != "error"
	}}); err != nil {
		return s, nil, fmt.Errorf("the model never saw the new boot of %s: %w", unit, err)
	}
	if at := c.trace.times(t0, func(l string) bool { return l == unit+": running start hook" }); len(at) > 0 {
		s.StartHook = at[0].Sub(t0)
	}
	return s, c.trace.since(t0, subjects(unit, "slurmctld/0")...), nil
}
