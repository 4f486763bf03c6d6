package main

import (
	"fmt"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/gres"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// config is the application's configuration (charmcraft.yaml config.options), kept in the
// state and read again on config-changed and upgrade-charm (charm.ReadConfig).
type config struct {
	DefaultNodeState  string `json:"default-node-state"`
	DefaultNodeReason string `json:"default-node-reason"`
	PartitionConfig   string `json:"partition-config"`
	GenericResources  string `json:"generic-resources"`
}

// validate checks every option and returns the first problem, naming the option; keys is the
// slurm.conf key set of the machine's Slurm release (hook.confKeys).
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

// parseGenericResources reads the generic-resources option; errors name the option.
func parseGenericResources(s string) (gres.Set, error) {
	set, err := gres.ParseDeclaration(s)
	if err != nil {
		return nil, fmt.Errorf("generic-resources: %w", err)
	}
	return set, nil
}
