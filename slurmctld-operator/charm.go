// Command slurmctld-operator is the slurmctld charm: the Slurm controller of a cluster whose
// compute nodes are dynamic nodes (slurmd -Z).
//
// Juju runs the binary as the charm's dispatch program once per hook or action. It installs
// Slurm when missing, owns the cluster's auth key (a Juju secret labelled "auth-key", granted
// to every slurmd relation), writes /etc/slurm/slurm.conf (configless, MaxNodeCount, TreeWidth)
// with one include per related slurmd application (/etc/slurm/partition-<app>.conf, its NodeSet
// and PartitionName), runs munged and slurmctld through the host's service manager (Pebble or
// systemd) and reconfigures slurmctld only when a partition changes. Adding or removing compute
// units never touches slurm.conf: departed nodes are drained and deleted once idle, by the
// departing unit itself and, as a safety net, by this charm's reconcile on relation-departed
// and update-status. No hook waits for Slurm: what one pass leaves (a node still running jobs,
// a removed partition still holding job records) is watched by the removal waiter
// (waiter.go), which wakes the charm through juju-exec. See README.md for the operator's view.
package main

import (
	"context"
	"io"
	"time"

	"github.com/charmed-slurm/operators/interfaces/mountinfo"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// Paths on the controller host (below Charm.Root).
const (
	confDir        = "/etc/slurm"
	confPath       = "/etc/slurm/slurm.conf"
	stateSaveDir   = "/var/spool/slurmctld"
	logDir         = "/var/log/slurm"
	slurmctldLog   = "/var/log/slurm/slurmctld.log"
	slurmUser      = "slurm"
	mungeUser      = "munge"
	authSecretName = "auth-key"
	// SlurmctldPort and SlurmdPort are the ports slurm.conf names.
	SlurmctldPort = 6817
	SlurmdPort    = 6818
	// keySize is the size of a new munge key in bytes.
	keySize = 1024
)

// svcSlurmctld is slurmctld's service name (munged's is Charm.MungeService).
const svcSlurmctld = "slurmctld"

// StateName is the charm's state file in the unit's charm directory: private to the unit
// (also when several units share a file system) and kept by Juju across hooks and upgrades.
const StateName = ".slurmctld-operator-state.json"

// Charm holds the dependencies of every handler. Tests fill it with fakes.
type Charm struct {
	// Settings are the kit's shared tunables: Root (the file system root for every file
	// the charm writes), PollInterval (the pause between checks in bounded waits; 2 s when
	// zero), MungeTimeout (the bound on a (re)started munged answering `munge -n`; 10 s when
	// zero), LookupUser (file owners; nil uses os/user) and Clock (time.Now when nil).
	charm.Settings
	// StateFile is the charm state's path in tests; empty (production) means StateName in
	// the unit's charm directory (JUJU_CHARM_DIR).
	StateFile string
	// Slurm runs Slurm's commands (scontrol, squeue, scancel) and apt-get.
	Slurm command.Runner
	// Services runs munged and slurmctld.
	Services service.Manager
	// MungeService is munged's service name: "munged" under Pebble, "munge" with systemd.
	MungeService string
	// Hostname returns this host's name (os.Hostname): SlurmctldHost must match it.
	Hostname func() (string, error)
	// LookPath finds a program (exec.LookPath); install uses it to skip apt when Slurm is there.
	LookPath func(string) (string, error)
	// Rand is the randomness for new keys (crypto/rand.Reader).
	Rand io.Reader
	// DeleteWait bounds delete-node's wait for cancelled jobs to end and for a delete that
	// Slurm refuses as busy; zero means a minute.
	DeleteWait time.Duration
	// Waiter keeps the removal waiter (waiter.go) in step with the removals the leader's
	// hooks leave under way; nil: no waiter, they finish on update-status.
	Waiter Waiter
	// StuckFor is how long a departed unit's node may stay busy with no job before it is
	// set DOWN to be deleted (Slurm 22.05 bug 16434); zero means slurm.DefaultStuckFor.
	StuckFor time.Duration
}

// defaultPoll is the pause between checks when Settings.PollInterval is zero.
const defaultPoll = 2 * time.Second

// client is the Slurm client over c.Slurm. SLURM_CONF is the real path: commands run on the
// host, not below Root.
func (c *Charm) client() *slurm.Client {
	return &slurm.Client{Runner: c.Slurm, Conf: confPath, PollInterval: c.PollInterval}
}

// poll is the pause between checks in the charm's bounded waits.
func (c *Charm) poll() time.Duration { return c.Poll(defaultPoll) }

// remover runs node removals through the client, with the charm's bounds.
func (c *Charm) remover() *slurm.Remover {
	return &slurm.Remover{Client: c.client(), Interval: c.poll(), StuckFor: c.StuckFor, Now: c.Now}
}

// Router routes every hook and action the charm handles. Every handler has one shape, a
// method of hook run as a charm.Func: handle runs it in the lifecycle with the state, the
// configuration and leadership read; stateless runs it with the hook context alone.
func (c *Charm) Router() *juju.Router {
	r := juju.NewRouter()
	r.Handle(juju.Install, c.handle((*hook).install))
	for _, k := range []juju.Kind{juju.LeaderElected, juju.LeaderSettingsChanged, juju.ConfigChanged, juju.Start} {
		r.Handle(k, c.handle((*hook).configure))
	}
	r.Handle(juju.UpgradeCharm, c.handle((*hook).upgradeCharm))
	// High availability: the peers and the shared storage change the controllers.
	for _, k := range []juju.Kind{juju.RelationCreated, juju.RelationJoined, juju.RelationChanged, juju.RelationDeparted, juju.RelationBroken} {
		r.HandleRelation(peerEndpoint, k, c.handle((*hook).configure))
		r.HandleRelation(mountinfo.EndpointName, k, c.handle((*hook).configure))
	}
	r.HandleAction("takeover", c.handle((*hook).takeover))
	r.Handle(juju.UpdateStatus, c.handle((*hook).updateStatus))
	for _, k := range []juju.Kind{juju.RelationCreated, juju.RelationJoined, juju.RelationChanged, juju.RelationDeparted, juju.RelationBroken} {
		r.HandleRelation("slurmd", k, c.handle((*hook).slurmdRelation))
	}
	r.Handle(juju.Stop, c.stateless((*hook).stopWaiter))
	r.Handle(juju.Remove, c.stateless((*hook).stopWaiter))
	r.HandleAction("show-current-config", c.stateless((*hook).showCurrentConfig))
	r.HandleAction("set-node-state", c.handle(thenStatus((*hook).setNodeState)))
	r.HandleAction("drain", c.handle(thenStatus((*hook).drain)))
	r.HandleAction("resume", c.handle(thenStatus((*hook).resume)))
	r.HandleAction("delete-node", c.handle(thenStatus((*hook).deleteNode)))
	r.HandleAction("rotate-auth-key", c.handle((*hook).rotateAuthKey))
	r.HandleAction("settle-jobs", c.handle((*hook).settleJobs))
	r.HandleAction("reboot", c.handle((*hook).reboot))
	return r
}

// thenStatus runs action, which changes nodes in Slurm, then sets the unit status again:
// its node counts are out of date now, and no hook may come to refresh them before the next
// update-status.
func thenStatus(action charm.Func[*hook]) charm.Func[*hook] {
	return func(h *hook, ctx context.Context) error {
		if err := action(h, ctx); err != nil {
			return err
		}
		return h.setStatus(ctx)
	}
}
