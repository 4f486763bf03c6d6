package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/atomicfile"
	"github.com/charmed-slurm/operators/libs/charm"
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

// installRebootProgram writes RebootProgram (mode 0755) for node unless it is there already.
func (c *Charm) installRebootProgram(ctx context.Context, node string) error {
	p, script := c.Path(RebootProgram), rebootScript(node)
	if data, err := os.ReadFile(p); err == nil && string(data) == script {
		return nil
	}
	opts := atomicfile.Options{Mode: 0o755, Reset: true, MkdirMode: 0o755}
	if err := atomicfile.Write(ctx, p, []byte(script), opts); err != nil {
		return fmt.Errorf("cannot install %s: %w", RebootProgram, err)
	}
	return nil
}

// reconfReason is the reason a re-registration drains (or, in RebootProgram, downs) node with.
func reconfReason(node string) string { return "reconfiguring node " + node }

// stagedMarker is StagedMarker below the charm's root.
type stagedMarker struct{ c *Charm }

// set says a node-config is staged.
func (m stagedMarker) set(ctx context.Context) error {
	if err := atomicfile.Write(ctx, m.c.Path(StagedMarker), []byte(markerStaged+"\n"), atomicfile.Options{Mode: 0o644, MkdirMode: 0o755}); err != nil {
		return fmt.Errorf("cannot stage the node-config: %w", err)
	}
	return nil
}

// clear removes the marker: nothing is staged.
func (m stagedMarker) clear() error {
	if err := os.Remove(m.c.Path(StagedMarker)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove %s: %w", StagedMarker, err)
	}
	return nil
}

// recordDeleted reports whether RebootProgram deleted the node's record for the staged
// node-config before the machine rebooted.
func (m stagedMarker) recordDeleted() bool {
	_, ok := m.deletedAt()
	return ok
}

// deletedAt is when RebootProgram deleted the node's record (the marker's time), if it did.
func (m stagedMarker) deletedAt() (time.Time, bool) {
	p := m.c.Path(StagedMarker)
	data, err := os.ReadFile(p)
	if err != nil || strings.TrimSpace(string(data)) != markerDeleted {
		return time.Time{}, false
	}
	fi, err := os.Stat(p)
	if err != nil {
		return time.Time{}, false
	}
	return fi.ModTime(), true
}

// rebootFailed reports whether RebootProgram deleted the node's record for a reboot that
// did not happen: the marker says so and the machine is still up RebootGrace after it
// (a hook that starts while the machine goes down must not take the reboot under way for a
// failed one and register the node).
func (m stagedMarker) rebootFailed() bool {
	at, ok := m.deletedAt()
	return ok && m.c.Now().Sub(at) >= charm.Or(m.c.RebootGrace, DefaultRebootGrace)
}
