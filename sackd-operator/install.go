package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/charmed-slurm/operators/libs/apt"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// packages are the apt packages that provide the programs the charm runs.
var packages = []apt.Need{
	{Binary: "sackd", Package: "sackd"},
	{Binary: "sinfo", Package: "slurm-client"},
}

// checkRelease finds this machine's Slurm release and whether it can be a login node, and
// records it in the state. With install it installs sackd and slurm-client when they are
// missing and the release has sackd. The version is the Debian package's: Slurm's own
// clients print theirs only once they have a configuration.
func (h *hook) checkRelease(ctx context.Context, install bool) error {
	missing, err := apt.Missing(h.c.lookPath, packages)
	if err != nil {
		return err
	}
	rel, err := h.release(ctx, missing, install)
	if err != nil {
		return err
	}
	if rel.Refused != "" {
		h.logf(ctx, juju.LevelWarning, "%s", rel.Refused)
	} else if install && len(missing) > 0 {
		if err := h.progress(ctx, "installing "+strings.Join(missing, ", ")); err != nil {
			return err
		}
		if err := apt.Install(ctx, h.c.Slurm, missing); err != nil {
			return err
		}
		if rel.Version == "" {
			if rel.Version, err = h.packageVersion(ctx, "sackd"); err != nil {
				return err
			}
		}
	}
	h.st.Release = &rel
	return nil
}

// release decides what this machine is, given the packages whose programs are missing: the
// installed sackd's release; else the installed Slurm's (slurm-client), which must be 23.11 or
// later and have a sackd package apt offers; else, when install may fetch packages, what apt
// offers. A release too old, or with no sackd package, is refused.
func (h *hook) release(ctx context.Context, missing []string, install bool) (Release, error) {
	r := h.c.Slurm
	v, err := apt.Installed(ctx, r, "sackd")
	if err != nil || v != "" {
		if err != nil {
			return Release{}, err
		}
		return releaseOf(v, "installed here")
	}
	client, err := apt.Installed(ctx, r, "slurm-client")
	if err != nil {
		return Release{}, err
	}
	if client != "" {
		rel, err := releaseOf(client, "installed here")
		if err != nil || rel.Refused != "" {
			return rel, err
		}
	}
	if len(missing) == 0 {
		return Release{}, nil // programs with no package: a local build, judged by its sackd
	}
	if !install {
		return Release{Refused: fmt.Sprintf("%s not installed: run upgrade-charm to install it", strings.Join(missing, ", "))}, nil
	}
	if err := apt.Update(ctx, r); err != nil {
		return Release{}, err
	}
	cand, err := apt.Candidate(ctx, r, "sackd")
	if err != nil {
		return Release{}, err
	}
	if cand != "" {
		return releaseOf(cand, "offered by apt")
	}
	if client != "" {
		rel, err := releaseOf(client, "installed here")
		if err != nil {
			return Release{}, err
		}
		rel.Refused = fmt.Sprintf("Slurm %s is installed here but apt offers no sackd package: a login node needs sackd", rel.Version)
		return rel, nil
	}
	if cand, err = apt.Candidate(ctx, r, "slurm-client"); err != nil {
		return Release{}, err
	}
	if cand != "" {
		rel, err := releaseOf(cand, "offered by apt")
		if err != nil || rel.Refused != "" {
			return rel, err
		}
		rel.Refused = fmt.Sprintf("apt offers Slurm %s but no sackd package: a login node needs sackd", rel.Version)
		return rel, nil
	}
	return Release{Refused: "apt offers no Slurm: a login node needs sackd, from Slurm 23.11 (Debian 13) or later"}, nil
}

// releaseOf is the release of Slurm package version pkgVersion ("22.05.8-4+deb12u3"), found
// where says.
func releaseOf(pkgVersion, where string) (Release, error) {
	v, err := slurm.ParseVersion(pkgVersion)
	if err != nil {
		return Release{}, fmt.Errorf("cannot read the Slurm version of package version %q: %w", pkgVersion, err)
	}
	if !slurm.FeaturesOf(v).Sackd {
		return Release{Version: v.String(), Refused: fmt.Sprintf("Slurm %s (%s) has no sackd: a login node needs Slurm 23.11 (Debian 13) or later", v, where)}, nil
	}
	return Release{Version: v.String()}, nil
}

// packageVersion is the Slurm release of installed package pkg, "" when it is not installed.
func (h *hook) packageVersion(ctx context.Context, pkg string) (string, error) {
	v, err := apt.Installed(ctx, h.c.Slurm, pkg)
	if err != nil || v == "" {
		return "", err
	}
	r, err := releaseOf(v, "installed here")
	return r.Version, err
}
