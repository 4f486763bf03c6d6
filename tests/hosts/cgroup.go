package hosts

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Every machine's systemd gets cgroups of its own. systemd-nspawn, started outside any
// service manager (--register=no --keep-unit), puts the machine's processes in a "payload"
// cgroup below the cgroup it starts in, in the unified (cgroup v2) hierarchy and in the legacy
// name=systemd one. Started in the root cgroup, as a test process is on this machine kind, all
// machines shared one /payload: their systemd instances created and removed the same
// /payload/system.slice/<unit> directories, so a unit stopped on one machine could remove the
// cgroup another machine was starting the same unit into ("slurmd.service: Failed to spawn
// executor: No such file or directory", result 'resources', when two Debian 14 machines
// restarted slurmd at once). So each boot starts in <hierarchy>/charmed-slurm/<NetNS>.

// cgroupGroup is the directory, below each hierarchy's root, holding the machines' cgroups.
const cgroupGroup = "charmed-slurm"

// cgroupHierarchies returns the mount points of the hierarchies systemd-nspawn places a
// machine in: the unified one (cgroup2) and the legacy name=systemd one, as mounted in the
// test machine's /proc/self/mountinfo (either may be absent).
func cgroupHierarchies() ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cannot read the cgroup mounts: %w", err)
	}
	return parseCgroupMounts(data), nil
}

// parseCgroupMounts returns, from mountinfo's content, the mount points of cgroup2 and of
// cgroup v1 with the name=systemd option, each once, in the order found.
func parseCgroupMounts(mountinfo []byte) []string {
	var dirs []string
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// <id> <parent> <dev> <root> <mount point> <options> [optional...] - <type> <source> <super options>
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 {
			continue
		}
		mnt := unescapeMount(fields[4])
		switch {
		case tail[0] == "cgroup2":
		case tail[0] == "cgroup" && slices.Contains(strings.Split(tail[2], ","), "name=systemd"):
		default:
			continue
		}
		if !slices.Contains(dirs, mnt) {
			dirs = append(dirs, mnt)
		}
	}
	return dirs
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline and backslash.
func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// machineCgroups creates the machine's own cgroup in each hierarchy and returns the paths
// of their cgroup.procs files, which the boot's first process joins (cgroupArgv).
func (m *Machine) machineCgroups() ([]string, error) {
	roots, err := cgroupHierarchies()
	if err != nil {
		return nil, err
	}
	var procs []string
	for _, root := range roots {
		dir := filepath.Join(root, cgroupGroup, m.NetNS)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("cannot create the machine's cgroup: %w", err)
		}
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}
	return procs, nil
}

// cgroupArgv is argv run by a shell that first joins the cgroups whose cgroup.procs files are
// procs, so that everything argv starts is in them from its first instruction.
func cgroupArgv(procs, argv []string) []string {
	const script = `for f; do shift; if [ "$f" = -- ]; then exec "$@"; fi; echo $$ >"$f" || exit 125; done; exit 125`
	out := append([]string{"/bin/sh", "-c", script, "sh"}, procs...)
	out = append(out, "--")
	return append(out, argv...)
}

// removeMachineCgroups removes the machine's cgroups (their sub-cgroups first), once no
// process of the machine is left; a cgroup still in use stays (rmdir refuses it).
func (m *Machine) removeMachineCgroups() {
	roots, err := cgroupHierarchies()
	if err != nil {
		return
	}
	for _, root := range roots {
		removeCgroupTree(filepath.Join(root, cgroupGroup, m.NetNS))
	}
}

// removeCgroupTree removes dir and the cgroups below it, deepest first.
func removeCgroupTree(dir string) {
	var dirs []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	for _, d := range slices.Backward(dirs) {
		os.Remove(d)
	}
}
