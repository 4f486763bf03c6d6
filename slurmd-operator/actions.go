package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/gres"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

type nodeConfigParams struct {
	Parameters string `json:"parameters"`
	Reset      bool   `json:"reset"`
	Timeout    string `json:"timeout"`
	OnReboot   bool   `json:"on-reboot"`
}

// timeout is the timeout parameter, DefaultActionTimeout when it is not given.
func (p nodeConfigParams) timeout() (time.Duration, error) {
	if p.Timeout == "" {
		return DefaultActionTimeout, nil
	}
	d, err := time.ParseDuration(p.Timeout)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("timeout: invalid duration %q (want e.g. 90s or 10m)", p.Timeout)
	}
	return d, nil
}

// nodeConfig (the node-config action) sets the node's node-config: parse, merge with the
// saved one (or start from the slurmd -C baseline with reset), re-register the node with the
// new --conf and report its new configuration; on-reboot stages it for the next boot. Bad
// input and a timeout fail the action with the node as it was and nothing saved.
func (h *hook) nodeConfig(ctx context.Context) error {
	a := nodeConfigAction{h: h, reg: newRegistrar(h)}
	if err := h.hc.Actions.Params(ctx, &a.p); err != nil {
		return fmt.Errorf("cannot read the action's parameters: %w", err)
	}
	return a.run(ctx)
}

// nodeConfigAction is one run of the node-config action.
type nodeConfigAction struct {
	h   *hook
	p   nodeConfigParams
	reg registrar
}

func (a nodeConfigAction) run(ctx context.Context) error {
	h, act := a.h, a.h.hc.Actions
	timeout, err := a.p.timeout()
	if err != nil {
		return act.Fail(ctx, err.Error())
	}
	deadline := h.c.Now().Add(timeout)
	params, err := ParseNodeConfig(h.confKeys(), a.p.Parameters)
	if err != nil {
		return act.Fail(ctx, "parameters: "+err.Error())
	}
	base := h.st.NodeConfig
	if a.p.OnReboot && h.st.StagedNodeConfig != "" {
		base = h.st.StagedNodeConfig // staging again amends what is staged
	}
	merged, err := mergeNodeConfig(base, params, a.p.Reset)
	if err != nil {
		return err
	}
	newConfig := merged.String()

	if h.st.Departed {
		return act.Fail(ctx, fmt.Sprintf("node %s has left the cluster", h.node))
	}
	_, mi, err := h.facts(ctx)
	if err != nil {
		return err
	}
	if err := checkMachine(merged, mi); err != nil {
		return act.Fail(ctx, "parameters: "+err.Error())
	}
	if h.st.Applied == nil {
		// Not running yet: the node-config applies when slurmd first starts.
		h.st.NodeConfig = newConfig
		if err := a.reg.setStaged(ctx, ""); err != nil {
			return err
		}
		return act.Set(ctx, map[string]string{"node": h.node, "node-config": newConfig,
			"result": "saved; applied when the node joins a controller"})
	}
	nc, err := a.reg.res.build(ctx, mi, newConfig)
	if err != nil {
		return err
	}
	if c := h.st.Controller; c != nil {
		if missing := unmanagedGres(nc.Gres, c.GresTypes); len(missing) > 0 {
			return act.Fail(ctx, fmt.Sprintf("parameters: Gres names %s, which slurmctld does not manage (GresTypes=%s): the node would register without it; declare it with the generic-resources option first",
				strings.Join(missing, ","), strings.Join(c.GresTypes, ",")))
		}
	}
	if a.p.OnReboot {
		return a.stage(ctx, newConfig)
	}
	if h.st.StagedNodeConfig != "" {
		// Applied now: a node-config staged before is dropped.
		_ = act.Log(ctx, fmt.Sprintf("dropping the node-config staged for the next reboot (%q)", h.st.StagedNodeConfig))
		if err := a.reg.setStaged(ctx, ""); err != nil {
			return err
		}
	}
	// reset also repairs a node an interrupted re-registration left behind, or that Slurm
	// holds as INVALID_REG.
	force := a.p.Reset && (h.st.Restore != nil || a.invalidNode(ctx))
	if nc.Conf != h.st.Applied.Conf || force {
		if failed, err := a.reregister(ctx, nc.Conf, timeout, deadline); failed || err != nil {
			return err
		}
	}
	h.st.NodeConfig = newConfig
	n, err := h.showNode(ctx)
	if err != nil {
		return fmt.Errorf("cannot show node %s: %w", h.node, err)
	}
	if err := h.report(ctx, observed{node: &n}); err != nil {
		return err
	}
	return act.Set(ctx, nodeResults(n, nc.Conf, newConfig))
}

// reregister re-registers the node with --conf conf, waiting for its jobs until deadline.
// A wait that times out and a --conf Slurm refuses fail the action (failed) with the node as
// it was.
func (a nodeConfigAction) reregister(ctx context.Context, conf string, timeout time.Duration, deadline time.Time) (failed bool, err error) {
	h, act := a.h, a.h.hc.Actions
	_ = act.Log(ctx, fmt.Sprintf("re-registering node %s with --conf %q", h.node, conf))
	want := *h.st.Applied
	want.Conf = conf
	progress := func(n int) {
		if n > 0 {
			_ = act.Log(ctx, fmt.Sprintf("waiting for %d jobs on %s", n, h.node))
			_ = h.progress(ctx, fmt.Sprintf("reconfiguring %s: waiting for %d jobs", h.node, n))
		}
	}
	prevSpec := h.slurmd().spec(h.st.Applied)
	err = a.reg.reregister(ctx, h.slurmd().spec(&want), &prevSpec, deadline, progress)
	var re *slurm.RemovalError
	if errors.As(err, &re) && re.Phase == slurm.RemovalWait && errors.Is(err, context.DeadlineExceeded) {
		_ = h.refresh(ctx)
		return true, act.Fail(ctx, fmt.Sprintf("timed out after %s: %d jobs still running on %s; node left as it was, node-config unchanged",
			timeout, re.Jobs, h.node))
	}
	var refused *RefusedError
	if errors.As(err, &refused) {
		_ = h.refresh(ctx)
		return true, act.Fail(ctx, fmt.Sprintf("Slurm refused node-config %q: %s; node %s restored with its previous configuration and state, node-config unchanged",
			a.p.Parameters, refused.Reason, h.node))
	}
	if err != nil {
		return true, err
	}
	h.st.Applied = &want
	return false, nil
}

// stage keeps node-config staged for the node's next boot (on-reboot=true): the running
// node is left alone, slurmd is no longer started at boot, and RebootProgram deletes the
// node's record before Slurm's reboot (see rebootScript), so that the start hook after the
// boot registers the node once, with the staged node-config (registrar.registerStaged);
// after any other reboot it is applied through a re-registration (registrar.applyStaged).
// Staging the running node-config again unstages it.
func (a nodeConfigAction) stage(ctx context.Context, staged string) error {
	h, act := a.h, a.h.hc.Actions
	if staged == h.st.NodeConfig {
		if err := a.reg.setStaged(ctx, ""); err != nil {
			return err
		}
		_ = h.refresh(ctx)
		return act.Set(ctx, map[string]string{"node": h.node, "node-config": h.st.NodeConfig,
			"result": "the node runs this node-config already: nothing staged"})
	}
	if err := a.reg.setStaged(ctx, staged); err != nil {
		return err
	}
	h.logf(ctx, juju.LevelInfo, "node-config %q staged for node %s's next boot", staged, h.node)
	_ = h.refresh(ctx)
	return act.Set(ctx, map[string]string{"node": h.node, "node-config": h.st.NodeConfig, "staged-node-config": staged,
		"result": "staged: node " + h.node + " is registered with it after its next reboot (slurmctld's reboot action reboots it once its jobs end)"})
}

// invalidNode reports whether the controller holds this node as refused (INVALID_REG) or
// not registered.
func (a nodeConfigAction) invalidNode(ctx context.Context) bool {
	n, err := a.h.showNode(ctx)
	return err == nil && (n.State.Has(slurm.FlagInvalidReg) || n.Version == "")
}

// nodeResults are the action's results: the node's configuration as the controller has it.
func nodeResults(n slurm.Node, conf, nodeConfig string) map[string]string {
	r := map[string]string{
		"node":        n.Name,
		"conf":        conf,
		"node-config": nodeConfig,
		"state":       n.State.String(),
		"features":    strings.Join(n.Features, ","),
		"cpus":        strconv.Itoa(n.CPUs),
		"real-memory": strconv.FormatInt(n.RealMemory, 10),
	}
	for _, k := range []string{"Weight", "Gres", "TmpDisk"} {
		if v, ok := n.Get(k); ok && v != "" && v != "(null)" {
			r[strings.ToLower(k)] = v
		}
	}
	return r
}

type detectGresParams struct {
	DryRun bool `json:"dry-run"`
}

// detectGres (the detect-gres action) detects the machine's GPUs again. The result replaces
// the cached detection; when it changes what slurmd runs with (its --conf or gres.conf
// lines), the node re-registers through the controller's data as a relation hook would
// (drain, wait for its jobs, stop, delete, start: never with jobs running on it). dry-run
// only reports.
func (h *hook) detectGres(ctx context.Context) error {
	act := h.hc.Actions
	var p detectGresParams
	if err := act.Params(ctx, &p); err != nil {
		return fmt.Errorf("cannot read the action's parameters: %w", err)
	}
	reg := newRegistrar(h)
	f, err := reg.res.detect(ctx)
	if err != nil {
		return act.Fail(ctx, err.Error())
	}
	res := map[string]string{"node": h.node, "detected": f.Detected.String()}
	if len(f.Notes) > 0 {
		res["notes"] = strings.Join(f.Notes, "; ")
	}
	prev := h.st.Gres
	h.st.Gres = f
	nc, err := reg.res.build(ctx, slurm.MachineInfo{}, h.st.NodeConfig)
	if err != nil {
		h.st.Gres = prev
		return act.Fail(ctx, err.Error())
	}
	res["gres"] = nc.Gres.String()
	var running gres.Set
	changed := false
	if h.st.Applied != nil {
		running = appliedGres(h.st.Applied.Conf)
		if changed, err = reg.changed(ctx); err != nil {
			h.st.Gres = prev
			return act.Fail(ctx, err.Error())
		}
	}
	res["running"] = running.String()
	switch {
	case p.DryRun:
		h.st.Gres = prev
		res["result"] = "dry run: nothing changed"
		if changed {
			res["result"] = "dry run: the node would re-register"
		}
		return act.Set(ctx, res)
	case h.st.Applied == nil || h.st.Departed:
		res["result"] = "saved; applied when the node joins a controller"
		return act.Set(ctx, res)
	case !changed:
		res["result"] = "unchanged"
		return act.Set(ctx, res)
	}
	_ = act.Log(ctx, fmt.Sprintf("re-registering node %s with Gres=%q once its jobs end", h.node, nc.Gres.String()))
	if err := (slurmctldRelation{h}).reapply(ctx); err != nil {
		return err
	}
	res["result"] = "re-registered"
	if h.st.Applied != nil {
		res["running"] = appliedGres(h.st.Applied.Conf).String()
	}
	if res["running"] != res["gres"] {
		// join did not start it (the controller does not manage a name yet, see status).
		res["result"] = "not re-registered: " + h.st.StatusCache.Unit
	}
	return act.Set(ctx, res)
}
