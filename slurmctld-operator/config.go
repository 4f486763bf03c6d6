package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// config is the charm's configuration (charmcraft.yaml config.options).
type config struct {
	ClusterName         string `json:"cluster-name"`
	DefaultPartition    string `json:"default-partition"`
	MaxNodeCount        int    `json:"max-node-count"`
	SlurmConfParameters string `json:"slurm-conf-parameters"`
	FutureNodes         string `json:"future-nodes"`
	AlertThresholds     string `json:"alert-thresholds"`
}

// defaultConfig mirrors the defaults in charmcraft.yaml, used for options config-get leaves null.
func defaultConfig() config {
	return config{ClusterName: "charmed-slurm", MaxNodeCount: 1024, FutureNodes: defaultFutureNodes}
}

// configError is a configuration option with a bad value; the charm shows it as blocked.
type configError struct {
	Option string
	Msg    string
}

func (e *configError) Error() string { return e.Option + ": " + e.Msg }

// managedKeys are the global slurm.conf keys the charm sets itself; slurm-conf-parameters
// may not set them. Entry keys (NodeName, PartitionName, ...) are refused too.
var managedKeys = []string{
	"ClusterName", "SlurmctldHost", "ControlMachine", "ControlAddr", "BackupController",
	"BackupAddr", "SlurmctldPort", "SlurmdPort", "SlurmUser", "SlurmdUser", "AuthType",
	"CredType", "AuthAltTypes", "AuthInfo", "StateSaveLocation", "SlurmdSpoolDir",
	"SlurmctldPidFile", "SlurmdPidFile", "SlurmctldLogFile", "SlurmdLogFile", "SelectType",
	"ProctrackType", "TaskPlugin", "MpiDefault", "ReturnToService", "MaxNodeCount", "TreeWidth",
	"SlurmctldParameters", "Include", "GresTypes",
	"AccountingStorageType", "AccountingStorageHost", "AccountingStoragePort", "AccountingStorageBackupHost",
	"NodeName", "NodeSet", "PartitionName", "DownNodes", "FrontendName", "SlurmctldAddr",
}

// managedKey returns the canonical spelling of key when the charm manages it.
func managedKey(key string) (string, bool) {
	for _, k := range managedKeys {
		if strings.EqualFold(k, key) {
			return k, true
		}
	}
	return "", false
}

// clusterNameRE is a cluster name's form; its length, at most maxClusterName, is checked
// apart (a counted repetition {0,39} compiles into 39 copies of its class at every hook's
// start).
var clusterNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

const maxClusterName = 40

var partitionNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// readConfig returns the configuration kept at *kept (charm.ReadConfig: config-get on
// config-changed and upgrade-charm, else the kept copy) validated, slurm-conf-parameters
// against the key set of the Slurm release version (charm.ConfKeys: 22.05's while unknown).
// A bad value gives a *configError naming the option (and the key, for
// slurm-conf-parameters). Every hook validates, since validation depends on the Slurm
// version too, which upgrade-charm may change.
func readConfig(ctx context.Context, hc *juju.HookContext, kept **config, version string) (config, slurmconf.Params, error) {
	cfg, err := charm.ReadConfig(ctx, hc, kept, defaultConfig())
	if err != nil {
		return cfg, nil, err
	}
	extra, err := cfg.validate(charm.ConfKeys(version))
	return cfg, extra, err
}

// Validate checks every option, the keys of slurm-conf-parameters against keys, and returns
// the parsed slurm-conf-parameters.
func (cfg config) validate(keys *slurmconf.Keys) (slurmconf.Params, error) {
	if len(cfg.ClusterName) > maxClusterName || !clusterNameRE.MatchString(cfg.ClusterName) {
		return nil, &configError{"cluster-name", fmt.Sprintf("%q is not a valid cluster name (lower case letters, digits, '-' and '_', at most 40 characters, starting with a letter)", cfg.ClusterName)}
	}
	if cfg.DefaultPartition != "" && !partitionNameRE.MatchString(cfg.DefaultPartition) {
		return nil, &configError{"default-partition", fmt.Sprintf("%q is not a valid partition name", cfg.DefaultPartition)}
	}
	if cfg.MaxNodeCount < 1 || cfg.MaxNodeCount > 65536 {
		return nil, &configError{"max-node-count", fmt.Sprintf("%d is out of range (1 to 65536)", cfg.MaxNodeCount)}
	}
	if _, err := parseFutureNodes(cfg.FutureNodes); err != nil {
		return nil, &configError{"future-nodes", err.Error()}
	}
	if _, err := parseAlertThresholds(cfg.AlertThresholds); err != nil {
		return nil, &configError{"alert-thresholds", err.Error()}
	}
	extra, err := slurmconf.ParseParams(cfg.SlurmConfParameters)
	if err != nil {
		return nil, &configError{"slurm-conf-parameters", err.Error()}
	}
	seen := map[string]bool{}
	for _, p := range extra {
		if k, ok := managedKey(p.Key); ok {
			return nil, &configError{"slurm-conf-parameters", fmt.Sprintf("%s is managed by the charm and cannot be set", k)}
		}
		if seen[strings.ToLower(p.Key)] {
			return nil, &configError{"slurm-conf-parameters", fmt.Sprintf("%s is given twice", p.Key)}
		}
		seen[strings.ToLower(p.Key)] = true
		if k, ok := keys.GlobalKey(p.Key); !ok {
			msg := fmt.Sprintf("unknown slurm.conf key %q", p.Key)
			if k != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", k)
			}
			return nil, &configError{"slurm-conf-parameters", msg}
		}
		if p.Value == "" {
			return nil, &configError{"slurm-conf-parameters", fmt.Sprintf("%s has no value", p.Key)}
		}
	}
	return extra, nil
}
