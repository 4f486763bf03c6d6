package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
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
	cfg    config
	extra  slurmconf.Params
	cfgErr error // a *configError, or nil
	leader bool
	addr   string // ingress address, once read
	// pub is this hook's copy of st.Published, updated as the hook writes to Juju; it
	// replaces st.Published only when the hook succeeds (end).
	pub *published
	// conf are the managed configuration files: the live ones, or the candidate while an
	// edit runs (confFiles.change).
	conf confFiles
	// nodes is the node list this hook read, kept until the hook changes something in
	// Slurm: one `scontrol show node` serves the reconcile, the removals, the partition
	// check and the status.
	nodes nodeCache
	// ctls are the controllers in SlurmctldHost order, as this hook planned (leader) or read
	// them (the others); nil until then.
	ctls []controller
	// backupWait is what keeps a unit that is not the leader from running slurmctld,
	// "code:message" ("" when nothing does).
	backupWait string
	// turn is the restart turn the leader planned in this hook (rolling.plan), or the one a
	// backup read; nil for none.
	turn *restartTurn
	// ahead waits for the reads begin started ahead of the handler (readAhead); nil for none.
	ahead func()
	// addrAhead is the ingress address being read from begin (readsIngress), until ingress
	// takes it; nil for none.
	addrAhead *charm.Pending[string]
}

// lifecycle runs the charm's hooks: the state is loaded before the handler and saved once
// after it. A failed hook's writes to Juju are discarded by Juju, so its records of them
// (Published, COS) are dropped (the next hook writes again), and so is its status cache (the next hook sets the
// status again); the rest of the state is still saved, as the host changes it records
// (slurmctld started, a key installed, a partition removed) are not undone.
func (c *Charm) lifecycle() charm.Lifecycle[charmState] {
	return charm.Lifecycle[charmState]{
		StateFile:      c.StateFile,
		StateName:      StateName,
		RelationRecord: c.RelationRecord,
		Failed: func(saved, cur charmState) charmState {
			cur.Published, cur.StatusCache, cur.COS = saved.Published, saved.StatusCache, saved.COS
			cur.NodeCounts = nil // the next status reads the list
			return cur
		},
	}
}

// asksLeader reports whether begin runs is-leader in the hook of ev: every hook and action but
// install and leader-elected (the stateless handlers do not begin).
func asksLeader(ev juju.Event) bool {
	return ev.Kind != juju.Install && ev.Kind != juju.LeaderElected
}

// begin reads the configuration and leadership for a hook. install needs neither (it
// installs packages and creates directories); leader-elected says by itself that this unit
// leads, so it runs no is-leader. A hook (not an action) of a unit that is not leaving then
// settles the slurmctld restart under way, if any (slurmctldDaemon.settle).
//
// With ReadAhead, the node list the status will read is read from the moment the
// configuration is known, beside is-leader (hook.listsNodes), and dropped if this unit turns
// out not to lead or begin fails.
func (c *Charm) begin(ctx context.Context, k *charm.Hook[charmState]) (_ *hook, err error) {
	hc := k.HookContext
	h := &hook{c: c, hc: hc, k: k, st: &k.State, conf: confFiles{c: c}, nodes: nodeCache{client: c.client}}
	defer func() {
		if err != nil {
			h.nodes.drop() // no command or tool left running when the hook ends
			h.addrAhead.Wait()
		}
	}()
	kind := hc.Event.Kind
	if kind == juju.Install {
		h.pub = h.st.Published.clone()
		return h, nil
	}
	cfg, extra, err := readConfig(ctx, hc, &h.st.Config, h.st.SlurmVersion)
	var ce *configError
	switch {
	case errors.As(err, &ce):
		h.cfgErr = err
	case err != nil:
		return nil, err
	}
	h.cfg, h.extra = cfg, extra
	if c.ReadAhead && h.listsNodes(h.st.Led || kind == juju.LeaderElected) {
		h.nodes.ahead(ctx, h.aheadWhen(c.running))
	}
	if c.ReadAhead && h.readsIngress(h.st.Led || kind == juju.LeaderElected) {
		h.addrAhead = charm.Start(func() (string, error) { return hc.Network.IngressAddress(ctx, slurmd.RequirerEndpoint) })
	}
	if !asksLeader(hc.Event) {
		h.leader = true // leader-elected
	} else if h.leader, err = hc.Leadership.IsLeader(ctx); err != nil {
		return nil, fmt.Errorf("cannot check leadership: %w", err)
	}
	if !h.leader {
		h.nodes.drop() // read for a leader's status
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
	// The leader's records follow the leadership: dropped by a unit that no longer leads,
	// taken over by a new leader (leadership.go).
	if err := (leadership{h}).settle(ctx); err != nil {
		return nil, err
	}
	if kind != juju.Action && !h.st.Leaving {
		// A slurmctld restart under way (the leader's or a backup's) is finished (or failed)
		// before anything else: one `scontrol ping`, nothing when none is under way.
		if err := (slurmctldDaemon{h}).settle(ctx); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// watch hands the removals (the leader's) and the slurmctld restart (any controller's) the
// hook leaves under way to the waiter; with nothing to watch, its waiter, if any, ends. A
// waiter that cannot start is no failure of the hook: they still finish on update-status.
func (h *hook) watch(ctx context.Context) {
	if h.c.Waiter == nil {
		return
	}
	list := h.st.watchList(h.leader)
	if err := h.c.Waiter.Watch(ctx, list); err != nil {
		h.logf(ctx, juju.LevelWarning, "removals and restarts continue on update-status only: %v", err)
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

// logf writes to the unit's log; a failing juju-log is not worth failing the hook.
func (h *hook) logf(ctx context.Context, level juju.LogLevel, format string, args ...any) {
	h.k.Logf(ctx, level, format, args...)
}

// configProblem is the configuration's problem, shown as blocked: a bad option (a
// *configError), or a cluster-name changed after slurmctld started; nil when there is none.
// While there is one, nothing is changed on the host.
func (h *hook) configProblem() error {
	if h.cfgErr != nil {
		return h.cfgErr
	}
	if h.st.ClusterName != "" && h.cfg.ClusterName != h.st.ClusterName {
		return &configError{"cluster-name", fmt.Sprintf("cannot change from %q to %q after slurmctld has started; set it back to %q", h.st.ClusterName, h.cfg.ClusterName, h.st.ClusterName)}
	}
	return nil
}

// configureHooks are the hooks that configure the controller; they read the ingress address
// afresh (Juju fires config-changed when the address changes).
var configureHooks = []juju.Kind{juju.LeaderElected, juju.LeaderSettingsChanged, juju.ConfigChanged, juju.Start, juju.UpgradeCharm}

// ingress is the controller's ingress address on the slurmd endpoint, read once per
// configure hook; other hooks use the address the last configure hook read.
func (h *hook) ingress(ctx context.Context) (string, error) {
	if h.addr == "" && !slices.Contains(configureHooks, h.hc.Event.Kind) {
		h.addr = h.pub.Addr
	}
	if h.addr == "" {
		var addr string
		var err error
		if a := h.addrAhead; a != nil {
			h.addrAhead = nil
			addr, err = a.Wait()
		} else {
			addr, err = h.hc.Network.IngressAddress(ctx, slurmd.RequirerEndpoint)
		}
		if err != nil {
			return "", fmt.Errorf("cannot find the controller's address: %w", err)
		}
		h.addr, h.pub.Addr = addr, addr
	}
	return h.addr, nil
}

// features are the version-dependent choices for the installed Slurm. The version
// (`slurmctld -V`, which needs no slurm.conf) is cached in the state and read again on
// upgrade-charm.
func (h *hook) features(ctx context.Context) (slurm.Features, error) {
	if h.st.SlurmVersion != "" && h.hc.Event.Kind != juju.UpgradeCharm {
		if v, err := slurm.ParseVersion(h.st.SlurmVersion); err == nil {
			return slurm.FeaturesOf(v), nil
		}
	}
	v, err := (&slurm.Client{Runner: h.c.Slurm}).SlurmctldVersion(ctx)
	if err != nil {
		return slurm.Features{}, fmt.Errorf("cannot find the Slurm version: %w", err)
	}
	h.st.SlurmVersion = v.String()
	return slurm.FeaturesOf(v), nil
}
