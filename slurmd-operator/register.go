package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/authkey"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/gres"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/poll"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// registrar registers the node with the controller: the first start with the controller's
// data (join), a re-registration when what slurmd runs with changes (reregister: Slurm
// 22.05 keeps a dynamic node's old record otherwise), and the registration after a boot
// with a node-config staged for it (registerStaged, applyStaged).
type registrar struct {
	h   *hook
	res genericResources // what the node's configuration is built from
	rm  removal          // the old record's removal, in a re-registration
}

func newRegistrar(h *hook) registrar {
	return registrar{h: h, res: genericResources{h}, rm: removal{h}}
}

// join configures and (re)starts slurmd for the controller's data, doing only what changed,
// and reports the node. A slurmd the controller's Slurm does not accept (newer: an upgrade
// in the wrong order; or too old) is never started: nothing is written and no node
// registers; a running one is left as it runs. Whether slurmd starts is joinHold's to say.
func (r registrar) join(ctx context.Context, data slurmd.ControllerData) error {
	h := r.h
	version, err := h.version(ctx)
	if err != nil {
		return err
	}
	// The node's resources are decided once its configuration is built (runConf).
	hold := joinHold(h.st.Departed, data.Bag(), version, nil)
	switch {
	case hold.departed:
		return h.report(ctx, observed{})
	case hold.noController:
		return h.report(ctx, observed{noController: true})
	case hold.refused != nil:
		if h.st.VersionRefused != hold.refused.Error() {
			h.logf(ctx, juju.LevelWarning, "not starting slurmd: %v", hold.refused)
		}
		h.st.VersionRefused = hold.refused.Error()
		return h.refresh(ctx)
	}
	h.st.VersionRefused = ""
	if wait := hold.confWait; wait != nil {
		// slurmd would exit on a key of the configuration it fetches: the controller
		// leaves it out once it has read this unit's version (publishUnit).
		if h.st.ConfWaiting != wait.Error() {
			h.logf(ctx, juju.LevelInfo, "not starting slurmd yet: %v", wait)
		}
		h.st.ConfWaiting = wait.Error()
		return h.refresh(ctx)
	}
	h.st.ConfWaiting = ""
	return r.apply(ctx, data, version)
}

// startHold is what keeps a join from starting slurmd (joinHold); the zero startHold keeps
// nothing from it.
type startHold struct {
	// departed: the node left the relation (State.Departed).
	departed bool
	// noController: the controller's databag names no controller.
	noController bool
	// refused is why the controller's Slurm accepts no slurmd of this release
	// (slurm.CheckNodeVersion).
	refused error
	// confWait is why slurmd cannot read the configuration the controller serves yet
	// (slurm.CheckConfVersion against conf_min_version).
	confWait error
	// unmanaged are the generic resources of the node's configuration the controller does
	// not manage (unmanagedGres): a slurmd started with them registers without them for good.
	unmanaged []string
}

// starts reports whether nothing keeps the join from starting slurmd.
func (s startHold) starts() bool {
	return !s.departed && !s.noController && s.refused == nil && s.confWait == nil && len(s.unmanaged) == 0
}

// joinHold is the one decision whether a join starts slurmd on this node, from the node's
// departure (departed: State.Departed), the controller's databag b, this machine's Slurm
// release v and the generic resources g the node's configuration names: the first check, in
// the join's order, that holds. The join (registrar.join, then runConf with the resources)
// and slurmd's definition ahead (defineAhead) both take it, so that nothing is defined ahead
// that the join would refuse. g is nil before the configuration is built: the resources are
// then not decided, the rest is.
func joinHold(departed bool, b slurmd.ControllerBag, v slurm.Version, g gres.Set) startHold {
	switch {
	case departed:
		return startHold{departed: true}
	case len(b.Controllers) == 0:
		return startHold{noController: true}
	}
	if err := slurm.CheckNodeVersion(b.SlurmVersion, v); err != nil {
		return startHold{refused: err}
	}
	if err := slurm.CheckConfVersion("slurmd", b.ConfMinVersion, v); err != nil {
		return startHold{confWait: err}
	}
	return startHold{unmanaged: unmanagedGres(g, b.GresTypes)}
}

// apply writes the auth key for this Slurm (f), builds the node's configuration from the
// machine's facts and starts slurmd, or restarts or re-registers it when what it runs with
// changed; then it waits for the node and reports it (settle). The facts (slurmd -C) are not
// needed before the configuration: on a join they are read beside the key's write and
// munged's start (readingFacts).
//
// On a first start munged starts beside the facts' read, the configuration's build and
// slurmd's definition, and slurmd starts once munged answers (slurmdDaemon.start); every
// other path waits for munged first, as it asks Slurm (scontrol) before it starts slurmd.
func (r registrar) apply(ctx context.Context, data slurmd.ControllerData, v slurm.Version) (err error) {
	h := r.h
	f := slurm.FeaturesOf(v)
	prev := h.st.Applied
	keyChanged, err := r.writeAuthKey(ctx, f, data.AuthKey, prev == nil)
	if err != nil {
		return err
	}
	defer func() {
		if merr := h.authReady(); err == nil {
			err = merr
		}
	}()
	_, mi, err := h.facts(ctx)
	if err != nil {
		return err
	}
	h.slurmdAhead.Wait() // its gres.conf lines are written before runConf's
	nc, held, err := r.runConf(ctx, mi, data.Bag(), v)
	if err != nil {
		return err
	}
	if prev != nil || held {
		if err := h.authReady(); err != nil {
			return err
		}
	}
	if held {
		return h.report(ctx, observed{gresHeld: len(h.st.GresWaiting) > 0})
	}
	want := &Applied{GresConf: nc.GresConf, Controllers: data.Controllers, Conf: nc.Conf, KeyHash: authkey.Hash(data.AuthKey), KeyID: data.AuthKeyID, SecretID: data.AuthSecretID}
	spec := h.slurmd().spec(want)

	reregister := prev != nil && (prev.Conf != nc.Conf || nc.gresChangedFrom(prev.GresConf))
	restart := prev != nil && !reregister &&
		(!slices.Equal(prev.Controllers, want.Controllers) || prev.KeyHash != want.KeyHash || keyChanged || !h.slurmd().active(ctx))
	if prev == nil || reregister || restart {
		h.dropNodeAhead() // slurmd changes below: a record read before is not the node's
	}
	logAt := int64(-1) // where slurmd's log stands before a start below (settle), -1: none
	if prev == nil || restart {
		logAt = h.slurmd().logSize()
	}
	switch {
	case prev == nil:
		// First start: a new node record. No status before: slurmd registers within
		// milliseconds and settle reports the node.
		if err := r.start(ctx, spec, false); err != nil {
			return err
		}
		h.st.Applied = want
		h.st.DefaultPending = true
	case reregister:
		// Slurm 22.05 keeps a dynamic node's old record: re-register it.
		if err := r.reregister(ctx, spec, nil, time.Time{}, nil); err != nil {
			return err
		}
		h.st.Applied = want
	case restart:
		if err := h.progress(ctx, "restarting slurmd"); err != nil {
			return err
		}
		if err := r.start(ctx, spec, true); err != nil {
			return err
		}
		h.st.Applied = want
	default:
		h.st.Applied = want
	}
	// slurmd runs as Applied says: kept even if the hook is killed while the node registers.
	if err := h.k.Checkpoint(ctx); err != nil {
		return err
	}
	return r.settle(ctx, logAt)
}

// start starts slurmd as spec says (restart: restarts it), enabled at boot unless a
// node-config is staged (the boot's registration is then the start hook's, registerStaged).
func (r registrar) start(ctx context.Context, spec service.Spec, restart bool) error {
	return r.h.slurmd().start(ctx, spec, restart, r.h.st.StagedNodeConfig == "")
}

// runConf returns the configuration slurmd should run with (its --conf and gres.conf
// content), the lines written to GresLocalConf before slurmd (re)starts, and whether the join
// holds slurmd back for it (joinHold with the controller's databag b and this machine's
// release v): when the node's Gres= names resources the controller does not manage, it sets
// State.GresWaiting, writes nothing and slurmd must not be (re)started: the node would
// register without them for good. While generic-resources is invalid (the unit is blocked), a
// running node keeps the --conf and lines it runs with.
func (r registrar) runConf(ctx context.Context, mi slurm.MachineInfo, b slurmd.ControllerBag, v slurm.Version) (nodeConf, bool, error) {
	h := r.h
	if a := h.st.Applied; a != nil {
		if _, err := parseGenericResources(h.cfg.GenericResources); err != nil {
			h.st.GresWaiting = nil
			return nodeConf{Conf: a.Conf, GresConf: a.GresConf}, false, nil
		}
	}
	nc, err := r.res.build(ctx, mi, h.st.NodeConfig)
	if err != nil {
		return nodeConf{}, false, err
	}
	hold := joinHold(h.st.Departed, b, v, nc.Gres)
	h.st.GresWaiting = hold.unmanaged
	if !hold.starts() {
		h.logf(ctx, juju.LevelInfo, "not starting slurmd with Gres=%s: the controller manages GresTypes %q", nc.Gres, b.GresTypes)
		return nodeConf{}, true, nil
	}
	if err := r.res.writeConf(ctx, nc.GresConf); err != nil {
		return nodeConf{}, false, err
	}
	return nc, false, nil
}

// conf is the node's configuration with node-config nodeConfig and this machine's facts.
func (r registrar) conf(ctx context.Context, nodeConfig string) (nodeConf, error) {
	_, mi, err := r.h.facts(ctx)
	if err != nil {
		return nodeConf{}, err
	}
	return r.res.build(ctx, mi, nodeConfig)
}

// changed reports whether slurmd, running as Applied says, would run otherwise with the
// node's resources and node-config as they are now: another --conf or other gres.conf lines
// (what makes join re-register the node).
func (r registrar) changed(ctx context.Context) (bool, error) {
	h := r.h
	nc, err := r.conf(ctx, h.st.NodeConfig)
	if err != nil {
		return false, err
	}
	a := h.st.Applied
	return nc.Conf != a.Conf || nc.gresChangedFrom(a.GresConf), nil
}

// gresChanged reports whether a running node's resources (the generic-resources option,
// after config-changed) differ from what slurmd runs with: the node then re-registers as a
// relation hook would make it. An invalid option changes nothing.
func (r registrar) gresChanged(ctx context.Context) (bool, error) {
	h := r.h
	if h.st.Applied == nil || h.st.Departed {
		return false, nil
	}
	if _, err := parseGenericResources(h.cfg.GenericResources); err != nil {
		return false, nil
	}
	return r.changed(ctx)
}

// settle waits for the node to register, applies default-node-state to a new node and
// reports the node. started is where slurmd's log stood before this hook started slurmd
// (waitNode), or -1 when it did not.
func (r registrar) settle(ctx context.Context, started int64) error {
	h := r.h
	if n, ok := h.takeNodeAhead(); ok && registeredRecord(n, nil) {
		// Read from the hook's start, slurmd unchanged since: the first of the reads below.
		return h.registered(ctx, n)
	}
	n, err := r.waitNode(ctx, false, nil, started)
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "node %s did not register: %v", h.node, err)
		return h.report(ctx, observed{unregistered: true})
	}
	return h.registered(ctx, n)
}

// registeredRecord reports whether n is the record of a registered slurmd (its version
// known, not a FUTURE record) for which also, when not nil, holds.
func registeredRecord(n slurm.Node, also func(slurm.Node) bool) bool {
	return n.Version != "" && !n.State.Has(slurm.StateFuture) && (also == nil || also(n))
}

// waitRegistered polls until the node's record shows its slurmd registered, bounded by
// RegisterTimeout. A slurmd registers within tens of milliseconds: the polls start 10 ms
// apart and back off to PollInterval. With watch, a slurmd service that stops being active
// (it exited: Slurm refused its configuration) ends the wait at once. started is where
// slurmd's log stood before the caller started slurmd (waitNode), or -1.
func (r registrar) waitRegistered(ctx context.Context, watch bool, started int64) (slurm.Node, error) {
	return r.waitNode(ctx, watch, nil, started)
}

// waitNode is waitRegistered that also waits, when also is not nil, until also holds for the
// registered node's record.
//
// When the caller has just started slurmd (started is where slurmd's log stood before, not
// -1), the first check waits until slurmd logs that it has started (awaitStart), and then
// RegisterGap, when its registration is done, instead of asking the controller at once:
// each check is an scontrol run (a process, a munge credential and two RPCs to slurmctld) on
// the cores where slurmd is still loading its configuration and plugins, or registering, and
// slurmctld serves it while it is waiting for the registration.
func (r registrar) waitNode(ctx context.Context, watch bool, also func(slurm.Node) bool, started int64) (slurm.Node, error) {
	h := r.h
	ctx, cancel := context.WithTimeout(ctx, charm.Or(h.c.RegisterTimeout, DefaultRegisterTimeout))
	defer cancel()
	var n slurm.Node
	var last, exited error
	every := h.c.poll()
	if started >= 0 && r.awaitStart(ctx, started) {
		// slurmd sends its registration right after its start line: a check now would
		// run beside it and find no record yet.
		select {
		case <-ctx.Done():
		case <-time.After(min(charm.Or(h.c.RegisterGap, DefaultRegisterGap), every)):
		}
	}
	err := poll.UntilBackoff(ctx, poll.Backoff{Start: min(10*time.Millisecond, every), Max: every}, func(ctx context.Context) (bool, error) {
		var err error
		n, err = h.showNode(ctx)
		if err == nil && registeredRecord(n, also) {
			return true, nil
		}
		if watch {
			if st, serr := h.slurmd().status(ctx); serr == nil && st.State != service.StateActive {
				exited = fmt.Errorf("slurmd exited (service %s) before node %s registered", st.State, h.node)
				return false, exited
			}
		}
		if err != nil {
			last = err
		} else {
			last = fmt.Errorf("node %s is %s", h.node, n.State)
		}
		return false, nil
	})
	switch {
	case exited != nil:
		return slurm.Node{}, exited
	case err != nil:
		return slurm.Node{}, fmt.Errorf("cannot wait for node %s to register: %w (last: %v)", h.node, err, last)
	}
	return n, nil
}

// slurmdStarted is what slurmd logs (at SlurmdDebug info and above) once it has loaded its
// configuration and plugins, right before it sends its registration to slurmctld: "slurmd
// started on <date>" (22.05 to 26.05).
const slurmdStarted = " started on "

// awaitStart waits until slurmd's log after offset says that slurmd started (slurmdStarted)
// or hit a fatal error, reading the log's new lines every few milliseconds (a file read, no
// process), for at most PollInterval: a slurmd whose log says nothing of its start (a log
// level below info) is polled PollInterval after its start. A log shorter than offset was
// truncated, and is read from its start. It reports whether the log said that slurmd
// started (and not a fatal error).
func (r registrar) awaitStart(ctx context.Context, offset int64) bool {
	c := r.h.c
	ctx, cancel := context.WithTimeout(ctx, c.poll())
	defer cancel()
	path := c.Path(SlurmdLog)
	started := false
	_ = poll.Until(ctx, min(startCheck, c.poll()), func(context.Context) (bool, error) {
		data := readLogAfter(path, offset) // one read a check
		fatal := bytes.Contains(data, []byte("fatal: "))
		started = !fatal && bytes.Contains(data, []byte(slurmdStarted))
		return started || fatal, nil
	})
	return started
}

// startCheck is how often awaitStart reads slurmd's log.
const startCheck = 2 * time.Millisecond

// readLogAfter returns what the log file at path holds after offset (from its start when it
// is shorter: it was truncated), at most 1 MiB; nothing when it cannot be read.
func readLogAfter(path string, offset int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() < offset {
		offset = 0
	}
	data, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<20))
	if err != nil {
		return nil
	}
	return data
}

// RefusedError is a new slurmd --conf that Slurm refused: slurmd did not start or exited,
// the node did not register in time, or it registered as INVALID_REG. Reason is Slurm's own
// (the node's Reason=, or slurmd's log).
type RefusedError struct {
	Node   string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("Slurm refused the new configuration of node %s: %s", e.Node, e.Reason)
}

// reregister replaces the node's record with one registered by slurmd as spec runs it:
// remember the node's state (in the charm's state too, so that an interrupted run is
// repaired by the next), remove the node (drain, wait for its jobs until deadline, if any,
// stop slurmd, delete; a wait that ends first resumes the node as it was and returns the
// *slurm.RemovalError), start slurmd, wait for a valid registration and restore the state.
// When Slurm refuses spec (a *RefusedError) and old is set, the node is re-registered with
// old and its state restored before the *RefusedError is returned: nothing is left
// half-applied.
func (r registrar) reregister(ctx context.Context, spec service.Spec, old *service.Spec, deadline time.Time, progress func(int)) error {
	h := r.h
	cl, err := h.c.ctl()
	var n slurm.Node
	if err == nil {
		n, err = cl.ShowNode(ctx, h.node)
	}
	if err != nil && !errors.Is(err, slurm.ErrUnknownNode) && !errors.Is(err, errNoConf) {
		return fmt.Errorf("cannot re-register node %s: %w", h.node, err)
	}
	prev := r.adminState(n)
	remember := func(ctx context.Context) error {
		h.st.Restore = &prev
		return h.k.Checkpoint(ctx)
	}
	switch {
	case err == nil:
		if err := h.progress(ctx, "reconfiguring "+h.node); err != nil {
			return err
		}
		wctx := ctx
		if !deadline.IsZero() {
			var cancel context.CancelFunc
			wctx, cancel = context.WithDeadline(ctx, deadline)
			defer cancel()
		}
		rm := slurm.Removal{Node: h.node, Reason: reconfReason(h.node)}
		if err := r.rm.remove(wctx, cl, &rm, progress, remember); err != nil {
			if rm.Phase == slurm.RemovalDrain || rm.Phase == slurm.RemovalWait {
				// Nothing stopped yet: the node goes back to what it was.
				if aerr := h.c.remover(cl).Abort(ctx, &rm); aerr != nil {
					return errors.Join(err, aerr)
				}
			}
			return err
		}
	default: // not registered
		if err := remember(ctx); err != nil {
			return err
		}
		if err := h.slurmd().stop(ctx); err != nil {
			return err
		}
	}
	err = r.startNode(ctx, spec)
	var refused *RefusedError
	if errors.As(err, &refused) && old != nil {
		h.logf(ctx, juju.LevelWarning, "%v: restoring the previous configuration", err)
		if rerr := r.replaceNode(ctx, *old); rerr != nil {
			return errors.Join(err, fmt.Errorf("cannot restore the previous configuration: %w", rerr))
		}
	}
	if err != nil && refused == nil {
		return err
	}
	if prev.Drain || prev.Down {
		cl, cerr := h.c.ctl()
		if cerr == nil {
			cerr = h.c.remover(cl).Restore(ctx, &slurm.Removal{Node: h.node, WasDrain: prev.Drain, WasDown: prev.Down, PriorReason: prev.Reason})
		}
		if cerr != nil {
			return cerr
		}
	}
	h.st.Restore = nil
	return err
}

// adminState is the state to give back to the node after a re-registration: the one saved
// by an interrupted re-registration, else the node's own. A drain Slurm set itself
// (INVALID_REG) or that an earlier re-registration set is not the operator's and is dropped.
func (r registrar) adminState(n slurm.Node) NodeAdmin {
	h := r.h
	if h.st.Restore != nil {
		return *h.st.Restore
	}
	a := NodeAdmin{Drain: n.State.Drain(), Down: n.State.Down(), Reason: n.Reason}
	if n.State.Has(slurm.FlagInvalidReg) || a.Reason == reconfReason(h.node) {
		a = NodeAdmin{}
	}
	return a
}

// replaceNode removes the node's current record (it has no jobs: it registered just now)
// and registers it again with slurmd as spec runs it.
func (r registrar) replaceNode(ctx context.Context, spec service.Spec) error {
	h := r.h
	cl, err := h.c.ctl()
	switch {
	case err == nil:
		err = r.rm.remove(ctx, cl, &slurm.Removal{Node: h.node, Jobs: slurm.RefuseJobs}, nil, nil)
	case errors.Is(err, errNoConf):
		err = h.slurmd().stop(ctx)
	}
	if err != nil {
		return err
	}
	return r.startNode(ctx, spec)
}

// startNode (re)starts slurmd as spec says and waits for a valid registration; a refused one
// is a *RefusedError.
func (r registrar) startNode(ctx context.Context, spec service.Spec) error {
	h := r.h
	d := h.slurmd()
	logStart := d.logSize()
	var n slurm.Node
	err := r.start(ctx, spec, true)
	if err == nil {
		n, err = r.waitRegistered(ctx, true, logStart)
	}
	if err == nil && !n.State.Has(slurm.FlagInvalidReg) {
		return nil
	}
	reason := n.Reason
	if err != nil {
		reason = err.Error()
	}
	if l := d.logErrors(logStart); l != "" && (err != nil || reason == "") {
		reason += " (slurmd: " + l + ")"
	}
	return &RefusedError{Node: h.node, Reason: reason}
}

// resumeRebooted resumes the node when Slurm set it DOWN only because it rebooted unasked
// (ReturnToService=2 returns it by itself on most versions; this covers the others), and
// reports it. A drain or an administrator's down is left alone.
func (r registrar) resumeRebooted(ctx context.Context) error {
	h := r.h
	n, err := h.showNode(ctx)
	if err != nil || !n.State.Down() || n.State.Drain() || !strings.HasPrefix(n.Reason, unexpectedReboot) {
		return nil
	}
	cl, err := h.c.ctl()
	if err != nil {
		return nil
	}
	if err := cl.Resume(ctx, h.node); err != nil {
		return fmt.Errorf("cannot resume node %s after its reboot: %w", h.node, err)
	}
	h.logf(ctx, juju.LevelInfo, "node %s resumed after an unexpected reboot", h.node)
	if n, err = h.showNode(ctx); err != nil {
		return nil
	}
	return h.report(ctx, observed{node: &n})
}

// setStaged records staged as the node-config staged for the next boot ("": none) and puts
// the machine in line with it: StagedMarker says "staged" while one is, and slurmd starts at
// boot only while none is.
func (r registrar) setStaged(ctx context.Context, staged string) error {
	h := r.h
	h.st.StagedNodeConfig = staged
	m := stagedMarker{h.c}
	if staged == "" {
		if err := m.clear(); err != nil {
			return err
		}
	} else if err := m.set(ctx); err != nil {
		return err
	}
	return h.slurmd().enableAtBoot(ctx, staged == "")
}

// registerStaged registers the node with its staged node-config when RebootProgram deleted
// its record before the reboot: slurmd did not start at boot, so this is the boot's only
// registration, and Slurm counts the node back only once it has run (slurmctld's rolling
// reboot waits for it). If Slurm refuses the staged --conf, the node is registered with its
// previous one, the refusal logged and the staged node-config dropped; either way nothing is
// staged any more.
func (r registrar) registerStaged(ctx context.Context) error {
	h := r.h
	staged := h.st.StagedNodeConfig
	nc, err := r.conf(ctx, staged)
	if err != nil {
		return err
	}
	if err := r.ensureMunged(ctx); err != nil {
		return err
	}
	prev := *h.st.Applied
	want := prev
	want.Conf = nc.Conf
	if err := r.setStaged(ctx, ""); err != nil {
		return err
	}
	h.logf(ctx, juju.LevelInfo, "node %s booted with node-config %q staged and its record deleted: registering it with --conf %q", h.node, staged, nc.Conf)
	err = r.startNode(ctx, h.slurmd().spec(&want))
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		h.logf(ctx, juju.LevelWarning, "Slurm refused the staged node-config %q: %s; registering node %s with its previous configuration", staged, refused.Reason, h.node)
		if rerr := r.replaceNode(ctx, h.slurmd().spec(&prev)); rerr != nil {
			return errors.Join(err, rerr)
		}
		return nil
	case err != nil:
		return err
	}
	h.st.Applied = &want
	h.st.NodeConfig = staged
	return h.k.Checkpoint(ctx)
}

// applyStaged registers the node with its staged node-config at the start after a boot for
// which RebootProgram did not delete its record (a reboot Slurm did not ask for, or a delete
// that failed), through the transactional path node-config uses (drain, wait for the jobs
// that landed since the boot, stop, delete, start with the new --conf, restore an
// administrator's state): the node is back under its old record, and Slurm (22.05 to 26.05
// alike) takes the new values only from a new record. The drain keeps the node counted as
// unavailable by slurmctld's rolling reboot until it is registered again. If Slurm refuses
// the new --conf, the node is registered again as it was, keeps its node-config, the refusal
// is logged and the staged node-config dropped; if its jobs do not end within
// DefaultActionTimeout, the node is resumed as it was and the node-config stays staged for
// the next boot.
func (r registrar) applyStaged(ctx context.Context) error {
	h := r.h
	staged := h.st.StagedNodeConfig
	if staged == "" || h.st.Applied == nil || h.st.Departed {
		return nil
	}
	nc, err := r.conf(ctx, staged)
	if err != nil {
		return err
	}
	if nc.Conf != h.st.Applied.Conf {
		// Wait until Slurm has the node back from its reboot, so that the record replaced is
		// an ordinary one, not one with a reboot under way.
		if _, err := r.waitNode(ctx, false, func(n slurm.Node) bool { return !n.State.Rebooting() }, -1); err != nil {
			h.logf(ctx, juju.LevelWarning, "node-config %q stays staged: node %s is not back from its reboot: %v", staged, h.node, err)
			return nil
		}
		h.logf(ctx, juju.LevelInfo, "node %s booted with node-config %q staged: registering it with --conf %q", h.node, staged, nc.Conf)
		want := *h.st.Applied
		want.Conf = nc.Conf
		prevSpec := h.slurmd().spec(h.st.Applied)
		err = r.reregister(ctx, h.slurmd().spec(&want), &prevSpec, h.c.Now().Add(DefaultActionTimeout), nil)
		var refused *RefusedError
		var re *slurm.RemovalError
		switch {
		case errors.As(err, &refused):
			h.logf(ctx, juju.LevelWarning, "Slurm refused the staged node-config %q: %s; node %s registered with its previous configuration", staged, refused.Reason, h.node)
			return r.setStaged(ctx, "")
		case errors.As(err, &re) && re.Phase == slurm.RemovalWait && errors.Is(err, context.DeadlineExceeded):
			h.logf(ctx, juju.LevelWarning, "node-config %q stays staged: %d jobs still running on %s after %s", staged, re.Jobs, h.node, DefaultActionTimeout)
			return nil
		case err != nil:
			return err
		}
		h.st.Applied = &want
	}
	h.st.NodeConfig = staged
	return r.setStaged(ctx, "")
}

// writeAuthKey writes the shared key where this Slurm version wants it and, for munge,
// (re)starts munged when the key changed or munged is not running, in the background when
// beside is set (the caller waits with authReady before slurmd starts; for auth/slurm the
// key's write itself is then in the background). It reports whether the key file changed
// (true when it is written in the background).
func (r registrar) writeAuthKey(ctx context.Context, f slurm.Features, key []byte, beside bool) (bool, error) {
	c := r.h.c
	if len(key) == 0 {
		return false, errors.New("cannot write the auth key: the controller's key is empty")
	}
	usr, mode := "slurm", os.FileMode(0o600)
	if f.Munge {
		usr, mode = "munge", 0o400
	}
	uid, gid, err := c.UserIDs(usr)
	if err != nil {
		return false, fmt.Errorf("cannot write %s: user %s: %w", f.AuthKeyFile, usr, err)
	}
	write := func() (bool, error) {
		return authkey.Write(ctx, c.Path(f.AuthKeyFile), key, authkey.Options{Mode: mode, UID: uid, GID: gid})
	}
	if !f.Munge && beside {
		// auth/slurm: slurmd reads the key when it starts, not when it is defined, so on a
		// first start the write (and its two fsyncs) runs beside slurmd's definition, and
		// slurmd is enabled and started only once it is done (authReady: a failed write
		// starts nothing). A first start asks nothing of the key's change.
		r.h.authUp = charm.Start(func() (struct{}, error) { _, err := write(); return struct{}{}, err })
		return true, nil
	}
	changed, err := write()
	if err != nil {
		return false, err
	}
	if !f.Munge {
		return changed, nil
	}
	return changed, r.h.startMunged(ctx, changed, beside)
}

// ensureMunged starts munged with the key in place when this Slurm version authenticates with
// munge and munged is not running.
func (r registrar) ensureMunged(ctx context.Context) error {
	v, err := r.h.version(ctx)
	if err != nil || !slurm.FeaturesOf(v).Munge {
		return err
	}
	return r.h.c.munged().Ensure(ctx, false)
}
