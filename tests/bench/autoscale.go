package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/tests/model"
)

// Autoscale burst parameters: a partition at 1 node, max 6, receives burstJobs one-node
// exclusive jobs (a job a node, so that the sum of runtimes is the ideal node-seconds) of
// burstJobSeconds each; slurm-autoscaler decides every second and removes nodes idle for
// burstIdle.
const (
	burstApp        = "burst"
	burstJobs       = 12
	burstJobSeconds = 4
	burstMax        = 6
	burstIdle       = 10 * time.Second
)

// autoscaleBurst measures slurm-autoscaler on a fixed burst, through juju-local and the real
// operators, in an application of its own (so the other parts' units do not matter):
// submission → first job running, the burst's makespan, node-seconds used (from submission
// until the partition is back at 1 node) against the ideal (the sum of job runtimes), and the
// decision latency (submission → the autoscaler's add-unit).
func (c *opCluster) autoscaleBurst(ctx context.Context, opts *RunOptions, rep *Report, root, scratch, tools, slurmdCharm string) (err error) {
	opts.progress("autoscale: %d one-node jobs of %ds on %s (1 unit, max %d)", burstJobs, burstJobSeconds, burstApp, burstMax)
	bin := filepath.Join(scratch, "slurm-autoscaler")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/slurm-autoscaler")
	build.Dir = filepath.Join(root, "autoscaler")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("cannot build slurm-autoscaler: %v\n%s", err, out)
	}
	if _, err := c.m.Deploy(ctx, model.DeployOptions{Charm: slurmdCharm, Name: burstApp}); err != nil {
		return err
	}
	if _, err := c.m.Integrate(ctx, "slurmctld", burstApp); err != nil {
		return err
	}
	if err := c.wait(ctx, 3*time.Minute, model.AllActive); err != nil {
		return fmt.Errorf("%s not active: %w", burstApp, err)
	}
	if err := c.waitIdle(withTimeout(ctx, time.Minute), burstApp+"-0"); err != nil {
		return err
	}
	if err := c.m.ListenCLI(filepath.Join(c.m.Dir(), "model.sock")); err != nil {
		return err
	}
	as, err := startAutoscaler(ctx, bin, c.m.Dir(), "--juju", tools, "--interval", "1s",
		"--app", fmt.Sprintf("%s:min=1,max=%d,idle=%s,out=%d,in=%d", burstApp, burstMax, burstIdle, burstMax, burstMax))
	if err != nil {
		return err
	}
	defer func() {
		as.stop()
		if err != nil {
			rep.Traces = appendTrace(rep.Traces, "autoscale: slurm-autoscaler", as.lines(time.Time{}))
		}
	}()
	if err := Poll(withTimeout(ctx, time.Minute), 100*time.Millisecond, func() (bool, string) {
		return as.first(" "+burstApp+": ") != (time.Time{}), ""
	}); err != nil {
		return fmt.Errorf("no first decision from slurm-autoscaler: %w", err)
	}

	t0 := time.Now()
	var ids []string
	for range burstJobs {
		out, err := c.ctl.RunEnv(ctx, []string{"SLURM_CONF=" + ControllerConf}, "sbatch", "--parsable", "-p", burstApp, "-N1", "--exclusive",
			"-o", "/dev/null", "--wrap", fmt.Sprintf("sleep %d", burstJobSeconds))
		if err != nil {
			return err
		}
		ids = append(ids, strings.TrimSpace(string(out)))
	}
	// Sample the partition's nodes and jobs until the burst is over and it is back at 1 node.
	var firstRun, lastEnd time.Time
	var nodeSeconds, makespanNodeSeconds float64
	peak := 0
	last := t0
	err = Poll(withTimeout(ctx, 5*time.Minute), 100*time.Millisecond, func() (bool, string) {
		nodes, err := c.sc.Nodes(ctx)
		if err != nil {
			return false, err.Error()
		}
		jobs, err := c.sc.JobsInPartition(ctx, burstApp)
		if err != nil {
			return false, err.Error()
		}
		now := time.Now()
		n := 0
		for _, nd := range nodes {
			if slices.Contains(nd.Partitions, burstApp) {
				n++
			}
		}
		peak = max(peak, n)
		dt := now.Sub(last).Seconds()
		last = now
		nodeSeconds += float64(n) * dt
		if lastEnd.IsZero() {
			makespanNodeSeconds += float64(n) * dt
		}
		if firstRun.IsZero() && slices.ContainsFunc(jobs, func(j slurm.Job) bool { return j.State == "RUNNING" }) {
			firstRun = now
		}
		if lastEnd.IsZero() && len(jobs) == 0 {
			lastEnd = now
		}
		units := len(c.m.Status(ctx).Applications[burstApp].Units)
		return !lastEnd.IsZero() && n == 1 && units == 1, fmt.Sprintf("%d jobs listed, %d nodes, %d units", len(jobs), n, units)
	})
	if err != nil {
		return fmt.Errorf("burst not over: %w", err)
	}
	done := time.Now()
	for _, id := range ids {
		out, err := c.ctl.RunEnv(ctx, []string{"SLURM_CONF=" + ControllerConf}, "scontrol", "show", "job", "-o", id)
		if err != nil || !strings.Contains(string(out), "JobState=COMPLETED") {
			return fmt.Errorf("job %s did not complete: %s", id, out)
		}
	}
	added := as.first("more nodes: adding")
	if added.IsZero() || firstRun.IsZero() {
		return fmt.Errorf("the autoscaler never added units or no job was seen running")
	}
	ideal := float64(burstJobs * burstJobSeconds)
	note := fmt.Sprintf("%d one-node exclusive %ds jobs, 1 unit, max %d, idle %s", burstJobs, burstJobSeconds, burstMax, burstIdle)
	rep.Add(
		Figure{Name: "autoscale_first_job_s", Value: firstRun.Sub(t0).Seconds(), Unit: "s", Note: "first sbatch → a job RUNNING; " + note},
		Figure{Name: "autoscale_makespan_s", Value: lastEnd.Sub(t0).Seconds(), Unit: "s", Note: "first sbatch → no job left in the partition"},
		Figure{Name: "autoscale_decision_s", Value: added.Sub(t0).Seconds(), Unit: "s",
			Note: "first sbatch → the autoscaler's add-unit decision (decides every 1 s; reads Slurm through juju-local exec)"},
		Figure{Name: "autoscale_node_s", Value: nodeSeconds, Unit: "s",
			Note: fmt.Sprintf("node-seconds from first sbatch until back at 1 node (%.1f s later); ideal %.0f = sum of job runtimes", done.Sub(t0).Seconds(), ideal)},
		Figure{Name: "autoscale_node_ratio", Value: nodeSeconds / ideal, Unit: "ratio", Note: "autoscale_node_s / sum of job runtimes (idle time before scale-in included)"},
		Figure{Name: "autoscale_makespan_node_ratio", Value: makespanNodeSeconds / ideal, Unit: "ratio", Note: "node-seconds during the makespan / sum of job runtimes"},
		Figure{Name: "autoscale_peak_nodes", Value: float64(peak), Unit: "count", Target: Max(burstMax), Note: "most nodes in the partition at once (max units " + fmt.Sprint(burstMax) + ")"},
	)
	rep.Traces = appendTrace(rep.Traces, "autoscale: slurm-autoscaler status lines (offsets from the first sbatch)", as.lines(t0))
	return nil
}

// runningAutoscaler is a slurm-autoscaler process whose status lines are kept with the time
// they were read.
type runningAutoscaler struct {
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	out  []traceLine
}

func startAutoscaler(ctx context.Context, bin, modelDir string, args ...string) (*runningAutoscaler, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "JUJU_LOCAL_DIR="+modelDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	a := &runningAutoscaler{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			a.mu.Lock()
			a.out = append(a.out, traceLine{time.Now(), sc.Text()})
			a.mu.Unlock()
		}
	}()
	return a, nil
}

// first returns when the first line containing s was read (zero if none).
func (a *runningAutoscaler) first(s string) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, l := range a.out {
		if strings.Contains(l.text, s) {
			return l.at
		}
	}
	return time.Time{}
}

// lines renders the status lines with their offsets from t0 (as read when t0 is zero).
func (a *runningAutoscaler) lines(t0 time.Time) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, l := range a.out {
		if t0.IsZero() {
			out = append(out, l.text)
		} else {
			out = append(out, fmt.Sprintf("%+8.3fs %s", l.at.Sub(t0).Seconds(), l.text))
		}
	}
	return out
}

// stop ends the process (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (a *runningAutoscaler) stop() {
	a.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan struct{})
	go func() { <-a.done; a.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		a.cmd.Process.Kill()
		<-exited
	}
}
