package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/gres"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// Defaults of the Charm's tunables.
const (
	DefaultPollInterval = 100 * time.Millisecond
	// DefaultJobWaitInterval is the longest pause between two checks of a node's jobs while
	// a removal or re-registration waits for them (the checks start PollInterval apart and
	// back off): many departing units must not flood the controller with squeue.
	DefaultJobWaitInterval = 2 * time.Second
	DefaultRegisterTimeout = 30 * time.Second
	// DefaultRegisterGap is how long slurmd's registration and slurmctld's new record take
	// after slurmd's start line (Slurm 24.11 and 26.05 on Debian 13 and 14 machines: a check
	// at once found no record and a second ran 10 ms later; docs/benchmarks.md, branch
	// join3): the first check waits that long.
	DefaultRegisterGap   = 15 * time.Millisecond
	DefaultActionTimeout = 10 * time.Minute
	DefaultProbeTimeout  = 3 * time.Second
	DefaultRebootGrace   = time.Minute
)

// Service names and paths the charm uses.
const (
	SlurmdService = "slurmd"
	SlurmdPath    = "/usr/sbin/slurmd"
	// StateName is the charm's state file in the unit's charm directory: private to the unit
	// (on the local model /var/lib is shared by every host, but /var/lib/juju is not) and kept
	// by Juju across hooks and upgrades.
	StateName = ".slurmd-operator-state.json"
	// RelationRecordName is the relation record's file in the unit's charm directory.
	RelationRecordName = ".slurmd-operator-relations.json"
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
	// StateFile is the charm state's path in tests; empty (production) means StateName in
	// the unit's charm directory (JUJU_CHARM_DIR).
	StateFile string
	// RelationRecord names the file where the hooks keep the relations relation-ids listed,
	// from one hook to the next (charm.Lifecycle's RelationRecord): RelationRecordName in
	// production; empty: every hook lists the endpoints it reads.
	RelationRecord string
	// Slurm runs Slurm's commands (slurmd -C, scontrol, squeue, munge -n) and apt-get.
	Slurm command.Runner
	// Services manages slurmd and munged.
	Services service.Manager
	// MungeService is munged's service name (munge.ServiceName): "munged" under Pebble,
	// "munge" (Debian's unit) under systemd. Empty means "munged".
	MungeService string
	// RegisterTimeout bounds the wait for a started slurmd to register.
	RegisterTimeout time.Duration
	// RegisterGap is how long after slurmd's start line the unit first asks for its node
	// (DefaultRegisterGap when zero; PollInterval at most).
	RegisterGap time.Duration
	// CommandTimeout bounds every Slurm command (scontrol, squeue, slurmd -C): a dead
	// munged or controller must not hold a hook for Slurm's own minute of retries. Zero
	// means slurm.DefaultTimeout.
	CommandTimeout time.Duration
	// ProbeTimeout bounds one check that a local daemon answers (munge -n).
	ProbeTimeout time.Duration
	// RebootGrace is how long after RebootProgram deleted the node's record for a staged
	// node-config the machine must still be up before update-status takes the reboot for a
	// failed one and registers the node (the machine goes down within seconds).
	RebootGrace time.Duration
	// LookPath finds a program (exec.LookPath when nil).
	LookPath func(file string) (string, error)
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

// munged is this host's munged with the charm's settings. A munged this charm starts is
// ready once its socket listens (munge.Daemon.ListenReady): munged listens only with its key
// loaded, and slurmd, the client that follows on a join, then gets its credential; a
// `munge -n` would put a process on the join's path.
func (c *Charm) munged() *munge.Daemon {
	d := c.Munge(c.Services, c.MungeService, c.Slurm)
	d.ListenReady = true
	return d
}

// remover runs this node's removals through cl with the charm's bounds.
func (c *Charm) remover(cl *slurm.Client) *slurm.Remover {
	return &slurm.Remover{Client: cl, Interval: c.poll(), MaxInterval: max(c.poll(), DefaultJobWaitInterval), UnreachableFor: c.UnreachableTimeout, Now: c.Now}
}

// unreachable reports whether err says the controller could not be contacted.
func unreachable(err error) bool { return errors.Is(err, slurm.ErrControllerUnreachable) }

// gresDetector finds this machine's GPUs below Root, nvidia-smi bounded by the charm's
// per-command bound.
func (c *Charm) gresDetector() gres.Detector {
	return gres.Detector{Runner: c.Slurm, Root: c.Path("/"), Timeout: charm.Or(c.CommandTimeout, slurm.DefaultTimeout)}
}

// mungeAnswers reports whether munged encodes a credential (`munge -n`) within ProbeTimeout.
func (c *Charm) mungeAnswers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, charm.Or(c.ProbeTimeout, DefaultProbeTimeout))
	defer cancel()
	out, err := c.Slurm.Run(ctx, []string{munge.ClientPath, "-n"}, nil)
	return err == nil && out.ExitCode == 0
}
