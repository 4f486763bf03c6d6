package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a Slurm release, e.g. 22.05.8.
type Version struct {
	Major, Minor, Micro int
}

// String renders the version as Slurm does: "22.05.8".
func (v Version) String() string {
	return fmt.Sprintf("%d.%02d.%d", v.Major, v.Minor, v.Micro)
}

// IsZero reports whether v is unset.
func (v Version) IsZero() bool { return v == Version{} }

// AtLeast reports whether v is major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

// ParseVersion parses the output of `slurmd -V`, `scontrol -V` or `sinfo -V` ("slurm
// 22.05.8", "slurm-wlm 22.05.8") or a bare version ("22.05.8", "23.11.0-0rc1").
func ParseVersion(s string) (Version, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 || len(fields) > 2 {
		return Version{}, fmt.Errorf("cannot parse Slurm version %q: want \"slurm X.Y.Z\"", s)
	}
	if len(fields) == 2 && !strings.HasPrefix(fields[0], "slurm") {
		return Version{}, fmt.Errorf("cannot parse Slurm version %q: want \"slurm X.Y.Z\"", s)
	}
	ver := fields[len(fields)-1]
	if i := strings.IndexAny(ver, "-+~"); i >= 0 {
		ver = ver[:i]
	}
	parts := strings.Split(ver, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("cannot parse Slurm version %q: want \"X.Y.Z\"", s)
	}
	var nums [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 1<<20 {
			return Version{}, fmt.Errorf("cannot parse Slurm version %q: bad number %q", s, p)
		}
		nums[i] = n
	}
	if nums[0] == 0 {
		return Version{}, fmt.Errorf("cannot parse Slurm version %q: major version 0", s)
	}
	return Version{Major: nums[0], Minor: nums[1], Micro: nums[2]}, nil
}

// Features are the version-dependent choices the operators make. [FeaturesOf] is the one
// place that decides them.
type Features struct {
	// AuthType is the slurm.conf AuthType (and CredType's family): "auth/munge" before
	// 23.11, "auth/slurm" from 23.11.
	AuthType string
	// CredType is the matching slurm.conf CredType.
	CredType string
	// Munge reports whether munged must run and share a munge key.
	Munge bool
	// AuthKeyFile is the shared secret's path: /etc/munge/munge.key for auth/munge,
	// /etc/slurm/slurm.key for auth/slurm.
	AuthKeyFile string
	// ListJobs reports whether `scontrol listjobs` exists (24.05 and later).
	ListJobs bool
	// FutureNodes reports whether a NodeSet partition with no node needs FUTURE node records
	// carrying the NodeSet's feature for slurmctld to accept and hold a job sent to it: 22.05
	// holds such a job (Reason=PartitionConfig), 24.11.5 rejects it ("Requested node
	// configuration is not available"), 26.05.5 holds it again (all three seen on real Slurm).
	// Slurm fixed the rejection in 24.11.6 and 25.05.1 ("Fix allowing job submission to empty
	// partitions when EnforcePartLimits=NO", the default). Set from 23.02, the first release
	// after 22.05, to 24.11.5 and on 25.05.0.
	FutureNodes bool
	// Sackd reports whether the release has sackd (23.11 and later), the daemon that lets a
	// login node with no slurmd authenticate to the cluster (auth/slurm) and fetch its
	// configuration from the controllers (configless).
	Sackd bool
	// CgroupDisabled reports whether cgroup.conf takes CgroupPlugin=disabled (24.05, "disable
	// any interaction of Slurm with cgroups"): the charms track processes with
	// proctrack/linuxproc and run no task plugin, so they say so, and slurmd starts on any
	// cgroup layout. Without it slurmd autodetects its cgroup plugin: 26.05's cgroup/v2 refuses
	// a hybrid hierarchy ("Hybrid mode is not supported"), as in a systemd 258+ container on a
	// cgroup v1 host (seen on Debian 14 machines here).
	CgroupDisabled bool
	// GPUAutoDetect reports whether `slurmd -Z` detects GPUs by itself when its --conf names
	// no GPU and gres.conf has no gpu line for the node (26.05, doc/html/dynamic_nodes.shtml
	// "Automatic GPU Detection": AutoDetect=full by default), unless gres.conf says
	// AutoDetect=off. The slurmd charm's own detection and node-config's Gres= are the
	// node's only source of GRES: a node's gres.conf says AutoDetect=off where this is set.
	GPUAutoDetect bool
	// ReconfigureReexecs reports whether a reconfigure (scontrol reconfigure, SIGHUP) starts a
	// new slurmctld (and slurmd) process that takes over from the old one (23.11: slurmctld's
	// _try_to_reconfig), rather than re-reading the files in the running process: see
	// [ReconfigureKeepsPID].
	ReconfigureReexecs bool
	// OpenMetrics reports whether slurmctld serves OpenMetrics on SlurmctldPort
	// (/metrics/nodes, /metrics/jobs, /metrics/partitions, /metrics/scheduler,
	// /metrics/jobs-users-accts) once slurm.conf says MetricsType=metrics/openmetrics (25.11;
	// seen on 26.05.5). Without MetricsType the paths answer 200 with an empty body.
	OpenMetrics bool
}

// FeaturesOf returns the choices for Slurm version v. A zero Version is treated as the
// oldest supported release (22.05).
func FeaturesOf(v Version) Features {
	f := Features{
		AuthType:    "auth/munge",
		CredType:    "cred/munge",
		Munge:       true,
		AuthKeyFile: "/etc/munge/munge.key",
	}
	if v.AtLeast(23, 11) {
		f.AuthType = "auth/slurm"
		f.CredType = "cred/slurm"
		f.Munge = false
		f.AuthKeyFile = "/etc/slurm/slurm.key"
	}
	f.ListJobs = v.AtLeast(24, 5)
	f.FutureNodes = v.AtLeast(23, 2) && !emptyPartitionsHold(v)
	f.CgroupDisabled = v.AtLeast(24, 5)
	f.GPUAutoDetect = v.AtLeast(26, 5)
	f.ReconfigureReexecs = v.AtLeast(23, 11)
	f.Sackd = v.AtLeast(23, 11)
	f.OpenMetrics = v.AtLeast(25, 11)
	return f
}

// emptyPartitionsHold reports whether v has Slurm's fix that holds a job sent to a partition
// with no node again (24.11.6, 25.05.1; every later release).
func emptyPartitionsHold(v Version) bool {
	switch {
	case v.Major == 24 && v.Minor == 11:
		return v.Micro >= 6
	case v.Major == 25 && v.Minor == 5:
		return v.Micro >= 1
	}
	return v.AtLeast(25, 6)
}

// ReconfigureKeepsPID reports whether a daemon of these features keeps its process ID
// through a reconfigure, as supervised: attached (-D, as the charms run slurmctld and slurmd
// under Pebble and under systemd with Type=simple) it re-executes itself in place; detached or
// under `--systemd` (Debian's packaged units, Type=notify) it forks the new process, which
// tells systemd its new main PID (seen on 24.11 and 26.05). Before 23.11 a reconfigure never
// started a process. A PID that changed is then a restart only where this is true.
func (f Features) ReconfigureKeepsPID(attached bool) bool {
	return !f.ReconfigureReexecs || attached
}
