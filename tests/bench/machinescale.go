package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// machineScale adds n slurmd units at once, each on a new machine of the model's base, and
// times until every node is IDLE (machines included: each machine's creation, boot and
// agent); then removes them all at once and times until every node record is gone and
// every machine destroyed. Figures are named prefix+"scale.<n>.*" ("trixie.scale.32.out_s").
func (c *opCluster) machineScale(ctx context.Context, opts *RunOptions, rep *Report, prefix string, n int) error {
	opts.progress("%sscale: %d units on new machines at once", prefix, n)
	name := fmt.Sprintf("%sscale.%d", prefix, n)
	ev0 := c.machineCtlEvents()
	t0 := time.Now()
	units, err := c.m.AddUnit(ctx, "slurmd", n)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, scaleBound(n))
	defer cancel()
	idle := map[string]bool{}
	werr := Poll(sctx, 100*time.Millisecond, func() (bool, string) {
		nodes, err := c.sc.Nodes(sctx)
		if err != nil {
			return false, err.Error()
		}
		for _, nd := range nodes {
			if nd.State.Base == slurm.StateIdle && !nd.State.NotResponding() {
				idle[nd.Name] = true
			}
		}
		done := 0
		for _, u := range units {
			if idle[slurmd.NodeName(u)] {
				done++
			}
		}
		return done == n, fmt.Sprintf("%d/%d idle", done, n)
	})
	total := time.Since(t0)
	rep.AddScalePoint("operators on "+strings.TrimSuffix(prefix, ".")+" machines: add-unit -n N → all IDLE (machines included)", Point{Nodes: n, Seconds: total.Seconds()})
	var lastMachine time.Duration
	for _, u := range units {
		if host, _ := c.provisioned(u, t0); host > lastMachine {
			lastMachine = host
		}
	}
	settleErr := c.wait(ctx, scaleBound(n), nil)
	f := Figure{Name: name + ".out_s", Value: total.Seconds(), Unit: "s", Samples: n,
		Note: fmt.Sprintf("%d units added at once, each on a new machine → all IDLE, machines included (the last machine's agent up after %.1fs)", n, lastMachine.Seconds())}
	if werr != nil {
		f.Note = fmt.Sprintf("NOT ALL IDLE within the bound: %v; ", werr) + f.Note
	}
	out := c.machineCtlEvents().Sub(ev0)
	rep.Add(f,
		Figure{Name: name + ".out_per_node_s", Value: total.Seconds() / float64(n), Unit: "s", Note: "all IDLE time / units"},
		Figure{Name: name + ".out_machines_s", Value: lastMachine.Seconds(), Unit: "s", Note: "add-unit → the last machine booted with its agent up"},
		Figure{Name: name + ".out_reconfigures", Value: float64(out.Reconfigures), Unit: "count", Target: Max(0),
			Note: "reconfigures in the controller's slurmctld.log during the scale-out"},
		Figure{Name: name + ".out_restarts", Value: float64(out.Starts), Unit: "count", Target: Max(0),
			Note: "slurmctld starts in the controller's slurmctld.log during the scale-out"})
	if werr != nil || settleErr != nil {
		return errors.Join(werr, settleErr)
	}

	opts.progress("%sscale: removing the %d units at once", prefix, n)
	t0 = time.Now()
	gerr, err := c.removeAtOnce(ctx, units, scaleBound(n))
	if err != nil {
		return err
	}
	gone := time.Since(t0)
	settleErr = c.wait(ctx, scaleBound(n), nil)
	settle := time.Since(t0)
	f = Figure{Name: name + ".in_s", Value: gone.Seconds(), Unit: "s", Note: fmt.Sprintf("remove-unit of the %d units → every node record gone", n)}
	if gerr != nil {
		f.Note = fmt.Sprintf("NOT ALL GONE within the bound: %v; ", gerr) + f.Note
	}
	settleNote := "remove-unit → every hook has run and every machine is gone"
	if settleErr != nil {
		settleNote = fmt.Sprintf("NOT SETTLED: %v", settleErr)
	}
	rep.Add(f, Figure{Name: name + ".in_settle_s", Value: settle.Seconds(), Unit: "s", Note: settleNote})
	for _, u := range units {
		c.checkGone(ctx, rep, slurmd.NodeName(u), "a scale-in on machines")
	}
	return errors.Join(gerr, settleErr)
}

// machineCtlEvents reads the reconfigures and starts in the slurmctld.log of the controller's
// machine.
func (c *opCluster) machineCtlEvents() slurm.ControllerEvents {
	m, err := c.machine("slurmctld/0")
	if err != nil {
		return slurm.ControllerEvents{}
	}
	log, _ := os.ReadFile(m.Path("/var/log/slurm/slurmctld.log"))
	return slurm.ParseControllerLog(log)
}

// deriveMachineScale adds, for each suite prefix whose machine scale ran at two sizes or
// more, the ratio of time per node between the largest and the smallest size.
func deriveMachineScale(rep *Report, prefix string) {
	var sizes []int
	for _, f := range rep.Figures {
		var n int
		if _, err := fmt.Sscanf(f.Name, prefix+"scale.%d.out_per_node_s", &n); err == nil && f.Name == fmt.Sprintf("%sscale.%d.out_per_node_s", prefix, n) {
			sizes = append(sizes, n)
		}
	}
	if len(sizes) < 2 {
		return
	}
	lo, hi := slices.Min(sizes), slices.Max(sizes)
	small, _ := rep.Figure(fmt.Sprintf("%sscale.%d.out_per_node_s", prefix, lo))
	big, _ := rep.Figure(fmt.Sprintf("%sscale.%d.out_per_node_s", prefix, hi))
	if small.Value <= 0 {
		return
	}
	rep.Add(Figure{Name: fmt.Sprintf("%sscale.per_node_ratio_%d_%d", prefix, hi, lo), Value: big.Value / small.Value, Unit: "ratio", Target: Max(1.25),
		Note: fmt.Sprintf("time per node at %d machines added at once / at %d", hi, lo)})
}
