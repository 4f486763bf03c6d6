package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/charmed-slurm/operators/libs/apt"
)

// programs are the commands the charm needs and the Debian packages providing them.
var programs = []apt.Need{
	{Binary: "slurmctld", Package: "slurmctld"},
	{Binary: "scontrol", Package: "slurm-client"},
	{Binary: "squeue", Package: "slurm-client"},
	{Binary: "scancel", Package: "slurm-client"},
	{Binary: "munged", Package: "munge"},
}

// install installs Slurm and munge with apt when they are missing and creates the
// directories slurmctld needs.
func (h *hook) install(ctx context.Context) error {
	c := h.c
	pkgs, err := apt.Missing(c.LookPath, programs)
	if err != nil {
		return err
	}
	if len(pkgs) > 0 {
		if err := h.progress(ctx, "installing "+strings.Join(pkgs, " ")); err != nil {
			return err
		}
		if err := apt.Install(ctx, c.Slurm, pkgs); err != nil {
			return err
		}
	}
	if err := c.makeDirs(); err != nil {
		return err
	}
	return h.progress(ctx, "installed, waiting for leadership and configuration")
}

// makeDirs creates slurm.conf's directory, the state save location and the log directory,
// the last two owned by the slurm user.
func (c *Charm) makeDirs() error {
	uid, gid, err := c.UserIDs(slurmUser)
	if err != nil {
		return err
	}
	for _, d := range []struct {
		path  string
		mode  os.FileMode
		owned bool
	}{{confDir, 0o755, false}, {stateSaveDir, 0o750, true}, {logDir, 0o755, true}} {
		p := c.Path(d.path)
		if err := os.MkdirAll(p, d.mode); err != nil {
			return fmt.Errorf("cannot create %s: %w", d.path, err)
		}
		if d.owned {
			if err := os.Chown(p, uid, gid); err != nil {
				return fmt.Errorf("cannot give %s to user %s: %w", d.path, slurmUser, err)
			}
		}
	}
	return nil
}
