package main

import (
	"os/exec"
	"time"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
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
