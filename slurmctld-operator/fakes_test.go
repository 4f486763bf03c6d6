package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/charmed-slurm/operators/libs/hostlist"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

// fakeNode is a node of fakeSlurm's cluster.
type fakeNode struct {
	Base     string // IDLE, ALLOCATED, DOWN
	Drain    bool
	Features []string
	Reason   string
	Reboot   bool // scontrol reboot asked, not done yet (REBOOT_REQUESTED)
	Boots    int  // reboots done: BootTime changes with each
}

// fakeJob is a job of fakeSlurm's cluster.
type fakeJob struct {
	ID, State, Partition, Node string
}

// fakeSlurm is a small Slurm controller in memory answering the commands the charm runs
// (scontrol, squeue, scancel, slurmctld -V, apt-get) with the outputs and error messages real
// Slurm 22.05 prints (see libs/slurm/slurmtest/real), and recording every call.
type fakeSlurm struct {
	mu      sync.Mutex
	calls   [][]string
	nodes   map[string]*fakeNode
	jobs    []fakeJob
	parts   map[string]string // partition → state set by scontrol update
	down    bool              // slurmctld unreachable
	version string
	aptFail bool
	// tick runs before every squeue and show node: tests use it to let jobs finish.
	tick func(f *fakeSlurm)
	// mungeUp reports whether munged runs: `munge -n` fails as real munge does otherwise.
	mungeUp func() bool
	// refuseConf makes Slurm's parser (`scontrol show hostnames` with SLURM_CONF set to a
	// candidate slurm.conf) refuse a candidate whose slurm.conf or partition files contain it,
	// answering as real Slurm does (slurmtest's checkconf-refused); checked is every candidate
	// slurm.conf the parser read.
	refuseConf string
	checked    []string
	// lost are nodes a reconfigure dropped from their NodeSet's partition (Slurm bug 16295):
	// `scontrol show partition` leaves them out until the partition's nodes are set again.
	lost map[string]bool
	// confDir is the live configuration directory: its partitions are known to slurmctld.
	confDir string
}

func newFakeSlurm() *fakeSlurm {
	return &fakeSlurm{nodes: map[string]*fakeNode{}, parts: map[string]string{}, version: "slurm-wlm 22.05.8"}
}

func (f *fakeSlurm) addNode(name, app, base string, drain bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[name] = &fakeNode{Base: base, Drain: drain, Features: []string{app}}
}

func (f *fakeSlurm) addJob(id, state, part, node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs = append(f.jobs, fakeJob{id, state, part, node})
	if n := f.nodes[node]; n != nil && (state == "RUNNING" || state == "COMPLETING") {
		n.Base = "ALLOCATED"
	}
}

// finishJobs ends every job (COMPLETED) and frees the nodes.
func (f *fakeSlurm) finishJobs() {
	for i := range f.jobs {
		f.jobs[i].State = "COMPLETED"
	}
	for _, n := range f.nodes {
		if n.Base == "ALLOCATED" {
			n.Base = "IDLE"
		}
	}
}

// count returns how many calls started with prefix.
func (f *fakeSlurm) count(prefix ...string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if len(c) >= len(prefix) && slices.Equal(c[:len(prefix)], prefix) {
			n++
		}
	}
	return n
}

func (f *fakeSlurm) hasNode(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.nodes[name]
	return ok
}

func ok(stdout string) slurm.Output { return slurm.Output{Stdout: []byte(stdout)} }
func fail(msg string) slurm.Output  { return slurm.Output{Stderr: []byte(msg + "\n"), ExitCode: 1} }

const unreachable = "Unable to contact slurm controller (connect failure)"

func (f *fakeSlurm) Run(ctx context.Context, argv []string, env []string) (slurm.Output, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, slices.Clone(argv))
	switch argv[0] {
	case "/usr/bin/munge":
		if f.mungeUp == nil || !f.mungeUp() {
			return fail("munge: Error: Failed to access \"/run/munge/munge.socket.2\": No such file or directory"), nil
		}
		return ok("MUNGE:AwQFAAB=:\n"), nil
	case "slurmctld":
		return ok(f.version + "\n"), nil
	case "apt-get":
		if f.aptFail {
			return fail("E: Unable to locate package"), nil
		}
		return ok(""), nil
	case "scontrol", "squeue", "scancel":
		if len(argv) == 4 && argv[1] == "show" && argv[2] == "hostnames" {
			return f.checkConf(env)
		}
		if !slices.Contains(env, "SLURM_CONF=/etc/slurm/slurm.conf") {
			return slurm.Output{}, fmt.Errorf("fake: %v run without SLURM_CONF", argv)
		}
		if f.tick != nil && (argv[0] == "squeue" || (len(argv) > 1 && argv[1] == "show")) {
			f.mu.Unlock()
			f.tick(f)
			f.mu.Lock()
		}
		if f.down {
			if len(argv) > 1 && argv[1] == "ping" {
				return fail("Slurmctld(primary) at ctl is DOWN"), nil
			}
			return fail("slurm_load_node error: " + unreachable), nil
		}
	}
	switch {
	case argv[0] == "scontrol" && argv[1] == "ping":
		return ok("Slurmctld(primary) at ctl is UP\n"), nil
	case argv[0] == "scontrol" && argv[1] == "reconfigure":
		return ok(""), nil
	case argv[0] == "scontrol" && argv[1] == "reboot":
		// scontrol reboot ASAP nextstate=resume reason=R <hostlist>
		names, err := hostlist.Expand(argv[len(argv)-1])
		if err != nil {
			return fail("scontrol: error: Invalid node name specified"), nil
		}
		for _, name := range names {
			n := f.nodes[name]
			if n == nil {
				return fail("scontrol: error: Invalid node name specified"), nil
			}
			n.Reboot, n.Drain = true, true
			n.Reason = strings.TrimPrefix(argv[4], "reason=")
		}
		return ok(""), nil
	case argv[0] == "scontrol" && argv[1] == "show" && argv[2] == "node":
		if len(argv) == 5 {
			n, ok2 := f.nodes[argv[4]]
			if !ok2 {
				return fail("Node " + argv[4] + " not found"), nil
			}
			return ok(f.nodeLine(argv[4], n)), nil
		}
		if len(f.nodes) == 0 {
			return ok("No nodes in the system\n"), nil
		}
		var b strings.Builder
		for _, name := range sortedKeys(f.nodes) {
			b.WriteString(f.nodeLine(name, f.nodes[name]))
		}
		return ok(b.String()), nil
	case argv[0] == "scontrol" && argv[1] == "update" && strings.HasPrefix(argv[2], "nodename="):
		n, ok2 := f.nodes[strings.TrimPrefix(argv[2], "nodename=")]
		if !ok2 {
			return fail("slurm_update error: Invalid node name specified"), nil
		}
		for _, a := range argv[3:] {
			k, v, _ := strings.Cut(a, "=")
			switch k {
			case "state":
				switch v {
				case "drain":
					n.Drain = true
				case "resume", "undrain":
					if !n.Drain && n.Base != "DOWN" {
						return fail("slurm_update error: Invalid node state specified"), nil
					}
					n.Drain = false
					if n.Base == "DOWN" {
						n.Base = "IDLE"
					}
				case "down":
					n.Base = "DOWN"
				case "idle":
					n.Base = "IDLE"
				}
			case "reason":
				n.Reason = v
			}
		}
		return ok(""), nil
	case argv[0] == "scontrol" && argv[1] == "update" && strings.HasPrefix(argv[2], "partitionname="):
		p := strings.TrimPrefix(argv[2], "partitionname=")
		if !f.partitionKnown(p) {
			return fail("slurm_update error: Invalid partition name specified"), nil
		}
		if nodes, isNodes := strings.CutPrefix(argv[3], "nodes="); isNodes {
			// Slurm rebuilds the partition from the NodeSets' features: nothing is lost any more.
			if nodes != p {
				return fail("fake: partition " + p + " repaired with nodes=" + nodes), nil
			}
			for n := range f.lost {
				if slices.Contains(f.nodes[n].Features, p) {
					delete(f.lost, n)
				}
			}
			return ok(""), nil
		}
		f.parts[p] = strings.TrimPrefix(argv[3], "state=")
		return ok(""), nil
	case argv[0] == "scontrol" && argv[1] == "show" && argv[2] == "partition":
		return f.showPartition(argv[len(argv)-1])
	case argv[0] == "scontrol" && argv[1] == "delete":
		name := strings.TrimPrefix(argv[2], "nodename=")
		n, ok2 := f.nodes[name]
		if !ok2 {
			return fail("scontrol: error: failed to delete nodes " + name + "\ndelete_node nodename=" + name + ": Invalid node name specified"), nil
		}
		if n.Base == "ALLOCATED" {
			return fail("scontrol: error: failed to delete nodes " + name + "\ndelete_node nodename=" + name + ": Requested nodes are busy"), nil
		}
		delete(f.nodes, name)
		return ok(""), nil
	case argv[0] == "squeue":
		return f.squeue(argv)
	case argv[0] == "scontrol" && argv[1] == "update" && strings.HasPrefix(argv[2], "jobid="):
		id, part := strings.TrimPrefix(argv[2], "jobid="), strings.TrimPrefix(argv[3], "partition=")
		for i := range f.jobs {
			if f.jobs[i].ID == id {
				if f.jobs[i].State != "PENDING" {
					return fail("scontrol: error: Job is no longer pending execution for job " + id), nil
				}
				f.jobs[i].Partition = part
				return ok(""), nil
			}
		}
		return fail("slurm_update error: Invalid job id specified"), nil
	case argv[0] == "scancel":
		for _, id := range argv[1:] {
			for i := range f.jobs {
				if f.jobs[i].ID == id {
					f.jobs[i].State = "CANCELLED"
					if n := f.nodes[f.jobs[i].Node]; n != nil {
						n.Base = "IDLE"
					}
				}
			}
		}
		return ok(""), nil
	}
	return slurm.Output{}, fmt.Errorf("fake slurm: unexpected command %q", argv)
}

func (f *fakeSlurm) partitionKnown(p string) bool {
	for _, n := range f.nodes {
		if slices.Contains(n.Features, p) {
			return true
		}
	}
	for _, j := range f.jobs {
		if j.Partition == p {
			return true
		}
	}
	if _, ok := f.parts[p]; ok {
		return true
	}
	// slurmctld knows the partitions of the slurm.conf it runs with.
	if f.confDir != "" {
		if _, err := os.Stat(filepath.Join(f.confDir, partitionInclude(p))); err == nil {
			return true
		}
	}
	return false
}

func (f *fakeSlurm) nodeLine(name string, n *fakeNode) string {
	state := n.Base
	if n.Drain {
		state += "+DRAIN"
	}
	state += "+DYNAMIC_NORM"
	if n.Reboot {
		state += "+REBOOT_REQUESTED"
	}
	feat := strings.Join(n.Features, ",")
	line := fmt.Sprintf("NodeName=%s Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=1 CPUTot=1 AvailableFeatures=%s ActiveFeatures=%s NodeAddr=10.0.0.2 NodeHostName=%s Version=22.05.8 RealMemory=1000 AllocMem=0 State=%s Partitions=%s BootTime=2026-11-22T22:%02d:00", name, feat, feat, name, state, feat, n.Boots)
	if n.Reason != "" {
		line += " Reason=" + n.Reason + " [root@2026-11-22T22:19:43]"
	}
	return line + "\n"
}

func (f *fakeSlurm) squeue(argv []string) (slurm.Output, error) {
	var node, part, states string
	for i := 1; i+1 < len(argv); i++ {
		switch argv[i] {
		case "-w":
			node = argv[i+1]
		case "-p":
			part = argv[i+1]
		case "-t":
			states = argv[i+1]
		}
	}
	if node != "" {
		if _, ok2 := f.nodes[node]; !ok2 {
			return fail("squeue: error: Invalid node name " + node), nil
		}
	}
	var b strings.Builder
	for _, j := range f.jobs {
		active := j.State == "RUNNING" || j.State == "COMPLETING" || j.State == "PENDING"
		switch {
		case node != "" && (j.Node != node || (j.State != "RUNNING" && j.State != "COMPLETING")):
			continue
		case part != "" && j.Partition != part:
			continue
		case states != "all" && !active:
			continue
		}
		fmt.Fprintf(&b, "%s|%s|%s|root|%s|wrap\n", j.ID, j.State, j.Partition, j.Node)
	}
	return ok(b.String()), nil
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

// checkConf plays `scontrol show hostnames x` reading the candidate slurm.conf that env's
// SLURM_CONF names, with the recorded outputs of real Slurm 22.05.
func (f *fakeSlurm) checkConf(env []string) (slurm.Output, error) {
	var conf string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "SLURM_CONF="); ok {
			conf = v
		}
	}
	if conf == "" {
		return slurm.Output{}, fmt.Errorf("fake: scontrol show hostnames run without SLURM_CONF")
	}
	f.checked = append(f.checked, conf)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(conf), "*.conf"))
	if err != nil || len(files) == 0 {
		return slurm.Output{}, fmt.Errorf("fake: no candidate configuration beside %s", conf)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return slurm.Output{}, err
		}
		if f.refuseConf != "" && strings.Contains(string(data), f.refuseConf) {
			return slurmtest.Real("checkconf-refused").Output, nil
		}
	}
	return slurmtest.Real("checkconf-ok").Output, nil
}

// showPartition answers `scontrol show partition -o NAME` in real Slurm 22.05's format
// (slurmtest's show-partition-repaired): the partition's NodeSet is NAME, its nodes those
// carrying feature NAME, less the lost ones.
func (f *fakeSlurm) showPartition(name string) (slurm.Output, error) {
	if !f.partitionKnown(name) {
		return fail("Partition " + name + " not found"), nil
	}
	var nodes []string
	for _, n := range slices.Sorted(maps.Keys(f.nodes)) {
		if slices.Contains(f.nodes[n].Features, name) && !f.lost[n] {
			nodes = append(nodes, n)
		}
	}
	list := "(null)"
	if len(nodes) > 0 {
		list = hostlist.Compress(nodes)
	}
	state := "UP"
	if s := f.parts[name]; s != "" {
		state = s
	}
	return ok(fmt.Sprintf("PartitionName=%s AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL Default=NO QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED NodeSets=%s Nodes=%s PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode=OFF State=%s TotalCPUs=%d TotalNodes=%d SelectTypeParameters=NONE JobDefaults=(null) DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED\n", name, name, list, state, len(nodes), len(nodes))), nil
}
