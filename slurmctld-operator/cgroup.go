package main

import (
	"context"
	"fmt"
	"os"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// cgroup.conf. The charms track processes with proctrack/linuxproc and run no task plugin
// (ProctrackType and TaskPlugin are managed keys), so Slurm has no use for cgroups. From Slurm
// 24.05 cgroup.conf can say so (slurm.Features.CgroupDisabled): the controller serves it to
// every configless slurmd, which then starts whatever cgroup layout its machine has. Without
// it slurmd autodetects its cgroup plugin, and 26.05's cgroup/v2 refuses to start in a hybrid
// hierarchy ("Hybrid mode is not supported"), as in a container whose host mounts cgroup v1.

// cgroupConfPath is cgroup.conf beside slurm.conf.
const cgroupConfPath = "/etc/slurm/cgroup.conf"

// cgroupConf is the cgroup.conf the controller serves from Slurm 24.05.
const cgroupConf = `# cgroup.conf of the Slurm cluster, managed by the slurmctld charm.
# The charms track processes without cgroups (ProctrackType=proctrack/linuxproc, no TaskPlugin).
CgroupPlugin=disabled
`

// writeCgroupConf writes cgroup.conf when the release takes it and it differs, and reports
// whether it changed (a running slurmctld then reconfigures, which serves the new file).
// Before 24.05 nothing is written: slurmd chooses its cgroup plugin as it always did.
func writeCgroupConf(ctx context.Context, s charm.Settings, feat slurm.Features) (bool, error) {
	if !feat.CgroupDisabled {
		return false, nil
	}
	path := s.Path(cgroupConfPath)
	if old, err := os.ReadFile(path); err == nil && string(old) == cgroupConf {
		return false, nil
	}
	if err := os.MkdirAll(s.Path(confDir), 0o755); err != nil {
		return false, fmt.Errorf("cannot create %s: %w", confDir, err)
	}
	if err := slurmconf.WriteFile(ctx, path, []byte(cgroupConf), slurmconf.EditOptions{Mode: 0o644}); err != nil {
		return false, fmt.Errorf("cannot write %s: %w", cgroupConfPath, err)
	}
	return true, nil
}
