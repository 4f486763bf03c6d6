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
	// holds such a job (Reason=PartitionConfig), 24.11 rejects it ("Requested node
	// configuration is not available"; both seen on real Slurm). Set from 23.02, the first
	// release after 22.05: the records are harmless where not needed.
	FutureNodes bool
	// Sackd reports whether the release has sackd (23.11 and later), the daemon that lets a
	// login node with no slurmd authenticate to the cluster (auth/slurm) and fetch its
	// configuration from the controllers (configless).
	Sackd bool
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
	f.FutureNodes = v.AtLeast(23, 2)
	f.Sackd = v.AtLeast(23, 11)
	return f
}
