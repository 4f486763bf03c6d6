package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/charmed-slurm/operators/libs/apt"
	"github.com/charmed-slurm/operators/libs/authkey"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// packages are the apt packages providing the programs the charm runs. The MySQL storage
// plugin is a package of its own on Debian.
var packages = []apt.Need{
	{Binary: "slurmdbd", Package: "slurmdbd"},
	{Binary: "munged", Package: "munge"},
}

// mysqlPlugin is the accounting_storage/mysql plugin Debian ships apart from slurmdbd.
var mysqlPlugins = []string{
	"/usr/lib/x86_64-linux-gnu/slurm-wlm/accounting_storage_mysql.so",
	"/usr/lib/aarch64-linux-gnu/slurm-wlm/accounting_storage_mysql.so",
}

// install installs what is missing and creates slurmdbd's log directory.
func (h *hook) install(ctx context.Context) error {
	c := h.c
	missing, err := apt.Missing(c.LookPath, packages)
	if err != nil {
		return err
	}
	if !h.hasMySQLPlugin() {
		missing = append(missing, "slurm-wlm-mysql-plugin")
	}
	if len(missing) > 0 {
		if err := h.k.SetUnitStatus(ctx, juju.StatusMaintenance, "installing "+strings.Join(missing, ", ")); err != nil {
			return err
		}
		if err := apt.Install(ctx, c.Slurm, missing); err != nil {
			return err
		}
	}
	uid, gid, err := c.UserIDs(SlurmUser)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Path(LogDir), 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", LogDir, err)
	}
	if err := os.Chown(c.Path(LogDir), uid, gid); err != nil {
		return fmt.Errorf("cannot give %s to %s: %w", LogDir, SlurmUser, err)
	}
	return h.k.SetUnitStatus(ctx, juju.StatusWaiting, "installed, waiting for the database and slurmctld relations")
}

func (h *hook) hasMySQLPlugin() bool {
	for _, p := range mysqlPlugins {
		if _, err := os.Stat(h.c.Path(p)); err == nil {
			return true
		}
	}
	return false
}

// reconcile brings slurmdbd to what the configuration and both relations ask, then sets the
// status (see the package documentation for the steps).
func (h *hook) reconcile(ctx context.Context) error {
	if err := h.serve(ctx); err != nil {
		return err
	}
	return h.setStatus(ctx)
}

// serve runs the steps up to the publication; a step that cannot go on sets h.problem or
// h.waiting and returns nil, leaving what runs as it is.
func (h *hook) serve(ctx context.Context) error {
	if !h.leader {
		return nil
	}
	if h.cfgErr != nil {
		h.problem = h.cfgErr.Error()
		return nil
	}
	target, ok, err := h.database(ctx)
	if err != nil || !ok {
		return err
	}
	rel, ctl, ok, err := h.controller(ctx)
	if err != nil || !ok {
		return err
	}
	own, err := h.version(ctx)
	if err != nil {
		return err
	}
	if !h.checkVersion(own, ctl) {
		return nil
	}
	feat := slurm.FeaturesOf(ctl.SlurmVersion)
	keyChanged, err := h.ensureKey(ctx, feat, ctl)
	if err != nil {
		return err
	}
	if _, ok := h.probe(ctx, target); !ok {
		return nil
	}
	host, err := h.c.Hostname()
	if err != nil {
		return fmt.Errorf("cannot find the host name: %w", err)
	}
	content, err := renderConf(host, feat, target, h.extra)
	var ce *ConfigError
	switch {
	case errors.As(err, &ce):
		h.problem = err.Error()
		return nil
	case errors.Is(err, errBadPassword):
		h.problem = "database relation: " + err.Error()
		return nil
	case err != nil:
		return err
	}
	changed, _, err := h.writeConf(ctx, content, target.Credentials.Password.Reveal())
	var sce *slurm.ConfigError
	switch {
	case errors.As(err, &sce):
		h.problem = "slurmdbd-conf-parameters: " + sce.Refusal("slurmdbd")
		h.logf(ctx, juju.LevelWarning, "slurmdbd.conf left as it was: %s", h.problem)
		return nil
	case err != nil:
		return err
	}
	keyData, err := os.ReadFile(h.c.Path(feat.AuthKeyFile))
	if err != nil {
		return fmt.Errorf("cannot read the auth key: %w", err)
	}
	want := Applied{ConfHash: hash(content), KeyHash: authkey.Hash(keyData), KeyID: ctl.AuthKeyID, Database: target.String()}
	st, err := h.c.Services.Status(ctx, Service)
	if err != nil && !errors.Is(err, service.ErrUnknownService) {
		return fmt.Errorf("cannot read slurmdbd's state: %w", err)
	}
	running := err == nil && st.State == service.StateActive
	switch {
	case changed || keyChanged || h.st.Applied == nil || *h.st.Applied != want || (err == nil && st.State == service.StateFailed):
		// A new configuration or key, the first start, or a slurmdbd its supervisor gave up on.
		if err := h.startSlurmdbd(ctx, running); err != nil {
			return err
		}
		h.st.Applied = &want
		h.logf(ctx, juju.LevelInfo, "slurmdbd %s serving cluster %s from %s", own, ctl.ClusterName, target)
	case !running && err == nil && st.State == service.StateInactive:
		// Stopped by an operator (the supervisor restarts a slurmdbd that fails): left so.
		h.problem = "slurmdbd was stopped outside the charm; start it again (systemctl start slurmdbd, or pebble start slurmdbd)"
		return nil
	}
	return h.publish(ctx, rel, own)
}

// version is this slurmdbd's Slurm version, from the state or read with a minimal candidate
// configuration when there is none yet (slurmdbd -V reads its configuration first).
func (h *hook) version(ctx context.Context) (slurm.Version, error) {
	if v, err := slurm.ParseVersion(h.st.Version); err == nil && h.hc.Event.Kind != juju.UpgradeCharm {
		return v, nil
	}
	dir, err := os.MkdirTemp("", "slurmdbd-version-")
	if err != nil {
		return slurm.Version{}, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(dir+"/slurmdbd.conf", []byte("StorageType=accounting_storage/mysql\n"), 0o600); err != nil {
		return slurm.Version{}, err
	}
	v, err := h.c.client().CheckDbdConfig(ctx, dir)
	if err != nil {
		return slurm.Version{}, fmt.Errorf("cannot find slurmdbd's version: %w", err)
	}
	h.st.Version = v.String()
	return v, nil
}

// stop (machine shutdown or unit removal) leaves slurmdbd to its supervisor: enabled, it
// comes back with the machine; on removal the machine goes with it.
func (h *hook) stop(ctx context.Context) error { return nil }
