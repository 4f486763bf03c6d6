package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/command"
)

// DefaultPollInterval is WaitDrained's and a Remover's poll interval when
// Client.PollInterval is zero.
const DefaultPollInterval = 2 * time.Second

// DefaultTimeout bounds each Slurm command when Client.Timeout is zero. Slurm's clients
// retry an unreachable controller for a long while on their own; a hook must not hang
// with them.
const DefaultTimeout = 30 * time.Second

// Client runs Slurm commands. The zero value is not usable: set Runner and Conf.
type Client struct {
	// Runner runs the commands (required): an argv slice plus extra KEY=value environment
	// entries; a non-zero exit is reported through Output.ExitCode, not as an error.
	Runner command.Runner
	// Conf is the slurm.conf path, passed to every client command as SLURM_CONF
	// (required for commands that talk to slurmctld: without it clients try DNS SRV).
	Conf string
	// Env holds extra KEY=value entries for every command.
	Env []string
	// ClusterVersion is the cluster's Slurm version; it selects version-dependent
	// commands through FeaturesOf. Zero means 22.05 behaviour.
	ClusterVersion Version
	// PollInterval is WaitDrained's poll interval; zero means DefaultPollInterval.
	PollInterval time.Duration
	// Timeout bounds each command; zero means DefaultTimeout, a negative value no bound
	// but ctx. A controller command that times out gives an error wrapping both
	// ErrControllerUnreachable and command.ErrTimeout.
	Timeout time.Duration
	// Changed, when set, is called after every command the client runs that may change
	// Slurm (every command but a read: scontrol show, squeue, sinfo...), whether it
	// succeeded or not: from then on what the caller read of Slurm before may be out of
	// date. It is called on the goroutine that ran the command.
	Changed func()
}

// reads reports whether argv, a command the client runs, only reads Slurm: a version
// (-V), the machine's facts (slurmd -C), scontrol's show, ping and listjobs, squeue,
// sinfo, sdiag and sacctmgr's show and list. Any other command (scontrol update, delete,
// reconfigure, takeover, reboot, scancel...) may change Slurm: a command unknown here counts
// as a change, so that Client.Changed is never missed.
func reads(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	switch argv[0] {
	case "squeue", "sinfo", "sdiag":
		return true
	}
	if len(argv) < 2 {
		return false
	}
	if argv[1] == "-V" {
		return true
	}
	switch argv[0] {
	case "slurmd":
		return argv[1] == "-C"
	case "scontrol":
		switch argv[1] {
		case "show", "ping", "listjobs":
			return true
		}
	case "sacctmgr":
		for _, a := range argv[1:] {
			switch a {
			case "show", "list":
				return true
			case "add", "create", "modify", "update", "delete", "remove", "archive", "load":
				return false
			}
		}
	}
	return false
}

// exec runs argv through the Runner with the per-command timeout. A command that timed out
// talking to the controller (needConf) is an unreachable controller.
func (c *Client) exec(ctx context.Context, needConf bool, argv, env []string) (command.Output, error) {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	cctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	out, err := c.Runner.Run(cctx, argv, env)
	if c.Changed != nil && !reads(argv) {
		c.Changed()
	}
	if err == nil || ctx.Err() != nil || cctx.Err() == nil {
		return out, err
	}
	// Our deadline, not the caller's, ended the command.
	if !errors.Is(err, command.ErrTimeout) {
		err = fmt.Errorf("%w after %s: %w", command.ErrTimeout, timeout, err)
	}
	if needConf {
		return out, fmt.Errorf("%s: %w: %w", strings.Join(argv, " "), ErrControllerUnreachable, err)
	}
	return out, err
}

func (c *Client) env(needConf bool) ([]string, error) {
	if c.Runner == nil {
		return nil, errors.New("slurm client has no Runner")
	}
	env := append([]string(nil), c.Env...)
	if c.Conf != "" {
		env = append(env, "SLURM_CONF="+c.Conf)
	} else if needConf {
		return nil, errors.New("slurm client has no Conf (SLURM_CONF): refusing to let Slurm look up the controller in DNS")
	}
	return env, nil
}

// run runs argv and returns stdout, or a *CommandError for a non-zero exit.
func (c *Client) run(ctx context.Context, needConf bool, argv ...string) ([]byte, error) {
	return c.runEnv(ctx, needConf, nil, argv...)
}

// runEnv is run with extra added to the command's environment.
func (c *Client) runEnv(ctx context.Context, needConf bool, extra []string, argv ...string) ([]byte, error) {
	env, err := c.env(needConf)
	if err != nil {
		return nil, err
	}
	env = append(env, extra...)
	out, err := c.exec(ctx, needConf, argv, env)
	if err != nil {
		return nil, err
	}
	if out.ExitCode != 0 {
		msg := strings.TrimSpace(string(out.Stderr))
		if msg == "" {
			msg = strings.TrimSpace(string(out.Stdout))
		}
		return nil, &CommandError{Argv: argv, ExitCode: out.ExitCode, Stderr: msg, Kind: classify(msg)}
	}
	return out.Stdout, nil
}

// Controller is one slurmctld as `scontrol ping` reports it.
type Controller struct {
	Role string // "primary", "backup", "backup2", ...
	Host string
	Up   bool
}

// Ping runs `scontrol ping`. It returns the controllers and an error wrapping
// ErrControllerUnreachable when none is UP.
func (c *Client) Ping(ctx context.Context) ([]Controller, error) {
	env, err := c.env(true)
	if err != nil {
		return nil, err
	}
	argv := []string{"scontrol", "ping"}
	out, err := c.exec(ctx, true, argv, env)
	if err != nil {
		return nil, err
	}
	ctls, perr := ParsePing(out.Stdout)
	if perr != nil {
		msg := strings.TrimSpace(string(out.Stderr))
		return nil, &CommandError{Argv: argv, ExitCode: out.ExitCode, Stderr: msg, Kind: classify(msg)}
	}
	for _, ctl := range ctls {
		if ctl.Up {
			return ctls, nil
		}
	}
	return ctls, fmt.Errorf("cannot ping slurmctld: %w", ErrControllerUnreachable)
}

// ParsePing parses `scontrol ping` output ("Slurmctld(primary) at host is UP").
func ParsePing(data []byte) ([]Controller, error) {
	var ctls []Controller
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "Slurmctld(") {
			continue
		}
		rest := strings.TrimPrefix(line, "Slurmctld(")
		role, rest, ok := strings.Cut(rest, ") at ")
		if !ok {
			return nil, fmt.Errorf("cannot parse scontrol ping line %q", line)
		}
		i := strings.LastIndex(rest, " is ")
		if i < 0 {
			return nil, fmt.Errorf("cannot parse scontrol ping line %q", line)
		}
		state := rest[i+len(" is "):]
		if state != "UP" && state != "DOWN" {
			return nil, fmt.Errorf("cannot parse scontrol ping line %q: state %q", line, state)
		}
		ctls = append(ctls, Controller{Role: role, Host: rest[:i], Up: state == "UP"})
	}
	if len(ctls) == 0 {
		return nil, fmt.Errorf("cannot parse scontrol ping output %q: no Slurmctld line", bytes.TrimSpace(data))
	}
	return ctls, nil
}

// Version runs `scontrol -V`. It needs no controller.
func (c *Client) Version(ctx context.Context) (Version, error) {
	return c.version(ctx, "scontrol")
}

// SlurmdVersion runs `slurmd -V` (on compute nodes, where scontrol may be absent). It needs
// no slurm.conf.
func (c *Client) SlurmdVersion(ctx context.Context) (Version, error) {
	return c.version(ctx, "slurmd")
}

// SlurmctldVersion runs `slurmctld -V`. Unlike Version (`scontrol -V`, which reads
// slurm.conf and fails without one) it needs no slurm.conf: use it on a controller before
// its configuration is written.
func (c *Client) SlurmctldVersion(ctx context.Context) (Version, error) {
	return c.version(ctx, "slurmctld")
}

func (c *Client) version(ctx context.Context, prog string) (Version, error) {
	out, err := c.run(ctx, false, prog, "-V")
	if err != nil {
		return Version{}, err
	}
	return ParseVersion(string(out))
}

// NoHwlocPlugins is the environment under which MachineInfo runs `slurmd -C`: hwloc looks
// for its plugins in a directory that holds none. hwloc otherwise loads every plugin
// installed (Debian's libhwloc-plugins: PCI, OpenCL, GL with libX11, Level Zero, libxml2)
// for each topology it builds; they only discover I/O devices, which Slurm filters out
// (xcpuinfo.c keeps no I/O object type), and hwloc parses XML without libxml2 too. The
// facts are the same, in about half the time (docs/benchmarks.md, branch join3).
const NoHwlocPlugins = "HWLOC_PLUGINS_PATH=/nonexistent/hwloc-plugins"

// MachineInfo runs `slurmd -C` (under NoHwlocPlugins) and parses it. It needs no controller.
func (c *Client) MachineInfo(ctx context.Context) (MachineInfo, error) {
	out, err := c.runEnv(ctx, false, []string{NoHwlocPlugins}, "slurmd", "-C")
	if err != nil {
		return MachineInfo{}, err
	}
	return ParseMachineInfo(out)
}

// ShowNode runs `scontrol show node -o NAME`. An unknown node gives ErrUnknownNode.
func (c *Client) ShowNode(ctx context.Context, name string) (Node, error) {
	if err := checkName("node", name); err != nil {
		return Node{}, err
	}
	out, err := c.run(ctx, true, "scontrol", "show", "node", "-o", name)
	if err != nil {
		return Node{}, err
	}
	nodes, err := ParseShowNode(out)
	if err != nil {
		return Node{}, err
	}
	for _, n := range nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("cannot show node %q: %w", name, ErrUnknownNode)
}

// Nodes runs `scontrol show node -o` and returns every node.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	out, err := c.run(ctx, true, "scontrol", "show", "node", "-o")
	if err != nil {
		return nil, err
	}
	return ParseShowNode(out)
}

// NodeUpdate is a `scontrol update nodename=...` request. Empty fields are left alone.
type NodeUpdate struct {
	State   string // drain, resume, down, undrain, ... (Slurm checks the transition)
	Reason  string // required by Slurm with drain and down
	Comment string
}

// UpdateNode runs `scontrol update nodename=NAME state=S reason=R`, each key=value one
// argv element (a reason with spaces needs no quoting).
func (c *Client) UpdateNode(ctx context.Context, name string, u NodeUpdate) error {
	if err := checkName("node", name); err != nil {
		return err
	}
	argv := []string{"scontrol", "update", "nodename=" + name}
	if u.State != "" {
		if err := checkName("state", u.State); err != nil {
			return err
		}
		argv = append(argv, "state="+u.State)
	}
	for _, kv := range []struct{ key, val string }{{"reason", u.Reason}, {"comment", u.Comment}} {
		if kv.val == "" {
			continue
		}
		if strings.ContainsAny(kv.val, "\n\r\"") {
			return fmt.Errorf("cannot update node %q: %s %q contains a newline or double quote", name, kv.key, kv.val)
		}
		argv = append(argv, kv.key+"="+kv.val)
	}
	if len(argv) == 3 {
		return fmt.Errorf("cannot update node %q: nothing to update", name)
	}
	_, err := c.run(ctx, true, argv...)
	return err
}

// Drain sets the node to drain with reason (required).
func (c *Client) Drain(ctx context.Context, name, reason string) error {
	if strings.TrimSpace(reason) == "" {
		return fmt.Errorf("cannot drain node %q: empty reason", name)
	}
	return c.UpdateNode(ctx, name, NodeUpdate{State: "drain", Reason: reason})
}

// Resume sets the node to resume. Resuming a node that is neither drained nor down gives
// ErrInvalidNodeState.
func (c *Client) Resume(ctx context.Context, name string) error {
	return c.UpdateNode(ctx, name, NodeUpdate{State: "resume"})
}

// DeleteNode runs `scontrol delete nodename=NAME`. A node with running jobs gives
// ErrNodeBusy; an unknown node ErrUnknownNode. Stop the node's slurmd first: a running
// dynamic slurmd re-creates its node when it next registers.
func (c *Client) DeleteNode(ctx context.Context, name string) error {
	if err := checkName("node", name); err != nil {
		return err
	}
	_, err := c.run(ctx, true, "scontrol", "delete", "nodename="+name)
	return err
}

// CancelJobs runs `scancel IDS...`: Slurm signals the jobs and ends them (they go through
// COMPLETING first). A failed scancel gives a *CommandError.
func (c *Client) CancelJobs(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	for _, id := range ids {
		if err := checkName("job", id); err != nil {
			return err
		}
	}
	_, err := c.run(ctx, true, append([]string{"scancel"}, ids...)...)
	return err
}

// Reconfigure runs `scontrol reconfigure`.
func (c *Client) Reconfigure(ctx context.Context) error {
	_, err := c.run(ctx, true, "scontrol", "reconfigure")
	return err
}

// Takeover runs `scontrol takeover INDEX`: the backup controller at INDEX (1 the first backup,
// in SlurmctldHost order) takes control from the controller in control now.
func (c *Client) Takeover(ctx context.Context, index int) error {
	if index < 1 || index > 99 {
		return fmt.Errorf("cannot take over: bad backup controller index %d", index)
	}
	_, err := c.run(ctx, true, "scontrol", "takeover", strconv.Itoa(index))
	return err
}

// Partition states for UpdatePartitionState.
const (
	PartitionUp       = "UP"
	PartitionDown     = "DOWN"
	PartitionDrain    = "DRAIN"
	PartitionInactive = "INACTIVE"
)

// UpdatePartitionState runs `scontrol update partitionname=NAME state=STATE`. An unknown
// partition gives ErrUnknownPartition.
func (c *Client) UpdatePartitionState(ctx context.Context, partition, state string) error {
	if err := checkName("partition", partition); err != nil {
		return err
	}
	switch state {
	case PartitionUp, PartitionDown, PartitionDrain, PartitionInactive:
	default:
		return fmt.Errorf("cannot update partition %q: bad state %q (want UP, DOWN, DRAIN or INACTIVE)", partition, state)
	}
	_, err := c.run(ctx, true, "scontrol", "update", "partitionname="+partition, "state="+state)
	return err
}

// JobsOnNode lists the jobs that occupy node (RUNNING, COMPLETING, CONFIGURING,
// SUSPENDED) as the controller sees them, with `squeue -h -w NODE`. An unknown node gives
// ErrUnknownNode.
func (c *Client) JobsOnNode(ctx context.Context, node string) ([]Job, error) {
	return c.JobsOnNodes(ctx, []string{node})
}

// JobsOnNodes is JobsOnNode for several nodes in one squeue (`-w a,b,c`): every job that
// occupies any of them (a job's Nodes may name others too). An unknown node among them gives
// ErrUnknownNode, as squeue fails for the whole list (Slurm 22.05: "Invalid node name X").
func (c *Client) JobsOnNodes(ctx context.Context, nodes []string) ([]Job, error) {
	if len(nodes) == 0 {
		return nil, errors.New("cannot list the jobs on nodes: no node given")
	}
	for _, n := range nodes {
		if err := checkName("node", n); err != nil {
			return nil, err
		}
		if strings.Contains(n, ",") {
			return nil, fmt.Errorf("invalid node name %q: contains ','", n)
		}
	}
	out, err := c.run(ctx, true, "squeue", "-h", "-w", strings.Join(nodes, ","), "-t", strings.Join(activeJobStates, ","), "-o", squeueFormat)
	if err != nil {
		return nil, err
	}
	return ParseSqueue(out)
}

// LocalJobs lists the jobs with steps on this host's slurmd (named node, which may differ
// from the host name). From 24.05
// (FeaturesOf(c.ClusterVersion).ListJobs) it asks the local slurmd with `scontrol listjobs
// --json`, no controller involved; before, it falls back to JobsOnNode.
func (c *Client) LocalJobs(ctx context.Context, node string) ([]Job, error) {
	if !FeaturesOf(c.ClusterVersion).ListJobs {
		return c.JobsOnNode(ctx, node)
	}
	env, err := c.env(false)
	if err != nil {
		return nil, err
	}
	// scontrol finds the slurmstepds by node name, the host name unless SLURMD_NODENAME says
	// otherwise: a dynamic node named apart from its host would show no job (24.11, verified).
	env = append(env, "SLURMD_NODENAME="+node)
	argv := []string{"scontrol", "listjobs", "--json"}
	out, err := c.exec(ctx, false, argv, env)
	if err != nil {
		return nil, err
	}
	if out.ExitCode != 0 {
		msg := strings.TrimSpace(string(out.Stderr) + " " + string(out.Stdout))
		if strings.Contains(msg, "No slurmstepd's found") {
			return nil, nil
		}
		return nil, &CommandError{Argv: argv, ExitCode: out.ExitCode, Stderr: msg, Kind: classify(msg)}
	}
	return ParseListJobsJSON(out.Stdout)
}

// JobsInPartition lists every job squeue still shows in partition (pending, running,
// completing, ...). An unknown partition gives no jobs, as squeue does.
func (c *Client) JobsInPartition(ctx context.Context, partition string) ([]Job, error) {
	if err := checkName("partition", partition); err != nil {
		return nil, err
	}
	out, err := c.run(ctx, true, "squeue", "-h", "-p", partition, "-o", squeueFormat)
	if err != nil {
		return nil, err
	}
	return ParseSqueue(out)
}

// PartitionJobRecords lists every job record slurmctld still holds in partition, in all
// states (`squeue -t all`): besides the jobs JobsInPartition lists, the finished ones
// (COMPLETED, CANCELLED, FAILED, ...) kept for MinJobAge. A partition cannot be removed
// from slurm.conf while such records reference it. An unknown partition gives no jobs.
func (c *Client) PartitionJobRecords(ctx context.Context, partition string) ([]Job, error) {
	if err := checkName("partition", partition); err != nil {
		return nil, err
	}
	out, err := c.run(ctx, true, "squeue", "-h", "-t", "all", "-p", partition, "-o", squeueFormat)
	if errors.Is(err, ErrUnknownPartition) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseSqueue(out)
}

// WaitDrained polls until node has no running or completing job: squeue lists no
// occupying job and the node is neither ALLOCATED/MIXED nor COMPLETING. It returns as
// soon as that holds (the first check is immediate), ctx's error when ctx ends, and
// ErrUnknownNode when the node does not exist. Drain the node first, or new jobs may
// start on it while waiting.
func (c *Client) WaitDrained(ctx context.Context, node string) error {
	interval := c.PollInterval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("cannot wait for node %q to drain: %w", node, ctx.Err())
		case <-timer.C:
		}
		idle, err := c.nodeIdle(ctx, node)
		if err != nil {
			return fmt.Errorf("cannot wait for node %q to drain: %w", node, err)
		}
		if idle {
			return nil
		}
		timer.Reset(interval)
	}
}

func (c *Client) nodeIdle(ctx context.Context, node string) (bool, error) {
	jobs, err := c.JobsOnNode(ctx, node)
	if err != nil {
		return false, err
	}
	if len(jobs) > 0 {
		return false, nil
	}
	n, err := c.ShowNode(ctx, node)
	if err != nil {
		return false, err
	}
	return !n.State.Busy(), nil
}

// checkName rejects names that would change the meaning of a scontrol argument.
func checkName(what, name string) error {
	if name == "" {
		return fmt.Errorf("invalid %s name: empty", what)
	}
	if strings.ContainsAny(name, " \t\n\r=\"'") || strings.HasPrefix(name, "-") {
		return fmt.Errorf("invalid %s name %q: contains a space, quote or '=', or starts with '-'", what, name)
	}
	return nil
}
