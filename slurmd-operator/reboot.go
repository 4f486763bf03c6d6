package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/atomicfile"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// RebootProgram is the program slurmd runs for `scontrol reboot` (slurmctld's RebootProgram
// names the same path): it asks this machine's systemd for a reboot.
const RebootProgram = "/usr/local/sbin/charmed-slurm-reboot"

// StagedMarker is the file that tells RebootProgram a node-config is staged for the next boot
// (content "staged"), and tells the start hook after the boot that RebootProgram deleted the
// node's record before the reboot (content "deleted"). It lives in slurmd's spool, private to
// the machine and kept across reboots.
const StagedMarker = "/var/spool/slurmd/charm-staged-node-config"

// Contents of StagedMarker.
const (
	markerStaged  = "staged"
	markerDeleted = "deleted"
)

// rebootScript is RebootProgram's content for node. slurmd runs it as root with no
// arguments, once the node has no job; systemd stops slurmd and the other services cleanly
// before the machine goes down. With a node-config staged (StagedMarker says so), it first
// deletes the node's record, while slurmd still runs (its socket authenticates scontrol under
// auth/slurm): slurmd is not enabled at boot while a node-config is staged, so the boot's only
// registration is the start hook's, which creates the record anew with the staged --conf
// (Slurm takes a dynamic node's new --conf only from a new record). The node is set DOWN
// first: Slurm 22.05 leaves a deleted node in its bitmap of nodes resuming from a reboot, and
// a record created later in the same slot would never be scheduled; a state update clears it
// (24.11 clears every bitmap itself). The DOWN's reason is the charm's re-registration reason,
// which the start hook does not keep as an administrator's if the delete did not happen.
// Only a machine that systemd runs is touched.
func rebootScript(node string) string {
	return `#!/bin/sh
# Installed by the slurmd charm: RebootProgram of the cluster (scontrol reboot).
[ -d /run/systemd/system ] || { echo "charmed-slurm-reboot: systemd does not run this machine" >&2; exit 1; }
marker=` + StagedMarker + `
if [ "$(cat "$marker" 2>/dev/null)" = ` + markerStaged + ` ]; then
	# A node-config is staged for this boot: the node registers anew with it after the boot.
	for conf in ` + RunConf + ` ` + SpoolConf + `; do
		[ -f "$conf" ] || continue
		export SLURM_CONF="$conf"
		if timeout 20 scontrol update nodename=` + node + ` state=down reason="` + reconfReason(node) + `" &&
			timeout 20 scontrol delete nodename=` + node + `; then
			echo ` + markerDeleted + ` >"$marker"
		fi
		break
	done
fi
exec systemctl reboot
`
}

// unexpectedReboot starts the reason Slurm gives a node it sets DOWN because its slurmd
// registered with a new boot time it had not asked for.
const unexpectedReboot = "Node unexpectedly rebooted"

// installRebootProgram writes RebootProgram (mode 0755) for this node unless it is there
// already.
func (h *hook) installRebootProgram(ctx context.Context) error {
	p, script := h.c.Path(RebootProgram), rebootScript(h.node)
	if data, err := os.ReadFile(p); err == nil && string(data) == script {
		return nil
	}
	opts := atomicfile.Options{Mode: 0o755, Reset: true, MkdirMode: 0o755}
	if err := atomicfile.Write(ctx, p, []byte(script), opts); err != nil {
		return fmt.Errorf("cannot install %s: %w", RebootProgram, err)
	}
	return nil
}

// stop runs when the machine shuts down or reboots (Juju >= 2.8), and last when the unit is
// removed. A removal is recognised from what only a removal produces: the unit's own
// relation-departed or relation-broken, which ran depart before. A bare stop leaves the node's
// record and its state alone (slurmd is enabled at boot; start repairs what changed while the
// machine was down); after a departure it stops munged.
func (h *hook) stop(ctx context.Context) error {
	if !h.st.Departed {
		if h.st.Applied == nil {
			return nil
		}
		h.logf(ctx, juju.LevelInfo, "stop without departure (machine shutdown or reboot): node %s kept", h.node)
		return h.setStatus(ctx, juju.StatusMaintenance, "node "+h.node+": machine going down")
	}
	err := h.c.Services.Stop(ctx, h.c.munged().Service())
	if err == nil || errors.Is(err, service.ErrUnknownService) {
		return nil
	}
	if !h.mungeAnswers(ctx) {
		h.logf(ctx, juju.LevelWarning, "cannot stop munged, which does not answer: %v", err)
		return nil
	}
	return fmt.Errorf("cannot stop munged: %w", err)
}

// start runs after install and whenever the machine has booted again. A node that was
// running before is checked and repaired against the controller's current data (auth key,
// munged, --conf-server, slurmd running and registered) as a relation hook would apply it,
// and a node Slurm set DOWN for its unexpected reboot is resumed; an administrator's drain or
// down, with its reason, is kept.
func (h *hook) start(ctx context.Context) error {
	if err := h.installRebootProgram(ctx); err != nil {
		return err
	}
	if h.st.Applied == nil || h.st.Departed {
		return h.updateStatus(ctx)
	}
	h.logf(ctx, juju.LevelInfo, "start with node %s configured (install's first start, or the machine booted again): checking it", h.node)
	if h.st.StagedNodeConfig != "" && h.recordDeleted() {
		// Slurm rebooted the node for its staged node-config: slurmd did not start at boot
		// and the record is gone; this is the boot's one registration.
		if err := h.registerStaged(ctx); err != nil {
			return err
		}
	}
	if err := h.reapply(ctx); err != nil {
		return err
	}
	if h.st.StagedNodeConfig != "" {
		// Still staged: the record was not deleted before this boot.
		if err := h.applyStaged(ctx); err != nil {
			return err
		}
		if err := h.updateStatus(ctx); err != nil {
			return err
		}
	}
	return h.resumeRebooted(ctx)
}

// reapply applies the controller's current data to slurmd as a relation hook would; without
// the relation or its data it only reports the status.
func (h *hook) reapply(ctx context.Context) error {
	id, err := h.relationID(ctx)
	if err != nil || id == "" {
		return errors.Join(err, h.updateStatus(ctx))
	}
	data, err := slurmd.Provider{HookContext: h.hc}.Controller(ctx, id)
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "cannot read the controller's data: %v", err)
		return h.updateStatus(ctx)
	}
	return h.ready(ctx, data)
}

// resumeRebooted resumes the node when Slurm set it DOWN only because it rebooted unasked
// (ReturnToService=2 returns it by itself on most versions; this covers the others). A drain
// or an administrator's down is left alone.
func (h *hook) resumeRebooted(ctx context.Context) error {
	n, err := h.showNode(ctx)
	if err != nil || !n.State.Down() || n.State.Drain() || !strings.HasPrefix(n.Reason, unexpectedReboot) {
		return nil
	}
	cl, err := h.c.ctl()
	if err != nil {
		return nil
	}
	if err := cl.Resume(ctx, h.node); err != nil {
		return fmt.Errorf("cannot resume node %s after its reboot: %w", h.node, err)
	}
	h.logf(ctx, juju.LevelInfo, "node %s resumed after an unexpected reboot", h.node)
	if n, err = h.showNode(ctx); err != nil {
		return nil
	}
	return h.nodeStatus(ctx, n)
}

// rebootState describes a reboot Slurm has under way on node n, or "".
func rebootState(n slurm.Node) string {
	switch {
	case n.State.Has(slurm.FlagRebootIssued):
		return "rebooting"
	case n.State.Has(slurm.FlagRebootRequested):
		return "reboot requested"
	}
	return ""
}
