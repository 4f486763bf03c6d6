package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/charmed-slurm/operators/libs/atomicfile"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// backup is a unit that is not the leader (controller high availability): a controller
// running the leader's configuration from the shared storage once both are there, else
// nothing running and a status saying what it waits for.
type backup struct{ h *hook }

// configure brings the unit to its place; the status is set by the caller (hook.configure)
// from h.backupWait.
func (b backup) configure(ctx context.Context) error {
	h := b.h
	st, err := h.storage(ctx)
	if err != nil {
		return err
	}
	rel, err := h.peerRelation(ctx)
	if err != nil {
		return err
	}
	if rel != "" {
		me, err := h.self(ctx)
		if err != nil {
			return err
		}
		if err := h.publishSelf(ctx, rel, me, st); err != nil {
			return err
		}
	}
	unit := h.hc.Event.Unit
	h.backupWait = ""
	switch {
	case !st.Related:
		h.backupWait = "blocked:a backup controller needs shared storage: integrate slurmctld with filesystem-client (mount relation)"
	case !st.Mounted:
		h.backupWait = "waiting:waiting for the shared storage to be mounted at " + sharedMount
	case rel == "":
		h.backupWait = "waiting:waiting for the peer relation"
	}
	if h.backupWait != "" {
		// Never a controller with state of its own.
		if h.c.running(ctx) {
			if err := h.services().Stop(ctx, svcSlurmctld); err != nil {
				return fmt.Errorf("cannot stop slurmctld: %w", err)
			}
		}
		h.st.Restart = nil
		return nil
	}
	app, err := h.hc.Relations.AppData(ctx, rel, h.hc.Event.App)
	if err != nil {
		return err
	}
	ctls, err := decodeControllers(app[peerKeyControllers])
	if err != nil {
		return err
	}
	files, err := decodeConf(app[peerKeyConf])
	if err != nil {
		return err
	}
	h.ctls = ctls
	if h.turn, err = decodeTurn(app[peerKeyTurn]); err != nil {
		return err
	}
	if !slices.ContainsFunc(ctls, func(c controller) bool { return c.Unit == unit }) || files == nil || app[peerKeySecret] == "" {
		h.backupWait = "waiting:waiting for the leader to add this unit to the controllers"
		return nil
	}
	feat, err := h.features(ctx)
	if err != nil {
		return err
	}
	h.st.SecretID = app[peerKeySecret]
	if err := (authKey{h}).ensure(ctx, feat); err != nil {
		return err
	}
	ctl := slurmctldDaemon{h}
	if _, err := ctl.writeGresCgroup(ctx, feat); err != nil {
		return err
	}
	wrote, err := b.writeConf(ctx, files)
	if err != nil {
		return err
	}
	if err := b.adopt(ctx); err != nil {
		return err
	}
	sum := confHash(files)
	hosts := hostsOf(ctls)
	// The running slurmctld has these files unless a hook wrote them since it applied them:
	// AppliedConf is "" on a former leader, whose slurmctld runs with the files it wrote.
	// A new SlurmctldHost list not applied yet (it waited for its turn) is stale too.
	newHosts := !slices.Equal(h.st.RunningHosts, hosts)
	stale := newHosts || sum != h.st.AppliedConf && (wrote || h.st.AppliedConf != "")
	h.st.TurnNote = ""
	if err := (standby{h}).refresh(ctx); err != nil {
		return err
	}
	switch {
	case h.st.StoodDown != nil:
		// The files are written; slurmctld starts with them when takeover is run here.
		if err := (standby{h}).hold(ctx); err != nil {
			return err
		}
	case !ctl.live(ctx):
		// A controller starting takes nobody's place: no turn needed.
		if err := ctl.start(ctx); err != nil {
			return err
		}
	case stale && newHosts && !(rolling{h}).mine(hosts):
		// SlurmctldHost is read at start only: the restart waits for this unit's turn
		// (rolling.go); the files are in place, the running slurmctld keeps its own.
		h.st.TurnNote = turnNote(h.turn, unit, false)
		if h.st.TurnNote == "" {
			h.st.TurnNote = "; restart for the new SlurmctldHost list waits for the leader's turn"
		}
		return (publisher{h}).openPort(ctx)
	case stale && newHosts:
		if err := (rolling{h}).restartSelf(ctx, hosts); err != nil {
			return err
		}
	case stale && h.isActive():
		// In control (the primary is away) and the controllers unchanged: a restart would
		// leave the cluster without a controller for SlurmctldTimeout; reconfigure instead.
		if err := ctl.reconfigure(ctx); err != nil {
			return err
		}
	case stale:
		// Finished by a later pass, as every restart (settle).
		if err := ctl.restart(ctx, restartShared, "run the leader's configuration"); err != nil {
			return err
		}
	}
	h.st.AppliedConf = sum
	h.st.RunningHosts, h.st.Controllers = hosts, ctls
	if err := (publisher{h}).openPort(ctx); err != nil {
		return err
	}
	return nil
}

// writeConf installs the leader's configuration files and removes managed files it no
// longer has (a removed partition's include); it reports whether it changed a file.
func (b backup) writeConf(ctx context.Context, files map[string]string) (bool, error) {
	dir := b.h.c.Path(confDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	wrote := false
	for _, name := range sortedKeys(files) {
		p := filepath.Join(dir, name)
		if old, err := os.ReadFile(p); err == nil && string(old) == files[name] {
			continue
		}
		if err := atomicfile.Write(ctx, p, []byte(files[name]), atomicfile.Options{Mode: 0o644}); err != nil {
			return wrote, fmt.Errorf("cannot write %s: %w", p, err)
		}
		wrote = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return wrote, err
	}
	for _, e := range entries {
		if _, keep := files[e.Name()]; !keep && e.Type().IsRegular() && managedConf(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return wrote, err
			}
			wrote = true
		}
	}
	return wrote, nil
}

// adopt keeps in this unit's state what the leader's slurm.conf says of the cluster, so that
// this unit writes the same files should it become the leader (a leader change must change
// nothing in Slurm): the slurmd applications (the partition includes, in slurm.conf's order)
// and the generic resource names (GresTypes, which slurmctld runs with).
func (b backup) adopt(ctx context.Context) error {
	h := b.h
	doc, err := slurmconf.ReadFile(ctx, h.c.Path(confPath))
	if err != nil {
		return fmt.Errorf("cannot read the leader's slurm.conf: %w", err)
	}
	var apps []string
	for _, inc := range doc.Includes() {
		if app, ok := includeApp(inc); ok {
			apps = append(apps, app)
		}
	}
	h.st.Apps = apps
	if v, ok := doc.Get("GresTypes"); ok {
		h.st.GresTypes = nil
		h.st.addGresTypes(strings.Split(v, ","))
		h.st.GresRunning = h.st.gresTypes()
	}
	return nil
}

// confHash identifies the leader's configuration files.
func confHash(files map[string]string) string {
	s := sha256.New()
	for _, name := range sortedKeys(files) {
		fmt.Fprintf(s, "%s\x00%d\x00%s", name, len(files[name]), files[name])
	}
	return hex.EncodeToString(s.Sum(nil))
}
