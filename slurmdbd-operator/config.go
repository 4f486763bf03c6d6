package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// config is the application's configuration (charmcraft.yaml config.options).
type config struct {
	SlurmdbdConfParameters string `json:"slurmdbd-conf-parameters"`
}

// param is one slurmdbd.conf key and value.
type param = slurmconf.Param

// managedKeys are the slurmdbd.conf keys the charm sets itself; slurmdbd-conf-parameters may
// not set them.
var managedKeys = []string{
	"AuthType", "AuthInfo", "AuthAltTypes", "AuthAltParameters", "DbdHost", "DbdAddr", "DbdBackupHost",
	"DbdPort", "SlurmUser", "StorageType", "StorageHost", "StorageBackupHost", "StoragePort", "StorageUser",
	"StoragePass", "StorageLoc", "StorageParameters", "LogFile", "PidFile", "PluginDir", "Include",
}

// maxValueLen bounds one value of slurmdbd-conf-parameters; maxParams their number.
const (
	maxValueLen = 1024
	maxParams   = 128
)

// ConfigError is an option with a bad value; the unit shows it as blocked.
type ConfigError struct{ Option, Msg string }

func (e *ConfigError) Error() string { return e.Option + ": " + e.Msg }

// readConfig reads the configuration (config-get on config-changed, upgrade-charm, or when
// none is kept) and validates it: a bad value sets h.cfgErr.
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
	h.extra, h.cfgErr = parseConfParameters(h.cfg.SlurmdbdConfParameters)
	return nil
}

// parseConfParameters reads slurmdbd-conf-parameters: Key=Value pairs separated by spaces or
// new lines (a line starting with # is a comment), each key once, none the charm manages,
// values bounded. Slurm's own parser is the last check (conf.go).
func parseConfParameters(s string) ([]param, error) {
	var out []param
	seen := map[string]bool{}
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps, err := slurmconf.ParseParams(line)
		if err != nil {
			return nil, &ConfigError{"slurmdbd-conf-parameters", fmt.Sprintf("line %d: %v", i+1, err)}
		}
		for _, p := range ps {
			for _, m := range managedKeys {
				if strings.EqualFold(p.Key, m) {
					return nil, &ConfigError{"slurmdbd-conf-parameters", fmt.Sprintf("%s is managed by the charm and cannot be set", m)}
				}
			}
			k := strings.ToLower(p.Key)
			if seen[k] {
				return nil, &ConfigError{"slurmdbd-conf-parameters", fmt.Sprintf("%s is given twice", p.Key)}
			}
			seen[k] = true
			if p.Value == "" {
				return nil, &ConfigError{"slurmdbd-conf-parameters", fmt.Sprintf("%s has no value", p.Key)}
			}
			if len(p.Value) > maxValueLen {
				return nil, &ConfigError{"slurmdbd-conf-parameters", fmt.Sprintf("the value of %s is over %d characters", p.Key, maxValueLen)}
			}
			out = append(out, p)
		}
		if len(out) > maxParams {
			return nil, &ConfigError{"slurmdbd-conf-parameters", fmt.Sprintf("more than %d parameters", maxParams)}
		}
	}
	return out, nil
}
