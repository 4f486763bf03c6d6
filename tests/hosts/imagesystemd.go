package hosts

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// LastLegacyCgroupSystemd is the last systemd release that boots on a legacy (cgroup v1)
// hierarchy: from 258 systemd refuses it ("Detected unsupported legacy cgroup hierarchy,
// refusing execution"), so on a cgroup v1 host such as this machine kind systemd-nspawn must
// give the machine a unified hierarchy (SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1). Debian 12 has
// 252, Debian 13 257, Debian 14 262 (shared/reference/machines.md).
const LastLegacyCgroupSystemd = 257

// ImageSystemd returns the version of the systemd an image boots with, read from the name of
// its shared library (usr/lib/<triplet>/systemd/libsystemd-shared-<version>.so, or
// usr/lib/systemd/ in older layouts).
func ImageSystemd(image string) (int, error) {
	var found []string
	for _, pattern := range []string{"usr/lib/*/systemd/libsystemd-shared-*.so", "usr/lib/systemd/libsystemd-shared-*.so"} {
		m, err := filepath.Glob(filepath.Join(image, pattern))
		if err != nil {
			return 0, err
		}
		found = append(found, m...)
	}
	version := 0
	for _, f := range found {
		v, err := parseSharedVersion(filepath.Base(f))
		if err != nil {
			return 0, fmt.Errorf("cannot read the systemd version of image %q: %w", image, err)
		}
		version = max(version, v)
	}
	if version == 0 {
		return 0, fmt.Errorf("cannot read the systemd version of image %q: no libsystemd-shared-<version>.so", image)
	}
	return version, nil
}

// parseSharedVersion reads <version> from "libsystemd-shared-<version>.so"; Debian's may
// carry a suffix ("libsystemd-shared-257.9-1.so" on some builds), of which the major counts.
func parseSharedVersion(name string) (int, error) {
	s, ok := strings.CutPrefix(name, "libsystemd-shared-")
	if !ok {
		return 0, fmt.Errorf("%q is not libsystemd-shared-<version>.so", name)
	}
	s, ok = strings.CutSuffix(s, ".so")
	if !ok {
		return 0, fmt.Errorf("%q is not libsystemd-shared-<version>.so", name)
	}
	if i := strings.IndexAny(s, ".-~+"); i >= 0 {
		s = s[:i]
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 || v > 10000 {
		return 0, fmt.Errorf("%q has no systemd version", name)
	}
	return v, nil
}

// nspawnEnv is systemd-nspawn's environment for a machine whose image boots systemd
// version: a unified cgroup hierarchy for a systemd that refuses the legacy one.
func nspawnEnv(systemd int) []string {
	env := []string{"PATH=" + DefaultPath, "LANG=C.UTF-8"}
	if systemd > LastLegacyCgroupSystemd {
		env = append(env, "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1")
	}
	return env
}
