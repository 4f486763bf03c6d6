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
// SetUnreachable makes every controller command fail as with a stopped slurmctld; Before
// runs before each command (a test ends jobs after some polls, or brings the controller
// back).
type Cluster struct {
	mu           sync.Mutex
	nodes        map[string]*fakeNode
	jobs         map[string]string // job id → node
	nextJob      int
	unreachable  bool
	reconfigures int
	calls        []Call
	before       func(argv []string)
}

type fakeNode struct {
	down, drain bool
	reason      string
}

// NewCluster returns a cluster with no node.
func NewCluster() *Cluster {
	return &Cluster{nodes: map[string]*fakeNode{}, jobs: map[string]string{}, nextJob: 1}
}

// AddNode registers an idle dynamic node (what a started slurmd -Z does).
func (c *Cluster) AddNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[name] = &fakeNode{}
}

// StartJob starts a running job on node and returns its id.
func (c *Cluster) StartJob(node string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := strconv.Itoa(c.nextJob)
	c.nextJob++
	c.jobs[id] = node
	return id
}

// EndJob ends job id.
func (c *Cluster) EndJob(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.jobs, id)
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
			delete(c.jobs, id)
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
	case len(jobs) > 0:
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

func (c *Cluster) jobsOn(node string) []string {
	var ids []string
	for id, n := range c.jobs {
		if n == node {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
	return ids
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
		n.down, n.reason = true, reason
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
	case len(c.jobsOn(name)) > 0:
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
		// The recorded squeue-node-running line, with this job's id and node.
		fmt.Fprintf(&b, "%s|RUNNING|ns1|root|%s|sleep|pipe job\n", id, node)
	}
	return slurm.Output{Stdout: []byte(b.String())}
}
