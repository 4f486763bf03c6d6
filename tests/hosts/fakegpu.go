package hosts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// FakeGPUs describes the NVIDIA GPUs AddFakeGPUs gives a host.
type FakeGPUs struct {
	// Model is the product name nvidia-smi reports ("Tesla T4").
	Model string
	// Count is how many GPUs: /dev/nvidia0 … /dev/nvidia<Count-1>.
	Count int
	// NoSMI leaves nvidia-smi out (device files only, as on a node without
	// NVIDIA's tools).
	NoSMI bool
}

// hostDev is where AddFakeGPUs keeps the machine's /dev inside a host.
const hostDev = "/run/hostdev"

// AddFakeGPUs gives the host Count fake NVIDIA GPUs, visible only inside it:
//
//   - The host gets a /dev of its own (a tmpfs), whose entries are symbolic
//     links to the machine's /dev (kept at /run/hostdev), so that nothing is
//     ever created in the machine's /dev.
//   - /dev/nvidia0 … /dev/nvidia<Count-1> and /dev/nvidiactl are
//     bind-mounted from /dev/null: harmless character devices.
//   - Unless NoSMI, /usr/local/sbin (first in the host's PATH) is a
//     directory of the host's own holding a stub nvidia-smi that answers
//     `--query-gpu=<fields> --format=csv[,noheader][,nounits]` in
//     nvidia-smi's documented CSV format (fields index, minor_number, name,
//     uuid, pci.bus_id, memory.total), and fails like nvidia-smi on
//     anything else.
//
// It can be called once per host. RemoveFakeGPU takes one away again.
func (h *Host) AddFakeGPUs(ctx context.Context, g FakeGPUs) error {
	if g.Count < 1 || g.Count > 64 || strings.ContainsAny(g.Model, "'\n,\\|") || g.Model == "" {
		return fmt.Errorf("cannot add fake GPUs to host %q: want 1 to 64 GPUs and a model name without quotes, commas, | or new lines", h.Name)
	}
	if _, err := os.Lstat(h.ProcPath(hostDev)); err == nil {
		return fmt.Errorf("cannot add fake GPUs to host %q: already added", h.Name)
	}
	if err := os.Mkdir(h.ProcPath(hostDev), 0o755); err != nil {
		return fmt.Errorf("cannot add fake GPUs to host %q: %w", h.Name, err)
	}
	if err := h.mount(ctx, "--rbind", "/dev", hostDev); err != nil {
		return fmt.Errorf("cannot add fake GPUs to host %q: %w", h.Name, err)
	}
	minors := make([]int, g.Count)
	for i := range minors {
		minors[i] = i
	}
	if err := h.fakeGPUs(ctx, g.Model, minors, !g.NoSMI); err != nil {
		return fmt.Errorf("cannot add fake GPUs to host %q: %w", h.Name, err)
	}
	if g.NoSMI {
		return nil
	}
	if err := h.mount(ctx, "--bind", h.fakeBin(), "/usr/local/sbin"); err != nil {
		return fmt.Errorf("cannot add fake GPUs to host %q: %w", h.Name, err)
	}
	return nil
}

// RemoveFakeGPU takes GPU minor away from a host given fake GPUs by
// AddFakeGPUs, as when a GPU fails or is unplugged: /dev/nvidia<minor>
// disappears and nvidia-smi (if there is one) stops reporting it.
func (h *Host) RemoveFakeGPU(ctx context.Context, minor int) error {
	data, err := os.ReadFile(h.fakeRecord())
	if err != nil {
		return fmt.Errorf("cannot remove fake GPU %d from host %q: %w", minor, h.Name, err)
	}
	model, minors, smi := parseRecord(data)
	if !slices.Contains(minors, minor) {
		return fmt.Errorf("cannot remove fake GPU %d from host %q: no such GPU", minor, h.Name)
	}
	minors = slices.DeleteFunc(minors, func(m int) bool { return m == minor })
	if err := h.fakeGPUs(ctx, model, minors, smi); err != nil {
		return fmt.Errorf("cannot remove fake GPU %d from host %q: %w", minor, h.Name, err)
	}
	return nil
}

func (h *Host) fakeBin() string    { return filepath.Join(h.Dir, "fake-nvidia", "sbin") }
func (h *Host) fakeRecord() string { return filepath.Join(h.Dir, "fake-nvidia", "gpus") }

// fakeGPUs mounts a fresh /dev over the host's (the machine's /dev must be
// at hostDev): a tmpfs holding a link to every entry of hostDev, and
// /dev/nvidiactl and /dev/nvidia<m> for each of minors bound from
// /dev/null. The new tmpfs stacks on any earlier one, so that a GPU can be
// taken away without umount (whose libmount needs /proc/self, which this
// machine kind's /proc does not always resolve). It writes the stub
// nvidia-smi when smi is set, and records model, minors and smi.
func (h *Host) fakeGPUs(ctx context.Context, model string, minors []int, smi bool) error {
	entries, err := os.ReadDir(h.ProcPath(hostDev))
	if err != nil {
		return err
	}
	if err := h.mount(ctx, "-t", "tmpfs", "-o", "mode=0755,nosuid", "tmpfs", "/dev"); err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		target := hostDev + "/" + e.Name()
		if e.Type()&os.ModeSymlink != 0 {
			// Keep the machine's links as they are (/dev/fd → /proc/self/fd).
			if t, err := os.Readlink(h.ProcPath(target)); err == nil {
				target = t
			}
		}
		errs = append(errs, os.Symlink(target, h.ProcPath("/dev/"+e.Name())))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	files := []string{"nvidiactl"}
	for _, m := range minors {
		files = append(files, "nvidia"+strconv.Itoa(m))
	}
	for _, f := range files {
		if err := os.WriteFile(h.ProcPath("/dev/"+f), nil, 0o666); err != nil {
			return err
		}
		if err := h.mount(ctx, "--bind", hostDev+"/null", "/dev/"+f); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(h.fakeBin(), 0o755); err != nil {
		return err
	}
	if smi {
		if err := WriteExecutable(filepath.Join(h.fakeBin(), "nvidia-smi"), nvidiaSMIStub(model, minors), 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(h.fakeRecord(), []byte(record(model, minors, smi)), 0o644)
}

// mount runs mount with args inside the host's mount namespace.
func (h *Host) mount(ctx context.Context, args ...string) error {
	return run(ctx, append([]string{"nsenter", "-t", strconv.Itoa(h.PID()), "--mount", "--", "mount"}, args...))
}

// record renders what fakeGPUs made: "model|smi|minor|minor...".
func record(model string, minors []int, smi bool) string {
	s := model + "|" + strconv.FormatBool(smi)
	for _, m := range minors {
		s += "|" + strconv.Itoa(m)
	}
	return s
}

func parseRecord(data []byte) (model string, minors []int, smi bool) {
	fields := strings.Split(string(data), "|")
	if len(fields) < 2 {
		return "", nil, false
	}
	for _, f := range fields[2:] {
		if n, err := strconv.Atoi(f); err == nil {
			minors = append(minors, n)
		}
	}
	return fields[0], minors, fields[1] == "true"
}

// nvidiaSMIStub is a POSIX shell script answering nvidia-smi's CSV queries
// about GPUs of model with the given minor numbers.
func nvidiaSMIStub(model string, minors []int) []byte {
	var values strings.Builder
	list := make([]string, len(minors))
	for i, m := range minors {
		list[i] = strconv.Itoa(m)
		fmt.Fprintf(&values, "  %d,index) v=%d ;;\n", m, i)
		fmt.Fprintf(&values, "  %d,minor_number) v=%d ;;\n", m, m)
		fmt.Fprintf(&values, "  %d,name) v='%s' ;;\n", m, model)
		fmt.Fprintf(&values, "  %d,uuid) v=GPU-00000000-0000-4000-8000-%012d ;;\n", m, m)
		fmt.Fprintf(&values, "  %d,pci.bus_id) v=00000000:%02X:00.0 ;;\n", m, m+1)
		fmt.Fprintf(&values, "  %d,memory.total) v=\"15360$mib\" ;;\n", m)
	}
	return []byte(`#!/bin/sh
# Stub nvidia-smi written by tests/hosts (AddFakeGPUs): answers
# --query-gpu=<fields> --format=csv[,noheader][,nounits] like nvidia-smi.
query= format=
for a in "$@"; do
  case $a in
  --query-gpu=*) query=${a#--query-gpu=} ;;
  --format=*) format=${a#--format=} ;;
  *) echo "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help." >&2; exit 2 ;;
  esac
done
if [ -z "$query" ] || [ -z "$format" ]; then
  echo "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help." >&2; exit 2
fi
header=yes mib=" MiB"
for f in $(echo "$format" | tr ',' ' '); do
  case $f in
  csv) ;;
  noheader) header=no ;;
  nounits) mib= ;;
  *) echo "Invalid format option: $f" >&2; exit 2 ;;
  esac
done
fields=$(echo "$query" | tr ',' ' ')
if [ $header = yes ]; then
  out= sep=
  for f in $fields; do
    case $f in memory.total) [ -n "$mib" ] && f="memory.total [MiB]" ;; esac
    out="$out$sep$f"; sep=", "
  done
  echo "$out"
fi
for i in ` + strings.Join(list, " ") + `; do
  out= sep=
  for f in $fields; do
    case "$i,$f" in
` + values.String() + `  *) echo "Field \"$f\" is not a valid field to query." >&2; exit 2 ;;
    esac
    out="$out$sep$v"; sep=", "
  done
  echo "$out"
done
`)
}
