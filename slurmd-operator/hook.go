package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// hook is one event being handled: the configuration and persisted state are read once.
// Every hook and action handler is a method of it (hooks.go, actions.go); the jobs they
// hand the work to (registrar, removal, slurmctldRelation, genericResources) hold it.
type hook struct {
	c    *Charm
	hc   *juju.HookContext
	k    *charm.Hook[State]
	st   *State // &k.State
	cfg  config
	node string // this unit's Slurm node name
	// cfgErr is the configuration problem to show as blocked, if any.
	cfgErr error
	// published is what this hook wrote to the relation, recorded in st.Published only when
	// the hook succeeds (Juju discards a failed hook's relation-set).
	published *Published
	// machine is `slurmd -C` running from the hook's start when the state holds no machine
	// facts yet (the first hook after install); facts waits for it.
	machine *charm.Pending[slurm.MachineInfo]
	// mungePrep is munged's Prepare running from the relation hook's start on a new node's
	// join; authUp what slurmd's authentication waits for, running beside slurmd's
	// configuration: munged's start (munged.go) or, under auth/slurm, the key's write
	// (writeAuthKey); nil when none runs.
	mungePrep *charm.Pending[*munge.Prepared]
	authUp    *charm.Pending[struct{}]
	// slurmdAhead is slurmd's definition made from the relation hook's start on a new
	// node's join (defineAhead), nil when none runs.
	slurmdAhead *charm.Pending[service.Spec]
	// nodeAhead is the node's record read from the relation hook's start (readNodeAhead),
	// until the join's settle takes it or a change to slurmd drops it; nil for none.
	nodeAhead  *charm.Pending[slurm.Node]
	nodeCancel context.CancelFunc
}

// lifecycle runs the charm's hooks: the state is loaded before the handler and saved once
// after it succeeds. A failed hook keeps what it did to the host (slurmd started with a
// configuration, a re-registration under way, the node gone, the machine's facts) and drops
// what it wrote to Juju, which Juju discards or the next hook writes again: the published
// partition, the status cache and the version shown; a node-config the action did not apply
// is not recorded either.
func (c *Charm) lifecycle() charm.Lifecycle[State] {
	return charm.Lifecycle[State]{
		StateFile:      c.StateFile,
		StateName:      StateName,
		RelationRecord: c.RelationRecord,
		Failed: func(saved, cur State) State {
			saved.Applied, saved.Restore, saved.DefaultPending = cur.Applied, cur.Restore, cur.DefaultPending
			saved.Departed, saved.Facts, saved.Config = cur.Departed, cur.Facts, cur.Config
			saved.Gres = cur.Gres
			// StagedMarker and slurmd's start at boot follow the staged node-config.
			saved.StagedNodeConfig = cur.StagedNodeConfig
			return saved
		},
	}
}

// handlers runs every handler in the lifecycle with the hook value built by begin.
func (c *Charm) handlers() charm.Handlers[State, *hook] {
	return charm.Handlers[State, *hook]{Lifecycle: c.lifecycle(), Begin: c.begin, End: (*hook).end}
}

// begin reads the configuration (kept in the state) and checks it against the key set of the
// machine's Slurm release.
func (c *Charm) begin(ctx context.Context, k *charm.Hook[State]) (*hook, error) {
	hc := k.HookContext
	h := &hook{c: c, hc: hc, k: k, st: &k.State, node: slurmd.NodeName(hc.Event.Unit)}
	cfg, err := charm.ReadConfig(ctx, hc, &h.st.Config, config{})
	if err != nil {
		return nil, err
	}
	h.cfg = cfg
	h.cfgErr = cfg.validate(h.confKeys(), hc.Event.App)
	return h, nil
}

// end records what the hook published, once it succeeded.
func (h *hook) end(context.Context) error {
	if h.published != nil {
		h.st.Published = h.published
	}
	return nil
}

// report sets the unit status from the state and what the hook observed (unitStatus, the
// one place statuses are worded), and shows the Slurm version beside it once the machine's
// facts are known.
func (h *hook) report(ctx context.Context, o observed) error {
	code, msg := unitStatus(h.st, h.cfgErr, h.node, o)
	if err := h.k.SetUnitStatus(ctx, code, msg); err != nil {
		return err
	}
	return h.showVersion(ctx)
}

// progress shows a step under way ("draining slurmd-3: waiting for 2 jobs") until the hook
// reports its outcome; a configuration error still shows as blocked.
func (h *hook) progress(ctx context.Context, msg string) error {
	code := juju.StatusMaintenance
	if h.cfgErr != nil {
		code, msg = juju.StatusBlocked, h.cfgErr.Error()
	}
	if err := h.k.SetUnitStatus(ctx, code, msg); err != nil {
		return err
	}
	return h.showVersion(ctx)
}

// showVersion shows this machine's Slurm version in juju status's Version column, once per
// version: the version follows the facts (read again by upgrade-charm).
func (h *hook) showVersion(ctx context.Context) error {
	if f := h.st.Facts; f != nil {
		return h.k.SetVersion(ctx, f.Version)
	}
	return nil
}

// readingFacts runs fn with `slurmd -C` read from the hook's start when the state holds no
// machine facts yet (the first hook after install; on a join the relation hook that starts
// slurmd): about 10 ms of CPU, beside the hook's tool calls, the key's write and munged's
// start instead of before them. install reads the version alone (installHandler). What the
// read found is kept in the state's facts (as facts keeps it) even when fn did not ask for
// it, so that the hooks before a join (leader-elected, config-changed, start) read it once,
// not once each.
func readingFacts(fn charm.Func[*hook]) charm.Func[*hook] {
	return func(h *hook, ctx context.Context) error {
		if !h.st.Facts.hasMachine() {
			cl := h.c.slurm()
			h.machine = charm.Start(func() (slurm.MachineInfo, error) { return cl.MachineInfo(ctx) })
			defer h.keepMachine() // no command left running when the hook ends
		}
		return fn(h, ctx)
	}
}

// keepMachine waits for the `slurmd -C` the hook started and keeps what it read in the
// state's facts when they hold the version but no machine yet; a failed read keeps nothing.
func (h *hook) keepMachine() {
	mi, err := h.machine.Wait()
	if err != nil || len(mi.Params) == 0 || h.st.Facts == nil || h.st.Facts.hasMachine() {
		return
	}
	if _, err := slurm.ParseVersion(h.st.Facts.Version); err != nil {
		return
	}
	h.st.Facts.Machine = mi
}

// facts returns this machine's Slurm version and `slurmd -C` facts, from the state cache or
// read (and cached) when missing: the machine's from the read the hook started with, if any.
func (h *hook) facts(ctx context.Context) (slurm.Version, slurm.MachineInfo, error) {
	v, err := h.version(ctx)
	if err != nil {
		return slurm.Version{}, slurm.MachineInfo{}, err
	}
	if h.st.Facts.hasMachine() {
		return v, h.st.Facts.Machine, nil
	}
	var mi slurm.MachineInfo
	if h.machine != nil {
		mi, err = h.machine.Wait()
	} else {
		mi, err = h.c.slurm().MachineInfo(ctx)
	}
	if err != nil {
		return slurm.Version{}, slurm.MachineInfo{}, fmt.Errorf("cannot read this machine's facts (slurmd -C): %w", err)
	}
	h.st.Facts.Machine = mi
	return v, mi, nil
}

// version returns this machine's Slurm version, from the state cache or read (and cached)
// when missing; unlike facts it does not wait for `slurmd -C`.
func (h *hook) version(ctx context.Context) (slurm.Version, error) {
	if f := h.st.Facts; f != nil {
		if v, err := slurm.ParseVersion(f.Version); err == nil {
			return v, nil
		}
	}
	v, err := h.c.slurm().SlurmdVersion(ctx)
	if err != nil {
		return slurm.Version{}, fmt.Errorf("cannot find the Slurm version: %w", err)
	}
	h.st.Facts = &Facts{Version: v.String()}
	return v, nil
}

// confKeys is the slurm.conf key set of this machine's Slurm release, known from the facts
// cached in the state; 22.05's until they are.
func (h *hook) confKeys() *slurmconf.Keys {
	var version string
	if f := h.st.Facts; f != nil {
		version = f.Version
	}
	return charm.ConfKeys(version)
}

// slurmd is this host's slurmd.
func (h *hook) slurmd() slurmdDaemon {
	return slurmdDaemon{c: h.c, node: h.node, logf: h.logf, ready: h.authReady, defined: h.definedAhead}
}

// showNode shows this unit's node.
func (h *hook) showNode(ctx context.Context) (slurm.Node, error) {
	cl, err := h.c.ctl()
	if err != nil {
		return slurm.Node{}, err
	}
	return cl.ShowNode(ctx, h.node)
}

// seeNode is what showNode's answer (n, err) tells the status; an error the status does not
// name is logged.
func (h *hook) seeNode(ctx context.Context, n slurm.Node, err error) observed {
	if err == nil {
		return observed{node: &n}
	}
	if !errors.Is(err, errNoConf) && !unreachable(err) && !errors.Is(err, slurm.ErrUnknownNode) {
		h.logf(ctx, juju.LevelWarning, "cannot show node %s: %v", h.node, err)
	}
	return observed{nodeErr: err}
}

// logf writes to the unit's log (best effort).
func (h *hook) logf(ctx context.Context, level juju.LogLevel, format string, args ...any) {
	h.k.Logf(ctx, level, format, args...)
}
