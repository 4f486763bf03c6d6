package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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

// rebootPlan is a rolling reboot under way: Slurm has been asked to reboot the Asked nodes
// (scontrol reboot ASAP nextstate=resume) and the Queued ones wait until fewer than Max
// nodes of the plan are unavailable. update-status (and every reboot action) moves it on.
type rebootPlan struct {
	Reason string   `json:"reason"`
	Max    int      `json:"max-unavailable"`
	Queued []string `json:"queued,omitempty"`
	// Asked maps each node asked to reboot to its BootTime when asked: the node is back once
	// Slurm shows a new boot time and neither a reboot under way nor DOWN.
	Asked map[string]string `json:"asked,omitempty"`
	// Done counts the nodes back after their reboot.
	Done int `json:"done,omitempty"`
}

// drop takes node out of the plan: its unit left (a node Slurm does not know while it
// reboots is away, not gone: with a staged node-config its record is deleted before the
// reboot and created anew after it).
func (r *rebootPlan) drop(node string) {
	if r == nil {
		return
	}
	delete(r.Asked, node)
	r.Queued = slices.DeleteFunc(r.Queued, func(n string) bool { return n == node })
}

// reboot runs the reboot action: nodes (a hostlist, required) are rebooted through
// Slurm, each when its jobs have ended, never more than max-unavailable of them at once
// (default: defaultUnavailablePercent of them, at least one); the results name the nodes asked now and those queued.
func (h *hook) reboot(ctx context.Context) error {
	hc := h.hc
	var p struct {
		Nodes          string `json:"nodes"`
		Reason         string `json:"reason"`
		MaxUnavailable *int   `json:"max-unavailable"`
	}
	if err := hc.Actions.Params(ctx, &p); err != nil {
		return err
	}
	if !h.leader {
		return hc.Actions.Fail(ctx, "reboot must run on the leader unit")
	}
	nodes, err := expandNodes(p.Nodes)
	if err != nil {
		return hc.Actions.Fail(ctx, err.Error())
	}
	if p.MaxUnavailable != nil && *p.MaxUnavailable < 1 {
		return hc.Actions.Fail(ctx, fmt.Sprintf("max-unavailable: %d: must be at least 1 (unset: %d%% of the nodes, at least one)", *p.MaxUnavailable, defaultUnavailablePercent))
	}
	reason := strings.TrimSpace(p.Reason)
	if reason == "" {
		reason = defaultRebootReason
	}
	if strings.ContainsAny(reason, "\n\r\"") {
		return hc.Actions.Fail(ctx, "reason: must not contain a newline or double quote")
	}
	if r := h.st.Reboots; r != nil {
		return hc.Actions.Fail(ctx, fmt.Sprintf("a rolling reboot is under way (%d nodes left): wait for it to end", len(r.Queued)+len(r.Asked)))
	}
	cl := h.c.client()
	var o nodeOutcome
	var known []string
	for _, n := range nodes {
		if _, err := cl.ShowNode(ctx, n); err != nil {
			o.fail(n, nodeError(n, err))
			continue
		}
		known = append(known, n)
	}
	if len(o.failed) > 0 {
		return o.report(ctx, hc, map[string]string{"nodes": ""})
	}
	max := defaultMaxUnavailable(len(known))
	if p.MaxUnavailable != nil {
		max = min(*p.MaxUnavailable, len(known))
	}
	h.st.Reboots = &rebootPlan{Reason: reason, Max: max, Queued: known, Asked: map[string]string{}}
	asked, err := h.advanceReboots(ctx)
	if err != nil {
		return hc.Actions.Fail(ctx, err.Error())
	}
	res := map[string]string{"nodes": hostlist.Compress(asked), "max-unavailable": fmt.Sprint(max)}
	if r := h.st.Reboots; r != nil && len(r.Queued) > 0 {
		res["queued"] = hostlist.Compress(r.Queued)
	}
	if err := hc.Actions.Set(ctx, res); err != nil {
		return err
	}
	// The status shows the rolling reboot now: no hook may come before the next update-status.
	return h.setStatus(ctx)
}

// advanceReboots moves the rolling reboot on: nodes back from their reboot leave the plan, then queued nodes are asked to reboot while fewer than Max are under way. It
// returns the nodes it asked.
func (h *hook) advanceReboots(ctx context.Context) ([]string, error) {
	r := h.st.Reboots
	if r == nil {
		return nil, nil
	}
	cl := h.c.client()
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

// rebootedSince reports whether node n is back in service after a reboot asked when its
// BootTime was before: a new boot time, no reboot pending or under way, not DOWN, not
// drained (Slurm's nextstate=resume undrains it; a node its unit drains to register it again
// with a staged node-config is still away).
func rebootedSince(n slurm.Node, before string) bool {
	bt, _ := n.Get("BootTime")
	return bt != before && !n.State.Rebooting() && !n.State.Down() && !n.State.NotResponding() && !n.State.Drain()
}

// rebootStatus is the rolling reboot's part of the unit status, or "".
func (h *hook) rebootStatus() string {
	r := h.st.Reboots
	if r == nil {
		return ""
	}
	msg := fmt.Sprintf("; rebooting %s", hostlist.Compress(sortedKeys(r.Asked)))
	if len(r.Queued) > 0 {
		msg += fmt.Sprintf(", %d nodes queued (max-unavailable %d)", len(r.Queued), r.Max)
	}
	return msg
}
