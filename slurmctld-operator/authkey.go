package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/authkey"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// authKey is the cluster's auth key: the Juju secret the leader owns (created on first use,
// granted to every slurmd relation), the key file on this host, and the service that reads
// it (munged before Slurm 23.11, slurmctld itself from 23.11).
type authKey struct{ h *hook }

// ensure installs the auth key of the secret on this host and makes sure munged runs.
// The secret is read only when the record of the key installed from it does not match the
// key file any more (or there is no record: a new leadership term, upgrade-charm).
func (ak authKey) ensure(ctx context.Context, feat slurm.Features) error {
	if ak.installed(feat) {
		return ak.ensureService(ctx, feat, false)
	}
	key, keyID, err := ak.ensureSecret(ctx)
	if err != nil {
		return err
	}
	return ak.install(ctx, feat, key, keyID)
}

// installed reports whether the key file is the one recorded as installed from the
// current auth key secret.
func (ak authKey) installed(feat slurm.Features) bool {
	h := ak.h
	p := h.pub
	if p.SecretID == "" || p.KeyHash == "" || p.SecretID != h.st.SecretID {
		return false
	}
	data, err := os.ReadFile(h.c.Path(feat.AuthKeyFile))
	return err == nil && authkey.Hash(data) == p.KeyHash
}

// secret makes sure the auth key secret exists (creating it when there is none) and
// returns its id, without reading it when the record has it.
func (ak authKey) secret(ctx context.Context) (juju.SecretID, error) {
	h := ak.h
	if h.pub.SecretID != "" && h.pub.SecretID == h.st.SecretID {
		return juju.SecretID(h.st.SecretID), nil
	}
	if _, _, err := ak.ensureSecret(ctx); err != nil {
		return "", err
	}
	h.pub.SecretID = h.st.SecretID
	return juju.SecretID(h.st.SecretID), nil
}

// ensureSecret returns the auth key, creating the secret (leader only) when there is none.
func (ak authKey) ensureSecret(ctx context.Context) ([]byte, string, error) {
	h := ak.h
	hc := h.hc
	id, content, err := ak.read(ctx)
	if err == nil {
		key, keyID, err := slurmd.DecodeAuthSecret(content)
		if err != nil {
			return nil, "", fmt.Errorf("cannot read auth key secret %s: %w", id, err)
		}
		h.st.SecretID = string(id)
		return key, keyID, nil
	}
	if !h.leader {
		return nil, "", fmt.Errorf("cannot read auth key secret: %w", err)
	}
	key, err := newKey(h.c.Rand)
	if err != nil {
		return nil, "", err
	}
	id, err = hc.Secrets.Add(ctx, slurmd.EncodeAuthSecret(key, "1"), juju.SecretAddOptions{
		Label: authSecretName, Description: "Slurm cluster auth key (munge key before Slurm 23.11, slurm.key after)",
	})
	if err != nil {
		return nil, "", fmt.Errorf("cannot create auth key secret: %w", err)
	}
	h.st.SecretID = string(id)
	h.logf(ctx, juju.LevelInfo, "created auth key secret %s", id)
	// Relations that joined before the secret existed get it now.
	rels, err := publisher{h}.relations(ctx)
	if err != nil {
		return nil, "", err
	}
	for _, rel := range rels {
		if err := (publisher{h}).grant(ctx, id, rel); err != nil {
			return nil, "", err
		}
	}
	return key, "1", nil
}

// read reads the auth key secret by its remembered id, else by label.
func (ak authKey) read(ctx context.Context) (juju.SecretID, map[string]string, error) {
	h := ak.h
	sec := h.hc.Secrets
	if h.st.SecretID != "" {
		id := juju.SecretID(h.st.SecretID)
		content, err := sec.Get(ctx, id, juju.SecretGetOptions{})
		if err == nil {
			return id, content, nil
		}
	}
	if h.leader {
		info, err := sec.InfoByLabel(ctx, authSecretName)
		if err != nil {
			return "", nil, err
		}
		content, err := sec.Get(ctx, info.ID, juju.SecretGetOptions{})
		return info.ID, content, err
	}
	content, err := sec.Get(ctx, "", juju.SecretGetOptions{Label: authSecretName})
	return "", content, err
}

// install writes the auth key file and (re)starts munged when it changed (auth/munge), or
// restarts a running slurmctld (auth/slurm, 23.11 and later).
func (ak authKey) install(ctx context.Context, feat slurm.Features, key []byte, keyID string) error {
	h := ak.h
	c := h.c
	owner := mungeUser
	mode := fs.FileMode(0o400)
	if !feat.Munge {
		owner, mode = slurmUser, 0o600
	}
	uid, gid, err := c.UserIDs(owner)
	if err != nil {
		return err
	}
	changed, err := authkey.Write(ctx, c.Path(feat.AuthKeyFile), key, authkey.Options{Mode: mode, UID: uid, GID: gid})
	if err != nil {
		return err
	}
	if changed {
		h.logf(ctx, juju.LevelInfo, "wrote auth key %s (key id %s)", feat.AuthKeyFile, keyID)
	}
	h.st.KeyID = keyID
	h.pub.SecretID, h.pub.KeyID, h.pub.KeyHash = h.st.SecretID, keyID, authkey.Hash(key)
	return ak.ensureService(ctx, feat, changed)
}

// ensureService makes sure the service using the auth key runs with it: munged before
// Slurm 23.11 ((re)started when changed or not running); from 23.11 slurmctld itself,
// restarted when the key changed.
func (ak authKey) ensureService(ctx context.Context, feat slurm.Features, changed bool) error {
	h := ak.h
	if !feat.Munge {
		if changed && h.c.running(ctx) {
			if err := h.services().Restart(ctx, svcSlurmctld); err != nil {
				return fmt.Errorf("cannot restart slurmctld: %w", err)
			}
		}
		return nil
	}
	return ak.ensureMunged(ctx, changed)
}

// ensureMunged makes sure munged runs, (re)starting it when restart is set (the key changed)
// or it is not running, then waits (bounded by MungeTimeout) until it answers. A running
// munged with an unchanged key is left alone.
func (ak authKey) ensureMunged(ctx context.Context, restart bool) error {
	h := ak.h
	c := h.c
	return c.Munge(c.Services, c.MungeService, c.Slurm).Ensure(ctx, restart)
}

// newKey returns keySize random bytes.
func newKey(rand io.Reader) ([]byte, error) {
	key := make([]byte, keySize)
	if _, err := io.ReadFull(rand, key); err != nil {
		return nil, fmt.Errorf("cannot generate auth key: %w", err)
	}
	return key, nil
}
