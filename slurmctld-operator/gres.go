package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/gres"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// Generic resources (GRES, docs/gres.md). The controller never holds per-node GRES data: each
// node's Gres= is in its own slurmd --conf and its device files in its own
// /etc/slurm/gres.local.conf, which the gres.conf slurmctld serves includes by absolute path
// (slurmctld pushes only relative includes, so every host reads its own). The controller
// manages only slurm.conf's GresTypes: gpu from the start (so GPU nodes never need a
// restart), plus every name a slurmd application declares.

// Paths of the GRES configuration (below Charm.Root).
const (
	gresConfPath  = "/etc/slurm/gres.conf"
	gresLocalPath = "/etc/slurm/gres.local.conf"
)

// gresConf is the gres.conf slurmctld serves to every configless slurmd.
const gresConf = `# gres.conf of the Slurm cluster, managed by the slurmctld charm.
# Every node's devices are in its own /etc/slurm/gres.local.conf, written by the slurmd charm.
Include ` + gresLocalPath + `
`

// gresLocalConf is the controller's own gres.local.conf: slurmctld reads gres.conf too and
// waits a minute for a missing include.
const gresLocalConf = "# No generic resources on the controller; written by the slurmctld charm.\n"

// gresTypes is slurm.conf's GresTypes value: gpu, then the declared names, sorted.
func (s *charmState) gresTypes() string {
	return strings.Join(s.gresNames(), ",")
}

// gresNames are the names GresTypes lists: gpu, then the declared names, sorted.
func (s *charmState) gresNames() []string {
	names := []string{gres.GPU}
	for _, n := range s.GresTypes {
		if n != gres.GPU {
			names = append(names, n)
		}
	}
	return names
}

// gresRunning are the names the running slurmctld manages (published to the slurmd
// applications): those it was last started with, or while a restart is under way those it
// ran with before (units start with a new name once slurmctld answers with it); none before
// the first start.
func (s *charmState) gresRunning() []string {
	v := s.GresRunning
	if s.Restart != nil {
		v = s.Restart.GresBefore
	}
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// addGresTypes adds the names an application declares to the state (names never leave
// GresTypes: removing one needs a restart and would strip the resource from nodes still
// registered with it). It reports whether a name was new.
func (s *charmState) addGresTypes(names []string) bool {
	added := false
	for _, n := range names {
		if n != gres.GPU && !slices.Contains(s.GresTypes, n) {
			s.GresTypes = append(s.GresTypes, n)
			added = true
		}
	}
	slices.Sort(s.GresTypes)
	return added
}

// writeGresConf writes gres.conf (its include line) when it differs and an empty
// gres.local.conf when there is none, before slurmctld first starts. It reports whether it
// wrote gres.conf.
func writeGresConf(ctx context.Context, s charm.Settings) (bool, error) {
	if err := os.MkdirAll(s.Path(confDir), 0o755); err != nil {
		return false, fmt.Errorf("cannot create %s: %w", confDir, err)
	}
	if _, err := os.Stat(s.Path(gresLocalPath)); err != nil {
		if err := slurmconf.WriteFile(ctx, s.Path(gresLocalPath), []byte(gresLocalConf), slurmconf.EditOptions{Mode: 0o644}); err != nil {
			return false, fmt.Errorf("cannot write %s: %w", gresLocalPath, err)
		}
	}
	if old, err := os.ReadFile(s.Path(gresConfPath)); err == nil && string(old) == gresConf {
		return false, nil
	}
	if err := slurmconf.WriteFile(ctx, s.Path(gresConfPath), []byte(gresConf), slurmconf.EditOptions{Mode: 0o644}); err != nil {
		return false, fmt.Errorf("cannot write %s: %w", gresConfPath, err)
	}
	return true, nil
}

// gresRestartNeeded reports whether the running slurmctld manages other GRES names than
// slurm.conf lists: GresTypes changes need a restart (a reconfigure logs "GresPlugins changed
// ... ignored" on 22.05).
func (s *charmState) gresRestartNeeded() bool {
	return s.GresRunning != s.gresTypes()
}
