// Command slurmd-operator is the slurmd charm: each unit runs one Slurm dynamic node
// (slurmd -Z) named after the unit (slurmd/3 → slurmd-3).
//
// # What the charm does
//
// install installs slurmd and munge with apt when their binaries are missing. The leader
// publishes its application's NodeSet and partition (ComputeData, built from the
// partition-config option) on the slurmctld relation; an invalid partition-config puts the
// unit in blocked status naming the bad key and leaves the published partition as it was.
//
// When the controller's data is complete (SlurmctldReady: relation-changed, or
// secret-changed when the auth key rotates) the unit writes the auth key (the munge key on
// Slurm 22.05, restarting munged when the key changed), builds the node's --conf from
// `slurmd -C` (without NodeName), Feature=<application> and the node-config set with the
// node-config action, and runs
//
//	slurmd -D -Z -N <node> --conf-server <controllers> --conf "<params>"
//
// through the host's service manager (Pebble or systemd). A new node takes
// default-node-state (idle or down, with default-node-reason). slurmd is restarted only when
// the controllers, the key or the --conf change; a changed --conf re-registers the node
// (drain, wait for its jobs, stop, delete the node record, start, restore its state), because
// Slurm 22.05 keeps a dynamic node's old record otherwise. The node-config action does this
// transactionally: values above the machine's `slurmd -C` facts are refused before anything
// is touched, and a --conf Slurm refuses (slurmd exits, no registration in time, INVALID_REG)
// is replaced by the previous one, the node's state restored, and the action fails with
// Slurm's reason.
//
// update-status checks this host's own daemons (munged answers, slurmd's service is active,
// or its pid file when the service manager is gone) before any Slurm command, so a dead host
// is reported as such and not as an unreachable controller; every Slurm command is bounded by
// CommandTimeout.
//
// When the unit leaves (its own relation-departed, or relation-broken, whichever comes first)
// the node is drained with reason "unit <unit> removed", the hook waits for its jobs with the
// count in the status, stops slurmd and deletes the node. A bare stop is a machine shutdown or
// reboot (Juju >= 2.8), not a removal: the node keeps its record and state, slurmd is enabled
// at boot, and start after the boot repairs what changed and resumes a node Slurm set DOWN for
// its unexpected reboot (an administrator's drain stays). install and start put RebootProgram
// in place, the program slurmctld's RebootProgram names: it reboots the machine through systemd. A node with running jobs is never deleted. If the
// controller cannot be reached, or this host's munged is down, the node is left for the
// controller's reconcile; a dead service manager fails neither hook while slurmd is not running.
//
// # Code layout
//
// main.go builds a Charm from the environment (charm.Main: SIGTERM cancels the hook);
// Charm.Router routes every hook and action to a handler. Each handler runs in the charm
// kit's lifecycle (libs/charm): the configuration and the unit's state are read once (a hook
// value), the work goes through the injected Slurm runner and service Manager and writes files
// below Settings.Root, and the state is saved once, when the hook succeeds (see
// Charm.lifecycle for what a failed hook keeps). Node removal (departure, re-registration) is
// slurm.Remover's drain → wait → stop → delete.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// Defaults of the Charm's tunables.
const (
	DefaultPollInterval    = 100 * time.Millisecond
	DefaultRegisterTimeout = 30 * time.Second
	DefaultActionTimeout   = 10 * time.Minute
	DefaultProbeTimeout    = 3 * time.Second
)

// Service names and paths the charm uses.
const (
	SlurmdService = "slurmd"
	SlurmdPath    = "/usr/sbin/slurmd"
	// StateName is the charm's state file in the unit's charm directory: private to the unit
	// (on the local model /var/lib is shared by every host, but /var/lib/juju is not) and kept
	// by Juju across hooks and upgrades.
	StateName = ".slurmd-operator-state.json"
	// SpoolConf is where a configless slurmd caches the controller's slurm.conf; /run/slurm/conf
	// is tried first (newer releases link it there).
	SpoolConf = "/var/spool/slurmd/conf-cache/slurm.conf"
	RunConf   = "/run/slurm/conf/slurm.conf"
	// SlurmdLog is slurmd's log file (SlurmdLogFile in the controller's slurm.conf).
	SlurmdLog = "/var/log/slurm/slurmd.log"
	// SlurmdPidFile is where slurmd writes its pid (SlurmdPidFile in slurm.conf).
	SlurmdPidFile = "/run/slurmd.pid"
)

// Charm holds the slurmd charm's dependencies. Only Slurm and Services are required; zero
// values of the others mean the production defaults.
type Charm struct {
	// Settings are the kit's shared tunables: Root (prepended to every file the charm reads
	// or writes), PollInterval (how often the charm polls Slurm while it waits: jobs,
	// registration; DefaultPollInterval when zero), MungeTimeout (the bound on a started
	// munged answering), UnreachableTimeout (how long a departing unit retries an unreachable
	// controller before leaving its node drained for the controller to delete) and
	// LookupUser (file owners; os/user when nil).
	charm.Settings
	// StateFile is the charm state's path; empty means StateName in the unit's charm
	// directory (JUJU_CHARM_DIR).
	StateFile string
	// Slurm runs Slurm's commands (slurmd -C, scontrol, squeue, munge -n) and apt-get.
	Slurm command.Runner
	// Services manages slurmd and munged.
	Services service.Manager
	// MungeService is munged's service name (munge.ServiceName): "munged" under Pebble,
	// "munge" (Debian's unit) under systemd. Empty means "munged".
	MungeService string
	// RegisterTimeout bounds the wait for a started slurmd to register.
	RegisterTimeout time.Duration
	// CommandTimeout bounds every Slurm command (scontrol, squeue, slurmd -C): a dead
	// munged or controller must not hold a hook for Slurm's own minute of retries. Zero
	// means slurm.DefaultTimeout.
	CommandTimeout time.Duration
	// ProbeTimeout bounds one check that a local daemon answers (munge -n).
	ProbeTimeout time.Duration
	// LookPath finds a program (exec.LookPath when nil).
	LookPath func(file string) (string, error)
}

// Router routes every hook and action the charm handles.
func (c *Charm) Router() *juju.Router {
	r := juju.NewRouter()
	r.Handle(juju.Install, c.installHandler())
	r.Handle(juju.UpgradeCharm, c.handler(func(ctx context.Context, h *hook) error { return h.upgrade(ctx) }))
	r.Handle(juju.ConfigChanged, c.handler(func(ctx context.Context, h *hook) error { return h.configChanged(ctx) }))
	r.Handle(juju.LeaderElected, c.handler(func(ctx context.Context, h *hook) error { return h.configChanged(ctx) }))
	r.Handle(juju.Start, c.handler(func(ctx context.Context, h *hook) error { return h.start(ctx) }))
	r.Handle(juju.UpdateStatus, c.handler(func(ctx context.Context, h *hook) error { return h.updateStatus(ctx) }))
	r.Handle(juju.Stop, c.handler(func(ctx context.Context, h *hook) error { return h.stop(ctx) }))
	r.Handle(juju.SecretChanged, c.handler(func(ctx context.Context, h *hook) error { return h.relation(ctx) }))
	for _, k := range []juju.Kind{juju.RelationCreated, juju.RelationJoined, juju.RelationChanged, juju.RelationDeparted, juju.RelationBroken} {
		r.HandleRelation(slurmd.ProviderEndpoint, k, c.handler(func(ctx context.Context, h *hook) error { return h.relation(ctx) }))
	}
	r.HandleAction("node-config", c.handler(func(ctx context.Context, h *hook) error { return h.nodeConfigAction(ctx) }))
	r.HandleAction("detect-gres", c.handler(func(ctx context.Context, h *hook) error { return h.detectGresAction(ctx) }))
	return r
}

// lifecycle runs the charm's hooks: the state is loaded before the handler and saved once
// after it succeeds. A failed hook keeps what it did to the host (slurmd started with a
// configuration, a re-registration under way, the node gone, the machine's facts) and drops
// what it wrote to Juju, which Juju discards or the next hook writes again: the published
// partition, the status cache and the version shown; a node-config the action did not apply
// is not recorded either.
func (c *Charm) lifecycle() charm.Lifecycle[State] {
	return charm.Lifecycle[State]{
		StateFile: c.StateFile,
		StateName: StateName,
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

// hook is one event being handled: the configuration and persisted state are read once.
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
	// rel and relKnown memoize the slurmctld relation id.
	rel      juju.RelationID
	relKnown bool
	// machine is `slurmd -C` running from the hook's start when the state holds no machine
	// facts yet (the first hook after install); facts waits for it.
	machine *pending[slurm.MachineInfo]
}

// handler runs fn as a hook of the charm's lifecycle, with the configuration read.
func (c *Charm) handler(fn func(ctx context.Context, h *hook) error) juju.Handler {
	return c.lifecycle().Handler(func(ctx context.Context, k *charm.Hook[State]) error {
		hc := k.HookContext
		h := &hook{c: c, hc: hc, k: k, st: &k.State, node: slurmd.NodeName(hc.Event.Unit)}
		if hc.Event.Kind != juju.Install && !h.st.Facts.hasMachine() {
			// slurmd -C takes about 10 ms of CPU: beside the hook's tool calls and, on a
			// join, munged's start, instead of before them.
			cl := c.slurm()
			h.machine = start(func() (slurm.MachineInfo, error) { return cl.MachineInfo(ctx) })
			defer h.machine.wait() // no command left running when the hook ends
		}
		if err := h.readConfig(ctx); err != nil {
			return err
		}
		h.cfgErr = h.cfg.validate(h.confKeys(), hc.Event.App)
		if err := fn(ctx, h); err != nil {
			return err
		}
		if h.published != nil {
			h.st.Published = h.published
		}
		return nil
	})
}

// setStatus sets the unit status, and shows the Slurm version beside it once the machine's
// facts are known; a configuration error takes precedence, as blocked.
func (h *hook) setStatus(ctx context.Context, code juju.StatusCode, msg string) error {
	if h.cfgErr != nil {
		code, msg = juju.StatusBlocked, h.cfgErr.Error()
	}
	if err := h.k.SetUnitStatus(ctx, code, msg); err != nil {
		return err
	}
	return h.showVersion(ctx)
}

// relation returns the slurmctld relation id ("" when there is none): the event's own on a
// relation hook, else one relation-ids call per hook.
func (h *hook) relationID(ctx context.Context) (juju.RelationID, error) {
	ev := h.hc.Event
	if ev.Kind.IsRelation() && ev.Endpoint == slurmd.ProviderEndpoint && ev.Kind != juju.RelationBroken && ev.Relation != "" {
		return ev.Relation, nil
	}
	if !h.relKnown {
		id, err := slurmd.Provider{HookContext: h.hc}.Relation(ctx)
		if err != nil {
			return "", err
		}
		h.rel, h.relKnown = id, true
	}
	return h.rel, nil
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
		mi, err = h.machine.wait()
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

// logf writes to the unit's log (best effort).
func (h *hook) logf(ctx context.Context, level juju.LogLevel, format string, args ...any) {
	h.k.Logf(ctx, level, format, args...)
}

// errNoConf: the node's slurmd has not fetched slurm.conf from the controller yet, so Slurm's
// clients cannot reach the controller (and, without the file, scontrol retries for a minute).
var errNoConf = errors.New("slurmd has not fetched the cluster configuration yet")

// confPath is the slurm.conf the node's slurmd cached, and whether it exists.
func (c *Charm) confPath() (string, bool) {
	for _, p := range []string{RunConf, SpoolConf} {
		if _, err := os.Stat(c.Path(p)); err == nil {
			return c.Path(p), true
		}
	}
	return c.Path(SpoolConf), false
}

// slurm returns a Slurm client for commands that need no controller (slurmd -C, -V).
func (c *Charm) slurm() *slurm.Client {
	conf, _ := c.confPath()
	return c.client(conf)
}

// ctl returns a Slurm client that talks to the controller, or errNoConf.
func (c *Charm) ctl() (*slurm.Client, error) {
	conf, ok := c.confPath()
	if !ok {
		return nil, errNoConf
	}
	return c.client(conf), nil
}

// client is a Slurm client with the charm's runner and bounds, for the slurm.conf conf.
func (c *Charm) client(conf string) *slurm.Client {
	return &slurm.Client{Runner: c.Slurm, Conf: conf, PollInterval: c.poll(), Timeout: c.CommandTimeout}
}

// poll is the pause between checks in the charm's waits.
func (c *Charm) poll() time.Duration { return c.Poll(DefaultPollInterval) }

// munged is this host's munged with the charm's settings.
func (c *Charm) munged() *munge.Daemon { return c.Munge(c.Services, c.MungeService, c.Slurm) }

// remover runs this node's removals through cl with the charm's bounds.
func (c *Charm) remover(cl *slurm.Client) *slurm.Remover {
	return &slurm.Remover{Client: cl, Interval: c.poll(), UnreachableFor: c.UnreachableTimeout}
}

// unreachable reports whether err says the controller could not be contacted.
func unreachable(err error) bool { return errors.Is(err, slurm.ErrControllerUnreachable) }

// pending is a read running beside the hook's other work; wait returns its result once it
// is done (as often as asked).
type pending[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// start runs read in the background.
func start[T any](read func() (T, error)) *pending[T] {
	p := &pending[T]{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.v, p.err = read()
	}()
	return p
}

func (p *pending[T]) wait() (T, error) {
	<-p.done
	return p.v, p.err
}
