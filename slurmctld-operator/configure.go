package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// startWait bounds the wait for a freshly started slurmctld to answer `scontrol ping`.
const startWait = 30 * time.Second

// configure brings the controller to its configured state: auth key, munged, slurm.conf,
// partitions, slurmctld running, port open, ControllerData published. It runs on
// leader-elected, config-changed, start and upgrade-charm.
func (c *Charm) configure(ctx context.Context, hc *juju.HookContext) error {
	h, err := c.begin(ctx, hc)
	if err != nil {
		return err
	}
	if h.cfgErr != nil || h.clusterNameError() != nil || !h.leader {
		// Nothing is changed: a running slurmctld keeps its configuration.
		return h.setStatus(ctx)
	}
	if err := h.ensureController(ctx); err != nil {
		return err
	}
	if err := h.publishAll(ctx); err != nil {
		return err
	}
	if err := h.save(ctx); err != nil {
		return err
	}
	return h.setStatus(ctx)
}

// ensureController writes the key, slurm.conf and partitions and makes sure munged and
// slurmctld run, reconfiguring a running slurmctld once if its configuration changed.
func (h *hook) ensureController(ctx context.Context) error {
	c := h.c
	feat, err := h.features(ctx)
	if err != nil {
		return err
	}
	key, keyID, err := h.ensureAuthSecret(ctx)
	if err != nil {
		return err
	}
	if err := h.installKey(ctx, feat, key, keyID); err != nil {
		return err
	}
	confChanged, err := h.writeSlurmConf(ctx, feat)
	if err != nil {
		return err
	}
	partsChanged, err := h.syncPartitions(ctx, nil)
	if err != nil {
		return err
	}
	if h.running(ctx) {
		if confChanged || partsChanged {
			if err := h.reconfigure(ctx); err != nil {
				return err
			}
		}
	} else if err := h.startSlurmctld(ctx); err != nil {
		return err
	}
	h.st.ClusterName = h.cfg.ClusterName
	return c.openPort(ctx, h.hc)
}

func (c *Charm) openPort(ctx context.Context, hc *juju.HookContext) error {
	if err := hc.Ports.Open(ctx, juju.Port{Number: SlurmctldPort, Protocol: "tcp"}); err != nil {
		return fmt.Errorf("cannot open port %d: %w", SlurmctldPort, err)
	}
	return nil
}

// features are the version-dependent choices for the installed Slurm. The version
// (`slurmctld -V`, which needs no slurm.conf) is cached in the state and read again on
// upgrade-charm.
func (h *hook) features(ctx context.Context) (slurm.Features, error) {
	if h.st.SlurmVersion != "" && h.hc.Event.Kind != juju.UpgradeCharm {
		if v, err := slurm.ParseVersion(h.st.SlurmVersion); err == nil {
			return slurm.FeaturesOf(v), nil
		}
	}
	v, err := (&slurm.Client{Runner: h.c.Slurm}).SlurmctldVersion(ctx)
	if err != nil {
		return slurm.Features{}, fmt.Errorf("cannot find the Slurm version: %w", err)
	}
	h.st.SlurmVersion = v.String()
	return slurm.FeaturesOf(v), nil
}

// ensureAuthSecret returns the auth key, creating the secret (leader only) when there is none.
func (h *hook) ensureAuthSecret(ctx context.Context) ([]byte, string, error) {
	hc := h.hc
	id, content, err := h.readAuthSecret(ctx)
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
	key, err := h.c.newKey()
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
	rels, err := hc.Relations.IDs(ctx, slurmd.RequirerEndpoint)
	if err != nil {
		return nil, "", fmt.Errorf("cannot list slurmd relations: %w", err)
	}
	for _, rel := range rels {
		if err := hc.Secrets.Grant(ctx, id, rel, ""); err != nil {
			return nil, "", fmt.Errorf("cannot grant auth key secret to %s: %w", rel, err)
		}
	}
	return key, "1", nil
}

// readAuthSecret reads the auth key secret by its remembered id, else by label.
func (h *hook) readAuthSecret(ctx context.Context) (juju.SecretID, map[string]string, error) {
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

// newKey returns keySize random bytes.
func (c *Charm) newKey() ([]byte, error) {
	key := make([]byte, keySize)
	if _, err := io.ReadFull(c.Rand, key); err != nil {
		return nil, fmt.Errorf("cannot generate auth key: %w", err)
	}
	return key, nil
}

// installKey writes the auth key file and (re)starts munged when it changed (auth/munge), or
// restarts a running slurmctld (auth/slurm, 23.11 and later).
func (h *hook) installKey(ctx context.Context, feat slurm.Features, key []byte, keyID string) error {
	c := h.c
	owner := mungeUser
	mode := fs.FileMode(0o400)
	if !feat.Munge {
		owner, mode = slurmUser, 0o600
	}
	uid, gid, err := c.lookupUser(owner)
	if err != nil {
		return err
	}
	path := c.path(feat.AuthKeyFile)
	old, err := os.ReadFile(path)
	changed := err != nil || !bytes.Equal(old, key)
	if changed {
		if err := os.MkdirAll(c.path(dirOf(feat.AuthKeyFile)), 0o755); err != nil {
			return fmt.Errorf("cannot write auth key: %w", err)
		}
		// Remove first: WriteFile keeps an existing file's owner and mode.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot write auth key: %w", err)
		}
		if err := slurmconf.WriteFile(ctx, path, key, slurmconf.EditOptions{Mode: mode, Owner: &slurmconf.Owner{UID: uid, GID: gid}}); err != nil {
			return fmt.Errorf("cannot write auth key %s: %w", feat.AuthKeyFile, err)
		}
		h.logf(ctx, juju.LevelInfo, "wrote auth key %s (key id %s)", feat.AuthKeyFile, keyID)
	}
	h.st.KeyID = keyID
	if !feat.Munge {
		if changed && h.running(ctx) {
			return c.restart(ctx, svcSlurmctld)
		}
		return nil
	}
	m := c.Services
	spec := service.Spec{Name: c.MungeService, Summary: "MUNGE authentication service", Command: []string{"/usr/sbin/munged", "--foreground"}, User: mungeUser}
	if err := m.Configure(ctx, spec); err != nil {
		return fmt.Errorf("cannot configure %s: %w", c.MungeService, err)
	}
	if err := m.Enable(ctx, c.MungeService); err != nil {
		return fmt.Errorf("cannot enable %s: %w", c.MungeService, err)
	}
	st, err := m.Status(ctx, c.MungeService)
	if err != nil {
		return fmt.Errorf("cannot check %s: %w", c.MungeService, err)
	}
	if changed || st.State != service.StateActive {
		return c.restart(ctx, c.MungeService)
	}
	return nil
}

func (c *Charm) restart(ctx context.Context, name string) error {
	if err := c.Services.Restart(ctx, name); err != nil {
		return fmt.Errorf("cannot restart %s: %w", name, err)
	}
	return nil
}

// startSlurmctld defines, enables and starts slurmctld and waits (bounded) until it answers.
func (h *hook) startSlurmctld(ctx context.Context) error {
	c := h.c
	if err := h.progress(ctx, "starting slurmctld"); err != nil {
		return err
	}
	spec := service.Spec{Name: svcSlurmctld, Summary: "Slurm controller", Command: []string{"/usr/sbin/slurmctld", "-D", "-f", confPath}}
	if err := c.Services.Configure(ctx, spec); err != nil {
		return fmt.Errorf("cannot configure slurmctld: %w", err)
	}
	if err := c.Services.Enable(ctx, svcSlurmctld); err != nil {
		return fmt.Errorf("cannot enable slurmctld: %w", err)
	}
	if err := c.Services.Start(ctx, svcSlurmctld); err != nil {
		return fmt.Errorf("cannot start slurmctld (see %s): %w", slurmctldLog, err)
	}
	wctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	for {
		_, err := c.client().Ping(wctx)
		if err == nil {
			h.logf(ctx, juju.LevelInfo, "slurmctld started")
			return nil
		}
		if werr := wait(wctx, c.poll()); werr != nil {
			return fmt.Errorf("slurmctld started but does not answer (see %s): %w", slurmctldLog, err)
		}
	}
}

// reconfigure runs one `scontrol reconfigure`.
func (h *hook) reconfigure(ctx context.Context) error {
	if err := h.progress(ctx, "reconfiguring"); err != nil {
		return err
	}
	if err := h.c.client().Reconfigure(ctx); err != nil {
		return fmt.Errorf("cannot reconfigure slurmctld: %w", err)
	}
	h.logf(ctx, juju.LevelInfo, "reconfigured slurmctld")
	return nil
}

// publishAll grants the auth secret to and publishes ControllerData on every slurmd relation.
func (h *hook) publishAll(ctx context.Context) error {
	rels, err := h.hc.Relations.IDs(ctx, slurmd.RequirerEndpoint)
	if err != nil {
		return fmt.Errorf("cannot list slurmd relations: %w", err)
	}
	for _, rel := range rels {
		if err := h.publish(ctx, rel); err != nil {
			return err
		}
	}
	return nil
}

// publish writes ControllerData to relation rel (leader only).
func (h *hook) publish(ctx context.Context, rel juju.RelationID) error {
	addr, err := h.ingress(ctx)
	if err != nil {
		return err
	}
	bag := slurmd.ControllerBag{
		Controllers:  []string{hostPort(addr, SlurmctldPort)},
		AuthSecretID: h.st.SecretID,
		ClusterName:  h.cfg.ClusterName,
	}
	if err := (slurmd.Requirer{HookContext: h.hc}).PublishController(ctx, rel, bag); err != nil {
		return fmt.Errorf("cannot publish controller data on %s: %w", rel, err)
	}
	return nil
}

func hostPort(addr string, port int) string {
	if bytes.ContainsRune([]byte(addr), ':') {
		return "[" + addr + "]:" + strconv.Itoa(port)
	}
	return addr + ":" + strconv.Itoa(port)
}

func dirOf(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}
