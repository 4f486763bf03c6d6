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
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// forbiddenNodeKeys are node parameters the charm manages: node-config refuses them.
// GresConf (26.05: gres.conf lines of a dynamic node) would be a second source of the node's
// GRES beside the charm's gres.conf; Gres= is node-config's way.
var forbiddenNodeKeys = []string{"NodeName", "NodeAddr", "NodeHostname", "State", "Reason", "Port", "GresConf"}

// numericNodeKeys are node parameters whose value must be a whole number, with the size in
// bits of the field Slurm parses it into: slurmd exits at start on a value that does not fit
// (Weight=99999999999 on 22.05).
var numericNodeKeys = []struct {
	key  string
	bits int
}{
	{"CPUs", 16}, {"Boards", 16}, {"Sockets", 16}, {"SocketsPerBoard", 16}, {"CoresPerSocket", 16},
	{"ThreadsPerCore", 16}, {"RealMemory", 64}, {"TmpDisk", 32}, {"Weight", 32}, {"CoreSpecCount", 16},
	{"MemSpecLimit", 64},
}

// checkMachine refuses node-config values that claim more than this machine has (mi, from
// `slurmd -C`): Slurm refuses such a node (it registers INVALID_REG, or slurmd does not
// start), so they are refused before the node is touched. Errors name the key.
func checkMachine(p slurmconf.Params, mi slurm.MachineInfo) error {
	have := []struct {
		key string
		n   int64
	}{
		{"CPUs", int64(mi.CPUs)}, {"Boards", int64(mi.Boards)},
		{"Sockets", int64(mi.Boards) * int64(mi.SocketsPerBoard)}, {"SocketsPerBoard", int64(mi.SocketsPerBoard)},
		{"CoresPerSocket", int64(mi.CoresPerSocket)}, {"ThreadsPerCore", int64(mi.ThreadsPerCore)},
		{"RealMemory", mi.RealMemory},
	}
	for _, h := range have {
		v, ok := p.Get(h.key)
		if !ok || h.n <= 0 {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("key %q: value %q is not a whole number", h.key, v)
		}
		if n > h.n {
			return fmt.Errorf("key %q: %d is more than this machine has (%d, from slurmd -C); Slurm would refuse the node", h.key, n, h.n)
		}
	}
	return nil
}

// ParseNodeConfig parses and checks node-config parameters: slurm.conf node keys only, none
// of the keys the charm manages, whole numbers where Slurm wants them. keys is the key set of
// the machine's Slurm release. Errors name the key.
func ParseNodeConfig(keys *slurmconf.Keys, s string) (slurmconf.Params, error) {
	p, err := slurmconf.ParseParams(s)
	if err != nil {
		return nil, err
	}
	for _, kv := range p {
		for _, k := range forbiddenNodeKeys {
			if strings.EqualFold(kv.Key, k) {
				return nil, fmt.Errorf("key %q is managed by the charm and cannot be set", kv.Key)
			}
		}
		for _, k := range numericNodeKeys {
			if strings.EqualFold(kv.Key, k.key) {
				if _, err := strconv.ParseUint(kv.Value, 10, 64); err != nil {
					return nil, fmt.Errorf("key %q: value %q is not a whole number", kv.Key, kv.Value)
				}
				if _, err := strconv.ParseUint(kv.Value, 10, k.bits); err != nil {
					return nil, fmt.Errorf("key %q: value %s is out of range (at most %d)", kv.Key, kv.Value, uint64(1)<<k.bits-1)
				}
			}
		}
	}
	if err := keys.ValidateNodeParams(p); err != nil {
		return nil, err
	}
	if v, ok := p.Get("Gres"); ok {
		// "" and "(null)": no generic resource at all.
		if _, err := gres.ParseGres(v); err != nil {
			return nil, fmt.Errorf("key \"Gres\": %w", err)
		}
	}
	return p, nil
}

type nodeConfigParams struct {
	Parameters string `json:"parameters"`
	Reset      bool   `json:"reset"`
	Timeout    string `json:"timeout"`
	OnReboot   bool   `json:"on-reboot"`
}

// nodeConfigAction sets the node's node-config: parse, merge with the saved one (or start
// from the slurmd -C baseline with reset), re-register the node with the new --conf and
// report its new configuration. Bad input and a timeout fail the action with the node as it
// was and nothing saved.
func (h *hook) nodeConfigAction(ctx context.Context) error {
	act := h.hc.Actions
	var p nodeConfigParams
	if err := act.Params(ctx, &p); err != nil {
		return fmt.Errorf("cannot read the action's parameters: %w", err)
	}
	timeout := DefaultActionTimeout
	if p.Timeout != "" {
		d, err := time.ParseDuration(p.Timeout)
		if err != nil || d <= 0 {
			return act.Fail(ctx, fmt.Sprintf("timeout: invalid duration %q (want e.g. 90s or 10m)", p.Timeout))
		}
		timeout = d
	}
	deadline := time.Now().Add(timeout)
	params, err := ParseNodeConfig(h.confKeys(), p.Parameters)
	if err != nil {
		return act.Fail(ctx, "parameters: "+err.Error())
	}
	var merged slurmconf.Params
	base := h.st.NodeConfig
	if p.OnReboot && h.st.StagedNodeConfig != "" {
		base = h.st.StagedNodeConfig // staging again amends what is staged
	}
	if !p.Reset {
		if merged, err = slurmconf.ParseParams(base); err != nil {
			return fmt.Errorf("cannot read the saved node-config %q: %w", base, err)
		}
	}
	for _, kv := range params {
		if strings.EqualFold(kv.Key, "Feature") {
			merged.Delete("Features")
		} else if strings.EqualFold(kv.Key, "Features") {
			merged.Delete("Feature")
		}
		merged.Set(kv.Key, kv.Value)
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
		h.st.StagedNodeConfig = ""
		return act.Set(ctx, map[string]string{"node": h.node, "node-config": newConfig,
			"result": "saved; applied when the node joins a controller"})
	}
	conf, g, err := h.confWith(ctx, mi, newConfig)
	if err != nil {
		return err
	}
	if c := h.st.Controller; c != nil {
		if missing := unmanagedGres(g.Gres, c.GresTypes); len(missing) > 0 {
			return act.Fail(ctx, fmt.Sprintf("parameters: Gres names %s, which slurmctld does not manage (GresTypes=%s): the node would register without it; declare it with the generic-resources option first",
				strings.Join(missing, ","), strings.Join(c.GresTypes, ",")))
		}
	}
	if p.OnReboot {
		return h.stageNodeConfig(ctx, newConfig)
	}
	if h.st.StagedNodeConfig != "" {
		// Applied now: a node-config staged before is dropped.
		_ = act.Log(ctx, fmt.Sprintf("dropping the node-config staged for the next reboot (%q)", h.st.StagedNodeConfig))
		h.st.StagedNodeConfig = ""
	}
	// reset also repairs a node an interrupted re-registration left behind, or that Slurm
	// holds as INVALID_REG.
	force := p.Reset && (h.st.Restore != nil || h.invalidNode(ctx))
	if conf != h.st.Applied.Conf || force {
		_ = act.Log(ctx, fmt.Sprintf("re-registering node %s with --conf %q", h.node, conf))
		want := *h.st.Applied
		want.Conf = conf
		progress := func(n int) {
			if n > 0 {
				_ = act.Log(ctx, fmt.Sprintf("waiting for %d jobs on %s", n, h.node))
				_ = h.setStatus(ctx, juju.StatusMaintenance, fmt.Sprintf("reconfiguring %s: waiting for %d jobs", h.node, n))
			}
		}
		prevSpec := h.slurmdSpec(h.st.Applied)
		err := h.reregister(ctx, h.slurmdSpec(&want), &prevSpec, deadline, progress)
		var re *slurm.RemovalError
		if errors.As(err, &re) && re.Phase == slurm.RemovalWait && errors.Is(err, context.DeadlineExceeded) {
			_ = h.updateStatus(ctx)
			return act.Fail(ctx, fmt.Sprintf("timed out after %s: %d jobs still running on %s; node left as it was, node-config unchanged",
				timeout, re.Jobs, h.node))
		}
		var refused *RefusedError
		if errors.As(err, &refused) {
			_ = h.updateStatus(ctx)
			return act.Fail(ctx, fmt.Sprintf("Slurm refused node-config %q: %s; node %s restored with its previous configuration and state, node-config unchanged",
				p.Parameters, refused.Reason, h.node))
		}
		if err != nil {
			return err
		}
		h.st.Applied = &want
	}
	h.st.NodeConfig = newConfig
	n, err := h.showNode(ctx)
	if err != nil {
		return fmt.Errorf("cannot show node %s: %w", h.node, err)
	}
	if err := h.nodeStatus(ctx, n); err != nil {
		return err
	}
	return act.Set(ctx, nodeResults(n, conf, newConfig))
}

// invalidNode reports whether the controller holds this node as refused (INVALID_REG) or
// not registered.
func (h *hook) invalidNode(ctx context.Context) bool {
	n, err := h.showNode(ctx)
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

// stageNodeConfig keeps node-config staged for the node's next boot (node-config
// on-reboot=true): the running node is left alone, and the unit's start hook after the next
// reboot (slurmctld's reboot action, or any) applies it (applyStaged). Staging the running
// node-config again unstages it.
func (h *hook) stageNodeConfig(ctx context.Context, staged string) error {
	act := h.hc.Actions
	if staged == h.st.NodeConfig {
		h.st.StagedNodeConfig = ""
		_ = h.updateStatus(ctx)
		return act.Set(ctx, map[string]string{"node": h.node, "node-config": h.st.NodeConfig,
			"result": "the node runs this node-config already: nothing staged"})
	}
	h.st.StagedNodeConfig = staged
	h.logf(ctx, juju.LevelInfo, "node-config %q staged for node %s's next boot", staged, h.node)
	_ = h.updateStatus(ctx)
	return act.Set(ctx, map[string]string{"node": h.node, "node-config": h.st.NodeConfig, "staged-node-config": staged,
		"result": "staged: node " + h.node + " is registered with it after its next reboot (slurmctld's reboot action reboots it once its jobs end)"})
}

// applyStaged registers the node with its staged node-config at the start after a boot,
// through the transactional path node-config uses (drain, wait for the jobs that landed since
// the boot, stop, delete, start with the new --conf, restore an administrator's state): the
// node is back from the reboot under its old record, so Slurm (22.05 and 24.11 alike) takes
// the new values only from a new record. The drain keeps the node counted as unavailable by
// slurmctld's rolling reboot until it is registered again. If Slurm refuses the new --conf,
// the node is registered again as it was, keeps its node-config, the refusal is logged and
// the staged node-config dropped; if its jobs do not end within DefaultActionTimeout, the node
// is resumed as it was and the node-config stays staged for the next boot.
func (h *hook) applyStaged(ctx context.Context) error {
	staged := h.st.StagedNodeConfig
	if staged == "" || h.st.Applied == nil || h.st.Departed {
		return nil
	}
	_, mi, err := h.facts(ctx)
	if err != nil {
		return err
	}
	conf, _, err := h.confWith(ctx, mi, staged)
	if err != nil {
		return err
	}
	if conf != h.st.Applied.Conf {
		// slurmd starts at boot: wait until Slurm has the node back from its reboot, so that the
		// record replaced is an ordinary one, not one with a reboot under way.
		if _, err := h.waitNode(ctx, false, func(n slurm.Node) bool { return !n.State.Rebooting() }); err != nil {
			h.logf(ctx, juju.LevelWarning, "node-config %q stays staged: node %s is not back from its reboot: %v", staged, h.node, err)
			return nil
		}
		h.logf(ctx, juju.LevelInfo, "node %s booted with node-config %q staged: registering it with --conf %q", h.node, staged, conf)
		want := *h.st.Applied
		want.Conf = conf
		prevSpec := h.slurmdSpec(h.st.Applied)
		err = h.reregister(ctx, h.slurmdSpec(&want), &prevSpec, time.Now().Add(DefaultActionTimeout), nil)
		var refused *RefusedError
		var re *slurm.RemovalError
		switch {
		case errors.As(err, &refused):
			h.st.StagedNodeConfig = ""
			h.logf(ctx, juju.LevelWarning, "Slurm refused the staged node-config %q: %s; node %s registered with its previous configuration", staged, refused.Reason, h.node)
			return nil
		case errors.As(err, &re) && re.Phase == slurm.RemovalWait && errors.Is(err, context.DeadlineExceeded):
			h.logf(ctx, juju.LevelWarning, "node-config %q stays staged: %d jobs still running on %s after %s", staged, re.Jobs, h.node, DefaultActionTimeout)
			return nil
		case err != nil:
			return err
		}
		h.st.Applied = &want
	}
	h.st.NodeConfig = staged
	h.st.StagedNodeConfig = ""
	return nil
}

// confWith is the --conf and resources the node would run with under node-config nc instead
// of its saved one (which it leaves as it is).
func (h *hook) confWith(ctx context.Context, mi slurm.MachineInfo, nc string) (string, nodeGres, error) {
	saved := h.st.NodeConfig
	defer func() { h.st.NodeConfig = saved }()
	h.st.NodeConfig = nc
	return h.conf(ctx, mi)
}
