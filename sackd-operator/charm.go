// Command sackd-operator is the sackd charm: each unit is a Slurm login node, a machine users
// log in to and submit jobs from, which runs no slurmd and holds no slurm.conf of its own.
//
// # What the charm does
//
// install checks the machine's Slurm release before it changes anything: sackd exists from
// Slurm 23.11 (Debian 13). On an older release (Debian 12's 22.05) the unit blocks naming the
// version and what a login node needs, and stays so: no package, key or service is touched.
// Otherwise it installs sackd and slurm-client with apt when their programs are missing and
// leaves the packaged sackd service stopped until a controller is related.
//
// When the controller's data is complete (sackd.SlurmctldReady: relation-changed, or
// secret-changed when the auth key rotates) the unit writes the key to /etc/slurm/slurm.key
// (slurm, 0600) and runs, through the host's service manager (Pebble or systemd), as user
// slurm:
//
//	sackd -D --conf-server <controllers, primary first>
//
// sackd fetches the cluster's configuration from the controllers into /run/slurm/conf and
// serves /run/slurm/sack.socket, through which Slurm's clients (sinfo, squeue, sbatch, srun)
// authenticate. sackd is restarted when the controllers, the key or the configuration the
// controller serves (its conf_digest) change: sackd fetches the configuration again when
// slurmctld pushes it on `scontrol reconfigure`, not when slurmctld restarts with a new one.
// The unit says "login node ready" once `sinfo` answers through sackd; every hook that
// (re)starts sackd waits for it at most ReadyTimeout and leaves the rest to update-status.
//
// When the unit leaves the relation (its own relation-departed) or the relation goes
// (relation-broken) sackd is stopped and disabled and the key and the cached configuration
// are removed: a login node that left holds nothing of the cluster. No job is touched: jobs
// submitted from a login node run on the compute nodes.
//
// # Code layout
//
// main.go builds a Charm from the environment (charm.Main); Charm.Router routes every hook to
// a method of hook, run in the charm kit's lifecycle (libs/charm): the state is read once and
// saved once when the hook succeeds. install.go checks the release and installs; relation.go
// acts on the interface's events (interfaces/sackd); sackd.go runs sackd; status.go says
// what the unit is.
package main

import (
	"context"
	"os/exec"
	"time"

	"github.com/charmed-slurm/operators/interfaces/sackd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// Defaults of the Charm's tunables.
const (
	DefaultPollInterval = 100 * time.Millisecond
	DefaultReadyTimeout = 10 * time.Second
)

// Names and paths the charm uses.
const (
	SackdService = "sackd"
	SackdPath    = "/usr/sbin/sackd"
	// SlurmUser runs sackd and owns the key, as in Debian's sackd unit.
	SlurmUser = "slurm"
	// KeyFile is the cluster's auth key (auth/slurm).
	KeyFile = "/etc/slurm/slurm.key"
	// RunDir is sackd's runtime directory (systemd's RuntimeDirectory=slurm); RunConfDir the
	// configuration sackd fetched, where Slurm's clients on this host read it; SackSocket
	// the socket they authenticate through.
	RunDir     = "/run/slurm"
	RunConfDir = "/run/slurm/conf"
	RunConf    = "/run/slurm/conf/slurm.conf"
	SackSocket = "/run/slurm/sack.socket"
	// StateName is the charm's state file in the unit's charm directory.
	StateName = ".sackd-operator-state.json"
)

// Charm holds the sackd charm's dependencies. Only Slurm and Services are required; zero
// values of the others mean the production defaults.
type Charm struct {
	// Settings are the kit's shared tunables: Root (prepended to every file the charm reads
	// or writes), PollInterval (DefaultPollInterval when zero) and LookupUser (file owners).
	charm.Settings
	// StateFile is the charm state's path; empty means StateName in the charm directory.
	StateFile string
	// Slurm runs sinfo, dpkg-query, apt-cache and apt-get.
	Slurm command.Runner
	// Services runs sackd.
	Services service.Manager
	// ReadyTimeout bounds a hook's wait for a (re)started sackd to serve its socket and the
	// configuration; DefaultReadyTimeout when zero.
	ReadyTimeout time.Duration
	// CommandTimeout bounds sinfo; zero means slurm.DefaultTimeout.
	CommandTimeout time.Duration
	// LookPath finds a program (exec.LookPath when nil).
	LookPath func(file string) (string, error)
	// Hostname returns this machine's host name (os.Hostname when nil).
	Hostname func() (string, error)
}

// Router routes every hook the charm handles.
func (c *Charm) Router() *juju.Router {
	r := juju.NewRouter()
	r.Handle(juju.Install, c.handler((*hook).install))
	r.Handle(juju.UpgradeCharm, c.handler((*hook).upgrade))
	r.Handle(juju.Start, c.handler((*hook).start))
	r.Handle(juju.UpdateStatus, c.handler((*hook).updateStatus))
	r.Handle(juju.SecretChanged, c.handler((*hook).relation))
	for _, k := range []juju.Kind{juju.RelationCreated, juju.RelationJoined, juju.RelationChanged, juju.RelationDeparted, juju.RelationBroken} {
		r.HandleRelation(sackd.ProviderEndpoint, k, c.handler((*hook).relation))
	}
	return r
}

// lifecycle runs the hooks: the state is loaded before the handler and saved once after it
// succeeds. After a failure, what the hook did to the host is kept (sackd started with a
// configuration, the release found, sackd stopped for good); the status cache is not
// (the next hook sets the status again).
func (c *Charm) lifecycle() charm.Lifecycle[State] {
	return charm.Lifecycle[State]{
		StateFile: c.StateFile,
		StateName: StateName,
		Failed: func(saved, cur State) State {
			// Juju discards a failed hook's relation-set and status.
			cur.StatusCache, cur.VersionShown, cur.Host = saved.StatusCache, saved.VersionShown, saved.Host
			return cur
		},
	}
}

// hook is one event being handled.
type hook struct {
	c  *Charm
	hc *juju.HookContext
	k  *charm.Hook[State]
	st *State // &k.State
}

// handler runs fn as a hook of the charm's lifecycle.
func (c *Charm) handler(fn func(h *hook, ctx context.Context) error) juju.Handler {
	return c.lifecycle().Handler(func(ctx context.Context, k *charm.Hook[State]) error {
		return fn(&hook{c: c, hc: k.HookContext, k: k, st: &k.State}, ctx)
	})
}

// logf writes to the unit's log (best effort).
func (h *hook) logf(ctx context.Context, level juju.LogLevel, format string, args ...any) {
	h.k.Logf(ctx, level, format, args...)
}

// lookPath finds a program with LookPath.
func (c *Charm) lookPath(name string) (string, error) {
	if c.LookPath != nil {
		return c.LookPath(name)
	}
	return exec.LookPath(name)
}

// client is a Slurm client that reads the configuration sackd fetched.
func (c *Charm) client() *slurm.Client {
	return &slurm.Client{Runner: c.Slurm, Conf: RunConf, PollInterval: c.poll(), Timeout: c.CommandTimeout}
}

// poll is the pause between checks in the charm's waits.
func (c *Charm) poll() time.Duration { return c.Poll(DefaultPollInterval) }
