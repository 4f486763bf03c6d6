package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/hostlist"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// hook is what one hook reads once: the charm state (through the kit's lifecycle), the
// configuration and leadership.
type hook struct {
	c      *Charm
	hc     *juju.HookContext
	k      *charm.Hook[charmState]
	st     *charmState // &k.State
	cfg    Config
	extra  slurmconf.Params
	cfgErr error // a *ConfigError, or nil
	leader bool
	addr   string // ingress address, once read
	// pub is this hook's copy of st.Published, updated as the hook writes to Juju; it
	// replaces st.Published only when the hook succeeds (handle).
	pub *published
	// stage is the candidate configuration directory while changeConf runs an edit.
	stage string
	// nodes is the node list this hook read (nodeList), kept until the hook changes
	// something in Slurm (forgetNodes): one `scontrol show node` serves the reconcile, the
	// removals, the partition check and the status.
	nodes     []slurm.Node
	nodesRead bool
	// ctls are the controllers in SlurmctldHost order, as this hook planned (leader) or read
	// them (the others); nil until then.
	ctls []controller
	// backupWait is what keeps a unit that is not the leader from running slurmctld,
	// "code:message" ("" when nothing does).
	backupWait string
	// peerRel is the peer relation, once listed (peerRead).
	peerRel  juju.RelationID
	peerRead bool
}

// nodeList is every node as `scontrol show node` gives it, read once per hook and again
// only after forgetNodes.
func (h *hook) nodeList(ctx context.Context) ([]slurm.Node, error) {
	if h.nodesRead {
		return h.nodes, nil
	}
	nodes, err := h.c.client().Nodes(ctx)
	if err != nil {
		return nil, err
	}
	h.nodes, h.nodesRead = nodes, true
	return nodes, nil
}

// forgetNodes drops the node list after the hook changed nodes or partitions in Slurm (a
// drain, a delete, a reconfigure, a repair) or time passed: the next use reads it again.
func (h *hook) forgetNodes() { h.nodes, h.nodesRead = nil, false }

// lifecycle runs the charm's hooks: the state is loaded before the handler and saved once
// after it. A failed hook's writes to Juju are discarded by Juju, so its record of them is
// dropped (the next hook writes again), and so is its status cache (the next hook sets the
// status again); the rest of the state is still saved, as the host changes it records
// (slurmctld started, a key installed, a partition removed) are not undone.
func (c *Charm) lifecycle() charm.Lifecycle[charmState] {
	return charm.Lifecycle[charmState]{
		StateFile: c.StateFile,
		StateName: StateName,
		Failed: func(saved, cur charmState) charmState {
			cur.Published, cur.StatusCache = saved.Published, saved.StatusCache
			return cur
		},
	}
}

// handle runs fn as a hook of the charm's lifecycle (charm.Handlers), with the configuration
// and leadership read (begin); when fn succeeds, the record of what the hook wrote to Juju
// replaces the saved one (end). Whatever fn's outcome, the removals it leaves under way go to
// the waiter (watch).
func (c *Charm) handle(fn charm.Func[*hook]) juju.Handler {
	hs := charm.Handlers[charmState, *hook]{Lifecycle: c.lifecycle(), Begin: c.begin, End: (*hook).end}
	return hs.Handle(func(h *hook, ctx context.Context) error {
		err := fn(h, ctx)
		h.watch(ctx)
		return err
	})
}

// stateless runs fn with the hook context alone, for the handlers that read and write no
// charm state (stop, remove, show-current-config): a hook that only ends the waiter or reads
// files must not fail on the state.
func (c *Charm) stateless(fn charm.Func[*hook]) juju.Handler {
	return func(ctx context.Context, hc *juju.HookContext) error {
		return fn(&hook{c: c, hc: hc}, ctx)
	}
}

// end records what the hook wrote to Juju, once it succeeded.
func (h *hook) end(context.Context) error {
	h.st.Published = h.pub
	if h.pub.empty() {
		h.st.Published = nil
	}
	return nil
}

// begin reads the configuration and leadership for a hook. install needs neither (it
// installs packages and creates directories); leader-elected says by itself that this unit
// leads, so it runs no is-leader.
func (c *Charm) begin(ctx context.Context, k *charm.Hook[charmState]) (*hook, error) {
	hc := k.HookContext
	h := &hook{c: c, hc: hc, k: k, st: &k.State}
	kind := hc.Event.Kind
	if kind == juju.Install {
		h.pub = h.st.Published.clone()
		return h, nil
	}
	cfg, extra, err := h.readConfig(ctx)
	var ce *ConfigError
	switch {
	case errors.As(err, &ce):
		h.cfgErr = err
	case err != nil:
		return nil, err
	}
	h.cfg, h.extra = cfg, extra
	if kind == juju.LeaderElected {
		h.leader = true
	} else if h.leader, err = hc.Leadership.IsLeader(ctx); err != nil {
		return nil, fmt.Errorf("cannot check leadership: %w", err)
	}
	switch {
	case !h.leader, kind == juju.LeaderElected, kind == juju.UpgradeCharm:
		// Only a leader keeps a record, and a new term or charm trusts no earlier one,
		// except for this unit's own port: ports belong to the unit, and neither a
		// leadership change nor an upgrade closes them.
		h.pub = &published{PortOpen: h.st.Published != nil && h.st.Published.PortOpen}
	default:
		h.pub = h.st.Published.clone()
	}
	return h, nil
}

// configureHook reports whether the hook is one of the configure hooks, which read the
// ingress address afresh (Juju fires config-changed when the address changes).
func (h *hook) configureHook() bool {
	switch h.hc.Event.Kind {
	case juju.LeaderElected, juju.LeaderSettingsChanged, juju.ConfigChanged, juju.Start, juju.UpgradeCharm:
		return true
	}
	return false
}

// logf writes to the unit's log; a failing juju-log is not worth failing the hook.
func (h *hook) logf(ctx context.Context, level juju.LogLevel, format string, args ...any) {
	h.k.Logf(ctx, level, format, args...)
}

// running reports whether slurmctld runs.
func (h *hook) running(ctx context.Context) bool {
	st, err := h.c.Services.Status(ctx, svcSlurmctld)
	return err == nil && st.State == service.StateActive
}

// clusterNameError is the refusal of a changed cluster-name, or nil.
func (h *hook) clusterNameError() error {
	if h.cfgErr == nil && h.st.ClusterName != "" && h.cfg.ClusterName != h.st.ClusterName {
		return &ConfigError{"cluster-name", fmt.Sprintf("cannot change from %q to %q after slurmctld has started; set it back to %q", h.st.ClusterName, h.cfg.ClusterName, h.st.ClusterName)}
	}
	return nil
}

// setStatus sets the unit status from everything known in this hook, unless this unit set
// the same status last (the kit's status cache, saved with the state).
func (h *hook) setStatus(ctx context.Context) error {
	code, msg := h.status(ctx)
	return h.k.SetUnitStatus(ctx, code, msg)
}

// progress shows a step in maintenance status; setStatus replaces it at the end of the hook.
func (h *hook) progress(ctx context.Context, msg string) error {
	return h.k.SetUnitStatus(ctx, juju.StatusMaintenance, msg)
}

// ingress is the controller's ingress address on the slurmd endpoint, read once per
// configure hook; other hooks use the address the last configure hook read.
func (h *hook) ingress(ctx context.Context) (string, error) {
	if h.addr == "" && !h.configureHook() {
		h.addr = h.pub.Addr
	}
	if h.addr == "" {
		addr, err := h.hc.Network.IngressAddress(ctx, slurmd.RequirerEndpoint)
		if err != nil {
			return "", fmt.Errorf("cannot find the controller's address: %w", err)
		}
		h.addr, h.pub.Addr = addr, addr
	}
	return h.addr, nil
}

func (h *hook) status(ctx context.Context) (juju.StatusCode, string) {
	if h.cfgErr != nil {
		return juju.StatusBlocked, h.cfgErr.Error()
	}
	if err := h.clusterNameError(); err != nil {
		return juju.StatusBlocked, err.Error()
	}
	if h.st.ConfRefused != "" && h.leader {
		return juju.StatusBlocked, h.st.ConfRefused
	}
	if !h.leader {
		if code, msg, ok := strings.Cut(h.backupWait, ":"); ok {
			return juju.StatusCode(code), msg
		}
		if !h.running(ctx) {
			return juju.StatusMaintenance, "slurmctld is not running"
		}
		if role := h.haStatus(ctx); role != "" {
			return juju.StatusActive, "slurmctld " + role
		}
		return juju.StatusWaiting, "waiting for the leader's configuration"
	}
	if apps := sortedKeys(h.st.Problems); len(apps) > 0 {
		return juju.StatusBlocked, fmt.Sprintf("slurmd application %s: %s", apps[0], h.st.Problems[apps[0]])
	}
	if !h.running(ctx) {
		return juju.StatusMaintenance, "slurmctld is not running"
	}
	nodes, err := h.nodeList(ctx)
	if err != nil {
		if errors.Is(err, slurm.ErrControllerUnreachable) {
			return juju.StatusWaiting, "slurmctld is not responding"
		}
		return juju.StatusWaiting, fmt.Sprintf("cannot list nodes: %v", err)
	}
	if apps := sortedKeys(h.st.Removing); len(apps) > 0 {
		app, r := apps[0], h.st.Removing[apps[0]]
		if len(r.Pending) > 0 {
			msg := fmt.Sprintf("removing partition %s: pending jobs %s can never run there; run settle-jobs partition=%s with move-to=<partition> or cancel=true", app, strings.Join(r.Pending, ","), app)
			if others := r.Jobs - len(r.Pending); others > 0 {
				msg += fmt.Sprintf(" (also waiting for %d other jobs to finish)", others)
			}
			return juju.StatusBlocked, msg
		}
		jobs := "the jobs" // not counted yet (removal.Jobs is -1 until squeue answers)
		if r.Jobs >= 0 {
			jobs = fmt.Sprintf("%d jobs", r.Jobs)
		}
		return juju.StatusWaiting, fmt.Sprintf("waiting for %s in partition %s to finish before removing it", jobs, app)
	}
	var idle, alloc, draining, drained, down int
	// FUTURE records (future-nodes) are no nodes: never up, never scheduled.
	nodes = slices.DeleteFunc(slices.Clone(nodes), func(n slurm.Node) bool { return n.State.Base == slurm.StateFuture })
	for _, n := range nodes {
		switch {
		case n.State.Draining():
			draining++
		case n.State.Drain():
			drained++
		case n.State.Down():
			down++
		case n.State.Busy():
			alloc++
		case n.State.Base == slurm.StateIdle:
			idle++
		}
	}
	msg := fmt.Sprintf("slurmctld up, %d nodes (%d idle, %d allocated, %d drained", len(nodes), idle, alloc, drained)
	if role := h.haStatus(ctx); role != "" {
		msg = fmt.Sprintf("slurmctld %s, %d nodes (%d idle, %d allocated, %d drained", role, len(nodes), idle, alloc, drained)
	}
	if draining > 0 {
		msg += fmt.Sprintf(", %d draining", draining)
	}
	if down > 0 {
		msg += fmt.Sprintf(", %d down", down)
	}
	msg += ")"
	if pend := sortedKeys(h.st.Pending); len(pend) > 0 {
		msg += "; removing " + hostlist.CompressSorted(pend) + " once idle"
	}
	if len(h.st.Apps) == 0 {
		msg += "; waiting for a slurmd application"
	}
	msg += h.rebootStatus()
	return juju.StatusActive, msg
}

// defaultLookPath finds a program on PATH or in the sbin directories hooks may not have on PATH.
func defaultLookPath(look func(string) (string, error)) func(string) (string, error) {
	return func(name string) (string, error) {
		if p, err := look(name); err == nil {
			return p, nil
		}
		for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
			p := dir + "/" + name
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", fmt.Errorf("cannot find %s", name)
	}
}
