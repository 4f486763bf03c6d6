package slurm

import "fmt"

// releaseIndex numbers Slurm's major releases in order (23.02 is 0; 20.02, 20.11, 21.08, 22.05
// before it; from 23.11 one every six months, .05 and .11) and reports whether v is one.
func releaseIndex(v Version) (int, bool) {
	switch {
	case v.Major == 20 && v.Minor == 2:
		return -4, true
	case v.Major == 20 && v.Minor == 11:
		return -3, true
	case v.Major == 21 && v.Minor == 8:
		return -2, true
	case v.Major == 22 && v.Minor == 5:
		return -1, true
	case v.Major == 23 && v.Minor == 2:
		return 0, true
	case v.Major >= 23 && (v.Minor == 5 && v.Major > 23 || v.Minor == 11):
		i := (v.Major - 23) * 2
		if v.Minor == 11 {
			i++
		}
		return i, true
	}
	return 0, false
}

// olderReleasesSupported is how many major releases before its own a slurmctld of release v
// accepts daemons of: two until 24.05, three from 24.11 ("Slurm can be upgraded from version
// 23.02, 23.11 or 24.05 to version 24.11"; 26.05: "from 25.11, 25.05, and 24.11").
func olderReleasesSupported(v Version) int {
	if v.AtLeast(24, 11) {
		return 3
	}
	return 2
}

// VersionMismatchError reports a slurmd (or sackd) whose Slurm a controller does not accept.
type VersionMismatchError struct {
	// Daemon is the refused daemon's program name: "slurmd" (CheckNodeVersion) or "sackd"
	// (CheckLoginVersion).
	Daemon           string
	Controller, Node Version
	// Newer is set when the node's release is newer than the controller's (else it is too old).
	Newer bool
}

func (e *VersionMismatchError) Error() string {
	if e.Newer {
		return fmt.Sprintf("%s %s is newer than slurmctld %s: Slurm accepts no daemon newer than its controller; upgrade slurmctld first", e.Daemon, e.Node, e.Controller)
	}
	return fmt.Sprintf("%s %s is too old for slurmctld %s (it accepts %s of its own release and the %d before it): upgrade %s",
		e.Daemon, e.Node, e.Controller, e.Daemon, olderReleasesSupported(e.Controller), e.Daemon)
}

// CheckNodeVersion returns nil when a slurmctld of version ctl accepts a slurmd of version
// node: the same major release, or an older one within Slurm's upgrade window (the two
// releases before the controller's until 24.05, three from 24.11). Otherwise a
// *VersionMismatchError names both: a slurmd newer than its controller (an upgrade in the
// wrong order), or too old. A zero version (unknown) is never refused; a release this package
// does not know is compared by major.minor alone.
func CheckNodeVersion(ctl, node Version) error { return checkVersion("slurmd", ctl, node) }

// CheckLoginVersion is CheckNodeVersion for a login node's sackd and Slurm clients (of the
// same package release), which talk to slurmctld under the same rule.
func CheckLoginVersion(ctl, login Version) error { return checkVersion("sackd", ctl, login) }

// checkVersion is the rule of CheckNodeVersion for daemon.
func checkVersion(daemon string, ctl, node Version) error {
	if ctl.IsZero() || node.IsZero() {
		return nil
	}
	if node.Major > ctl.Major || node.Major == ctl.Major && node.Minor > ctl.Minor {
		return &VersionMismatchError{Daemon: daemon, Controller: ctl, Node: node, Newer: true}
	}
	ci, ok1 := releaseIndex(ctl)
	ni, ok2 := releaseIndex(node)
	if ok1 && ok2 && ci-ni > olderReleasesSupported(ctl) {
		return &VersionMismatchError{Daemon: daemon, Controller: ctl, Node: node}
	}
	return nil
}

// ConfVersionError reports a daemon older than the configuration slurmctld serves needs: its
// parser refuses a key of a later release and the daemon exits at start (24.11's slurmd and
// sackd on 26.05's MetricsType: "Parsing error at unrecognized key"). It is a wait, not a
// fault: a controller that knows the daemon's release leaves such keys out.
type ConfVersionError struct {
	// Daemon is the waiting daemon's program name: "slurmd" or "sackd".
	Daemon string
	// Needed is the oldest release that reads the configuration; Node the daemon's.
	Needed, Node Version
}

func (e *ConfVersionError) Error() string {
	return fmt.Sprintf("%s %s cannot read the configuration slurmctld serves (it needs Slurm %d.%02d or later): waiting for slurmctld to leave out the keys %s %d.%02d lacks",
		e.Daemon, e.Node, e.Needed.Major, e.Needed.Minor, e.Daemon, e.Node.Major, e.Node.Minor)
}

// CheckConfVersion returns nil when daemon of version node reads a configuration that needs
// release needed (by major.minor); a zero version on either side (unknown) is never refused.
func CheckConfVersion(daemon string, needed, node Version) error {
	if needed.IsZero() || node.IsZero() || node.AtLeast(needed.Major, needed.Minor) {
		return nil
	}
	return &ConfVersionError{Daemon: daemon, Needed: needed, Node: node}
}
