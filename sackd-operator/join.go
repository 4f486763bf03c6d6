package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/sackd"
	"github.com/charmed-slurm/operators/libs/authkey"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// join makes sackd run for the controller's data: the key written, sackd (re)started when
// anything it runs with changed or it does not run, then the status once sackd answers (or
// ReadyTimeout passed). A machine that cannot be a login node stays as it is; a sackd the
// controller's Slurm does not accept (newer: an upgrade in the wrong order; or too old) is
// never started, with nothing written; a running one is left as it runs.
func (h *hook) join(ctx context.Context, rel juju.RelationID, data sackd.ControllerData) error {
	if h.st.refused() != "" {
		return h.report(ctx, observed{})
	}
	mine, _ := slurm.ParseVersion(h.st.Release.Version) // none (a local build): not checked
	if refusal := slurm.CheckLoginVersion(data.SlurmVersion, mine); refusal != nil {
		if h.st.VersionRefused != refusal.Error() {
			h.logf(ctx, juju.LevelWarning, "not starting sackd: %v", refusal)
		}
		h.st.VersionRefused = refusal.Error()
		return h.refresh(ctx)
	}
	h.st.VersionRefused = ""
	if wait := slurm.CheckConfVersion("sackd", data.ConfMinVersion, mine); wait != nil {
		// sackd would exit on a key of the configuration it fetches: the controller leaves
		// it out once it has read this unit's version (publishHost).
		if h.st.ConfWaiting != wait.Error() {
			h.logf(ctx, juju.LevelInfo, "not starting sackd yet: %v", wait)
		}
		h.st.ConfWaiting = wait.Error()
		return h.refresh(ctx)
	}
	h.st.ConfWaiting = ""
	keyChanged, err := h.writeKey(ctx, data.AuthKey)
	if err != nil {
		return err
	}
	want := &Applied{Relation: rel, Controllers: data.Controllers, KeyHash: authkey.Hash(data.AuthKey), KeyID: data.AuthKeyID, ConfDigest: data.ConfDigest}
	d := h.sackd()
	running := d.running(ctx)
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
		d.waitServing(ctx)
	}
	return h.refresh(ctx)
}

// startSackd (re)starts sackd for a, showing the step.
func (h *hook) startSackd(ctx context.Context, a *Applied, running bool) error {
	verb := "starting"
	if running {
		verb = "restarting"
	}
	if err := h.progress(ctx, verb+" sackd"); err != nil {
		return err
	}
	return h.sackd().start(ctx, a, running)
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

// leave stops sackd for good and removes what the unit held of the cluster: the key and the
// configuration sackd fetched. gone: the unit is going away (its own relation-departed);
// otherwise it waits for a new relation.
func (h *hook) leave(ctx context.Context, gone bool) error {
	d := h.sackd()
	if err := d.stop(ctx); err != nil {
		return err
	}
	if err := d.forget(); err != nil {
		return err
	}
	if h.st.Applied != nil {
		h.logf(ctx, juju.LevelInfo, "sackd stopped, the key and the cached configuration removed: this machine is no longer a login node")
	}
	h.st.Applied, h.st.VersionRefused, h.st.ConfWaiting = nil, "", ""
	if gone {
		return h.report(ctx, observed{left: true})
	}
	return h.refresh(ctx)
}
