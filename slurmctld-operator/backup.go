package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/charmed-slurm/operators/libs/atomicfile"
)

// backup is a unit that is not the leader (controller high availability): a controller
// running the leader's configuration from the shared storage once both are there, else
// nothing running and a status saying what it waits for.
type backup struct{ h *hook }

// configure brings the unit to its place and sets the status.
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
			if err := h.c.Services.Stop(ctx, svcSlurmctld); err != nil {
				return fmt.Errorf("cannot stop slurmctld: %w", err)
			}
		}
		return h.report(ctx)
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
	if !slices.ContainsFunc(ctls, func(c controller) bool { return c.Unit == unit }) || files == nil || app[peerKeySecret] == "" {
		h.backupWait = "waiting:waiting for the leader to add this unit to the controllers"
		return h.report(ctx)
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
	if err := b.writeConf(ctx, files); err != nil {
		return err
	}
	sum := confHash(files)
	switch {
	case !h.c.running(ctx):
		if err := ctl.start(ctx); err != nil {
			return err
		}
	case sum != h.st.AppliedConf && h.isActive() && slices.Equal(h.st.RunningHosts, hostsOf(ctls)):
		// In control (the primary is away) and the controllers unchanged: a restart would
		// leave the cluster without a controller for SlurmctldTimeout; reconfigure instead.
		if err := ctl.reconfigure(ctx); err != nil {
			return err
		}
	case sum != h.st.AppliedConf:
		if err := h.progress(ctx, "restarting slurmctld with the leader's configuration"); err != nil {
			return err
		}
		if err := h.c.restart(ctx, svcSlurmctld); err != nil {
			return err
		}
		if err := ctl.waitUp(ctx, "restarted"); err != nil {
			return err
		}
	}
	h.st.AppliedConf = sum
	h.st.RunningHosts, h.st.Controllers = hostsOf(ctls), ctls
	if err := (publisher{h}).openPort(ctx); err != nil {
		return err
	}
	return h.report(ctx)
}

// writeConf installs the leader's configuration files and removes managed files it no
// longer has (a removed partition's include).
func (b backup) writeConf(ctx context.Context, files map[string]string) error {
	dir := b.h.c.Path(confDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range sortedKeys(files) {
		p := filepath.Join(dir, name)
		if old, err := os.ReadFile(p); err == nil && string(old) == files[name] {
			continue
		}
		if err := atomicfile.Write(ctx, p, []byte(files[name]), atomicfile.Options{Mode: 0o644}); err != nil {
			return fmt.Errorf("cannot write %s: %w", p, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, keep := files[e.Name()]; !keep && e.Type().IsRegular() && managedConf(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
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
