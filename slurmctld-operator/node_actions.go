package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/hostlist"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// expandNodes expands the nodes parameter, naming it in errors.
func expandNodes(expr string) ([]string, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New(`nodes: no node given`)
	}
	nodes, err := hostlist.Expand(expr)
	if err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("nodes: %q names no node", expr)
	}
	return nodes, nil
}

// nodeStates are set-node-state's states; those in needReason require a reason.
var (
	nodeStates = []string{"idle", "resume", "drain", "down", "undrain", "fail", "power_down", "power_up"}
	needReason = []string{"drain", "down", "fail"}
)

type nodeStateParams struct {
	Nodes  string `json:"nodes"`
	State  string `json:"state"`
	Reason string `json:"reason"`
}

// setNodeState runs scontrol update nodename=... state=... reason=... on each node.
func (h *hook) setNodeState(ctx context.Context) error {
	hc := h.hc
	var p nodeStateParams
	if err := hc.Actions.Params(ctx, &p); err != nil {
		return err
	}
	state := strings.ToLower(p.State)
	if !slices.Contains(nodeStates, state) {
		return hc.Actions.Fail(ctx, fmt.Sprintf("state: %q is not one of %s", p.State, strings.Join(nodeStates, ", ")))
	}
	if slices.Contains(needReason, state) && strings.TrimSpace(p.Reason) == "" {
		return hc.Actions.Fail(ctx, fmt.Sprintf("reason: required for state %s", state))
	}
	nodes, err := expandNodes(p.Nodes)
	if err != nil {
		return hc.Actions.Fail(ctx, err.Error())
	}
	return eachNode(ctx, hc, h.client(), nodes, func(cl *slurm.Client, n string) error {
		return cl.UpdateNode(ctx, n, slurm.NodeUpdate{State: state, Reason: p.Reason})
	}, map[string]string{"state": state})
}

// drain drains nodes with a reason.
func (h *hook) drain(ctx context.Context) error {
	hc := h.hc
	var p struct {
		Nodes  string `json:"nodes"`
		Reason string `json:"reason"`
	}
	if err := hc.Actions.Params(ctx, &p); err != nil {
		return err
	}
	if strings.TrimSpace(p.Reason) == "" {
		return hc.Actions.Fail(ctx, "reason: required to drain nodes")
	}
	nodes, err := expandNodes(p.Nodes)
	if err != nil {
		return hc.Actions.Fail(ctx, err.Error())
	}
	return eachNode(ctx, hc, h.client(), nodes, func(cl *slurm.Client, n string) error {
		return cl.Drain(ctx, n, p.Reason)
	}, map[string]string{"state": "drain"})
}

// resume returns drained or down nodes to service.
func (h *hook) resume(ctx context.Context) error {
	hc := h.hc
	var p struct {
		Nodes string `json:"nodes"`
	}
	if err := hc.Actions.Params(ctx, &p); err != nil {
		return err
	}
	nodes, err := expandNodes(p.Nodes)
	if err != nil {
		return hc.Actions.Fail(ctx, err.Error())
	}
	return eachNode(ctx, hc, h.client(), nodes, func(cl *slurm.Client, n string) error {
		err := cl.Resume(ctx, n)
		if errors.Is(err, slurm.ErrInvalidNodeState) {
			return fmt.Errorf("node %s is neither drained nor down", n)
		}
		return err
	}, map[string]string{"state": "resume"})
}

// eachNode applies fn to every node, reports the nodes done and fails the action naming the
// nodes that failed.
func eachNode(ctx context.Context, hc *juju.HookContext, cl *slurm.Client, nodes []string, fn func(*slurm.Client, string) error, res map[string]string) error {
	var done []string
	var o nodeOutcome
	for _, n := range nodes {
		if err := fn(cl, n); err != nil {
			o.fail(n, nodeError(n, err))
			continue
		}
		done = append(done, n)
	}
	res["nodes"] = hostlist.Compress(done)
	return o.report(ctx, hc, res)
}

// nodeOutcome collects the nodes an action failed on, and why.
type nodeOutcome struct{ failed, msgs []string }

func (o *nodeOutcome) fail(n, msg string) {
	o.failed = append(o.failed, n)
	o.msgs = append(o.msgs, msg)
}

// report sets the action's results res, with the failed nodes under "failed", and fails the
// action naming every failure.
func (o *nodeOutcome) report(ctx context.Context, hc *juju.HookContext, res map[string]string) error {
	if len(o.failed) > 0 {
		res["failed"] = hostlist.Compress(o.failed)
	}
	if err := hc.Actions.Set(ctx, res); err != nil {
		return err
	}
	if len(o.failed) > 0 {
		return hc.Actions.Fail(ctx, strings.Join(o.msgs, "; "))
	}
	return nil
}

// nodeError words a Slurm error about node n for an operator.
func nodeError(n string, err error) string {
	switch {
	case errors.Is(err, slurm.ErrUnknownNode):
		return fmt.Sprintf("node %s: no such node", n)
	case errors.Is(err, slurm.ErrNodeBusy):
		return fmt.Sprintf("node %s: has running jobs", n)
	case errors.Is(err, slurm.ErrControllerUnreachable):
		return fmt.Sprintf("node %s: slurmctld unreachable", n)
	}
	msg := err.Error()
	if strings.Contains(msg, n) {
		return msg
	}
	return fmt.Sprintf("node %s: %s", n, msg)
}

// deleteNode deletes dynamic nodes through slurm.Remover: a node with jobs is refused
// (RefuseJobs); with force it is drained, its jobs cancelled (reported in the results and
// the action log) and waited for (CancelJobs). DeleteWait bounds the wait for the jobs and
// for a delete Slurm refuses as busy.
func (h *hook) deleteNode(ctx context.Context) error {
	c, hc := h.c, h.hc
	var p struct {
		Nodes string `json:"nodes"`
		Force bool   `json:"force"`
	}
	if err := hc.Actions.Params(ctx, &p); err != nil {
		return err
	}
	nodes, err := expandNodes(p.Nodes)
	if err != nil {
		return hc.Actions.Fail(ctx, err.Error())
	}
	wait := charm.Or(c.DeleteWait, time.Minute)
	m := h.remover()
	m.BusyFor = wait
	m.Cancelling = func(node string, jobs []string) {
		_ = hc.Actions.Log(ctx, fmt.Sprintf("cancelling jobs %s on node %s", strings.Join(jobs, ","), node))
	}
	var cancelled, deleted []string
	var o nodeOutcome
	for _, n := range nodes {
		// An unknown node is a failure here, not a removal already done.
		if _, err := m.Client.ShowNode(ctx, n); err != nil {
			o.fail(n, nodeError(n, err))
			continue
		}
		r := &slurm.Removal{Node: n, Jobs: slurm.RefuseJobs}
		m.Progress = nil
		if p.Force {
			r.Reason, r.Jobs = "deleted by the delete-node action", slurm.CancelJobs
			// The action may wait (an operator asked for it): it says for what and how long.
			m.Progress = func(node string, jobs int) {
				if jobs > 0 {
					_ = hc.Actions.Log(ctx, fmt.Sprintf("node %s: waiting up to %s for its %d cancelled jobs to end", node, wait, jobs))
				}
			}
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		err := m.Remove(wctx, r)
		cancel()
		cancelled = append(cancelled, r.Cancelled...)
		var busy *slurm.BusyError
		switch {
		case errors.As(err, &busy):
			o.fail(n, fmt.Sprintf("node %s has running jobs %s: not deleted (force=true cancels them)", n, strings.Join(slurm.JobIDs(busy.Jobs), ",")))
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			o.fail(n, fmt.Sprintf("node %s: not deleted within %s: %v", n, wait, err))
		case err != nil:
			o.fail(n, nodeError(n, err))
		default:
			deleted = append(deleted, n)
		}
	}
	res := map[string]string{"deleted": hostlist.Compress(deleted)}
	if len(cancelled) > 0 {
		res["cancelled-jobs"] = strings.Join(cancelled, ",")
	}
	return o.report(ctx, hc, res)
}
