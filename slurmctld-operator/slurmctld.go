package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/poll"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// startWait bounds the time a slurmctld just started or restarted has to answer `scontrol
// ping`: the first start waits for it (start); a restart returns at once and fails when a
// later pass finds it not answering after that (settle).
const startWait = 30 * time.Second

// slurmctldDaemon is slurmctld on this host: its configuration brought to the charm's, started,
// reconfigured or restarted when that changed, and its partitions checked after.
type slurmctldDaemon struct{ h *hook }

// ensure writes the key, slurm.conf and partitions and makes sure munged and
// slurmctld run, reconfiguring a running slurmctld once if its configuration changed.
func (ctl slurmctldDaemon) ensure(ctx context.Context) error {
	h := ctl.h
	feat, err := h.features(ctx)
	if err != nil {
		return err
	}
	if err := (authKey{h}).ensure(ctx, feat); err != nil {
		return err
	}
	cgroupChanged, err := ctl.writeGresCgroup(ctx, feat)
	if err != nil {
		return err
	}
	st, err := h.storage(ctx)
	if err != nil {
		return err
	}
	moved := false // moveState stopped a running slurmctld
	switch {
	case st.Mounted && !h.st.StateShared && h.st.AppliedConf != "":
		// A backup becoming the leader: it runs on the shared state already.
		h.st.StateShared = true
	case st.Mounted && !h.st.StateShared:
		if moved, err = ctl.moveState(ctx); err != nil {
			return err
		}
	}
	if h.ctls, err = h.planControllers(ctx, st); err != nil {
		return err
	}
	prevExtra := h.st.ExtraKeys
	changed, err := h.conf.change(ctx, func(ctx context.Context) (bool, error) {
		confChanged, err := slurmConf{h}.write(ctx, feat)
		if err != nil {
			return false, err
		}
		partsChanged, err := slurmConf{h}.syncPartitions(ctx, nil)
		return confChanged || partsChanged, err
	})
	var ce *slurm.ConfigError
	switch {
	case errors.As(err, &ce) && len(h.extra) > 0:
		// Slurm cannot read slurm.conf with these parameters: the live file, and a running
		// slurmctld, keep the previous ones; a controller that is not running yet stays so.
		h.st.ExtraKeys = prevExtra
		h.st.ConfRefused = "slurm-conf-parameters: " + refusal(ce)
		h.logf(ctx, juju.LevelWarning, "slurm.conf left as it was: %v", err)
		return nil
	case err != nil:
		return err
	}
	h.st.ConfRefused = ""
	hosts := hostsOf(h.ctls)
	if err := (standby{h}).refresh(ctx); err != nil {
		return err
	}
	running := ctl.live(ctx)
	if err := (rolling{h}).plan(ctx); err != nil {
		return err
	}
	waits := false // the new SlurmctldHost list waits for this unit's restart turn
	switch {
	case h.st.StoodDown != nil:
		// The files are written; slurmctld starts with them when takeover is run here.
		if err := (standby{h}).hold(ctx); err != nil {
			return err
		}
	case moved:
		// Stopped to move the state: it starts again at once.
		if err := ctl.restartForControllers(ctx, hosts, moved); err != nil {
			return err
		}
	case running && len(h.st.RunningHosts) > 0 && !slices.Equal(h.st.RunningHosts, hosts),
		running && len(h.st.RunningHosts) == 0 && len(hosts) > 1:
		// SlurmctldHost is read at start only: one controller at a time (rolling.go).
		if len(live(h.ctls)) > 1 && !(rolling{h}).mine(hosts) {
			waits = true
			break
		}
		if err := (rolling{h}).restartSelf(ctx, hosts); err != nil {
			return err
		}
	case running:
		if err := ctl.apply(ctx, changed || cgroupChanged); err != nil {
			return err
		}
	default:
		if err := ctl.start(ctx); err != nil {
			return err
		}
	}
	if !waits {
		h.st.RunningHosts = hosts
	}
	h.st.Controllers = h.ctls
	h.st.ClusterName = h.cfg.ClusterName
	// The Slurm version in juju status's Version column, once per version.
	if err := h.k.SetVersion(ctx, h.st.SlurmVersion); err != nil {
		return err
	}
	return publisher{h}.openPort(ctx)
}

// writeGresCgroup writes gres.conf and cgroup.conf; it reports whether cgroup.conf changed.
func (ctl slurmctldDaemon) writeGresCgroup(ctx context.Context, feat slurm.Features) (bool, error) {
	h := ctl.h
	wrote, err := writeGresConf(ctx, h.c.Settings)
	if err != nil {
		return false, err
	}
	if wrote {
		h.logf(ctx, juju.LevelInfo, "wrote %s (Include %s)", gresConfPath, gresLocalPath)
	}
	cgroupChanged, err := writeCgroupConf(ctx, h.c.Settings, feat)
	if err != nil {
		return false, err
	}
	if cgroupChanged {
		h.logf(ctx, juju.LevelInfo, "wrote %s (CgroupPlugin=disabled)", cgroupConfPath)
	}
	return cgroupChanged, nil
}

// restartForControllers restarts slurmctld so that it runs with the controllers hosts
// (SlurmctldHost is read at start only), from the shared storage when moved (moveState
// stopped it); like every restart, a later pass finishes it (settle).
func (ctl slurmctldDaemon) restartForControllers(ctx context.Context, hosts []string, moved bool) error {
	what := "run with the controllers " + strings.Join(hosts, ",")
	if moved {
		what = "run from the shared storage with the controllers " + strings.Join(hosts, ",")
	}
	return ctl.restart(ctx, restartControllers, what)
}

// moveState moves the controller's state to the shared storage, once, with slurmctld stopped:
// the state directory is copied there when the shared one holds no state yet; a shared
// directory already holding this cluster's state (another controller ran on it) is kept, one
// of another cluster is refused. slurmctld starts again from the shared state when the hook
// has rewritten slurm.conf; stopped reports whether it was running.
func (ctl slurmctldDaemon) moveState(ctx context.Context) (stopped bool, err error) {
	h := ctl.h
	c := h.c
	dst := c.Path(sharedStateDir)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return false, fmt.Errorf("cannot create %s on the shared storage: %w", sharedStateDir, err)
	}
	if data, err := os.ReadFile(filepath.Join(dst, "clustername")); err == nil {
		got, _, _ := strings.Cut(strings.TrimSpace(string(data)), "|")
		if got != "" && got != h.cfg.ClusterName {
			return false, fmt.Errorf("the shared storage holds the state of cluster %q, not %q: refusing to share it", got, h.cfg.ClusterName)
		}
	}
	entries, err := os.ReadDir(dst)
	if err != nil {
		return false, fmt.Errorf("cannot read %s: %w", sharedStateDir, err)
	}
	if c.running(ctx) {
		if err := h.progress(ctx, "stopping slurmctld to move its state to the shared storage"); err != nil {
			return false, err
		}
		if err := h.services().Stop(ctx, svcSlurmctld); err != nil {
			return false, fmt.Errorf("cannot stop slurmctld: %w", err)
		}
		stopped = true
	}
	if len(entries) == 0 {
		if err := copyTree(c.Path(stateSaveDir), dst); err != nil {
			return false, fmt.Errorf("cannot copy %s to %s: %w", stateSaveDir, sharedStateDir, err)
		}
		h.logf(ctx, juju.LevelInfo, "moved the controller's state from %s to the shared %s", stateSaveDir, sharedStateDir)
	} else {
		h.logf(ctx, juju.LevelInfo, "the shared %s holds this cluster's state already: keeping it", sharedStateDir)
	}
	uid, gid, err := c.UserIDs(slurmUser)
	if err != nil {
		return false, err
	}
	if err := filepath.WalkDir(dst, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}); err != nil {
		return false, fmt.Errorf("cannot give %s to %s: %w", sharedStateDir, slurmUser, err)
	}
	h.st.StateShared = true
	return stopped, nil
}

// copyTree copies the regular files and directories below src into dst (modes kept, each
// file fsynced: the state must be on the shared storage before slurmctld starts from it).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == src {
				return nil // no state yet
			}
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, info.Mode().Perm())
		case !d.Type().IsRegular():
			return nil // sockets, links: no state of slurmctld's
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
		if err != nil {
			return err
		}
		_, werr := f.Write(data)
		return errors.Join(werr, f.Sync(), f.Close())
	})
}

// live reports whether slurmctld runs or a restart of it is under way: a configuration change
// then goes through apply, and start (which waits) is only for a slurmctld that is not
// running at all.
func (ctl slurmctldDaemon) live(ctx context.Context) bool {
	return ctl.h.st.Restart != nil || ctl.h.c.running(ctx)
}

// start defines, enables and starts slurmctld and waits (bounded by startWait) until it
// answers. This is the one wait for Slurm in a controller hook: a slurmctld that is not
// running holds no job in its scheduler and no node registered, no action on the controller
// can do anything without it, and the controller data the hook then publishes sends the
// slurmd units to it; a slurmctld that does not come up fails the hook, naming its log.
// Not so for the primary while another controller is in control (a configure hook finding
// the primary's slurmctld stopped, by an operator or before its supervisor started it at
// boot, while the backup took over): that one serves the cluster, and the primary answers
// only once it gave control up, which Slurm may take CONTROL_TIMEOUT − 1 = 29 s to answer
// (reclaimWait), as long as startWait: the hook waits for nothing then, and a later status
// names the controller in control.
func (ctl slurmctldDaemon) start(ctx context.Context) error {
	h := ctl.h
	c := h.c
	if err := ctl.launch(ctx); err != nil {
		return err
	}
	// A heartbeat read (ok) means several controllers in h.ctls, the primary first.
	if act, ok := h.activeController(); ok && act.Unit != h.hc.Event.Unit && h.ctls[0].Unit == h.hc.Event.Unit {
		h.logf(ctx, juju.LevelInfo, "slurmctld started; %s is in control: Slurm hands control back to this primary once it gives it up", act.Unit)
		return nil
	}
	host, err := c.Hostname()
	if err != nil {
		return fmt.Errorf("cannot find the host name: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	var last error
	err = poll.Until(wctx, c.poll(), func(ctx context.Context) (bool, error) {
		last = answers(ctx, h.client(), host)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("slurmctld started but does not answer (see %s): %w", slurmctldLog, errors.Join(last, err))
	}
	h.logf(ctx, juju.LevelInfo, "slurmctld started")
	return nil
}

// launch defines, enables and starts slurmctld, and waits for nothing: start's first part,
// and the whole of it for the takeover action on a controller that stood down, which waits
// for the heartbeat instead (standby.waitInControl).
func (ctl slurmctldDaemon) launch(ctx context.Context) error {
	h := ctl.h
	svc := h.services()
	if err := h.progress(ctx, "starting slurmctld"); err != nil {
		return err
	}
	// StayStopped: a slurmctld that a backup's takeover shut down (it exits 0) stays down
	// (standby.go); a crash is restarted.
	spec := service.Spec{Name: svcSlurmctld, Summary: "Slurm controller", Command: []string{"/usr/sbin/slurmctld", "-D", "-f", confPath}, StayStopped: true}
	if err := svc.Configure(ctx, spec); err != nil {
		return fmt.Errorf("cannot configure slurmctld: %w", err)
	}
	if err := svc.Enable(ctx, svcSlurmctld); err != nil {
		return fmt.Errorf("cannot enable slurmctld: %w", err)
	}
	if err := svc.Start(ctx, svcSlurmctld); err != nil {
		return fmt.Errorf("cannot start slurmctld (see %s): %w", slurmctldLog, err)
	}
	// slurm.conf as written is what slurmctld now runs with.
	h.st.GresRunning = h.st.gresTypes()
	h.st.AccountingRunning = h.st.Accounting.storage()
	return nil
}

// answers returns nil when the slurmctld on host answers `scontrol ping`: with several
// controllers in slurm.conf, the one listed under host (a backup standing by answers too);
// with one, the one listed. Another controller answering says nothing of this one (a
// restarted primary while its backup stands by).
func answers(ctx context.Context, cl *slurm.Client, host string) error {
	ctls, err := cl.Ping(ctx)
	if len(ctls) <= 1 {
		return err
	}
	for _, c := range ctls {
		if c.Host == host && c.Up {
			return nil
		}
		if c.Host == host {
			return fmt.Errorf("cannot ping slurmctld on %s (%s): %w", host, c.Role, slurm.ErrControllerUnreachable)
		}
	}
	return fmt.Errorf("cannot ping slurmctld on %s: scontrol ping lists no controller there", host)
}

// apply makes a running slurmctld read its configuration files after they changed: one
// restart when its accounting storage or GresTypes differs from what it runs with (Slurm
// loads its accounting plugin at start only, and ignores a GresTypes change on reconfigure),
// else one `scontrol reconfigure` when changed is set. A restart still under way (the hook
// settled it first, begin) is not restarted again unless the configuration asks for another
// one; a reconfigure waits for it (reconfigure).
func (ctl slurmctldDaemon) apply(ctx context.Context, changed bool) error {
	h := ctl.h
	if h.st.accountingRestartNeeded() {
		return ctl.restartForAccounting(ctx)
	}
	if h.st.gresRestartNeeded() {
		return ctl.restartForGres(ctx)
	}
	if changed {
		return ctl.reconfigure(ctx)
	}
	return nil
}

// applies reports whether apply, given changed, changes anything: a restart is due, or the
// files changed.
func (ctl slurmctldDaemon) applies(changed bool) bool {
	return changed || ctl.h.st.accountingRestartNeeded() || ctl.h.st.gresRestartNeeded()
}

// restartForGres restarts slurmctld so that it manages the GresTypes slurm.conf lists (a
// restart keeps the dynamic nodes and the jobs, from the saved state); the restart is
// finished by a later pass (settle).
func (ctl slurmctldDaemon) restartForGres(ctx context.Context) error {
	h := ctl.h
	return ctl.restart(ctx, restartGres, fmt.Sprintf("apply GresTypes=%s (was %q)", h.st.gresTypes(), h.st.GresRunning))
}

// restartForAccounting restarts slurmctld so that it loads the accounting storage slurm.conf
// names. Running and queued jobs survive it (StateSaveLocation); the hook waits for no job,
// nor for slurmctld to answer: a later pass finishes the restart (settle), or, when
// slurmctld has not answered with accounting by the deadline, turns accounting off again,
// naming the failure, and restarts slurmctld as it was, so that it keeps scheduling
// (rollBackAccounting).
//
// A cluster that slurmdbd does not know yet registers itself at this start. Slurm 23.02 and
// later keep a ClusterID in StateSaveLocation/clustername, made up at the first start without
// accounting, and a slurmdbd before 26.05 registers the cluster under an id of its own:
// slurmctld then refuses to start ("CLUSTER ID MISMATCH"). So for a cluster slurmdbd does not
// hold, the file goes first and slurmctld takes slurmdbd's id (the check is there against the
// controllers of two clusters sharing one StateSaveLocation, which this is not: with a backup,
// this cluster's controllers share the file, on the shared storage, stateSaveLocation).
func (ctl slurmctldDaemon) restartForAccounting(ctx context.Context) error {
	h := ctl.h
	want := h.st.Accounting.storage()
	if want == "" {
		return ctl.restart(ctx, restartAccountingOff, "turn accounting off")
	}
	if err := ctl.forgetLocalClusterID(ctx); err != nil {
		return err
	}
	return ctl.restart(ctx, restartAccountingOn, "turn accounting on (slurmdbd at "+want+")")
}

// restart restarts slurmctld for kind (what, in words) and returns at once, recording the
// restart under way in the state: slurm.conf as written is what slurmctld now starts with.
// The service manager's Respawn returns once the process runs; whether slurmctld answers is
// for a later pass to see (settle).
func (ctl slurmctldDaemon) restart(ctx context.Context, kind restartKind, what string) error {
	h := ctl.h
	if err := h.services().Respawn(ctx, svcSlurmctld); err != nil {
		return fmt.Errorf("cannot restart slurmctld to %s (see %s): %w", what, slurmctldLog, err)
	}
	host, err := h.c.Hostname()
	if err != nil {
		return fmt.Errorf("cannot find the host name: %w", err)
	}
	now := h.c.Now()
	before := h.st.GresRunning
	if h.st.Restart != nil { // replaced: slurmctld has not answered since the earlier one
		before = h.st.Restart.GresBefore
	}
	h.st.GresRunning = h.st.gresTypes()
	h.st.AccountingRunning = h.st.Accounting.storage()
	h.st.Restart = &pendingRestart{For: kind, What: what, Host: host, At: now, Deadline: now.Add(startWait), GresBefore: before}
	h.logf(ctx, juju.LevelInfo, "restarting slurmctld to %s; running jobs keep running", what)
	return nil
}

// settle makes one pass over the restart under way, if any, and never waits. slurmctld
// answering finishes it (this unit's: answers): logged and, on the leader, the reconfigure a
// later change asked for run (kept for the next pass if it fails), the partitions checked,
// new GresTypes names published to the slurmd applications (the login applications get the
// configuration's digest at the end of the hook, loginNodes.publish); a backup controller's
// restart only needs its slurmctld to answer, the rest is the leader's. Without an answer once its deadline has passed, a restart that
// turned accounting on is rolled back (rollBackAccounting, again without waiting); any other
// is failed, shown as blocked with the log to read, and still finished by a later pass that
// finds slurmctld answering (Pebble and systemd restart a slurmctld that fails).
func (ctl slurmctldDaemon) settle(ctx context.Context) error {
	h := ctl.h
	r := h.st.Restart
	if r == nil {
		return nil
	}
	err := answers(ctx, h.client(), r.Host)
	if err == nil {
		h.st.Restart = nil
		// Not a change of this hook's: the counts kept (hook.keepsCounts) were read before
		// the restart, and the status reads the list again.
		h.nodes.forget()
		h.logf(ctx, juju.LevelInfo, "restarted slurmctld to %s (answering %.1f s after the restart)", r.What, h.c.Now().Sub(r.At).Seconds())
		if r.Reconfigure {
			if err := ctl.reconfigure(ctx); err != nil {
				h.st.Restart = r
				return err
			}
		} else if h.leader {
			ctl.repairPartitions(ctx)
		}
		if !h.leader {
			return nil
		}
		if r.GresBefore != h.st.GresRunning && h.configProblem() == nil {
			// Only now may units start with the new names.
			return publisher{h}.all(ctx)
		}
		return nil
	}
	if r.Failed != "" || h.c.Now().Before(r.Deadline) {
		return nil
	}
	cause := fmt.Errorf("slurmctld did not answer within %s of its restart to %s (see %s): %w", startWait, r.What, slurmctldLog, err)
	if r.For == restartAccountingOn && h.leader && h.st.Accounting.storage() != "" && h.configProblem() == nil {
		return ctl.rollBackAccounting(ctx, cause)
	}
	r.Failed = firstLine(cause.Error())
	h.logf(ctx, juju.LevelError, "%v", cause)
	return nil
}

// forgetLocalClusterID removes StateSaveLocation/clustername when slurmdbd does not know the
// cluster yet (see restartForAccounting). slurmdbd is asked with the live slurm.conf, which
// names it already.
func (ctl slurmctldDaemon) forgetLocalClusterID(ctx context.Context) error {
	h := ctl.h
	known, err := h.client().ClusterKnown(ctx, h.cfg.ClusterName)
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "cannot ask slurmdbd whether it knows cluster %s (the ClusterID file stays): %v", h.cfg.ClusterName, err)
		return nil
	}
	if known {
		return nil
	}
	path := h.c.Path(h.st.stateSaveLocation() + "/clustername")
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove %s: %w", path, err)
	}
	h.logf(ctx, juju.LevelInfo, "cluster %s is new to slurmdbd: it registers with slurmdbd's ClusterID", h.cfg.ClusterName)
	return nil
}

// rollBackAccounting turns accounting off again after slurmctld did not come back with it
// (cause), and restarts slurmctld without it, without waiting (settle finishes that restart).
func (ctl slurmctldDaemon) rollBackAccounting(ctx context.Context, cause error) error {
	h := ctl.h
	h.st.Accounting.Refused = firstLine(cause.Error())
	h.logf(ctx, juju.LevelError, "turning accounting off again: %v", cause)
	feat, err := h.features(ctx)
	if err != nil {
		return err
	}
	if _, err := h.conf.change(ctx, func(ctx context.Context) (bool, error) { return slurmConf{h}.write(ctx, feat) }); err != nil {
		return errors.Join(cause, err)
	}
	if err := ctl.restart(ctx, restartRollback, "turn accounting off again (slurmctld did not start with it)"); err != nil {
		return errors.Join(cause, err)
	}
	return nil
}

// reconfigure runs one `scontrol reconfigure`; while a restart is under way, one once
// slurmctld answers (the restart may have read the older files).
func (ctl slurmctldDaemon) reconfigure(ctx context.Context) error {
	h := ctl.h
	if r := h.st.Restart; r != nil {
		if !r.Reconfigure {
			h.logf(ctx, juju.LevelInfo, "slurm.conf changed while slurmctld restarts: it reconfigures once it answers")
		}
		r.Reconfigure = true
		return nil
	}
	if err := h.progress(ctx, "reconfiguring"); err != nil {
		return err
	}
	err := h.client().Reconfigure(ctx)
	if err != nil {
		return fmt.Errorf("cannot reconfigure slurmctld: %w", err)
	}
	h.logf(ctx, juju.LevelInfo, "reconfigured slurmctld")
	ctl.repairPartitions(ctx)
	return nil
}

// repairPartitions checks that every partition holds exactly the registered nodes of its
// NodeSet and repairs one that does not. Slurm before 23.02.2 rebuilds NodeSet partitions
// from stale feature bitmaps on `scontrol reconfigure` when the node table has holes
// (deleted nodes), dropping registered nodes from their partition until the next
// registration (SchedMD bug 16295; libs/slurm's RepairPartitionMembership). It runs after
// every reconfigure and on update-status; a failure is logged, not fatal: the next run
// tries again.
// The hook's node list serves every partition: each node record names the partitions that
// hold it (Partitions=, from the same bitmaps as the partition's Nodes=; real 22.05 shows
// the loss there too, slurmtest's show-node-moved). Only a partition found wrong is
// repaired, which reads the nodes and the partition again.
func (ctl slurmctldDaemon) repairPartitions(ctx context.Context) {
	h := ctl.h
	cl := h.client()
	nodes, err := h.nodes.list(ctx)
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "cannot check the nodes of the partitions: %v", err)
		return
	}
	for _, app := range h.st.Apps {
		if _, rm := h.st.Removing[app]; rm {
			continue
		}
		if membersOf(app, nodes).OK() {
			continue
		}
		repaired, err := cl.RepairPartitionMembership(ctx, app, app)
		if err != nil {
			h.logf(ctx, juju.LevelWarning, "cannot check the nodes of partition %s: %v", app, err)
			continue
		}
		if len(repaired) > 0 {
			h.logf(ctx, juju.LevelWarning, "partition %s had lost or gained nodes after a reconfigure (Slurm bug 16295): repaired %s", app, strings.Join(repaired, ","))
		}
	}
}

// membersOf compares partition app (its NodeSet's feature is app too) with the nodes
// carrying the feature, from the node records alone: the partition holds the nodes whose
// Partitions= name it.
func membersOf(app string, nodes []slurm.Node) slurm.Membership {
	p := slurm.Partition{Name: app, NodeSets: []string{app}}
	for _, n := range nodes {
		if slices.Contains(n.Partitions, app) {
			p.Nodes = append(p.Nodes, n.Name)
		}
	}
	return slurm.MembershipOf(p, nodes, app)
}
