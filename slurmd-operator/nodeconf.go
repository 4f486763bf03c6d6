package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/libs/gres"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// The node's configuration, built from what the charm knows and nothing else: no command
// runs and no file is read here. buildNode is the one place that makes slurmd's --conf and
// the node's gres.conf lines; the rest of the charm gathers its inputs (registrar.conf) and
// applies its output.

// nodeInputs are what a node's configuration is built from.
type nodeInputs struct {
	// Machine are this machine's facts (`slurmd -C`, without NodeName).
	Machine slurm.MachineInfo
	// App is the application's name: the node's first feature.
	App string
	// Node is the node's name, for its gres.conf lines.
	Node string
	// NodeConfig is the node-config (slurm.conf node parameters) the node runs with.
	NodeConfig string
	// Detected are the generic resources found on the machine (GPUs).
	Detected gres.Set
	// Declared are those the generic-resources option declares (nil while it is invalid).
	Declared gres.Set
	// GresOptions are gres.conf's settings besides the resources: AutoDetect=off where slurmd
	// -Z detects GPUs by itself (slurm.Features.GPUAutoDetect, Slurm 26.05), so that the
	// charm's detection, generic-resources and node-config's Gres= stay the node's one source
	// of GRES (a CPU-only node never registers GPUs of slurmd's finding, nor a GPU node a
	// second copy of its own).
	GresOptions gres.ConfOptions
}

// nodeConf is what slurmd runs with.
type nodeConf struct {
	// Conf is slurmd's --conf.
	Conf string
	// nodeGres are the node's resources: its gres.conf lines and its Gres= value.
	nodeGres
	// GresConf is the content of GresLocalConf: Lines for Node, with GresOptions.
	GresConf string
	// noGresConf is GresLocalConf's content without a line: what a charm that wrote no file
	// amounts to (gresChangedFrom).
	noGresConf string
}

// buildNode builds the node's configuration: `slurmd -C` without NodeName, the node's
// generic resources (Gres=), Feature=<app> (plus any features in node-config) and
// node-config, whose values win over the machine's; and the gres.conf lines of its devices.
func buildNode(in nodeInputs) (nodeConf, error) {
	nc, err := slurmconf.ParseParams(in.NodeConfig)
	if err != nil {
		return nodeConf{}, fmt.Errorf("cannot read the saved node-config %q: %w", in.NodeConfig, err)
	}
	g, err := resolveGres(in.Detected, in.Declared, nc)
	if err != nil {
		return nodeConf{}, err
	}
	return nodeConf{
		Conf:       buildConfGres(in.Machine, in.App, nc, g.Gres),
		nodeGres:   g,
		GresConf:   string(g.Lines.ConfWith(in.Node, in.GresOptions)),
		noGresConf: string(gres.Set(nil).ConfWith(in.Node, in.GresOptions)),
	}, nil
}

// buildConf merges the machine's facts, Feature=<app> (plus any features in node-config) and
// node-config, whose values win over the machine's.
func buildConf(mi slurm.MachineInfo, app string, nodeConfig slurmconf.Params) string {
	var p slurmconf.Params
	for _, kv := range mi.Params {
		p.Set(kv.Key, kv.Value)
	}
	features := []string{app}
	nc := nodeConfig.Clone()
	for _, k := range []string{"Feature", "Features"} {
		if v, ok := nc.Get(k); ok {
			for _, f := range strings.Split(v, ",") {
				if f = strings.TrimSpace(f); f != "" && !slices.Contains(features, f) {
					features = append(features, f)
				}
			}
			nc.Delete(k)
		}
	}
	for _, kv := range nc {
		p.Set(kv.Key, kv.Value)
	}
	p.Set("Feature", strings.Join(features, ","))
	return p.String()
}

// buildConfGres is buildConf with the node's Gres= value g after the machine's facts:
// node-config's own Gres= is already in g (resolveGres), so it is not applied again.
func buildConfGres(mi slurm.MachineInfo, app string, nodeConfig slurmconf.Params, g gres.Set) string {
	mi.Params = mi.Params.Clone()
	mi.Params.Delete("Gres")
	if s := g.String(); s != "" {
		mi.Params.Set("Gres", s)
	}
	nc := nodeConfig.Clone()
	nc.Delete("Gres")
	return buildConf(mi, app, nc)
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

// gresChangedFrom reports whether the node's gres.conf content differs from the content
// slurmd runs with (prev, from Applied). A node started by a charm that wrote none (prev
// empty) changed only if it now has lines.
func (nc nodeConf) gresChangedFrom(prev string) bool {
	if prev == "" {
		return nc.GresConf != nc.noGresConf
	}
	return prev != nc.GresConf
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

// ParseNodeConfig parses and checks node-config parameters: slurm.conf node keys of the
// machine's Slurm release (keys) only, none of the keys the charm manages, every value within
// its type, range and size (slurmconf.ValidateNodeValues: counts that fit Slurm's fields,
// feature names a job can select, at most 1024 characters) and a well-formed Gres. Errors
// name the key and the rule.
func ParseNodeConfig(keys *slurmconf.Keys, s string) (slurmconf.Params, error) {
	p, err := slurmconf.ParseParams(s)
	if err != nil {
		return nil, err
	}
	if err := slurmconf.ValidateNodeValues(p); err != nil {
		return nil, err
	}
	if err := keys.ValidateNodeParams(p); err != nil {
		return nil, err
	}
	if v, ok := p.Get("Gres"); ok {
		// "" and "(null)": no generic resource at all.
		if _, err := gres.ParseGres(v); err != nil {
			return nil, fmt.Errorf("key \"Gres\": %w", err)
		}
	}
	return p, nil
}

// mergeNodeConfig sets params over the node-config base (over nothing, the `slurmd -C`
// baseline, with reset). Feature and Features are one key: setting either drops the other.
func mergeNodeConfig(base string, params slurmconf.Params, reset bool) (slurmconf.Params, error) {
	var merged slurmconf.Params
	if !reset {
		var err error
		if merged, err = slurmconf.ParseParams(base); err != nil {
			return nil, fmt.Errorf("cannot read the saved node-config %q: %w", base, err)
		}
	}
	for _, kv := range params {
		if strings.EqualFold(kv.Key, "Feature") {
			merged.Delete("Features")
		} else if strings.EqualFold(kv.Key, "Features") {
			merged.Delete("Feature")
		}
		merged.Set(kv.Key, kv.Value)
	}
	return merged, nil
}

// checkMachine refuses node-config values that claim more than this machine has (mi, from
// `slurmd -C`): Slurm refuses such a node (it registers INVALID_REG, or slurmd does not
// start), so they are refused before the node is touched. Errors name the key.
func checkMachine(p slurmconf.Params, mi slurm.MachineInfo) error {
	have := []struct {
		key string
		n   int64
	}{
		{"CPUs", int64(mi.CPUs)}, {"Boards", int64(mi.Boards)},
		{"Sockets", int64(mi.Boards) * int64(mi.SocketsPerBoard)}, {"SocketsPerBoard", int64(mi.SocketsPerBoard)},
		{"CoresPerSocket", int64(mi.CoresPerSocket)}, {"ThreadsPerCore", int64(mi.ThreadsPerCore)},
		{"RealMemory", mi.RealMemory},
	}
	for _, h := range have {
		v, ok := p.Get(h.key)
		if !ok || h.n <= 0 {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("key %q: value %q is not a whole number", h.key, v)
		}
		if n > h.n {
			return fmt.Errorf("key %q: %d is more than this machine has (%d, from slurmd -C); Slurm would refuse the node", h.key, n, h.n)
		}
	}
	return nil
}
