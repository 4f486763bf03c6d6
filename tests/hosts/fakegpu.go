package hosts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
// It can be called once per host.
func (h *Host) AddFakeGPUs(ctx context.Context, g FakeGPUs) error {
	if g.Count < 1 || g.Count > 64 || strings.ContainsAny(g.Model, "'\n,\\") || g.Model == "" {
		return fmt.Errorf("cannot add fake GPUs to host %q: want 1 to 64 GPUs and a model name without quotes, commas or new lines", h.Name)
	}
	if _, err := os.Lstat(h.ProcPath(hostDev)); err == nil {
		return fmt.Errorf("cannot add fake GPUs to host %q: already added", h.Name)
	}
	if err := h.privateDev(ctx); err != nil {
		return fmt.Errorf("cannot add fake GPUs to host %q: %w", h.Name, err)
	}
	files := []string{"nvidiactl"}
	for i := range g.Count {
		files = append(files, "nvidia"+strconv.Itoa(i))
	}
	for _, f := range files {
		if err := os.WriteFile(h.ProcPath("/dev/"+f), nil, 0o666); err != nil {
			return fmt.Errorf("cannot add fake GPUs to host %q: %w", h.Name, err)
		}
		if err := h.mount(ctx, "--bind", hostDev+"/null", "/dev/"+f); err != nil {
			return fmt.Errorf("cannot add fake GPUs to host %q: %w", h.Name, err)
		}
	}
	if g.NoSMI {
		return nil
	}
	bin := filepath.Join(h.Dir, "fake-nvidia", "sbin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), nvidiaSMIStub(g), 0o755); err != nil {
		return err
	}
	if err := h.mount(ctx, "--bind", bin, "/usr/local/sbin"); err != nil {
		return fmt.Errorf("cannot add fake GPUs to host %q: %w", h.Name, err)
	}
	return nil
}

// privateDev gives the host a tmpfs /dev whose entries link to the
// machine's /dev, bind-mounted (with its submounts) at hostDev.
func (h *Host) privateDev(ctx context.Context) error {
	if err := os.Mkdir(h.ProcPath(hostDev), 0o755); err != nil {
		return err
	}
	if err := h.mount(ctx, "--rbind", "/dev", hostDev); err != nil {
		return err
	}
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
	return errors.Join(errs...)
}

// mount runs mount with args inside the host's mount namespace.
func (h *Host) mount(ctx context.Context, args ...string) error {
	return run(ctx, append([]string{"nsenter", "-t", strconv.Itoa(h.PID()), "--mount", "--", "mount"}, args...))
}

// nvidiaSMIStub is a POSIX shell script answering nvidia-smi's CSV queries
// about g's GPUs.
func nvidiaSMIStub(g FakeGPUs) []byte {
	var values strings.Builder
	for i := range g.Count {
		fmt.Fprintf(&values, "  %d,index) v=%d ;;\n", i, i)
		fmt.Fprintf(&values, "  %d,minor_number) v=%d ;;\n", i, i)
		fmt.Fprintf(&values, "  %d,name) v='%s' ;;\n", i, g.Model)
		fmt.Fprintf(&values, "  %d,uuid) v=GPU-00000000-0000-4000-8000-%012d ;;\n", i, i)
		fmt.Fprintf(&values, "  %d,pci.bus_id) v=00000000:%02X:00.0 ;;\n", i, i+1)
		fmt.Fprintf(&values, "  %d,memory.total) v=\"15360$mib\" ;;\n", i)
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
i=0
while [ $i -lt ` + strconv.Itoa(g.Count) + ` ]; do
  out= sep=
  for f in $fields; do
    case "$i,$f" in
` + values.String() + `  *) echo "Field \"$f\" is not a valid field to query." >&2; exit 2 ;;
    esac
    out="$out$sep$v"; sep=", "
  done
  echo "$out"
  i=$((i + 1))
done
`)
}
