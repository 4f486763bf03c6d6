package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/hostlist"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// showCurrentConfig returns slurm.conf and its includes as results.
func (h *hook) showCurrentConfig(ctx context.Context) error {
	c, hc := h.c, h.hc
	data, err := os.ReadFile(c.Path(confPath))
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", confPath, err)
	}
	res := map[string]string{"slurm-conf": string(data)}
	doc, err := slurmconf.Parse(data)
	if err != nil {
		return fmt.Errorf("cannot parse %s: %w", confPath, err)
	}
	for _, inc := range doc.Includes() {
		p := inc
		if !filepath.IsAbs(p) {
			p = filepath.Join(confDir, p)
		}
		b, err := os.ReadFile(c.Path(p))
		if err != nil {
			return fmt.Errorf("cannot read include %s: %w", p, err)
		}
		res["includes."+resultKey(strings.TrimSuffix(filepath.Base(inc), ".conf"))] = string(b)
	}
	return hc.Actions.Set(ctx, res)
}

var badKeyChars = regexp.MustCompile(`[^a-z0-9-]+`)

// resultKey turns a name into a valid action result key.
func resultKey(s string) string {
	k := strings.Trim(badKeyChars.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if k == "" {
		return "x"
	}
	return k
}

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
	c, hc := h.c, h.hc
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
	return c.eachNode(ctx, hc, nodes, func(cl *slurm.Client, n string) error {
		return cl.UpdateNode(ctx, n, slurm.NodeUpdate{State: state, Reason: p.Reason})
	}, map[string]string{"state": state})
}

// drain drains nodes with a reason.
func (h *hook) drain(ctx context.Context) error {
	c, hc := h.c, h.hc
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
	return c.eachNode(ctx, hc, nodes, func(cl *slurm.Client, n string) error {
		return cl.Drain(ctx, n, p.Reason)
	}, map[string]string{"state": "drain"})
}

// resume returns drained or down nodes to service.
func (h *hook) resume(ctx context.Context) error {
	c, hc := h.c, h.hc
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
	return c.eachNode(ctx, hc, nodes, func(cl *slurm.Client, n string) error {
		err := cl.Resume(ctx, n)
		if errors.Is(err, slurm.ErrInvalidNodeState) {
			return fmt.Errorf("node %s is neither drained nor down", n)
		}
		return err
	}, map[string]string{"state": "resume"})
}

// eachNode applies fn to every node, reports the nodes done and fails the action naming the
// nodes that failed.
func (c *Charm) eachNode(ctx context.Context, hc *juju.HookContext, nodes []string, fn func(*slurm.Client, string) error, res map[string]string) error {
	cl := c.client()
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
	m := c.remover()
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

// rotateAuthKey publishes a new auth key revision (leader only), installs it here and
// restarts munged; slurmd units follow on secret-changed.
func (h *hook) rotateAuthKey(ctx context.Context) error {
	c := h.c
	hc := h.hc
	if !h.leader {
		return hc.Actions.Fail(ctx, "rotate-auth-key must run on the leader unit")
	}
	id, content, err := h.readAuthSecret(ctx)
	if err != nil {
		return hc.Actions.Fail(ctx, fmt.Sprintf("no auth key secret yet: %v", err))
	}
	_, oldID, err := slurmd.DecodeAuthSecret(content)
	if err != nil {
		return fmt.Errorf("cannot read auth key secret %s: %w", id, err)
	}
	n, err := strconv.Atoi(oldID)
	if err != nil {
		n = 0
	}
	keyID := strconv.Itoa(n + 1)
	key, err := c.newKey()
	if err != nil {
		return err
	}
	feat, err := h.features(ctx)
	if err != nil {
		return err
	}
	if err := hc.Secrets.Set(ctx, id, slurmd.EncodeAuthSecret(key, keyID), juju.SecretSetOptions{}); err != nil {
		return fmt.Errorf("cannot publish the new auth key: %w", err)
	}
	h.st.SecretID = string(id)
	if err := h.installKey(ctx, feat, key, keyID); err != nil {
		return err
	}
	h.logf(ctx, juju.LevelInfo, "rotated the auth key to key id %s", keyID)
	return hc.Actions.Set(ctx, map[string]string{"keyid": keyID, "secret-id": string(id)})
}

// settleJobs settles the pending jobs of a partition being removed (they can never run
// there): move-to queues them in another live partition, cancel=true cancels them. Running
// jobs are never touched: the partition is removed once they end. The results name the jobs
// moved or cancelled.
func (h *hook) settleJobs(ctx context.Context) error {
	c := h.c
	hc := h.hc
	var p struct {
		Partition string `json:"partition"`
		MoveTo    string `json:"move-to"`
		Cancel    bool   `json:"cancel"`
	}
	if err := hc.Actions.Params(ctx, &p); err != nil {
		return err
	}
	if !h.leader {
		return hc.Actions.Fail(ctx, "settle-jobs must run on the leader unit")
	}
	if _, ok := h.st.Removing[p.Partition]; !ok {
		return hc.Actions.Fail(ctx, fmt.Sprintf("partition: %q is not being removed (partitions being removed: %s)", p.Partition, strings.Join(sortedKeys(h.st.Removing), ",")))
	}
	if (p.MoveTo == "") == !p.Cancel {
		return hc.Actions.Fail(ctx, "give exactly one of move-to=<partition> and cancel=true")
	}
	if p.MoveTo != "" {
		if _, rm := h.st.Removing[p.MoveTo]; rm || !slices.Contains(h.st.Apps, p.MoveTo) {
			return hc.Actions.Fail(ctx, fmt.Sprintf("move-to: %q is not a partition of a related slurmd application", p.MoveTo))
		}
	}
	jobs, err := c.partitionJobs(ctx, p.Partition)
	if err != nil {
		return hc.Actions.Fail(ctx, err.Error())
	}
	cl := c.client()
	var done, failed []string
	for _, j := range jobs {
		if j.State != "PENDING" {
			continue
		}
		if p.Cancel {
			err = cl.CancelJobs(ctx, j.ID)
		} else {
			err = cl.MovePendingJob(ctx, j.ID, p.MoveTo)
		}
		if err != nil {
			failed = append(failed, fmt.Sprintf("job %s: %v", j.ID, err))
			continue
		}
		done = append(done, j.ID)
	}
	key := "moved"
	if p.Cancel {
		key = "cancelled"
	}
	h.logf(ctx, juju.LevelInfo, "settle-jobs: %s pending jobs %s of partition %s", key, strings.Join(done, ","), p.Partition)
	if err := h.finishRemovals(ctx); err != nil {
		return err
	}
	res := map[string]string{key: strings.Join(done, ","), "partition": p.Partition}
	if err := errors.Join(hc.Actions.Set(ctx, res), h.setStatus(ctx)); err != nil {
		return err
	}
	if len(failed) > 0 {
		return hc.Actions.Fail(ctx, strings.Join(failed, "; "))
	}
	return nil
}
