package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// fakeSlurm is the Slurm cluster as one compute host's commands see it. It answers with the
// messages Slurm 22.05 really prints (libs/slurm/slurmtest/real) and keeps the behaviour the
// integration tests check on real Slurm: a dynamic node is created when its slurmd registers;
// restarting slurmd with a changed --conf keeps the old record; deleting a node with running
// jobs is refused as busy; resuming an idle node is an invalid state change; a stopped slurmd
// does not change the node's state.
type fakeSlurm struct {
	mu      sync.Mutex
	machine string // slurmd -C output
	version string // slurmd -V output
	// unreachable makes every controller command fail as with slurmctld down.
	unreachable bool
	nodes       map[string]*fakeNode
	calls       []string
	// deletesWhileBusy counts delete attempts refused because jobs ran.
	deletesWhileBusy int
	// failApt makes apt-get exit 100.
	failApt bool
	// mungeUp reports whether munged runs: `munge -n` fails as real munge does otherwise.
	mungeUp func() bool
	// tmpDisk is the disk space slurmd finds (MB): a --conf with a larger TmpDisk registers
	// INVALID_REG, drained with reason "Low TmpDisk", as on real Slurm.
	tmpDisk int
	// exitOn makes slurmd exit at start (its fatal message) when its --conf has this key.
	exitOn string
	// exitAfterOn makes slurmd start, then exit before it registers, when its --conf has
	// this key (the supervisor's start succeeded).
	exitAfterOn string
}

// errExitedAfterStart: slurmd started, then exited before registering.
var errExitedAfterStart = errors.New("slurmd exited after its start")

type fakeNode struct {
	conf     slurmconf.Params // the --conf the record was created with
	invalid  bool             // registered INVALID_REG
	down     bool
	drain    bool
	reason   string
	jobs     int
	endAfter int // squeue polls of this node until its jobs end; <0: they never end
	running  bool
}

func newFakeSlurm() *fakeSlurm {
	return &fakeSlurm{
		machine: "NodeName=host3 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105\nUpTime=0-00:08:54\n",
		version: "slurm-wlm 22.05.8\n",
		nodes:   map[string]*fakeNode{},
	}
}

func (f *fakeSlurm) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeSlurm) node(name string) *fakeNode {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.nodes[name]; ok {
		c := *n
		return &c
	}
	return nil
}

func (f *fakeSlurm) setNode(name string, n fakeNode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[name] = &n
}

// register is slurmd starting with argv.
func (f *fakeSlurm) register(argv []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var name, conf string
	for i := 0; i+1 < len(argv); i++ {
		switch argv[i] {
		case "-N":
			name = argv[i+1]
		case "--conf":
			conf = argv[i+1]
		}
	}
	p, err := slurmconf.ParseParams(conf)
	if err != nil {
		return fmt.Errorf("slurmd: bad --conf %q: %v", conf, err)
	}
	if p.Has("Port") {
		return fmt.Errorf("slurmd: Port is not allowed in --conf")
	}
	if f.exitOn != "" && p.Has(f.exitOn) {
		return fmt.Errorf("slurmd: fatal: bad %s", f.exitOn)
	}
	if f.exitAfterOn != "" && p.Has(f.exitAfterOn) {
		return errExitedAfterStart
	}
	if f.unreachable {
		return nil // slurmd runs but cannot register
	}
	if n, ok := f.nodes[name]; ok {
		n.running = true // 22.05: the old record stays
		return nil
	}
	n := &fakeNode{conf: p, running: true}
	if v, ok := p.Get("TmpDisk"); ok {
		if t, _ := strconv.Atoi(v); t > f.tmpDisk {
			n.invalid, n.drain, n.reason = true, true, "Low TmpDisk"
		}
	}
	f.nodes[name] = n
	return nil
}

func (f *fakeSlurm) slurmdStopped(argv []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == "-N" {
			if n, ok := f.nodes[argv[i+1]]; ok {
				n.running = false
			}
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func out(stdout string) (slurm.Output, error) { return slurm.Output{Stdout: []byte(stdout)}, nil }
func fail(stderr string) (slurm.Output, error) {
	return slurm.Output{Stderr: []byte(stderr + "\n"), ExitCode: 1}, nil
}

// Run implements slurm.Runner.
func (f *fakeSlurm) Run(ctx context.Context, argv []string, env []string) (slurm.Output, error) {
	if len(argv) == 2 && argv[0] == munge.ClientPath && argv[1] == "-n" {
		f.mu.Lock()
		f.calls = append(f.calls, strings.Join(argv, " "))
		f.mu.Unlock()
		if f.mungeUp == nil || !f.mungeUp() {
			return slurm.Output{Stderr: []byte("munge: Error: Failed to access \"/run/munge/munge.socket.2\": No such file or directory\n"), ExitCode: 1}, nil
		}
		return out("MUNGE:AwQFAAC7fake==:\n")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, strings.Join(argv, " "))
	if err := ctx.Err(); err != nil {
		return slurm.Output{}, err
	}
	cmd := strings.Join(argv, " ")
	switch {
	case cmd == "slurmd -C":
		return out(f.machine)
	case cmd == "slurmd -V":
		return out(f.version)
	case argv[0] == "apt-get":
		if f.failApt {
			return slurm.Output{Stderr: []byte("E: Unable to locate package slurmd\n"), ExitCode: 100}, nil
		}
		return out("")
	}
	i := slices.IndexFunc(env, func(s string) bool { return strings.HasPrefix(s, "SLURM_CONF=") })
	if i < 0 {
		return slurm.Output{}, fmt.Errorf("%s run without SLURM_CONF", argv[0])
	}
	if conf := strings.TrimPrefix(env[i], "SLURM_CONF="); !fileExists(conf) {
		// Real clients retry for a minute, then fail like this.
		return fail(argv[0] + ": error: s_p_parse_file: cannot stat file " + conf + ": No such file or directory, retrying in 1sec up to 60sec\n" +
			argv[0] + ": error: ClusterName needs to be specified\n" + argv[0] + ": fatal: Unable to process configuration file")
	}
	switch {
	case len(argv) == 5 && cmd == "scontrol show node -o "+argv[4]:
		if f.unreachable {
			return fail("slurm_load_node error: Unable to contact slurm controller (connect failure)")
		}
		n, ok := f.nodes[argv[4]]
		if !ok {
			return fail("Node " + argv[4] + " not found")
		}
		return out(n.line(argv[4]) + "\n")
	case argv[0] == "scontrol" && len(argv) >= 4 && argv[1] == "update" && strings.HasPrefix(argv[2], "nodename="):
		return f.update(strings.TrimPrefix(argv[2], "nodename="), argv[3:])
	case argv[0] == "scontrol" && len(argv) == 3 && argv[1] == "delete" && strings.HasPrefix(argv[2], "nodename="):
		name := strings.TrimPrefix(argv[2], "nodename=")
		if f.unreachable {
			return fail("delete_node nodename=" + name + ": Unable to contact slurm controller (connect failure)")
		}
		n, ok := f.nodes[name]
		if !ok {
			return fail("scontrol: error: failed to delete nodes " + name + "\ndelete_node nodename=" + name + ": Invalid node name specified")
		}
		if n.jobs > 0 {
			f.deletesWhileBusy++
			return fail("scontrol: error: failed to delete nodes " + name + "\ndelete_node nodename=" + name + ": Requested nodes are busy")
		}
		delete(f.nodes, name)
		return out("")
	case argv[0] == "squeue" && len(argv) == 8 && argv[2] == "-w":
		name := argv[3]
		if f.unreachable {
			return fail("slurm_load_jobs error: Unable to contact slurm controller (connect failure)")
		}
		n, ok := f.nodes[name]
		if !ok {
			return fail("squeue: error: Invalid node name " + name)
		}
		var b strings.Builder
		for i := range n.jobs {
			fmt.Fprintf(&b, "%d|RUNNING|slurmd|root|%s|sleep\n", 100+i, name)
		}
		if n.jobs > 0 && n.endAfter > 0 {
			n.endAfter--
			if n.endAfter == 0 {
				n.jobs = 0
			}
		}
		return out(b.String())
	}
	return slurm.Output{}, fmt.Errorf("fakeSlurm: unexpected command %q", argv)
}

func (f *fakeSlurm) update(name string, args []string) (slurm.Output, error) {
	if f.unreachable {
		return fail("slurm_update error: Unable to contact slurm controller (connect failure)")
	}
	n, ok := f.nodes[name]
	if !ok {
		return fail("slurm_update error: Invalid node name specified")
	}
	var state, reason string
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "state":
			state = v
		case "reason":
			reason = v
		}
	}
	switch state {
	case "drain", "down":
		if reason == "" {
			return fail("You must specify a reason when DOWNING or DRAINING a node. Request denied")
		}
		if state == "drain" {
			n.drain = true
		} else {
			n.down = true
		}
		n.reason = reason
	case "resume":
		if !n.drain && !n.down {
			return fail("slurm_update error: Invalid node state specified")
		}
		n.drain, n.down, n.reason = false, false, ""
	default:
		return fail("Invalid input: state=" + state)
	}
	return out("")
}

func (n *fakeNode) state() string {
	base := "IDLE"
	switch {
	case n.down:
		base = "DOWN"
	case n.jobs > 0:
		base = "ALLOCATED"
	}
	s := base
	if n.drain {
		s += "+DRAIN"
	}
	s += "+DYNAMIC_NORM"
	if n.invalid {
		s += "+INVALID_REG"
	}
	if !n.running && n.down {
		s += "+NOT_RESPONDING"
	}
	return s
}

func (n *fakeNode) line(name string) string {
	get := func(k, def string) string {
		if v, ok := n.conf.Get(k); ok {
			return v
		}
		return def
	}
	feat := get("Feature", get("Features", "(null)"))
	l := fmt.Sprintf("NodeName=%s Arch=x86_64 CoresPerSocket=%s  CPUAlloc=0 CPUEfctv=%s CPUTot=%s CPULoad=0.40 AvailableFeatures=%s ActiveFeatures=%s Gres=(null) NodeAddr=10.203.0.13 NodeHostName=%s Version=22.05.8 OS=Linux 6.1 #1 SMP  RealMemory=%s AllocMem=0 FreeMem=23622 Sockets=1 Boards=1 State=%s ThreadsPerCore=1 TmpDisk=0 Weight=%s Owner=N/A MCS_label=N/A Partitions=slurmd  BootTime=2026-11-22T22:10:48 SlurmdStartTime=2026-11-22T22:19:28 LastBusyTime=2026-11-22T22:19:28 CfgTRES=cpu=1,mem=1000M,billing=1 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s",
		name, get("CoresPerSocket", "1"), get("CPUs", "1"), get("CPUs", "1"), feat, feat, name, get("RealMemory", "1"), n.state(), get("Weight", "1"))
	if n.reason != "" {
		l += " Reason=" + n.reason + " [root@2026-11-22T22:19:43]"
	}
	return l
}

// fakeServices is a service.Manager that records its calls and behaves like the Pebble
// backend: methods other than Configure fail with ErrUnknownService for an unknown service,
// Restart starts a stopped service, Start of a running one is a no-op. Starting slurmd
// registers its node with the fake cluster and writes the configless cache, as real slurmd
// does; stopping it leaves the node record alone.
type fakeServices struct {
	mu      sync.Mutex
	cluster *fakeSlurm
	root    string
	specs   map[string]service.Spec
	active  map[string]bool
	enabled map[string]bool
	calls   []string
	// noCache: slurmd cannot fetch the configuration (no controller), so writes no cache.
	noCache bool
	// dead: the supervisor is gone; every call fails as a refused connection does.
	dead bool
}

// errDead is what a call to a dead supervisor returns.
var errDead = errors.New(`cannot get status of service: dial unix /var/lib/pebble/default/.pebble.socket: connect: connection refused`)

func newFakeServices(cluster *fakeSlurm, root string) *fakeServices {
	return &fakeServices{cluster: cluster, root: root, specs: map[string]service.Spec{},
		active: map[string]bool{}, enabled: map[string]bool{}}
}

func (s *fakeServices) callLog() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

func (s *fakeServices) record(verb, name string) {
	s.calls = append(s.calls, verb+" "+name)
}

func (s *fakeServices) known(name string) error {
	if s.dead {
		return errDead
	}
	if _, ok := s.specs[name]; !ok {
		return fmt.Errorf("cannot find service %q: %w", name, service.ErrUnknownService)
	}
	return nil
}

func (s *fakeServices) Configure(ctx context.Context, spec service.Spec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("configure", spec.Name)
	if s.dead {
		return errDead
	}
	if err := spec.Validate(); err != nil {
		return err
	}
	s.specs[spec.Name] = spec
	return nil
}

func (s *fakeServices) Enable(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("enable", name)
	if err := s.known(name); err != nil {
		return err
	}
	s.enabled[name] = true
	return nil
}

func (s *fakeServices) Disable(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("disable", name)
	if err := s.known(name); err != nil {
		return err
	}
	s.enabled[name] = false
	return nil
}

func (s *fakeServices) start(name string) error {
	spec := s.specs[name]
	if name == SlurmdService {
		err := s.cluster.register(spec.Command)
		if errors.Is(err, errExitedAfterStart) {
			s.active[name] = false
			return nil
		}
		if err != nil {
			return err
		}
		if s.noCache {
			s.active[name] = true
			return nil
		}
		path := filepath.Join(s.root, SpoolConf)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte("ClusterName=test\n"), 0o644); err != nil {
			return err
		}
	}
	s.active[name] = true
	return nil
}

func (s *fakeServices) stop(name string) {
	if s.active[name] && name == SlurmdService {
		s.cluster.slurmdStopped(s.specs[name].Command)
	}
	s.active[name] = false
}

func (s *fakeServices) Start(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("start", name)
	if err := s.known(name); err != nil {
		return err
	}
	if s.active[name] {
		return nil
	}
	return s.start(name)
}

func (s *fakeServices) Stop(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("stop", name)
	if err := s.known(name); err != nil {
		return err
	}
	s.stop(name)
	return nil
}

func (s *fakeServices) Restart(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("restart", name)
	if err := s.known(name); err != nil {
		return err
	}
	s.stop(name)
	return s.start(name)
}

// Spawn is Start: the fake has no stay-up check to skip.
func (s *fakeServices) Spawn(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("spawn", name)
	if err := s.known(name); err != nil {
		return err
	}
	if s.active[name] {
		return nil
	}
	return s.start(name)
}

// Respawn is Restart (see Spawn).
func (s *fakeServices) Respawn(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("respawn", name)
	if err := s.known(name); err != nil {
		return err
	}
	s.stop(name)
	return s.start(name)
}

func (s *fakeServices) Status(ctx context.Context, name string) (service.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.known(name); err != nil {
		return service.Status{}, err
	}
	st := service.Status{Name: name, State: service.StateInactive, Enabled: s.enabled[name]}
	if s.active[name] {
		st.State = service.StateActive
	}
	return st, nil
}

func (s *fakeServices) command(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.specs[name].Command)
}

func (s *fakeServices) isActive(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active[name]
}
