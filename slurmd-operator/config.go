package main

import (
	"fmt"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// config is the application's configuration (charmcraft.yaml config.options).
type config struct {
	DefaultNodeState  string `json:"default-node-state"`
	DefaultNodeReason string `json:"default-node-reason"`
	PartitionConfig   string `json:"partition-config"`
}

// validate checks every option and returns the first problem, naming the option.
func (cfg config) validate(app string) error {
	switch cfg.DefaultNodeState {
	case "", "idle", "down":
	default:
		return fmt.Errorf("default-node-state: invalid value %q (want idle or down)", cfg.DefaultNodeState)
	}
	if _, err := cfg.computeData(app); err != nil {
		return err
	}
	return nil
}

// computeData builds the application's ComputeData from partition-config.
func (cfg config) computeData(app string) (slurmd.ComputeData, error) {
	extra, err := slurmconf.ParseParams(cfg.PartitionConfig)
	if err != nil {
		return slurmd.ComputeData{}, fmt.Errorf("partition-config: %w", err)
	}
	d, err := slurmd.NewComputeData(app, extra)
	if err != nil {
		return slurmd.ComputeData{}, fmt.Errorf("partition-config: %w", err)
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
