package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/charmed-slurm/operators/libs/juju"
)

// programs are the commands the charm needs and the Debian packages providing them.
var programs = []struct{ prog, pkg string }{
	{"slurmctld", "slurmctld"},
	{"scontrol", "slurm-client"},
	{"squeue", "slurm-client"},
	{"scancel", "slurm-client"},
	{"munged", "munge"},
}

// install installs Slurm and munge with apt when they are missing and creates the
// directories slurmctld needs.
func (c *Charm) install(ctx context.Context, hc *juju.HookContext) error {
	var pkgs []string
	for _, p := range programs {
		if _, err := c.LookPath(p.prog); err != nil && !slices.Contains(pkgs, p.pkg) {
			pkgs = append(pkgs, p.pkg)
		}
	}
	if len(pkgs) > 0 {
		if err := hc.Status.SetUnit(ctx, juju.StatusMaintenance, "installing "+strings.Join(pkgs, " ")); err != nil {
			return err
		}
		if err := c.apt(ctx, pkgs); err != nil {
			return err
		}
	}
	if err := c.makeDirs(); err != nil {
		return err
	}
	return hc.Status.SetUnit(ctx, juju.StatusMaintenance, "installed, waiting for leadership and configuration")
}

// apt installs pkgs, refreshing the package lists once if the first attempt fails.
func (c *Charm) apt(ctx context.Context, pkgs []string) error {
	env := []string{"DEBIAN_FRONTEND=noninteractive"}
	install := append([]string{"apt-get", "install", "-y", "--no-install-recommends"}, pkgs...)
	out, err := c.Slurm.Run(ctx, install, env)
	if err == nil && out.ExitCode == 0 {
		return nil
	}
	if out, err := c.Slurm.Run(ctx, []string{"apt-get", "update"}, env); err != nil || out.ExitCode != 0 {
		return fmt.Errorf("cannot install %s: apt-get update failed: %v%s", strings.Join(pkgs, " "), err, out.Stderr)
	}
	out, err = c.Slurm.Run(ctx, install, env)
	if err != nil {
		return fmt.Errorf("cannot install %s: %w", strings.Join(pkgs, " "), err)
	}
	if out.ExitCode != 0 {
		return fmt.Errorf("cannot install %s: apt-get exited with %d: %s", strings.Join(pkgs, " "), out.ExitCode, strings.TrimSpace(string(out.Stderr)))
	}
	return nil
}

// makeDirs creates slurm.conf's directory, the state save location and the log directory,
// the last two owned by the slurm user.
func (c *Charm) makeDirs() error {
	uid, gid, err := c.lookupUser(slurmUser)
	if err != nil {
		return err
	}
	for _, d := range []struct {
		path  string
		mode  os.FileMode
		owned bool
	}{{confDir, 0o755, false}, {stateSaveDir, 0o750, true}, {logDir, 0o755, true}} {
		p := c.path(d.path)
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
