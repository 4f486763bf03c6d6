package main

import (
	"testing"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// TestCgroupConfFollowsTheVersion: from Slurm 24.05 the controller serves a cgroup.conf that
// disables cgroups (the charms use none), written before slurmctld first starts and left
// alone after; before 24.05 there is none (22.05 has no CgroupPlugin=disabled).
func TestCgroupConfFollowsTheVersion(t *testing.T) {
	for _, tt := range []struct {
		version string
		want    bool
	}{
		{"slurm 22.05.8", false},
		{"slurm 23.11.10", false},
		{"slurm 24.05.4", true},
		{"slurm 24.11.5", true},
		{"slurm 26.05.5", true},
	} {
		t.Run(tt.version, func(t *testing.T) {
			e := newEnv(t)
			e.slurm.version = tt.version
			out := e.run(baseState(), jujutest.Hook(juju.ConfigChanged))
			if out.UnitStatus.Code != juju.StatusActive {
				t.Fatalf("controller not active: %+v", out.UnitStatus)
			}
			if got := e.exists(cgroupConfPath); got != tt.want {
				t.Fatalf("cgroup.conf written: %v, want %v", got, tt.want)
			}
			if !tt.want {
				return
			}
			if got := e.read(cgroupConfPath); got != cgroupConf {
				t.Errorf("cgroup.conf:\n%s", got)
			}
			// A second pass changes nothing: no reconfigure for an unchanged file.
			before := e.slurm.count("scontrol", "reconfigure")
			e.run(out, jujutest.Hook(juju.ConfigChanged))
			if n := e.slurm.count("scontrol", "reconfigure") - before; n != 0 {
				t.Errorf("%d reconfigures for an unchanged cgroup.conf", n)
			}
		})
	}
}
