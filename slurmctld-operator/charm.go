package main

import (
	"context"
	"io"
	"time"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
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

// RelationRecordName is the relation record's file in the unit's charm directory.
const RelationRecordName = ".slurmctld-operator-relations.json"

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
	// RelationRecord names the file where the hooks keep the relations relation-ids listed,
	// from one hook to the next (charm.Lifecycle's RelationRecord): RelationRecordName in
	// production; empty: every hook lists the endpoints it reads.
	RelationRecord string
	// AskLeaderEarly starts is-leader before the state loads in every hook that asks it
	// (asksLeader), so that it runs beside the hook's other work (charm.Handlers.AskLeader):
	// true in production (the hook tools run as processes); tests whose runners are not safe
	// for concurrent use leave it false, and the hooks ask in turn.
	AskLeaderEarly bool
	// ReadAhead starts, once the state is loaded, the reads a hook will make anyway beside
	// is-leader and the rest of begin (readAhead): true in production; tests whose runners
	// are not safe for concurrent use leave it false, and the hooks read in turn.
	ReadAhead bool
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
	// Waiter keeps the waiter (waiter.go) in step with the removals and the slurmctld restart
	// the leader's hooks leave under way; nil: no waiter, they finish on update-status.
	Waiter Waiter
	// StuckFor is how long a departed unit's node may stay busy with no job before it is
	// set DOWN to be deleted (Slurm 22.05 bug 16434); zero means slurm.DefaultStuckFor.
	StuckFor time.Duration
	// ControlWait bounds the waits for control to change hands: a leaving controller's for
	// its slurmctld to end after it asked a backup to take control (zero: handOverWait), the
	// takeover action's for the heartbeat to name its unit in control (zero: takeoverWait).
	ControlWait time.Duration
}

// Waiter keeps the waiter in step with what the hooks leave under way: removals and a
// slurmctld restart.
type Waiter interface {
	// Watch records w as what to watch and makes sure a waiter runs while w is not empty;
	// an empty w lets a running waiter end.
	Watch(ctx context.Context, w watchList) error
	// Stop ends a running waiter and returns once it is gone.
	Stop(ctx context.Context) error
}

// watchList is what the waiter watches: the leader's pending node removals, partitions being
// removed and the slurmctld restart under way, from the charm state at the end of each hook.
type watchList struct {
	// Nodes are departed units' nodes, deleted once no job runs on them.
	Nodes []string `json:"nodes,omitempty"`
	// Partitions are removed applications' partitions, removed once no job record is left.
	Partitions []string `json:"partitions,omitempty"`
	// Restart is the deadline of the slurmctld restart under way (zero: none): finished once
	// slurmctld answers again, failed (or rolled back) once the deadline has passed.
	Restart time.Time `json:"restart,omitzero"`
	// Host is the SlurmctldHost name of the restarted slurmctld, the one that must answer.
	Host string `json:"host,omitempty"`
	// Turn is when the leader's restart turn runs out (zero: none), rolling.go.
	Turn time.Time `json:"turn,omitzero"`
}

func (w watchList) empty() bool {
	return len(w.Nodes) == 0 && len(w.Partitions) == 0 && w.Restart.IsZero() && w.Turn.IsZero()
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

// running reports whether slurmctld runs.
func (c *Charm) running(ctx context.Context) bool {
	st, err := c.Services.Status(ctx, svcSlurmctld)
	return err == nil && st.State == service.StateActive
}
