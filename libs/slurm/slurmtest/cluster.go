package slurmtest

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/charmed-slurm/operators/libs/slurm"
)

// Cluster is a stateful fake of a Slurm controller, for unit tests of code that drives
// nodes through package slurm (both charms, the removal protocol). It is a slurm.Runner: it
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
// SetUnreachable makes every controller command fail as with a stopped slurmctld; Before
// runs before each command (a test ends jobs after some polls, or brings the controller
// back).
type Cluster struct {
	mu           sync.Mutex
	nodes        map[string]*fakeNode
	jobs         map[string]*fakeJob
	partitions   map[string]string // partition → state
	nextJob      int
	unreachable  bool
	reconfigures int
	calls        []Call
	before       func(argv []string)
}

type fakeNode struct {
	down, drain bool
	reason      string
	// stuck: ALLOCATED with no job (Slurm 22.05 bug 16434) until set DOWN.
	stuck bool
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

// Run implements slurm.Runner.
func (c *Cluster) Run(ctx context.Context, argv []string, env []string) (slurm.Output, error) {
	c.mu.Lock()
	before := c.before
	c.calls = append(c.calls, Call{Argv: slices.Clone(argv), Env: slices.Clone(env)})
	c.mu.Unlock()
	if before != nil {
		before(argv)
	}
	if err := ctx.Err(); err != nil {
		return slurm.Output{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a := strings.Join(argv, " ")
	switch {
	case a == "slurmd -V", a == "slurmctld -V", a == "scontrol -V":
		return Real(argv[0] + "-V").Output, nil
	case a == "slurmd -C":
		return Real("slurmd-C").Output, nil
	case len(argv) == 2 && argv[0] == slurm.MungePath && argv[1] == "-n":
		return slurm.Output{Stdout: []byte("MUNGE:AwQFAAA=:\n")}, nil
	case strings.HasPrefix(a, "scontrol update partitionname=") && len(argv) == 4 && strings.HasPrefix(argv[3], "state="):
		return c.updatePartition(strings.TrimPrefix(argv[2], "partitionname="), strings.TrimPrefix(argv[3], "state=")), nil
	case len(argv) >= 6 && argv[0] == "squeue" && argv[1] == "-h" && slices.Contains(argv, "-p"):
		return c.squeuePartition(argv), nil
	case a == "scontrol ping":
		if c.unreachable {
			return Real("ping-down").Output, nil
		}
		return Real("ping-up").Output, nil
	case a == "scontrol reconfigure":
		if c.unreachable {
			return Real("reconfigure-unreachable").Output, nil
		}
		c.reconfigures++
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
		return slurm.Output{Stdout: []byte(strings.Join(lines, "\n") + "\n")}, nil
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
		return slurm.Output{}, nil
	}
	return slurm.Output{}, fmt.Errorf("slurmtest: the fake cluster does not model %q", argv)
}

// recorded is the recorded case with its node name (recordedName) replaced by name.
func recorded(name, recordedName, node string) slurm.Output {
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
	line := strings.TrimRight(string(Real("show-node-idle").Output.Stdout), "\n")
	line = nodeNameRE.ReplaceAllString(line, "Node${1}="+name)
	line = stateRE.ReplaceAllString(line, "State="+state)
	line = allocRE.ReplaceAllString(line, "CPUAlloc="+strconv.Itoa(min(len(jobs), 1)))
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

func (c *Cluster) updatePartition(name, state string) slurm.Output {
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
func (c *Cluster) squeuePartition(argv []string) slurm.Output {
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
	return slurm.Output{Stdout: []byte(b.String())}
}

func (c *Cluster) showNode(name string) slurm.Output {
	switch {
	case c.unreachable:
		return recorded("show-node-unreachable", "node1", name)
	case c.nodes[name] == nil:
		return recorded("show-node-unknown", "nodeX", name)
	}
	return slurm.Output{Stdout: []byte(c.showLine(name) + "\n")}
}

// update applies `scontrol update nodename=N state=S [reason=R]` (args without "scontrol
// update").
func (c *Cluster) update(args []string) slurm.Output {
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
	return slurm.Output{}
}

func (c *Cluster) delete(name string) slurm.Output {
	switch {
	case c.unreachable:
		return recorded("delete-unreachable", "node1", name)
	case c.nodes[name] == nil:
		return recorded("delete-unknown", "nodeX", name)
	case len(c.jobsOn(name)) > 0, c.nodes[name].stuck:
		return recorded("delete-busy", "node1", name)
	}
	delete(c.nodes, name)
	return slurm.Output{}
}

func (c *Cluster) squeue(node string) slurm.Output {
	switch {
	case c.unreachable:
		return recorded("squeue-unreachable", "node1", node)
	case c.nodes[node] == nil:
		return recorded("squeue-node-unknown", "nodeX", node)
	}
	var b strings.Builder
	for _, id := range c.jobsOn(node) {
		b.WriteString(c.jobLine(id))
	}
	return slurm.Output{Stdout: []byte(b.String())}
}
