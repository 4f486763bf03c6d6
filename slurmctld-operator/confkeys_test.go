package main

import (
	"testing"

	"github.com/charmed-slurm/operators/libs/charm"
)

// TestSlurmConfParametersPerRelease checks that slurm-conf-parameters are validated against
// the key set of the running Slurm release, as cached in the state (22.05's while unknown).
func TestSlurmConfParametersPerRelease(t *testing.T) {
	tests := []struct {
		name, version, params string
		ok                    bool
	}{
		{name: "removed key on 24.11", version: "24.11.5", params: "SlurmctldPlugstack=/etc/slurm/x.conf"},
		{name: "removed key on 22.05", version: "22.05.8", params: "SlurmctldPlugstack=/etc/slurm/x.conf", ok: true},
		{name: "new key on 24.11", version: "24.11.5", params: "SuspendExcStates=DOWN", ok: true},
		{name: "new key on 22.05", version: "22.05.8", params: "SuspendExcStates=DOWN"},
		{name: "new key, release unknown", params: "HashPlugin=hash/k12"},
		{name: "common key on 24.11", version: "24.11.5", params: "MinJobAge=30", ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := defaultConfig()
			cfg.SlurmConfParameters = tt.params
			_, err := cfg.validate(charm.ConfKeys(tt.version))
			if (err == nil) != tt.ok {
				t.Errorf("Validate(%q) on %q: %v, want ok=%v", tt.params, tt.version, err, tt.ok)
			}
		})
	}
}
