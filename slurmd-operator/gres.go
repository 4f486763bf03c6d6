package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/gres"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// Generic resources (GRES) of the node (docs/gres.md). The unit detects its NVIDIA GPUs
// (libs/gres: device files and nvidia-smi) on install, upgrade-charm and the detect-gres
// action, merges them with the application's generic-resources option and node-config's
// Gres=, and gives slurmd both halves Slurm needs before slurmd first starts:
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

// GresFacts are the generic resources detected on this machine (State.Gres).
type GresFacts struct {
	// Detected are the GPUs found, grouped by model (gres.Detection.Resources).
	Detected gres.Set `json:"detected,omitempty"`
	// Notes say what detection left out or could not tell (no nvidia-smi: GPUs untyped).
	Notes []string `json:"notes,omitempty"`
}

// gresDetector finds this machine's GPUs below Root, nvidia-smi bounded by the charm's
// per-command bound.
func (c *Charm) gresDetector() gres.Detector {
	return gres.Detector{Runner: c.Slurm, Root: c.Path("/"), Timeout: charm.Or(c.CommandTimeout, slurm.DefaultTimeout)}
}

// detectGres detects this machine's GPUs. The notes go to the unit's log, once per
// detection.
func (h *hook) detectGres(ctx context.Context) (*GresFacts, error) {
	det, err := h.c.gresDetector().Detect(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot detect GPUs: %w", err)
	}
	f := &GresFacts{Detected: det.Resources(), Notes: det.Notes}
	for _, n := range f.Notes {
		h.logf(ctx, juju.LevelInfo, "GPU detection: %s", n)
	}
	if len(f.Detected) > 0 {
		h.logf(ctx, juju.LevelInfo, "detected %s", gresSummary(f.Detected))
	}
	return f, nil
}

// gresFacts returns the detection cached in the state, detecting (and caching) when there
// is none.
func (h *hook) gresFacts(ctx context.Context) (*GresFacts, error) {
	if h.st.Gres != nil {
		return h.st.Gres, nil
	}
	f, err := h.detectGres(ctx)
	if err != nil {
		return nil, err
	}
	h.st.Gres = f
	return f, nil
}

// parseGenericResources reads the generic-resources option; errors name the option.
func parseGenericResources(s string) (gres.Set, error) {
	set, err := gres.ParseDeclaration(s)
	if err != nil {
		return nil, fmt.Errorf("generic-resources: %w", err)
	}
	return set, nil
}

// nodeGres is what a node runs with: the gres.conf lines of its devices and the Gres=
// value of its --conf.
type nodeGres struct {
	// Lines are the detected resources with the declared ones merged in (gres.Merge): the
	// node's gres.conf lines.
	Lines gres.Set
	// Gres is the --conf Gres= value: Lines without their files, unless node-config's Gres=
	// overrides it (Slurm keeps the first lines of a lower count and ignores the rest).
	Gres gres.Set
}

// resolveGres merges detected and declared resources and applies node-config's Gres=
// (found case-insensitively; "" or "(null)" is no resource at all).
func resolveGres(detected, declared gres.Set, nodeConfig slurmconf.Params) (nodeGres, error) {
	lines := gres.Merge(detected, declared)
	g := make(gres.Set, 0, len(lines))
	for _, r := range lines {
		r.Files = nil
		g = append(g, r)
	}
	if v, ok := nodeConfig.Get("Gres"); ok {
		set, err := gres.ParseGres(v)
		if err != nil {
			return nodeGres{}, fmt.Errorf("node-config: %w", err)
		}
		g = set
	}
	if len(g) == 0 {
		g = nil
	}
	return nodeGres{Lines: lines, Gres: g}, nil
}

// resources resolves the node's resources from the cached detection, the generic-resources
// option and the saved node-config. An invalid generic-resources counts as no declaration
// here: it blocks the unit through the configuration check, and the node keeps running as
// it was.
func (h *hook) resources(ctx context.Context) (nodeGres, error) {
	f, err := h.gresFacts(ctx)
	if err != nil {
		return nodeGres{}, err
	}
	declared, err := parseGenericResources(h.cfg.GenericResources)
	if err != nil {
		declared = nil
	}
	nc, err := slurmconf.ParseParams(h.st.NodeConfig)
	if err != nil {
		return nodeGres{}, fmt.Errorf("cannot read the saved node-config %q: %w", h.st.NodeConfig, err)
	}
	return resolveGres(f.Detected, declared, nc)
}

// setGres puts the Gres= value into p (a --conf being built), or leaves Gres out when the
// node has none.
func setGres(p *slurmconf.Params, g gres.Set) {
	p.Delete("Gres")
	if s := g.String(); s != "" {
		p.Set("Gres", s)
	}
}

// gresFile is the content of GresLocalConf with the node's lines. Where slurmd -Z detects
// GPUs by itself (slurm.Features.GPUAutoDetect, Slurm 26.05) it says AutoDetect=off: the
// charm's detection, generic-resources and node-config's Gres= stay the node's one source of
// GRES, so a CPU-only node never registers GPUs of slurmd's finding, nor a GPU node a second
// copy of its own. Before the machine's facts are read nothing is said; the file is written
// again with them before slurmd starts (ready).
func (h *hook) gresFile(lines gres.Set) []byte {
	var o gres.ConfOptions
	if f := h.st.Facts; f != nil {
		if v, err := slurm.ParseVersion(f.Version); err == nil {
			o.AutoDetectOff = slurm.FeaturesOf(v).GPUAutoDetect
		}
	}
	return lines.ConfWith(h.node, o)
}

// writeGresConf writes the node's gres.conf lines to GresLocalConf (comment only for none)
// when the file differs, and returns its content.
func (h *hook) writeGresConf(ctx context.Context, lines gres.Set) (string, error) {
	content := h.gresFile(lines)
	path := h.c.Path(GresLocalConf)
	if old, err := os.ReadFile(path); err == nil && string(old) == string(content) {
		return string(content), nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("cannot create %s: %w", filepath.Dir(GresLocalConf), err)
	}
	if err := slurmconf.WriteFile(ctx, path, content, slurmconf.EditOptions{Mode: 0o644}); err != nil {
		return "", fmt.Errorf("cannot write %s: %w", GresLocalConf, err)
	}
	return string(content), nil
}

// unmanagedGres returns the names of g the controller does not manage (managed: its
// published GresTypes), in g's order: slurmd must not start with them, or the node
// registers without them for good.
func unmanagedGres(g gres.Set, managed []string) []string {
	var missing []string
	for _, n := range g.Names() {
		if !slices.Contains(managed, n) {
			missing = append(missing, n)
		}
	}
	return missing
}

// unmanagedStatus is the waiting status of a node held back by unmanagedGres.
func unmanagedStatus(missing []string) string {
	return "waiting for slurmctld to manage GRES " + strings.Join(missing, ",")
}

// gresSummary describes g for a status: "2× gpu:tesla_t4, 1× fpga"; "" for none.
func gresSummary(g gres.Set) string {
	parts := make([]string, 0, len(g))
	for _, r := range g {
		name := r.Name
		if r.Type != "" {
			name += ":" + r.Type
		}
		parts = append(parts, gres.FormatCount(r.Count)+"× "+name)
	}
	return strings.Join(parts, ", ")
}

// appliedGres is the Gres= value of a running --conf.
func appliedGres(conf string) gres.Set {
	p, err := slurmconf.ParseParams(conf)
	if err != nil {
		return nil
	}
	v, _ := p.Get("Gres")
	g, err := gres.ParseGres(v)
	if err != nil {
		return nil
	}
	return g
}

type detectGresParams struct {
	DryRun bool `json:"dry-run"`
}

// detectGresAction (detect-gres) detects the machine's GPUs again. The result replaces the
// cached detection; when it changes what slurmd runs with (its --conf or gres.conf lines),
// the node re-registers through the controller's data as a relation hook would (drain, wait
// for its jobs, stop, delete, start: never with jobs running on it). dry-run only reports.
func (h *hook) detectGresAction(ctx context.Context) error {
	act := h.hc.Actions
	var p detectGresParams
	if err := act.Params(ctx, &p); err != nil {
		return fmt.Errorf("cannot read the action's parameters: %w", err)
	}
	f, err := h.detectGres(ctx)
	if err != nil {
		return act.Fail(ctx, err.Error())
	}
	res := map[string]string{"node": h.node, "detected": f.Detected.String()}
	if len(f.Notes) > 0 {
		res["notes"] = strings.Join(f.Notes, "; ")
	}
	prev := h.st.Gres
	h.st.Gres = f
	r, err := h.resources(ctx)
	if err != nil {
		h.st.Gres = prev
		return act.Fail(ctx, err.Error())
	}
	res["gres"] = r.Gres.String()
	var running gres.Set
	changed := false
	if h.st.Applied != nil {
		running = appliedGres(h.st.Applied.Conf)
		if changed, err = h.runChanged(ctx); err != nil {
			h.st.Gres = prev
			return act.Fail(ctx, err.Error())
		}
	}
	res["running"] = running.String()
	switch {
	case p.DryRun:
		h.st.Gres = prev
		res["result"] = "dry run: nothing changed"
		if changed {
			res["result"] = "dry run: the node would re-register"
		}
		return act.Set(ctx, res)
	case h.st.Applied == nil || h.st.Departed:
		res["result"] = "saved; applied when the node joins a controller"
		return act.Set(ctx, res)
	case !changed:
		res["result"] = "unchanged"
		return act.Set(ctx, res)
	}
	_ = act.Log(ctx, fmt.Sprintf("re-registering node %s with Gres=%q once its jobs end", h.node, r.Gres.String()))
	if err := h.reapply(ctx); err != nil {
		return err
	}
	res["result"] = "re-registered"
	if h.st.Applied != nil {
		res["running"] = appliedGres(h.st.Applied.Conf).String()
	}
	if res["running"] != res["gres"] {
		// ready did not start it (the controller does not manage a name yet, see status).
		res["result"] = "not re-registered: " + h.st.StatusCache.Unit
	}
	return act.Set(ctx, res)
}

// redetectGres (install, upgrade-charm) detects the machine's GPUs afresh and writes
// GresLocalConf with the node's lines before any slurmd can start: the gres.conf the
// controller serves includes it, and a slurmd that cannot read it never registers. A running
// node's lines are left for ready, which re-registers it when they changed.
func (h *hook) redetectGres(ctx context.Context) error {
	h.st.Gres = nil
	r, err := h.resources(ctx)
	if err != nil {
		return err
	}
	if h.st.Applied != nil {
		if _, err := os.Stat(h.c.Path(GresLocalConf)); err == nil {
			return nil
		}
	}
	_, err = h.writeGresConf(ctx, r.Lines)
	return err
}

// buildConfGres is buildConf with the node's Gres= value g after the machine's facts:
// node-config's own Gres= is already in g (resolveGres), so it is not applied again.
func buildConfGres(mi slurm.MachineInfo, app string, nodeConfig slurmconf.Params, g gres.Set) string {
	mi.Params = mi.Params.Clone()
	setGres(&mi.Params, g)
	nc := nodeConfig.Clone()
	nc.Delete("Gres")
	return buildConf(mi, app, nc)
}

// gresLinesChanged reports whether the node's gres.conf lines differ from those slurmd runs
// with (prev, from Applied). A node started by a charm that wrote none (prev empty) changed
// only if it now has lines.
func (h *hook) gresLinesChanged(prev, cur string) bool {
	if prev == "" {
		return cur != string(h.gresFile(nil))
	}
	return prev != cur
}

// runConf returns the --conf and the gres.conf content slurmd should run with, the lines
// written to GresLocalConf before slurmd (re)starts. When the node's Gres= names resources
// the controller does not manage (managed: its published GresTypes), it sets
// State.GresWaiting, writes nothing and slurmd must not be (re)started: the node would
// register without them for good. While generic-resources is invalid (the unit is blocked), a
// running node keeps the --conf and lines it runs with.
func (h *hook) runConf(ctx context.Context, mi slurm.MachineInfo, managed []string) (conf, gresConf string, err error) {
	if a := h.st.Applied; a != nil {
		if _, err := parseGenericResources(h.cfg.GenericResources); err != nil {
			h.st.GresWaiting = nil
			return a.Conf, a.GresConf, nil
		}
	}
	conf, g, err := h.conf(ctx, mi)
	if err != nil {
		return "", "", err
	}
	h.st.GresWaiting = unmanagedGres(g.Gres, managed)
	if len(h.st.GresWaiting) > 0 {
		h.logf(ctx, juju.LevelInfo, "not starting slurmd with Gres=%s: the controller manages GresTypes %q", g.Gres, managed)
		return "", "", nil
	}
	gresConf, err = h.writeGresConf(ctx, g.Lines)
	return conf, gresConf, err
}

// gresChanged reports whether a running node's resources (the generic-resources option,
// after config-changed) differ from what slurmd runs with: the node then re-registers as a
// relation hook would make it (reapply). An invalid option changes nothing.
func (h *hook) gresChanged(ctx context.Context) (bool, error) {
	if h.st.Applied == nil || h.st.Departed {
		return false, nil
	}
	if _, err := parseGenericResources(h.cfg.GenericResources); err != nil {
		return false, nil
	}
	return h.runChanged(ctx)
}

// runChanged reports whether slurmd, running as Applied says, would run otherwise with the
// node's resources and node-config as they are now: another --conf or other gres.conf lines
// (what makes ready re-register the node).
func (h *hook) runChanged(ctx context.Context) (bool, error) {
	_, mi, err := h.facts(ctx)
	if err != nil {
		return false, err
	}
	conf, g, err := h.conf(ctx, mi)
	if err != nil {
		return false, err
	}
	a := h.st.Applied
	return conf != a.Conf || h.gresLinesChanged(a.GresConf, string(h.gresFile(g.Lines))), nil
}
