package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/authkey"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/poll"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// ready configures and (re)starts slurmd for the controller's data, doing only what changed.
func (h *hook) ready(ctx context.Context, data slurmd.ControllerData) error {
	if h.st.Departed {
		return h.setStatus(ctx, juju.StatusMaintenance, "node "+h.node+" removed")
	}
	if len(data.Controllers) == 0 {
		return h.setStatus(ctx, juju.StatusWaiting, "waiting for slurmctld: no controller address")
	}
	// The machine's facts (slurmd -C) are not needed before the --conf: on a join they are
	// read beside the key's write and munged's start (handler).
	version, err := h.version(ctx)
	if err != nil {
		return err
	}
	keyChanged, err := h.writeAuthKey(ctx, slurm.FeaturesOf(version), data.AuthKey)
	if err != nil {
		return err
	}
	_, mi, err := h.facts(ctx)
	if err != nil {
		return err
	}
	conf, gresConf, err := h.runConf(ctx, mi, data.GresTypes)
	if err != nil {
		return err
	}
	if len(h.st.GresWaiting) > 0 {
		return h.setStatus(ctx, juju.StatusWaiting, unmanagedStatus(h.st.GresWaiting))
	}
	want := &Applied{GresConf: gresConf, Controllers: data.Controllers, Conf: conf, KeyHash: authkey.Hash(data.AuthKey), KeyID: data.AuthKeyID, SecretID: data.AuthSecretID}
	prev := h.st.Applied
	spec := h.slurmdSpec(want)
	switch {
	case prev == nil:
		// First start: a new node record. No status before: slurmd registers within
		// milliseconds and settle reports the node.
		if err := h.startSlurmd(ctx, spec, false); err != nil {
			return err
		}
		h.st.Applied = want
		h.st.DefaultPending = true
	case prev.Conf != conf || h.gresLinesChanged(prev.GresConf, gresConf):
		// Slurm 22.05 keeps a dynamic node's old record: re-register it.
		if err := h.reregister(ctx, spec, nil, time.Time{}, nil); err != nil {
			return err
		}
		h.st.Applied = want
	case !slices.Equal(prev.Controllers, want.Controllers) || prev.KeyHash != want.KeyHash || keyChanged || !h.slurmdActive(ctx):
		if err := h.setStatus(ctx, juju.StatusMaintenance, "restarting slurmd"); err != nil {
			return err
		}
		if err := h.startSlurmd(ctx, spec, true); err != nil {
			return err
		}
		h.st.Applied = want
	default:
		h.st.Applied = want
	}
	// slurmd runs as Applied says: kept even if the hook is killed while the node registers.
	if err := h.k.Checkpoint(ctx); err != nil {
		return err
	}
	return h.settle(ctx)
}

// slurmdActive reports whether the service manager says slurmd is active (asked only where
// the answer counts: a first start needs none, and on systemd the question costs a load of
// the unit).
func (h *hook) slurmdActive(ctx context.Context) bool {
	st, err := h.c.Services.Status(ctx, SlurmdService)
	return err == nil && st.State == service.StateActive
}

// settle waits for the node to register, applies default-node-state to a new node and shows
// the node's state.
func (h *hook) settle(ctx context.Context) error {
	n, err := h.waitRegistered(ctx, false)
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "node %s did not register: %v", h.node, err)
		return h.setStatus(ctx, juju.StatusWaiting, fmt.Sprintf("waiting for node %s to register", h.node))
	}
	return h.reportNode(ctx, n)
}

func (h *hook) applyDefaultState(ctx context.Context) error {
	if h.cfg.nodeState() != "down" {
		return nil
	}
	cl, err := h.c.ctl()
	if err != nil {
		return err
	}
	err = cl.UpdateNode(ctx, h.node, slurm.NodeUpdate{State: "down", Reason: h.cfg.nodeReason()})
	if err != nil {
		return fmt.Errorf("cannot set node %s down (default-node-state): %w", h.node, err)
	}
	return nil
}

// waitRegistered polls until the node's record shows its slurmd registered, bounded by
// RegisterTimeout. A slurmd registers within tens of milliseconds: the polls start 10 ms
// apart and back off to PollInterval. With watch, a slurmd service that stops being active
// (it exited: Slurm refused its configuration) ends the wait at once.
func (h *hook) waitRegistered(ctx context.Context, watch bool) (slurm.Node, error) {
	return h.waitNode(ctx, watch, nil)
}

// waitNode is waitRegistered that also waits, when also is not nil, until also holds for the
// registered node's record.
func (h *hook) waitNode(ctx context.Context, watch bool, also func(slurm.Node) bool) (slurm.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, charm.Or(h.c.RegisterTimeout, DefaultRegisterTimeout))
	defer cancel()
	var n slurm.Node
	var last, exited error
	every := h.c.poll()
	err := poll.UntilBackoff(ctx, poll.Backoff{Start: min(10*time.Millisecond, every), Max: every}, func(ctx context.Context) (bool, error) {
		var err error
		n, err = h.showNode(ctx)
		if err == nil && n.Version != "" && !n.State.Has(slurm.StateFuture) && (also == nil || also(n)) {
			return true, nil
		}
		if watch {
			if st, serr := h.c.Services.Status(ctx, SlurmdService); serr == nil && st.State != service.StateActive {
				exited = fmt.Errorf("slurmd exited (service %s) before node %s registered", st.State, h.node)
				return false, exited
			}
		}
		if err != nil {
			last = err
		} else {
			last = fmt.Errorf("node %s is %s", h.node, n.State)
		}
		return false, nil
	})
	switch {
	case exited != nil:
		return slurm.Node{}, exited
	case err != nil:
		return slurm.Node{}, fmt.Errorf("cannot wait for node %s to register: %w (last: %v)", h.node, err, last)
	}
	return n, nil
}

// showNode shows this unit's node.
func (h *hook) showNode(ctx context.Context) (slurm.Node, error) {
	cl, err := h.c.ctl()
	if err != nil {
		return slurm.Node{}, err
	}
	return cl.ShowNode(ctx, h.node)
}

// slurmdSpec is the slurmd service for applied.
func (h *hook) slurmdSpec(a *Applied) service.Spec {
	return service.Spec{
		Name:    SlurmdService,
		Summary: "Slurm compute node " + h.node + " (dynamic)",
		Command: []string{SlurmdPath, "-D", "-Z", "-N", h.node,
			"--conf-server", strings.Join(a.Controllers, ","), "--conf", a.Conf},
	}
}

// startSlurmd configures slurmd and starts it (restart restarts a running one). It returns
// once the process runs; callers wait for the node's registration (waitRegistered).
func (h *hook) startSlurmd(ctx context.Context, spec service.Spec, restart bool) error {
	m := h.c.Services
	if err := m.Configure(ctx, spec); err != nil {
		return fmt.Errorf("cannot configure slurmd: %w", err)
	}
	if err := h.enableAtBoot(ctx); err != nil {
		return err
	}
	do, verb := m.Spawn, "start"
	if restart {
		do, verb = m.Respawn, "restart"
	}
	if err := do(ctx, SlurmdService); err != nil {
		return fmt.Errorf("cannot %s slurmd: %w", verb, err)
	}
	return nil
}

// conf builds the node's --conf: `slurmd -C` (mi) without NodeName, the node's generic
// resources (Gres=), the application's feature and the node-config. It returns the
// resources too: their gres.conf lines go with the --conf.
func (h *hook) conf(ctx context.Context, mi slurm.MachineInfo) (string, nodeGres, error) {
	nc, err := slurmconf.ParseParams(h.st.NodeConfig)
	if err != nil {
		return "", nodeGres{}, fmt.Errorf("cannot read the saved node-config %q: %w", h.st.NodeConfig, err)
	}
	g, err := h.resources(ctx)
	if err != nil {
		return "", nodeGres{}, err
	}
	return buildConfGres(mi, h.hc.Event.App, nc, g.Gres), g, nil
}

// buildConf merges the machine's facts, Feature=<app> (plus any features in node-config) and
// node-config, whose values win over the machine's.
func buildConf(mi slurm.MachineInfo, app string, nodeConfig slurmconf.Params) string {
	var p slurmconf.Params
	for _, kv := range mi.Params {
		p.Set(kv.Key, kv.Value)
	}
	features := []string{app}
	nc := nodeConfig.Clone()
	for _, k := range []string{"Feature", "Features"} {
		if v, ok := nc.Get(k); ok {
			for _, f := range strings.Split(v, ",") {
				if f = strings.TrimSpace(f); f != "" && !slices.Contains(features, f) {
					features = append(features, f)
				}
			}
			nc.Delete(k)
		}
	}
	for _, kv := range nc {
		p.Set(kv.Key, kv.Value)
	}
	p.Set("Feature", strings.Join(features, ","))
	return p.String()
}

// writeAuthKey writes the shared key where this Slurm version wants it and, for munge,
// (re)starts munged when the key changed or munged is not running. It reports whether the
// key file changed.
func (h *hook) writeAuthKey(ctx context.Context, f slurm.Features, key []byte) (bool, error) {
	if len(key) == 0 {
		return false, errors.New("cannot write the auth key: the controller's key is empty")
	}
	usr, mode := "slurm", os.FileMode(0o600)
	if f.Munge {
		usr, mode = "munge", 0o400
	}
	uid, gid, err := h.c.UserIDs(usr)
	if err != nil {
		return false, fmt.Errorf("cannot write %s: user %s: %w", f.AuthKeyFile, usr, err)
	}
	changed, err := authkey.Write(ctx, h.c.Path(f.AuthKeyFile), key, authkey.Options{Mode: mode, UID: uid, GID: gid})
	if err != nil {
		return false, err
	}
	if !f.Munge {
		return changed, nil
	}
	return changed, h.c.munged().Ensure(ctx, changed)
}

// ensureMunged starts munged with the key in place when this Slurm version authenticates with
// munge and munged is not running.
func (h *hook) ensureMunged(ctx context.Context) error {
	v, err := h.version(ctx)
	if err != nil || !slurm.FeaturesOf(v).Munge {
		return err
	}
	return h.c.munged().Ensure(ctx, false)
}
