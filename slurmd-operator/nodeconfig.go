package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/atomicfile"
	"github.com/charmed-slurm/operators/libs/gres"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

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

// ParseNodeConfig parses and checks node-config parameters: slurm.conf node keys of the
// machine's Slurm release (keys) only, none of the keys the charm manages, every value within
// its type, range and size (slurmconf.ValidateNodeValues: counts that fit Slurm's fields,
// feature names a job can select, at most 1024 characters) and a well-formed Gres. Errors
// name the key and the rule.
func ParseNodeConfig(keys *slurmconf.Keys, s string) (slurmconf.Params, error) {
	p, err := slurmconf.ParseParams(s)
	if err != nil {
		return nil, err
	}
	if err := slurmconf.ValidateNodeValues(p); err != nil {
		return nil, err
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
	deadline := h.c.Now().Add(timeout)
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
		if err := h.setStaged(ctx, ""); err != nil {
			return err
		}
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
		if err := h.setStaged(ctx, ""); err != nil {
			return err
		}
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
// on-reboot=true): the running node is left alone, slurmd is no longer started at boot, and
// RebootProgram deletes the node's record before Slurm's reboot (see rebootScript), so that
// the start hook after the boot registers the node once, with the staged node-config
// (registerStaged); after any other reboot it is applied through a re-registration
// (applyStaged). Staging the running node-config again unstages it.
func (h *hook) stageNodeConfig(ctx context.Context, staged string) error {
	act := h.hc.Actions
	if staged == h.st.NodeConfig {
		if err := h.setStaged(ctx, ""); err != nil {
			return err
		}
		_ = h.updateStatus(ctx)
		return act.Set(ctx, map[string]string{"node": h.node, "node-config": h.st.NodeConfig,
			"result": "the node runs this node-config already: nothing staged"})
	}
	if err := h.setStaged(ctx, staged); err != nil {
		return err
	}
	h.logf(ctx, juju.LevelInfo, "node-config %q staged for node %s's next boot", staged, h.node)
	_ = h.updateStatus(ctx)
	return act.Set(ctx, map[string]string{"node": h.node, "node-config": h.st.NodeConfig, "staged-node-config": staged,
		"result": "staged: node " + h.node + " is registered with it after its next reboot (slurmctld's reboot action reboots it once its jobs end)"})
}

// setStaged records staged as the node-config staged for the next boot ("": none) and puts
// the machine in line with it: StagedMarker says "staged" while one is, and slurmd starts at
// boot only while none is.
func (h *hook) setStaged(ctx context.Context, staged string) error {
	h.st.StagedNodeConfig = staged
	if staged == "" {
		if err := h.removeMarker(); err != nil {
			return err
		}
	} else if err := atomicfile.Write(ctx, h.c.Path(StagedMarker), []byte(markerStaged+"\n"), atomicfile.Options{Mode: 0o644, MkdirMode: 0o755}); err != nil {
		return fmt.Errorf("cannot stage the node-config: %w", err)
	}
	return h.enableAtBoot(ctx)
}

// removeMarker removes StagedMarker: nothing is staged.
func (h *hook) removeMarker() error {
	if err := os.Remove(h.c.Path(StagedMarker)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove %s: %w", StagedMarker, err)
	}
	return nil
}

// enableAtBoot makes slurmd start at boot unless a node-config is staged: the boot's
// registration is then the start hook's (registerStaged), with the staged --conf. A slurmd
// never configured has nothing to enable or disable.
func (h *hook) enableAtBoot(ctx context.Context) error {
	m := h.c.Services
	do, what := m.Enable, "enable slurmd"
	if h.st.StagedNodeConfig != "" {
		do, what = m.Disable, "keep slurmd from starting at boot"
	}
	if err := do(ctx, SlurmdService); err != nil && !errors.Is(err, service.ErrUnknownService) {
		return fmt.Errorf("cannot %s: %w", what, err)
	}
	return nil
}

// recordDeleted reports whether RebootProgram deleted the node's record for the staged
// node-config before the machine rebooted (StagedMarker says so).
func (h *hook) recordDeleted() bool {
	data, err := os.ReadFile(h.c.Path(StagedMarker))
	return err == nil && strings.TrimSpace(string(data)) == markerDeleted
}

// registerStaged registers the node with its staged node-config when RebootProgram deleted
// its record before the reboot: slurmd did not start at boot, so this is the boot's only
// registration, and Slurm counts the node back only once it has run (slurmctld's rolling
// reboot waits for it). If Slurm refuses the staged --conf, the node is registered with its
// previous one, the refusal logged and the staged node-config dropped; either way nothing is
// staged any more.
func (h *hook) registerStaged(ctx context.Context) error {
	staged := h.st.StagedNodeConfig
	_, mi, err := h.facts(ctx)
	if err != nil {
		return err
	}
	conf, _, err := h.confWith(ctx, mi, staged)
	if err != nil {
		return err
	}
	if err := h.ensureMunged(ctx); err != nil {
		return err
	}
	prev := *h.st.Applied
	want := prev
	want.Conf = conf
	if err := h.setStaged(ctx, ""); err != nil {
		return err
	}
	h.logf(ctx, juju.LevelInfo, "node %s booted with node-config %q staged and its record deleted: registering it with --conf %q", h.node, staged, conf)
	err = h.startNode(ctx, h.slurmdSpec(&want))
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		h.logf(ctx, juju.LevelWarning, "Slurm refused the staged node-config %q: %s; registering node %s with its previous configuration", staged, refused.Reason, h.node)
		if rerr := h.replaceNode(ctx, h.slurmdSpec(&prev)); rerr != nil {
			return errors.Join(err, rerr)
		}
		return nil
	case err != nil:
		return err
	}
	h.st.Applied = &want
	h.st.NodeConfig = staged
	return h.k.Checkpoint(ctx)
}

// applyStaged registers the node with its staged node-config at the start after a boot for
// which RebootProgram did not delete its record (a reboot Slurm did not ask for, or a delete
// that failed), through the transactional path node-config uses (drain, wait for the jobs
// that landed since the boot, stop, delete, start with the new --conf, restore an
// administrator's state): the node is back under its old record, and Slurm (22.05 to 26.05
// alike) takes the new values only from a new record. The drain keeps the node counted as
// unavailable by slurmctld's rolling reboot until it is registered again. If Slurm refuses
// the new --conf, the node is registered again as it was, keeps its node-config, the refusal
// is logged and the staged node-config dropped; if its jobs do not end within
// DefaultActionTimeout, the node is resumed as it was and the node-config stays staged for
// the next boot.
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
		// Wait until Slurm has the node back from its reboot, so that the record replaced is
		// an ordinary one, not one with a reboot under way.
		if _, err := h.waitNode(ctx, false, func(n slurm.Node) bool { return !n.State.Rebooting() }); err != nil {
			h.logf(ctx, juju.LevelWarning, "node-config %q stays staged: node %s is not back from its reboot: %v", staged, h.node, err)
			return nil
		}
		h.logf(ctx, juju.LevelInfo, "node %s booted with node-config %q staged: registering it with --conf %q", h.node, staged, conf)
		want := *h.st.Applied
		want.Conf = conf
		prevSpec := h.slurmdSpec(h.st.Applied)
		err = h.reregister(ctx, h.slurmdSpec(&want), &prevSpec, h.c.Now().Add(DefaultActionTimeout), nil)
		var refused *RefusedError
		var re *slurm.RemovalError
		switch {
		case errors.As(err, &refused):
			h.logf(ctx, juju.LevelWarning, "Slurm refused the staged node-config %q: %s; node %s registered with its previous configuration", staged, refused.Reason, h.node)
			return h.setStaged(ctx, "")
		case errors.As(err, &re) && re.Phase == slurm.RemovalWait && errors.Is(err, context.DeadlineExceeded):
			h.logf(ctx, juju.LevelWarning, "node-config %q stays staged: %d jobs still running on %s after %s", staged, re.Jobs, h.node, DefaultActionTimeout)
			return nil
		case err != nil:
			return err
		}
		h.st.Applied = &want
	}
	h.st.NodeConfig = staged
	return h.setStaged(ctx, "")
}

// confWith is the --conf and resources the node would run with under node-config nc instead
// of its saved one (which it leaves as it is).
func (h *hook) confWith(ctx context.Context, mi slurm.MachineInfo, nc string) (string, nodeGres, error) {
	saved := h.st.NodeConfig
	defer func() { h.st.NodeConfig = saved }()
	h.st.NodeConfig = nc
	return h.conf(ctx, mi)
}
