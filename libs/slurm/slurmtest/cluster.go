package slurmtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/hostlist"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// Cluster is a stateful fake of a Slurm controller, for unit tests of code that drives
// nodes through package slurm (both charms, the removal protocol). It is a command.Runner: it
// keeps nodes and their jobs, applies the commands package slurm runs (show node, update
// drain/resume/down, delete, squeue per node, scancel, reconfigure, ping) and answers with
// the outputs recorded from real Slurm 22.05 (Real), with the node's name put in; a
// command it does not model is an error naming it. Safe for concurrent use.
//
//	c := slurmtest.NewCluster()
//	c.AddNode("slurmd-0")
//	job := c.StartJob("slurmd-0")
//	cl := &slurm.Client{Runner: c, Conf: "/etc/slurm/slurm.conf"}
//	err := cl.DeleteNode(ctx, "slurmd-0") // errors.Is(err, slurm.ErrNodeBusy): job runs
//	c.EndJob(job)
//
// Besides nodes it keeps partitions and their jobs (running, pending, and ended records
// until PurgeJobs), and answers the version commands, `slurmd -C` and `munge -n` as a
// healthy host does.
//
// For a controller charm it also plays Slurm's parser on a candidate configuration
// (`scontrol show hostnames x` under SLURM_CONF, RefuseConfig), the partitions of the live
// configuration (ReadConfig: read again at each reconfigure) with their NodeSet members by
// feature (SetFeatures) and Slurm 22.05's reconfigure bugs: a node lost from its partition
// (Lose, bug 16295) and a node ALLOCATED with no job (Wedge, bug 16434). RequireConf checks
// that every controller command runs with the live SLURM_CONF. Moving a pending job
// (`scontrol update jobid=J partition=P`) answers with messages that are not recorded.
//
// For a compute node's charm it plays a dynamic slurmd's registration (Register: the
// record takes the --conf values; Slurm 22.05 keeps an existing record), a registration
// slurmctld refuses (Invalidate: INVALID_REG) and a slurmd that stopped answering
// (SetNotResponding).
//
// SetUnreachable makes every controller command fail as with a stopped slurmctld; Before
// runs before each command (a test ends jobs after some polls, or brings the controller
// back).
type Cluster struct {
	mu          sync.Mutex
	nodes       map[string]*fakeNode
	jobs        map[string]*fakeJob
	partitions  map[string]string // partition → state
	nextJob     int
	unreachable bool
	// controllers, when set, are the SlurmctldHost names `scontrol ping` lists (SetControllers),
	// with the DOWN ones in ctlDown.
	controllers  []string
	ctlDown      []string
	reconfigures int
	calls        []Call
	before       func(argv []string)
	// confDir, when set, is the live configuration directory: each reconfigure makes the
	// partitions named in its *.conf files the controller's partitions.
	confDir string
	// conf, when set, is the SLURM_CONF every controller command must carry.
	conf string
	// refuse: Slurm's parser refuses a candidate configuration containing it; checked are
	// the candidate slurm.conf files it read.
	refuse  string
	checked []string
}

type fakeNode struct {
	down, drain bool
	reason      string
	// features, when set, replace the recorded node's (DefaultPartition).
	features []string
	// lost: a reconfigure dropped the node from its NodeSet's partitions (Slurm bug
	// 16295) until the partition's nodes are set again.
	lost bool
	// reboot: `scontrol reboot` asked, not done yet (REBOOT_REQUESTED); boots counts the
	// reboots done (BootTime changes with each).
	reboot bool
	boots  int
	// stuck: ALLOCATED with no job (Slurm 22.05 bug 16434) until set DOWN.
	stuck bool
	// params are the node-line values its slurmd registered with (Register), shown in
	// place of the recorded node's.
	params map[string]string
	// invalid: registered INVALID_REG (Invalidate); silent: NOT_RESPONDING.
	invalid, silent bool
}

// fakeJob is a job: running on a node, pending (no node) or ended (a record kept until
// PurgeJobs, as slurmctld keeps it for MinJobAge).
type fakeJob struct {
	node, partition string
	ended           bool
}

// DefaultPartition is the partition of jobs started with StartJob: the recorded one.
const DefaultPartition = "ns1"

// NewCluster returns a cluster with no node and one partition, DefaultPartition.
func NewCluster() *Cluster {
	return &Cluster{nodes: map[string]*fakeNode{}, jobs: map[string]*fakeJob{},
		partitions: map[string]string{DefaultPartition: "UP"}, nextJob: 1}
}

// AddNode registers an idle dynamic node (what a started slurmd -Z does).
func (c *Cluster) AddNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[name] = &fakeNode{}
}

// registeredKeys are the node-line keys of a registration (Register) the node's record
// shows, with the `scontrol show node` field each goes to (Feature and Features go to both
// feature fields; CPUs to CPUTot and CPUEfctv).
var registeredKeys = map[string][]string{
	"cpus": {"CPUTot", "CPUEfctv"}, "corespersocket": {"CoresPerSocket"}, "realmemory": {"RealMemory"},
	"tmpdisk": {"TmpDisk"}, "weight": {"Weight"}, "gres": {"Gres"},
}

// Register plays a dynamic slurmd registering node name (`slurmd -Z -N name --conf conf`,
// conf being a slurm.conf node line without NodeName): a new record takes conf's CPUs,
// CoresPerSocket, RealMemory, TmpDisk, Weight, Gres and Feature (or Features); a record the
// controller has already is kept as it was (Slurm 22.05 keeps a dynamic node's old record
// until it is deleted) and responds again.
func (c *Cluster) Register(name, conf string) error {
	p, err := slurmconf.ParseParams(conf)
	if err != nil {
		return fmt.Errorf("slurmtest: bad --conf %q: %w", conf, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.nodes[name]; n != nil {
		n.silent = false
		return nil
	}
	n := &fakeNode{params: map[string]string{}}
	for _, kv := range p {
		k := strings.ToLower(kv.Key)
		switch {
		case k == "feature" || k == "features":
			n.features = strings.Split(kv.Value, ",")
		case registeredKeys[k] != nil:
			for _, field := range registeredKeys[k] {
				n.params[field] = kv.Value
			}
		}
	}
	c.nodes[name] = n
	return nil
}

// Invalidate marks node as registered INVALID_REG, as slurmctld does with a node whose
// slurmd reports less than its record says (TmpDisk, RealMemory): drained with reason
// ("Low TmpDisk"). It lasts until the record is deleted.
func (c *Cluster) Invalidate(node, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.nodes[node]; n != nil {
		n.invalid, n.drain, n.reason = true, true, reason
	}
}

// SetNotResponding marks node NOT_RESPONDING (its slurmd stopped answering) or responding
// again.
func (c *Cluster) SetNotResponding(node string, silent bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.nodes[node]; n != nil {
		n.silent = silent
	}
}

// SetFeatures gives node its features (AvailableFeatures and ActiveFeatures): the
// partitions whose NodeSet Feature they name hold it, as the charms write NodeSets
// (NodeSet=P Feature=P). A new node has the recorded one, DefaultPartition.
func (c *Cluster) SetFeatures(node string, features ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.nodes[node]; n != nil {
		n.features = slices.Clone(features)
	}
}

// Lose drops node from the partitions of its NodeSets, as Slurm 22.05's reconfigure does
// with a hole in the node table (SchedMD bug 16295): `scontrol show partition` leaves it
// out until `scontrol update partitionname=P nodes=<NodeSets>` rebuilds the partition.
func (c *Cluster) Lose(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.nodes[node]; n != nil {
		n.lost = true
	}
}

// Lost reports whether node is out of its partitions (Lose) still.
func (c *Cluster) Lost(node string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[node]
	return n != nil && n.lost
}

// ReadConfig makes dir the live configuration directory: each `scontrol reconfigure`
// then makes the partitions named (PartitionName=) in its *.conf files the controller's
// partitions, as slurmctld does when it reads slurm.conf and its includes again.
func (c *Cluster) ReadConfig(dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.confDir = dir
}

// RequireConf makes every controller command fail unless its environment sets
// SLURM_CONF=conf (the live configuration, not a candidate).
func (c *Cluster) RequireConf(conf string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conf = conf
}

// RefuseConfig makes Slurm's parser (`scontrol show hostnames x` with SLURM_CONF naming a
// candidate slurm.conf) refuse a candidate whose *.conf files contain text, with the
// recorded checkconf-refused answer; empty accepts every candidate (checkconf-ok).
func (c *Cluster) RefuseConfig(text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refuse = text
}

// CheckedConfigs are the candidate slurm.conf files Slurm's parser read, in order.
func (c *Cluster) CheckedConfigs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.checked)
}

// Wedge makes node stay ALLOCATED with no job, and `scontrol delete` refuse it as busy,
// until it is set DOWN: Slurm 22.05's state after a job that ran during a reconfigure
// (SchedMD bug 16434). Its jobs end.
func (c *Cluster) Wedge(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.nodes[node]; n != nil {
		n.stuck = true
	}
	for _, j := range c.jobs {
		if j.node == node {
			j.ended = true
		}
	}
}

// StartJob starts a running job on node in DefaultPartition and returns its id.
func (c *Cluster) StartJob(node string) string { return c.SubmitJob(DefaultPartition, node) }

// SubmitJob adds a job to partition, running on node, or pending when node is empty, and
// returns its id.
func (c *Cluster) SubmitJob(partition, node string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := strconv.Itoa(c.nextJob)
	c.nextJob++
	c.jobs[id] = &fakeJob{node: node, partition: partition}
	return id
}

// EndJob ends job id; its record stays (squeue -t all) until PurgeJobs.
func (c *Cluster) EndJob(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if j := c.jobs[id]; j != nil {
		j.ended = true
	}
}

// EndJobs ends every job, pending ones included; their records stay until PurgeJobs.
func (c *Cluster) EndJobs() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, j := range c.jobs {
		j.ended = true
	}
}

// Rebooted plays the end of node's reboot asked with `scontrol reboot ASAP
// nextstate=resume`: a new boot (BootTime), back in service, the drain and reason gone.
func (c *Cluster) Rebooted(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.nodes[node]; n != nil {
		n.reboot, n.drain, n.down, n.reason = false, false, false, ""
		n.boots++
	}
}

// PurgeJobs drops the records of ended jobs (their MinJobAge passed).
func (c *Cluster) PurgeJobs() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, j := range c.jobs {
		if j.ended {
			delete(c.jobs, id)
		}
	}
}

// AddPartition makes partition known to the controller (state UP).
func (c *Cluster) AddPartition(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partitions[name] = "UP"
}

// PartitionState is partition's state (UP, INACTIVE, ...) and whether it is known.
func (c *Cluster) PartitionState(name string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.partitions[name]
	return st, ok
}

// SetUnreachable makes the controller unreachable (true) or reachable again.
func (c *Cluster) SetUnreachable(down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unreachable = down
}

// SetControllers makes `scontrol ping` list the controllers on hosts (SlurmctldHost order,
// primary first) as Slurm does with backups configured (scontrol's roles: "primary", then
// "backup" with two controllers, "backup1", "backup2"… with more), each UP unless its host is
// in down; SetUnreachable still makes every one DOWN. No hosts: the recorded single
// controller again.
func (c *Cluster) SetControllers(hosts []string, down ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.controllers, c.ctlDown = slices.Clone(hosts), slices.Clone(down)
}

// ping is `scontrol ping`'s output: exit 1 when no controller is UP, as the recorded one.
func (c *Cluster) ping() command.Output {
	if len(c.controllers) == 0 {
		if c.unreachable {
			return Real("ping-down").Output
		}
		return Real("ping-up").Output
	}
	var b strings.Builder
	rc := 1
	for i, h := range c.controllers {
		role := "primary"
		switch {
		case i == 1 && len(c.controllers) == 2:
			role = "backup"
		case i > 0:
			role = fmt.Sprintf("backup%d", i)
		}
		state := "UP"
		if c.unreachable || slices.Contains(c.ctlDown, h) {
			state = "DOWN"
		} else {
			rc = 0
		}
		fmt.Fprintf(&b, "Slurmctld(%s) at %s is %s\n", role, h, state)
	}
	return command.Output{Stdout: []byte(b.String()), ExitCode: rc}
}

// Before sets a function run before each command, outside the cluster's lock (it may call
// the cluster's methods).
func (c *Cluster) Before(f func(argv []string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.before = f
}

// NodeNames are the nodes the controller knows, sorted.
func (c *Cluster) NodeNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.nodes))
}

// Node returns node name as `scontrol show node` would describe it.
func (c *Cluster) Node(name string) (slurm.Node, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.nodes[name]; !ok {
		return slurm.Node{}, false
	}
	nodes, err := slurm.ParseShowNode([]byte(c.showLine(name)))
	if err != nil || len(nodes) != 1 {
		panic(fmt.Sprintf("slurmtest: cannot parse the fake's own node line: %v", err))
	}
	return nodes[0], true
}

// Reconfigures is the number of `scontrol reconfigure` run.
func (c *Cluster) Reconfigures() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reconfigures
}

// Calls returns the commands run so far.
func (c *Cluster) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// Run implements command.Runner.
func (c *Cluster) Run(ctx context.Context, argv []string, env []string) (command.Output, error) {
	c.mu.Lock()
	before := c.before
	c.calls = append(c.calls, Call{Argv: slices.Clone(argv), Env: slices.Clone(env)})
	c.mu.Unlock()
	if before != nil {
		before(argv)
	}
	if err := ctx.Err(); err != nil {
		return command.Output{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a := strings.Join(argv, " ")
	if a == "scontrol show hostnames x" {
		return c.checkConfig(env)
	}
	if c.conf != "" && controllerCommand(argv[0]) && argv[len(argv)-1] != "-V" && !slices.Contains(env, "SLURM_CONF="+c.conf) {
		return command.Output{}, fmt.Errorf("slurmtest: %q run without SLURM_CONF=%s", argv, c.conf)
	}
	switch {
	case len(argv) == 6 && a == strings.Join(append([]string{"scontrol", "reboot", "ASAP", "nextstate=resume"}, argv[4:]...), " ") && strings.HasPrefix(argv[4], "reason="):
		return c.reboot(strings.TrimPrefix(argv[4], "reason="), argv[5]), nil
	case strings.HasPrefix(a, "scontrol show partition -o ") && len(argv) == 5:
		return c.showPartition(argv[4]), nil
	case strings.HasPrefix(a, "scontrol update partitionname=") && len(argv) == 4 && strings.HasPrefix(argv[3], "nodes="):
		return c.setPartitionNodes(strings.TrimPrefix(argv[2], "partitionname="), strings.TrimPrefix(argv[3], "nodes=")), nil
	case strings.HasPrefix(a, "scontrol update jobid=") && len(argv) == 4 && strings.HasPrefix(argv[3], "partition="):
		return c.moveJob(strings.TrimPrefix(argv[2], "jobid="), strings.TrimPrefix(argv[3], "partition=")), nil
	case a == "slurmd -V", a == "slurmctld -V", a == "scontrol -V":
		return Real(argv[0] + "-V").Output, nil
	case a == "slurmd -C":
		return Real("slurmd-C").Output, nil
	case len(argv) == 2 && argv[0] == munge.ClientPath && argv[1] == "-n":
		return command.Output{Stdout: []byte("MUNGE:AwQFAAA=:\n")}, nil
	case strings.HasPrefix(a, "scontrol update partitionname=") && len(argv) == 4 && strings.HasPrefix(argv[3], "state="):
		return c.updatePartition(strings.TrimPrefix(argv[2], "partitionname="), strings.TrimPrefix(argv[3], "state=")), nil
	case len(argv) >= 6 && argv[0] == "squeue" && argv[1] == "-h" && slices.Contains(argv, "-p"):
		return c.squeuePartition(argv), nil
	case a == "scontrol ping":
		return c.ping(), nil
	case len(argv) == 3 && argv[0] == "scontrol" && argv[1] == "takeover":
		// Exit 0 without output, as the real one in tests/e2e TestControllerComesBack.
		if c.unreachable {
			return Real("reconfigure-unreachable").Output, nil
		}
		return command.Output{}, nil
	case a == "scontrol reconfigure":
		if c.unreachable {
			return Real("reconfigure-unreachable").Output, nil
		}
		c.reconfigures++
		if err := c.readConfig(); err != nil {
			return command.Output{}, err
		}
		return Real("reconfigure").Output, nil
	case a == "scontrol show node -o":
		if c.unreachable {
			return Real("show-node-unreachable").Output, nil
		}
		if len(c.nodes) == 0 {
			return Real("show-node-none").Output, nil
		}
		var lines []string
		for _, n := range slices.Sorted(maps.Keys(c.nodes)) {
			lines = append(lines, c.showLine(n))
		}
		return command.Output{Stdout: []byte(strings.Join(lines, "\n") + "\n")}, nil
	case strings.HasPrefix(a, "scontrol show node -o ") && len(argv) == 5:
		return c.showNode(argv[4]), nil
	case strings.HasPrefix(a, "scontrol update nodename="):
		return c.update(argv[2:]), nil
	case strings.HasPrefix(a, "scontrol delete nodename=") && len(argv) == 3:
		return c.delete(strings.TrimPrefix(argv[2], "nodename=")), nil
	case len(argv) == 8 && argv[0] == "squeue" && argv[1] == "-h" && argv[2] == "-w" && argv[4] == "-t":
		return c.squeue(argv[3]), nil
	case argv[0] == "scancel" && len(argv) > 1:
		if c.unreachable {
			return recorded("squeue-unreachable", "node1", ""), nil
		}
		for _, id := range argv[1:] {
			if j := c.jobs[id]; j != nil {
				j.ended = true
			}
		}
		return command.Output{}, nil
	}
	return command.Output{}, fmt.Errorf("slurmtest: the fake cluster does not model %q", argv)
}

// recorded is the recorded case with its node name (recordedName) replaced by name.
func recorded(name, recordedName, node string) command.Output {
	out := Real(name).Output
	if node != "" {
		out.Stdout = []byte(strings.ReplaceAll(string(out.Stdout), recordedName, node))
		out.Stderr = []byte(strings.ReplaceAll(string(out.Stderr), recordedName, node))
	}
	return out
}

var (
	nodeNameRE = regexp.MustCompile(`\bNode(Name|HostName)=node1\b`)
	stateRE    = regexp.MustCompile(`\bState=\S+`)
	allocRE    = regexp.MustCompile(`\bCPUAlloc=\d+`)
	bootRE     = regexp.MustCompile(`\bBootTime=\S+`)
	featuresRE = regexp.MustCompile(`\b(Available|Active)Features=\S*`)
	partsRE    = regexp.MustCompile(`\bPartitions=\S*\s+`)
	partNameRE = regexp.MustCompile(`(?m)^\s*PartitionName=(\S+)`)
)

// showLine is node name's `scontrol show node -o` line, built from the recorded idle one.
func (c *Cluster) showLine(name string) string {
	n := c.nodes[name]
	base := "IDLE"
	jobs := c.jobsOn(name)
	switch {
	case n.down:
		base = "DOWN"
	case len(jobs) > 0, n.stuck:
		base = "ALLOCATED"
	}
	state := base
	if n.drain {
		state += "+DRAIN"
	}
	state += "+DYNAMIC_NORM"
	if n.invalid {
		state += "+INVALID_REG"
	}
	if n.silent {
		state += "+NOT_RESPONDING"
	}
	if n.reboot {
		state += "+REBOOT_REQUESTED"
	}
	line := strings.TrimRight(string(Real("show-node-idle").Output.Stdout), "\n")
	if n.boots > 0 {
		line = bootRE.ReplaceAllString(line, fmt.Sprintf("BootTime=2026-11-22T23:%02d:00", n.boots%60))
	}
	line = nodeNameRE.ReplaceAllString(line, "Node${1}="+name)
	line = stateRE.ReplaceAllString(line, "State="+state)
	line = allocRE.ReplaceAllString(line, "CPUAlloc="+strconv.Itoa(min(len(jobs), 1)))
	if n.features != nil {
		f := strings.Join(n.features, ",")
		line = featuresRE.ReplaceAllString(line, "${1}Features="+f)
	}
	// Partitions are those holding the node (partitionNodes), as real 22.05 prints them
	// also while bug 16295 keeps a node out (show-node-moved); none: no field.
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(c.partitions)) {
		if slices.Contains(n.featureList(), p) && !n.lost {
			parts = append(parts, p)
		}
	}
	with := ""
	if len(parts) > 0 {
		with = "Partitions=" + strings.Join(parts, ",") + "  "
	}
	line = partsRE.ReplaceAllLiteralString(line, with)
	for _, field := range slices.Sorted(maps.Keys(n.params)) {
		line = regexp.MustCompile(`\b`+field+`=\S*`).ReplaceAllString(line, field+"="+n.params[field])
	}
	if n.reason != "" {
		line += " Reason=" + n.reason + " [root@2026-11-22T22:19:43]"
	}
	return line
}

// jobsOn are the ids of the jobs running on node, in order.
func (c *Cluster) jobsOn(node string) []string {
	return c.jobIDs(func(j *fakeJob) bool { return !j.ended && j.node == node })
}

// jobIDs are the ids of the jobs keep selects, in numeric order.
func (c *Cluster) jobIDs(keep func(*fakeJob) bool) []string {
	var ids []string
	for id, j := range c.jobs {
		if keep(j) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
	return ids
}

// jobLine is job id as the recorded squeue lines show it.
func (c *Cluster) jobLine(id string) string {
	j := c.jobs[id]
	switch {
	case j.ended:
		return fmt.Sprintf("%s|COMPLETED|%s|root|%s|sleep|pipe job\n", id, j.partition, j.node)
	case j.node == "":
		return fmt.Sprintf("%s|PENDING|%s|root||wrap\n", id, j.partition)
	}
	return fmt.Sprintf("%s|RUNNING|%s|root|%s|sleep|pipe job\n", id, j.partition, j.node)
}

func (c *Cluster) updatePartition(name, state string) command.Output {
	switch {
	case c.unreachable:
		return recorded("update-unreachable", "", "")
	case c.partitions[name] == "":
		return recorded("partition-unknown", "nope", name)
	}
	c.partitions[name] = state
	return Real("partition-inactive").Output
}

// squeuePartition answers `squeue -h [-t all] -p P -o FORMAT`: pending jobs first, then
// running ones (squeue's order), with ended records under -t all.
func (c *Cluster) squeuePartition(argv []string) command.Output {
	if c.unreachable {
		return recorded("squeue-unreachable", "", "")
	}
	part := argv[slices.Index(argv, "-p")+1]
	i := slices.Index(argv, "-t")
	all := i >= 0 && i+1 < len(argv) && argv[i+1] == "all"
	var b strings.Builder
	for _, pending := range []bool{true, false} {
		for _, id := range c.jobIDs(func(j *fakeJob) bool {
			return j.partition == part && (j.node == "") == pending && (all || !j.ended)
		}) {
			b.WriteString(c.jobLine(id))
		}
	}
	return command.Output{Stdout: []byte(b.String())}
}

func (c *Cluster) showNode(name string) command.Output {
	switch {
	case c.unreachable:
		return recorded("show-node-unreachable", "node1", name)
	case c.nodes[name] == nil:
		return recorded("show-node-unknown", "nodeX", name)
	}
	return command.Output{Stdout: []byte(c.showLine(name) + "\n")}
}

// update applies `scontrol update nodename=N state=S [reason=R]` (args without "scontrol
// update").
func (c *Cluster) update(args []string) command.Output {
	name := strings.TrimPrefix(args[0], "nodename=")
	var state, reason string
	for _, a := range args[1:] {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "state":
			state = v
		case "reason":
			reason = v
		}
	}
	n := c.nodes[name]
	switch {
	case c.unreachable:
		return recorded("update-unreachable", "node1", name)
	case n == nil:
		return recorded("update-unknown", "nodeX", name)
	}
	switch strings.ToLower(state) {
	case "drain":
		n.drain, n.reason = true, reason
	case "down":
		n.down, n.reason, n.stuck = true, reason, false
	case "resume":
		if !n.drain && !n.down {
			return recorded("resume-idle", "node2", name)
		}
		n.drain, n.down, n.reason = false, false, ""
	case "":
	default:
		return Real("update-bad-state").Output
	}
	return command.Output{}
}

func (c *Cluster) delete(name string) command.Output {
	switch {
	case c.unreachable:
		return recorded("delete-unreachable", "node1", name)
	case c.nodes[name] == nil:
		return recorded("delete-unknown", "nodeX", name)
	case len(c.jobsOn(name)) > 0, c.nodes[name].stuck:
		return recorded("delete-busy", "node1", name)
	}
	delete(c.nodes, name)
	return command.Output{}
}

// squeue plays `squeue -h -w LIST -t <active states>`: the jobs on any node of the comma
// list (verified on 22.05: a list selects the jobs of each; one unknown name fails the whole
// list with the single-node error naming it).
func (c *Cluster) squeue(list string) command.Output {
	nodes := strings.Split(list, ",")
	if c.unreachable {
		return recorded("squeue-unreachable", "node1", nodes[0])
	}
	for _, node := range nodes {
		if c.nodes[node] == nil {
			return recorded("squeue-node-unknown", "nodeX", node)
		}
	}
	var b strings.Builder
	for _, id := range c.jobIDs(func(j *fakeJob) bool { return !j.ended && slices.Contains(nodes, j.node) }) {
		b.WriteString(c.jobLine(id))
	}
	return command.Output{Stdout: []byte(b.String())}
}

// controllerCommand reports whether program talks to slurmctld (and reads SLURM_CONF).
func controllerCommand(program string) bool {
	switch program {
	case "scontrol", "squeue", "scancel", "sinfo":
		return true
	}
	return false
}

// features are node n's features: its own, or the recorded node's.
func (n *fakeNode) featureList() []string {
	if n.features != nil {
		return n.features
	}
	return []string{DefaultPartition}
}

// checkConfig plays `scontrol show hostnames x` reading the candidate slurm.conf that
// env's SLURM_CONF names, with the recorded answers of real Slurm 22.05.
func (c *Cluster) checkConfig(env []string) (command.Output, error) {
	var conf string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "SLURM_CONF="); ok {
			conf = v
		}
	}
	if conf == "" {
		return command.Output{}, errors.New("slurmtest: scontrol show hostnames run without SLURM_CONF")
	}
	c.checked = append(c.checked, conf)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(conf), "*.conf"))
	if err != nil || len(files) == 0 {
		return command.Output{}, fmt.Errorf("slurmtest: no configuration beside %s", conf)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return command.Output{}, err
		}
		if c.refuse != "" && strings.Contains(string(data), c.refuse) {
			return Real("checkconf-refused").Output, nil
		}
	}
	return Real("checkconf-ok").Output, nil
}

// readConfig makes the partitions of the live configuration (ReadConfig) the
// controller's, keeping the state of those it knew.
func (c *Cluster) readConfig() error {
	if c.confDir == "" {
		return nil
	}
	files, err := filepath.Glob(filepath.Join(c.confDir, "*.conf"))
	if err != nil {
		return err
	}
	parts := map[string]string{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		for _, m := range partNameRE.FindAllStringSubmatch(string(data), -1) {
			if st := c.partitions[m[1]]; st != "" {
				parts[m[1]] = st
			} else {
				parts[m[1]] = "UP"
			}
		}
	}
	c.partitions = parts
	return nil
}

// partitionNodes are the nodes partition holds: those with its feature, less the lost.
func (c *Cluster) partitionNodes(partition string) []string {
	var nodes []string
	for _, name := range slices.Sorted(maps.Keys(c.nodes)) {
		n := c.nodes[name]
		if slices.Contains(n.featureList(), partition) && !n.lost {
			nodes = append(nodes, name)
		}
	}
	return nodes
}

var (
	partFieldRE = regexp.MustCompile(`\b(PartitionName|NodeSets|Nodes|State|TotalCPUs|TotalNodes|TRES)=\S*`)
)

// showPartition answers `scontrol show partition -o NAME` from the recorded line of a
// partition whose NodeSet is its name (show-partition-empty).
func (c *Cluster) showPartition(name string) command.Output {
	switch {
	case c.unreachable:
		return recorded("show-node-unreachable", "", "")
	case c.partitions[name] == "":
		return recorded("show-partition-unknown", "nope", name)
	}
	nodes := c.partitionNodes(name)
	list, tres := "(null)", "(null)"
	if len(nodes) > 0 {
		list = hostlist.Compress(nodes)
		tres = fmt.Sprintf("cpu=%d,mem=%dM,node=%d,billing=%d", len(nodes), 1000*len(nodes), len(nodes), len(nodes))
	}
	values := map[string]string{"PartitionName": name, "NodeSets": name, "Nodes": list, "State": c.partitions[name],
		"TotalCPUs": strconv.Itoa(len(nodes)), "TotalNodes": strconv.Itoa(len(nodes)), "TRES": tres}
	line := partFieldRE.ReplaceAllStringFunc(string(Real("show-partition-empty").Output.Stdout), func(f string) string {
		k, _, _ := strings.Cut(f, "=")
		return k + "=" + values[k]
	})
	return command.Output{Stdout: []byte(line)}
}

// setPartitionNodes applies `scontrol update partitionname=P nodes=NODESETS`: the
// partition is rebuilt from its NodeSets (its name, for the charms' partitions), so no
// node of it is lost any more.
func (c *Cluster) setPartitionNodes(name, nodes string) command.Output {
	switch {
	case c.unreachable:
		return recorded("update-unreachable", "", "")
	case c.partitions[name] == "":
		return recorded("partition-unknown", "nope", name)
	}
	for _, n := range c.nodes {
		if slices.Contains(strings.Split(nodes, ","), name) && slices.Contains(n.featureList(), name) {
			n.lost = false
		}
	}
	return Real("update-partition-nodes").Output
}

// moveJob applies `scontrol update jobid=J partition=P` (a pending job only).
func (c *Cluster) moveJob(id, partition string) command.Output {
	j := c.jobs[id]
	switch {
	case c.unreachable:
		return recorded("update-unreachable", "", "")
	case j == nil:
		return command.Output{Stderr: []byte("slurm_update error: Invalid job id specified\n"), ExitCode: 1}
	case j.node != "" || j.ended:
		return command.Output{Stderr: []byte("scontrol: error: Job is no longer pending execution for job " + id + "\n"), ExitCode: 1}
	case c.partitions[partition] == "":
		return command.Output{Stderr: []byte("slurm_update error: Invalid partition name specified\n"), ExitCode: 1}
	}
	j.partition = partition
	return command.Output{}
}

// reboot applies `scontrol reboot ASAP nextstate=resume reason=R NODES`: each node is
// drained with the reason and marked REBOOT_REQUESTED until Rebooted. The answers are not
// recorded ones.
func (c *Cluster) reboot(reason, list string) command.Output {
	if c.unreachable {
		return recorded("update-unreachable", "", "")
	}
	names, err := hostlist.Expand(list)
	if err != nil {
		return command.Output{Stderr: []byte("scontrol: error: Invalid node name specified\n"), ExitCode: 1}
	}
	for _, name := range names {
		if c.nodes[name] == nil {
			return command.Output{Stderr: []byte("scontrol: error: Invalid node name specified\n"), ExitCode: 1}
		}
	}
	for _, name := range names {
		n := c.nodes[name]
		n.reboot, n.drain, n.reason = true, true, reason
	}
	return command.Output{}
}
