package hosts

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Kill sends SIGKILL to every process of the host (of its network namespace) whose command
// name (/proc/<pid>/comm) is one of names, as when the power is cut under them: no signal
// handler runs, nothing is saved. It returns the names of the processes it killed, sorted,
// one per process, and an error naming each of names no process had.
func (h *Host) Kill(names ...string) ([]string, error) {
	ino, err := nsInode("/run/netns/" + h.NetNS)
	if err != nil {
		return nil, fmt.Errorf("cannot kill processes of host %s: %w", h.Name, err)
	}
	var killed []string
	for _, pid := range pidsInNetns(ino) {
		comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		name := strings.TrimSpace(string(comm))
		if err != nil || !slices.Contains(names, name) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, name)
		}
	}
	slices.Sort(killed)
	var missing []string
	for _, n := range names {
		if !slices.Contains(killed, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return killed, fmt.Errorf("cannot kill %s on host %s: no such process (killed %v)", strings.Join(missing, ", "), h.Name, killed)
	}
	return killed, nil
}
