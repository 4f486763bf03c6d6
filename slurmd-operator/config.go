package main

import (
	"context"
	"fmt"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// config is the application's configuration (charmcraft.yaml config.options).
type config struct {
	DefaultNodeState  string `json:"default-node-state"`
	DefaultNodeReason string `json:"default-node-reason"`
	PartitionConfig   string `json:"partition-config"`
	GenericResources  string `json:"generic-resources"`
}

// readConfig sets h.cfg: read with config-get on config-changed, upgrade-charm (the kept copy
// is the previous charm's) and when the state keeps none, and kept in the state; every other
// hook uses the kept copy (Juju runs config-changed after every change).
func (h *hook) readConfig(ctx context.Context) error {
	switch kind := h.hc.Event.Kind; {
	case h.st.Config == nil, kind == juju.ConfigChanged, kind == juju.UpgradeCharm:
		var cfg config
		if err := h.hc.Config.Decode(ctx, &cfg); err != nil {
			return fmt.Errorf("cannot read config: %w", err)
		}
		h.st.Config = &cfg
	}
	h.cfg = *h.st.Config
	return nil
}

// validate checks every option and returns the first problem, naming the option; keys is the
// slurm.conf key set of the machine's Slurm release (see hook.confKeys).
func (cfg config) validate(keys *slurmconf.Keys, app string) error {
	switch cfg.DefaultNodeState {
	case "", "idle", "down":
	default:
		return fmt.Errorf("default-node-state: invalid value %q (want idle or down)", cfg.DefaultNodeState)
	}
	if _, err := cfg.computeData(keys, app); err != nil {
		return err
	}
	if _, err := parseGenericResources(cfg.GenericResources); err != nil {
		return err
	}
	return nil
}

// computeData builds the application's ComputeData from partition-config, checked against
// keys, the key set of the machine's Slurm release.
func (cfg config) computeData(keys *slurmconf.Keys, app string) (slurmd.ComputeData, error) {
	extra, err := slurmconf.ParseParams(cfg.PartitionConfig)
	if err != nil {
		return slurmd.ComputeData{}, fmt.Errorf("partition-config: %w", err)
	}
	d, err := slurmd.NewComputeDataFor(keys, app, extra)
	if err != nil {
		return slurmd.ComputeData{}, fmt.Errorf("partition-config: %w", err)
	}
	// The names generic-resources declares, for the controller's GresTypes (an invalid
	// option declares none here; validate reports it).
	if declared, err := parseGenericResources(cfg.GenericResources); err == nil {
		if d, err = d.WithGresTypes(declared.Names()); err != nil {
			return slurmd.ComputeData{}, fmt.Errorf("generic-resources: %w", err)
		}
	}
	return d, nil
}

// confKeys is the slurm.conf key set of this machine's Slurm release, known from the facts
// cached in the state; 22.05's until they are (as slurm.FeaturesOf treats an unknown version).
func (h *hook) confKeys() *slurmconf.Keys {
	if f := h.st.Facts; f != nil {
		if v, err := slurm.ParseVersion(f.Version); err == nil {
			return slurmconf.KeysOf(v.Major, v.Minor)
		}
	}
	return slurmconf.KeysOf(22, 5)
}

// nodeState is default-node-state with its default.
func (cfg config) nodeState() string {
	if cfg.DefaultNodeState == "" {
		return "idle"
	}
	return cfg.DefaultNodeState
}

// nodeReason is default-node-reason, or a reason naming the option (Slurm requires one for down).
func (cfg config) nodeReason() string {
	if cfg.DefaultNodeReason != "" {
		return cfg.DefaultNodeReason
	}
	return "default-node-state is down"
}
