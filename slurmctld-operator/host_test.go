package main

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
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
}

func newHost(liveConfDir string) *host {
	c := slurmtest.NewCluster()
	c.ReadConfig(liveConfDir)
	c.RequireConf(confPath)
	return &host{Cluster: c}
}

func (h *host) Run(ctx context.Context, argv []string, env []string) (slurm.Output, error) {
	h.mu.Lock()
	h.calls = append(h.calls, slices.Clone(argv))
	aptFail, version, mungeUp := h.aptFail, h.version, h.mungeUp
	h.mu.Unlock()
	switch {
	case argv[0] == "apt-get" && aptFail:
		return slurm.Output{Stderr: []byte("E: Unable to locate package\n"), ExitCode: 100}, nil
	case argv[0] == "apt-get":
		return slurm.Output{}, nil
	case argv[0] == "slurmctld" && version != "":
		return slurm.Output{Stdout: []byte(version + "\n")}, nil
	case argv[0] == munge.ClientPath && (mungeUp == nil || !mungeUp()):
		return slurm.Output{Stderr: []byte("munge: Error: Failed to access \"/run/munge/munge.socket.2\": No such file or directory\n"), ExitCode: 1}, nil
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

// fakeServices is a service.Manager in memory that records every call.
type fakeServices struct {
	mu       sync.Mutex
	calls    []string // "restart munged", ...
	specs    map[string]service.Spec
	active   map[string]bool
	enabled  map[string]bool
	startErr error
}

func newFakeServices() *fakeServices {
	return &fakeServices{specs: map[string]service.Spec{}, active: map[string]bool{}, enabled: map[string]bool{}}
}

func (s *fakeServices) record(op, name string) error {
	s.calls = append(s.calls, op+" "+name)
	if _, ok := s.specs[name]; !ok {
		return fmt.Errorf("cannot %s %q: %w", op, name, service.ErrUnknownService)
	}
	return nil
}

func (s *fakeServices) Configure(ctx context.Context, spec service.Spec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := spec.Validate(); err != nil {
		return err
	}
	s.specs[spec.Name] = spec
	s.calls = append(s.calls, "configure "+spec.Name)
	return nil
}

func (s *fakeServices) Enable(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.record("enable", name); err != nil {
		return err
	}
	s.enabled[name] = true
	return nil
}

func (s *fakeServices) Disable(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.record("disable", name); err != nil {
		return err
	}
	s.enabled[name] = false
	return nil
}

func (s *fakeServices) Start(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.record("start", name); err != nil {
		return err
	}
	if s.startErr != nil {
		return s.startErr
	}
	s.active[name] = true
	return nil
}

func (s *fakeServices) Stop(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.record("stop", name); err != nil {
		return err
	}
	s.active[name] = false
	return nil
}

func (s *fakeServices) Restart(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.record("restart", name); err != nil {
		return err
	}
	if s.startErr != nil {
		return s.startErr
	}
	s.active[name] = true
	return nil
}

// Spawn is Start: the fake has no stay-up check to skip.
func (s *fakeServices) Spawn(ctx context.Context, name string) error { return s.Start(ctx, name) }

// Respawn is Restart (see Spawn), recorded as "respawn".
func (s *fakeServices) Respawn(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.record("respawn", name); err != nil {
		return err
	}
	if s.startErr != nil {
		return s.startErr
	}
	s.active[name] = true
	return nil
}

// isActive reports whether service name runs.
func (s *fakeServices) isActive(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active[name]
}

func (s *fakeServices) Status(ctx context.Context, name string) (service.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.specs[name]; !ok {
		return service.Status{}, fmt.Errorf("cannot get status of %q: %w", name, service.ErrUnknownService)
	}
	st := service.StateInactive
	if s.active[name] {
		st = service.StateActive
	}
	return service.Status{Name: name, State: st, Enabled: s.enabled[name]}, nil
}

func (s *fakeServices) count(call string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c == call {
			n++
		}
	}
	return n
}
