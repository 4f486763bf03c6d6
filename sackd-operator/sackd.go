package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/interfaces/sackd"
	"github.com/charmed-slurm/operators/libs/authkey"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/poll"
	"github.com/charmed-slurm/operators/libs/service"
)

// ready makes sackd run for the controller's data: the key written, sackd (re)started when
// anything it runs with changed or it does not run, then the status once sackd answers (or
// ReadyTimeout passed). A machine that cannot be a login node stays as it is.
func (h *hook) ready(ctx context.Context, rel juju.RelationID, data sackd.ControllerData) error {
	if h.refused() != "" {
		return h.setStatus(ctx)
	}
	keyChanged, err := h.writeKey(ctx, data.AuthKey)
	if err != nil {
		return err
	}
	want := &Applied{Relation: rel, Controllers: data.Controllers, KeyHash: authkey.Hash(data.AuthKey), KeyID: data.AuthKeyID, ConfDigest: data.ConfDigest}
	running := h.running(ctx)
	prev := h.st.Applied
	var why string
	switch {
	case prev == nil:
		why = "first start"
	case !running:
		why = "sackd was not running"
	case keyChanged:
		why = "the key file changed"
	default:
		why = prev.restartFor(want)
	}
	if why != "" {
		if err := h.startSackd(ctx, want, running); err != nil {
			return err
		}
		h.logf(ctx, juju.LevelInfo, "sackd (re)started (%s) for controllers %s", why, strings.Join(want.Controllers, ","))
	}
	h.st.Applied = want
	// sackd runs as Applied says: kept even if the hook is cut off while it waits.
	if err := h.k.Checkpoint(ctx); err != nil {
		return err
	}
	if why != "" {
		h.waitServing(ctx)
	}
	return h.setStatus(ctx)
}

// spec is the sackd service for a.
func spec(a *Applied) service.Spec {
	return service.Spec{
		Name:    SackdService,
		Summary: "Slurm login node (sackd)",
		Command: []string{SackdPath, "-D", "--conf-server", strings.Join(a.Controllers, ",")},
		User:    SlurmUser,
		// A child sackd forks to fetch the configuration must not outlive a stop.
		KillAll: true,
	}
}

// startSackd configures sackd for a, enables it at boot and starts it, or restarts it when
// it runs (a restart fetches the configuration again and reads the key again).
func (h *hook) startSackd(ctx context.Context, a *Applied, running bool) error {
	m := h.c.Services
	if err := h.runDir(); err != nil {
		return err
	}
	if err := m.Configure(ctx, spec(a)); err != nil {
		return fmt.Errorf("cannot configure sackd: %w", err)
	}
	if err := m.Enable(ctx, SackdService); err != nil {
		return fmt.Errorf("cannot enable sackd: %w", err)
	}
	do, verb := m.Start, "start"
	if running {
		do, verb = m.Restart, "restart"
	}
	if err := h.k.SetUnitStatus(ctx, juju.StatusMaintenance, verb+"ing sackd"); err != nil {
		return err
	}
	if err := do(ctx, SackdService); err != nil {
		return fmt.Errorf("cannot %s sackd: %w", verb, err)
	}
	return nil
}

// runDir makes sure sackd's runtime directory exists, owned by the user sackd runs as (systemd
// makes it for Debian's unit, RuntimeDirectory=slurm; Pebble does not).
func (h *hook) runDir() error {
	uid, gid, err := h.c.UserIDs(SlurmUser)
	if err != nil {
		return fmt.Errorf("cannot find user %s: %w", SlurmUser, err)
	}
	dir := h.c.Path(RunDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", RunDir, err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("cannot give %s to %s: %w", RunDir, SlurmUser, err)
	}
	return nil
}

// writeKey writes the cluster's key for sackd (owner slurm, 0600) and reports whether the
// file changed.
func (h *hook) writeKey(ctx context.Context, key []byte) (bool, error) {
	if len(key) == 0 {
		return false, errors.New("cannot write the auth key: the controller's key is empty")
	}
	uid, gid, err := h.c.UserIDs(SlurmUser)
	if err != nil {
		return false, fmt.Errorf("cannot write %s: user %s: %w", KeyFile, SlurmUser, err)
	}
	return authkey.Write(ctx, h.c.Path(KeyFile), key, authkey.Options{Mode: 0o600, UID: uid, GID: gid})
}

// running reports whether sackd's service is active.
func (h *hook) running(ctx context.Context) bool {
	st, err := h.c.Services.Status(ctx, SackdService)
	return err == nil && st.State == service.StateActive
}

// waitServing waits, at most ReadyTimeout, until the sackd just (re)started serves its socket
// and has fetched the configuration, or its service stops being active. It only waits: the
// status that follows says how it went.
func (h *hook) waitServing(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, charm.Or(h.c.ReadyTimeout, DefaultReadyTimeout))
	defer cancel()
	every := h.c.poll()
	_ = poll.UntilBackoff(ctx, poll.Backoff{Start: min(5*time.Millisecond, every), Max: every}, func(ctx context.Context) (bool, error) {
		if h.serving() {
			return true, nil
		}
		return !h.running(ctx), nil
	})
}

// serving reports whether sackd's socket and the configuration it fetched are there.
func (h *hook) serving() bool {
	for _, p := range []string{SackSocket, RunConf} {
		if _, err := os.Stat(h.c.Path(p)); err != nil {
			return false
		}
	}
	return true
}

// leave stops sackd for good and removes what the unit held of the cluster: the key and the
// configuration sackd fetched. msg, when set, is the status to show (the unit is going away);
// otherwise the unit waits for a new relation.
func (h *hook) leave(ctx context.Context, msg string) error {
	if err := h.stopSackd(ctx); err != nil {
		return err
	}
	for _, p := range []string{KeyFile, RunConfDir} {
		if err := os.RemoveAll(h.c.Path(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot remove %s: %w", p, err)
		}
	}
	if h.st.Applied != nil {
		h.logf(ctx, juju.LevelInfo, "sackd stopped, the key and the cached configuration removed: this machine is no longer a login node")
	}
	h.st.Applied = nil
	if msg != "" {
		return h.k.SetUnitStatus(ctx, juju.StatusMaintenance, msg)
	}
	return h.setStatus(ctx)
}
