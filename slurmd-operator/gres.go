package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// Generic resources (GRES) of the node (docs/gres.md). The unit detects its NVIDIA GPUs
// (libs/gres: device files and nvidia-smi) on install, upgrade-charm and the detect-gres
// action, merges them with the application's generic-resources option and node-config's
// Gres= (buildNode), and gives slurmd both halves Slurm needs before slurmd first starts:
//
//   - Gres=<name>:<type>:<n> in its --conf, so that the node's very first record carries
//     the resources (no Gres=(null) window);
//   - one line per device in GresLocalConf, which the gres.conf the controller serves
//     includes by absolute path (each host reads its own).
//
// Nothing about a node's resources travels in the relation; the controller publishes the
// names it manages (GresTypes), and a node whose Gres= names another one waits rather than
// register without it for good.

// GresLocalConf is this node's own gres.conf lines; every slurmd host must have the file
// (the controller's gres.conf includes it): empty of lines on a CPU-only node.
const GresLocalConf = "/etc/slurm/gres.local.conf"

// genericResources are the node's generic resources: detected on the machine (cached in
// State.Gres), declared by the generic-resources option, and written to GresLocalConf.
type genericResources struct{ h *hook }

// detect detects this machine's GPUs. The notes go to the unit's log, once per detection.
func (r genericResources) detect(ctx context.Context) (*GresFacts, error) {
	det, err := r.h.c.gresDetector().Detect(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot detect GPUs: %w", err)
	}
	f := &GresFacts{Detected: det.Resources(), Notes: det.Notes}
	for _, n := range f.Notes {
		r.h.logf(ctx, juju.LevelInfo, "GPU detection: %s", n)
	}
	if len(f.Detected) > 0 {
		r.h.logf(ctx, juju.LevelInfo, "detected %s", gresSummary(f.Detected))
	}
	return f, nil
}

// facts returns the detection cached in the state, detecting (and caching) when there is
// none.
func (r genericResources) facts(ctx context.Context) (*GresFacts, error) {
	st := r.h.st
	if st.Gres != nil {
		return st.Gres, nil
	}
	f, err := r.detect(ctx)
	if err != nil {
		return nil, err
	}
	st.Gres = f
	return f, nil
}

// build is the node's configuration (buildNode) with the machine's facts mi and node-config
// nodeConfig, from the cached detection and the generic-resources option. An invalid option
// counts as no declaration here: it blocks the unit through the configuration check, and
// the node keeps running as it was.
func (r genericResources) build(ctx context.Context, mi slurm.MachineInfo, nodeConfig string) (nodeConf, error) {
	var version string
	if f := r.h.st.Facts; f != nil {
		version = f.Version
	}
	return r.buildFor(ctx, mi, nodeConfig, version)
}

// buildFor is build for the Slurm release version ("" before it is known: nothing is said
// of GPU autodetection; the file is written again with it before slurmd starts).
func (r genericResources) buildFor(ctx context.Context, mi slurm.MachineInfo, nodeConfig, version string) (nodeConf, error) {
	f, err := r.facts(ctx)
	if err != nil {
		return nodeConf{}, err
	}
	declared, err := parseGenericResources(r.h.cfg.GenericResources)
	if err != nil {
		declared = nil
	}
	h := r.h
	in := nodeInputs{Machine: mi, App: h.hc.Event.App, Node: h.node, NodeConfig: nodeConfig, Detected: f.Detected, Declared: declared}
	if v, err := slurm.ParseVersion(version); err == nil {
		in.GresOptions.AutoDetectOff = slurm.FeaturesOf(v).GPUAutoDetect
	}
	return buildNode(in)
}

// redetect (install, upgrade-charm) detects the machine's GPUs afresh and writes
// GresLocalConf with the node's lines for Slurm release version before any slurmd can start:
// the gres.conf the controller serves includes it, and a slurmd that cannot read it never
// registers. A running node's lines are left for the registrar, which re-registers it when
// they changed.
func (r genericResources) redetect(ctx context.Context, version string) error {
	h := r.h
	h.st.Gres = nil
	nc, err := r.buildFor(ctx, slurm.MachineInfo{}, h.st.NodeConfig, version)
	if err != nil {
		return err
	}
	if h.st.Applied != nil {
		if _, err := os.Stat(h.c.Path(GresLocalConf)); err == nil {
			return nil
		}
	}
	return r.writeConf(ctx, nc.GresConf)
}

// writeConf writes content (the node's gres.conf lines, a comment only for none) to
// GresLocalConf when the file differs.
func (r genericResources) writeConf(ctx context.Context, content string) error {
	path := r.h.c.Path(GresLocalConf)
	if old, err := os.ReadFile(path); err == nil && string(old) == content {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", filepath.Dir(GresLocalConf), err)
	}
	if err := slurmconf.WriteFile(ctx, path, []byte(content), slurmconf.EditOptions{Mode: 0o644}); err != nil {
		return fmt.Errorf("cannot write %s: %w", GresLocalConf, err)
	}
	return nil
}
