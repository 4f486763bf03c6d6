// Command slurmdbd-operator is the slurmdbd charm: Slurm's accounting daemon on a database
// that the mysql_client interface provides, serving the slurmctld application it is related
// to.
//
// # What the charm does
//
// install installs slurmdbd (and munge) with apt when missing and creates slurmdbd's log
// directory. Every other hook runs one reconcile (Charm.reconcile) on the leader:
//
//  1. the configuration: slurmdbd-conf-parameters, parsed and checked (managed keys refused);
//  2. the database relation: the request for slurm_acct_db is written (leader), the answer
//     read, the user's credentials resolved from their secret (never kept in the state, never
//     logged: mysqlclient.Password does not print);
//  3. the slurmctld relation: the controller's auth key (its secret) and Slurm version; a
//     slurmdbd older than the controller blocks (slurmdbd.CheckVersions) and nothing starts;
//     the key is written for the controller's authentication (the munge key and munged before
//     Slurm 23.11, /etc/slurm/slurm.key after);
//  4. the database is probed (Prober: connect, database exists, innodb_snapshot_isolation off);
//     a problem blocks naming it, and a slurmdbd that never ran is not started (its first start
//     would die on a missing database);
//  5. slurmdbd.conf is rendered and written to a candidate directory, read by slurmdbd's own
//     parser (slurm.CheckDbdConfig), and installed (0600, owned by slurm) only when the parser
//     reads it; slurmdbd (run as slurm) is (re)started when its configuration or key changed,
//     or when its supervisor gave up on it, and the hook waits (bounded) until it listens; a
//     slurmdbd an operator stopped stays stopped (blocked, saying so);
//  6. the leader publishes where slurmdbd listens to slurmctld, which then turns accounting on.
//
// A database that goes away while slurmdbd runs leaves slurmdbd running (it reconnects); the
// unit is blocked naming the problem, and slurmctld keeps the records in its queue meanwhile.
// Only the leader runs slurmdbd (high availability is not supported yet).
//
// # Code layout
//
// main.go builds a Charm; charm.go routes hooks into the kit's lifecycle; config.go,
// database.go (the mysql_client side and the Prober), controller.go (the slurmdbd relation),
// conf.go (slurmdbd.conf and its candidate check), service.go (slurmdbd and the key) and
// status.go each hold one concern.
package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/charmed-slurm/operators/interfaces/mysqlclient"
	"github.com/charmed-slurm/operators/interfaces/slurmdbd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// Names and paths the charm uses.
const (
	// StateName is the charm's state file in the unit's charm directory.
	StateName = ".slurmdbd-operator-state.json"
	// DatabaseName is the database slurmdbd asks for (StorageLoc).
	DatabaseName = "slurm_acct_db"
	// Service is slurmdbd's service name.
	Service = "slurmdbd"
	// ConfDir holds slurmdbd.conf.
	ConfDir  = "/etc/slurm"
	ConfFile = "/etc/slurm/slurmdbd.conf"
	// LogFile and PidFile are slurmdbd's (managed keys).
	LogDir  = "/var/log/slurm"
	LogFile = "/var/log/slurm/slurmdbd.log"
	// PidFile is in slurmdbd's own runtime directory: Debian 13's unit runs it as slurm
	// (RuntimeDirectory=slurmdbd); the charm creates the directory where nothing does.
	RunDir    = "/run/slurmdbd"
	PidFile   = "/run/slurmdbd/slurmdbd.pid"
	SlurmUser = "slurm"
	MungeUser = "munge"
)

// Defaults of the Charm's tunables.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultPollInterval = 200 * time.Millisecond
	DefaultProbeTimeout = 10 * time.Second
)

// Charm holds the slurmdbd charm's dependencies. Tests fill it with fakes.
type Charm struct {
	// Settings: Root (prepended to every path the charm writes), PollInterval, MungeTimeout,
	// LookupUser (file owners).
	charm.Settings
	// StateFile is the state's path; empty means StateName in the charm directory.
	StateFile string
	// Slurm runs slurmdbd -V (the parser check), munge -n and apt-get.
	Slurm command.Runner
	// Services runs slurmdbd and munged.
	Services service.Manager
	// MungeService is munged's service name (munge.ServiceName).
	MungeService string
	// Database probes the database (SQLProber in production).
	Database Prober
	// Hostname is this host's name (os.Hostname): slurmdbd refuses to start unless DbdHost
	// names it.
	Hostname func() (string, error)
	// LookPath finds a program (exec.LookPath): install skips apt when slurmdbd is there.
	LookPath func(string) (string, error)
	// StartTimeout bounds the wait for a (re)started slurmdbd to listen.
	StartTimeout time.Duration
	// Dial connects to slurmdbd's port to tell it listens (a net.Dialer when nil).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Router routes every hook the charm handles.
func (c *Charm) Router() *juju.Router {
	r := juju.NewRouter()
	r.Handle(juju.Install, c.handler((*hook).install))
	for _, k := range []juju.Kind{juju.LeaderElected, juju.LeaderSettingsChanged, juju.ConfigChanged, juju.Start,
		juju.UpgradeCharm, juju.UpdateStatus, juju.SecretChanged} {
		r.Handle(k, c.handler((*hook).reconcile))
	}
	for _, ep := range []string{mysqlclient.EndpointName, slurmdbd.ProviderEndpoint} {
		for _, k := range []juju.Kind{juju.RelationCreated, juju.RelationJoined, juju.RelationChanged, juju.RelationDeparted, juju.RelationBroken} {
			r.HandleRelation(ep, k, c.handler((*hook).reconcile))
		}
	}
	r.Handle(juju.Stop, c.handler((*hook).stop))
	return r
}

// lifecycle keeps the state between hooks. A failed hook keeps what it did to the host
// (the configuration and key slurmdbd runs with) and drops its record of what it wrote to
// Juju (the status cache, the published data, the database request), which Juju discards.
func (c *Charm) lifecycle() charm.Lifecycle[State] {
	return charm.Lifecycle[State]{
		StateFile: c.StateFile,
		StateName: StateName,
		Failed: func(saved, cur State) State {
			cur.StatusCache, cur.Published, cur.Requested = saved.StatusCache, saved.Published, saved.Requested
			return cur
		},
	}
}

// hook is one event being handled.
type hook struct {
	c      *Charm
	hc     *juju.HookContext
	k      *charm.Hook[State]
	st     *State
	leader bool
	cfg    config
	extra  []param
	cfgErr error
	// problem is why slurmdbd cannot serve now (blocked), found by this hook.
	problem string
	// waiting is what slurmdbd waits for (waiting), found by this hook.
	waiting string
}

func (c *Charm) handler(fn func(h *hook, ctx context.Context) error) juju.Handler {
	return c.lifecycle().Handler(func(ctx context.Context, k *charm.Hook[State]) error {
		h := &hook{c: c, hc: k.HookContext, k: k, st: &k.State}
		if k.HookContext.Event.Kind != juju.Install {
			if err := h.readConfig(ctx); err != nil {
				return err
			}
			if k.HookContext.Event.Kind == juju.LeaderElected {
				h.leader = true
			} else {
				var err error
				if h.leader, err = h.hc.Leadership.IsLeader(ctx); err != nil {
					return fmt.Errorf("cannot check leadership: %w", err)
				}
			}
		}
		return fn(h, ctx)
	})
}

// logf writes to the unit's log (best effort). Never pass it credentials.
func (h *hook) logf(ctx context.Context, level juju.LogLevel, format string, args ...any) {
	h.k.Logf(ctx, level, format, args...)
}

func (c *Charm) poll() time.Duration { return c.Poll(DefaultPollInterval) }

// client is a Slurm client for the commands the charm runs.
func (c *Charm) client() *slurm.Client {
	return &slurm.Client{Runner: c.Slurm, PollInterval: c.poll()}
}
