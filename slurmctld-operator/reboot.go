package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/charmed-slurm/operators/libs/hostlist"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// RebootProgram is what slurmd runs on a node to reboot it (`scontrol reboot`): the program
// the slurmd charm installs at this path, which asks the machine's systemd for a reboot.
const RebootProgram = "/usr/local/sbin/charmed-slurm-reboot"

// ResumeTimeout is how long Slurm waits for a rebooted node's slurmd to register again before
// it sets the node DOWN: room for a real server's firmware and boot.
const ResumeTimeout = "600"

// defaultRebootReason is the reason of a reboot action given none.
const defaultRebootReason = "reboot requested by the reboot action"

// defaultUnavailablePercent is the share of the named nodes a reboot action given no
// max-unavailable takes out of service at once: a small share, so that a rolling rebuild of a
// partition leaves most of it running jobs.
const defaultUnavailablePercent = 10

// defaultMaxUnavailable is max-unavailable for n nodes when the action gives none:
// defaultUnavailablePercent of them, rounded up, at least one node.
func defaultMaxUnavailable(n int) int {
	return max(1, (n*defaultUnavailablePercent+99)/100)
}

// rollingReboot moves the rolling reboot under way (the state's Reboots, started by the reboot
// action) on: on every reboot action and update-status.
type rollingReboot struct{ h *hook }

// advance moves the rolling reboot on: nodes back from their reboot leave the plan, then queued nodes are asked to reboot while fewer than Max are under way. It
// returns the nodes it asked.
func (rr rollingReboot) advance(ctx context.Context) ([]string, error) {
	h := rr.h
	r := h.st.Reboots
	if r == nil {
		return nil, nil
	}
	cl := h.client()
	for _, name := range sortedKeys(r.Asked) {
		n, err := cl.ShowNode(ctx, name)
		switch {
		case errors.Is(err, slurm.ErrUnknownNode):
			// Away: its record was deleted for its reboot (a staged node-config) and it has
			// not registered again yet. It leaves the plan when it is back, or when its unit
			// departs (drop).
		case err != nil:
			return nil, fmt.Errorf("cannot follow the reboot of node %s: %w", name, err)
		case rebootedSince(n, r.Asked[name]):
			delete(r.Asked, name)
			r.Done++
		}
	}
	var batch []string
	boots := map[string]string{}
	for len(r.Queued) > 0 && len(r.Asked)+len(batch) < r.Max {
		name := r.Queued[0]
		r.Queued = r.Queued[1:]
		n, err := cl.ShowNode(ctx, name)
		if errors.Is(err, slurm.ErrUnknownNode) {
			continue
		}
		if err != nil {
			r.Queued = append([]string{name}, r.Queued...)
			return nil, fmt.Errorf("cannot reboot node %s: %w", name, err)
		}
		bt, _ := n.Get("BootTime")
		switch since := r.bootedSince(n); {
		case since && rebootedSince(n, ""):
			// Rebooted since the plan began and back: asked by a leader whose record of it
			// was lost (the leadership moved); never rebooted twice.
			r.Done++
			h.logf(ctx, juju.LevelInfo, "node %s rebooted already since the rolling reboot began: not asked again", name)
			continue
		case since, n.State.Rebooting():
			// Asked already, or booting: waited for, not asked again.
			if r.Asked == nil {
				r.Asked = map[string]string{}
			}
			if since {
				bt = "" // back once in service
			}
			r.Asked[name] = bt
			h.logf(ctx, juju.LevelInfo, "node %s is rebooting already: waiting for it, not asking again", name)
			continue
		}
		boots[name] = bt
		batch = append(batch, name)
	}
	if len(batch) > 0 {
		if err := cl.RebootNodes(ctx, batch, r.Reason); err != nil {
			r.Queued = append(batch, r.Queued...)
			return nil, fmt.Errorf("cannot reboot %s: %w", hostlist.Compress(batch), err)
		}
		if r.Asked == nil {
			r.Asked = map[string]string{} // saved empty, read back as nil
		}
		for n, bt := range boots {
			r.Asked[n] = bt
		}
		h.logf(ctx, juju.LevelInfo, "asked Slurm to reboot %s (%s)", hostlist.Compress(batch), r.Reason)
	}
	if len(r.Asked) == 0 && len(r.Queued) == 0 {
		h.logf(ctx, juju.LevelInfo, "rolling reboot done: %d nodes rebooted", r.Done)
		h.st.Reboots = nil
	}
	return batch, nil
}

// maxRebootNodes bounds the nodes of one rolling reboot: the plan is handed to a new leader in
// the peer application bag (leadership.go), which must stay small.
const maxRebootNodes = 4096

// bootedSince reports whether Slurm shows node n booted since the plan was made (the clocks of
// the nodes and the controllers agree, as munge needs them to).
func (r *rebootPlan) bootedSince(n slurm.Node) bool {
	if r.Since.IsZero() {
		return false
	}
	t, ok, err := n.Booted(time.Local)
	return err == nil && ok && t.After(r.Since)
}

// rebootedSince reports whether node n is back in service after a reboot asked when its
// BootTime was before: a new boot time, no reboot pending or under way, not DOWN, not
// drained (Slurm's nextstate=resume undrains it; a node its unit drains to register it again
// with a staged node-config is still away).
func rebootedSince(n slurm.Node, before string) bool {
	bt, _ := n.Get("BootTime")
	return bt != before && !n.State.Rebooting() && !n.State.Down() && !n.State.NotResponding() && !n.State.Drain()
}
