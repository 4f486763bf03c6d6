package main

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service/servicetest"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

// host runs the controller host's commands for the charm under test: Slurm's are
// answered by slurmtest.Cluster, the stateful fake built on outputs recorded from real
// Slurm 22.05; apt-get, munge -n (munged's readiness) and a `slurmctld -V` of another
// Slurm version depend on the host and are played here. Every command the charm runs is
// recorded in calls.
type host struct {
	*slurmtest.Cluster
	mu    sync.Mutex
	calls [][]string
	// aptFail makes apt-get fail; version, when set, is what `slurmctld -V` prints;
	// mungeUp reports whether munged answers (nil: it does not).
	aptFail bool
	version string
	mungeUp func() bool
	// dbdClusters, when set, are the clusters slurmdbd knows (`sacctmgr show cluster`).
	dbdClusters []string
	// before, when set, runs before each command is answered (outside the lock): what the
	// command does to this host's daemons (a takeover shuts this slurmctld down).
	before func(argv []string)
}

func newHost(liveConfDir string) *host {
	c := slurmtest.NewCluster()
	c.ReadConfig(liveConfDir)
	c.RequireConf(confPath)
	return &host{Cluster: c}
}

func (h *host) Run(ctx context.Context, argv []string, env []string) (command.Output, error) {
	h.mu.Lock()
	h.calls = append(h.calls, slices.Clone(argv))
	aptFail, version, mungeUp, clusters, before := h.aptFail, h.version, h.mungeUp, h.dbdClusters, h.before
	h.mu.Unlock()
	if before != nil {
		before(argv)
	}
	switch {
	case argv[0] == "sacctmgr" && clusters != nil && slices.Contains(argv, "cluster"):
		// `sacctmgr -n -P show cluster NAME format=cluster`: the name if slurmdbd knows it.
		var out string
		if name := argv[len(argv)-2]; slices.Contains(clusters, name) {
			out = name + "\n"
		}
		return command.Output{Stdout: []byte(out)}, nil
	case argv[0] == "apt-get" && aptFail:
		return command.Output{Stderr: []byte("E: Unable to locate package\n"), ExitCode: 100}, nil
	case argv[0] == "apt-get":
		return command.Output{}, nil
	case argv[0] == "slurmctld" && version != "":
		return command.Output{Stdout: []byte(version + "\n")}, nil
	case argv[0] == munge.ClientPath && (mungeUp == nil || !mungeUp()):
		return command.Output{Stderr: []byte("munge: Error: Failed to access \"/run/munge/munge.socket.2\": No such file or directory\n"), ExitCode: 1}, nil
	}
	return h.Cluster.Run(ctx, argv, env)
}

// count returns how many commands the charm ran that start with prefix.
func (h *host) count(prefix ...string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.calls {
		if len(c) >= len(prefix) && slices.Equal(c[:len(prefix)], prefix) {
			n++
		}
	}
	return n
}

// commands are the commands the charm ran, in order.
func (h *host) commands() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// addNode registers node name of application app (its feature, so its partition's
// NodeSet holds it), drained when drain is set.
func (h *host) addNode(name, app string, drain bool) {
	h.AddNode(name)
	h.SetFeatures(name, app)
	if drain {
		out, err := h.Cluster.Run(context.Background(), []string{"scontrol", "update", "nodename=" + name, "state=drain", "reason=test"}, []string{"SLURM_CONF=" + confPath})
		if err != nil || out.ExitCode != 0 {
			panic(fmt.Sprintf("cannot drain %s: %v %s", name, err, out.Stderr))
		}
	}
}

// addJob adds a job to partition, running on node, or pending when node is empty, and
// returns its id (1, 2, ... in each test).
func (h *host) addJob(partition, node string) string { return h.SubmitJob(partition, node) }

// hasNode reports whether the controller knows node name.
func (h *host) hasNode(name string) bool {
	_, ok := h.Node(name)
	return ok
}

// fakeServices is the controller host's service manager: the shared in-memory one
// (servicetest.Manager), with this package's short names.
type fakeServices struct{ *servicetest.Manager }

func newFakeServices() *fakeServices { return &fakeServices{servicetest.New()} }

// count returns how many calls equal call ("restart slurmctld").
func (s *fakeServices) count(call string) int { return s.Count(call) }

// restarts counts the restarts of service name, with or without the supervisor's stay-up
// check (Restart, Respawn).
func (s *fakeServices) restarts(name string) int {
	return s.Count("restart "+name) + s.Count("respawn "+name)
}

// isActive reports whether service name runs.
func (s *fakeServices) isActive(name string) bool { return s.Active(name) }
