package hosts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// AddFakeGPUs gives a booted machine Count fake NVIDIA GPUs, as (*Host).AddFakeGPUs gives a
// host: /dev/nvidia0 … /dev/nvidia<Count-1> and /dev/nvidiactl bind-mounted from /dev/null
// inside the machine's own /dev (the tmpfs systemd-nspawn gives it; nothing is created in
// this machine kind's /dev), and, unless NoSMI, the stub nvidia-smi in the machine's
// /usr/local/sbin (in its root file system's upper layer). The mounts are made in the
// machine's mount namespace by its own mount(8), and /dev/null is a device every nspawn
// container may open, so jobs inside the machine can open the fake GPUs. They last until the
// machine reboots (nspawn gives a boot a new /dev). It can be called once per boot.
func (m *Machine) AddFakeGPUs(ctx context.Context, g FakeGPUs) error {
	if g.Count < 1 || g.Count > 64 || strings.ContainsAny(g.Model, "'\n,\\|") || g.Model == "" {
		return fmt.Errorf("cannot add fake GPUs to machine %q: want 1 to 64 GPUs and a model name without quotes, commas, | or new lines", m.Name)
	}
	if m.PID() == 0 {
		return fmt.Errorf("cannot add fake GPUs to machine %q: it is not running", m.Name)
	}
	if out, err := m.Run(ctx, "test", "-e", "/dev/nvidiactl"); err == nil {
		return fmt.Errorf("cannot add fake GPUs to machine %q: already added (%s)", m.Name, out)
	}
	files := []string{"nvidiactl"}
	minors := make([]int, g.Count)
	for i := range minors {
		minors[i] = i
		files = append(files, "nvidia"+strconv.Itoa(i))
	}
	for _, f := range files {
		dev := "/dev/" + f
		if out, err := m.Run(ctx, "touch", dev); err != nil {
			return fmt.Errorf("cannot add fake GPUs to machine %q: %w: %s", m.Name, err, out)
		}
		if out, err := m.Run(ctx, "mount", "--bind", "/dev/null", dev); err != nil {
			return fmt.Errorf("cannot add fake GPUs to machine %q: %w: %s", m.Name, err, out)
		}
	}
	if g.NoSMI {
		return nil
	}
	bin := m.Path("/usr/local/sbin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return fmt.Errorf("cannot add fake GPUs to machine %q: %w", m.Name, err)
	}
	if err := WriteExecutable(filepath.Join(bin, "nvidia-smi"), nvidiaSMIStub(g.Model, minors), 0o755); err != nil {
		return fmt.Errorf("cannot add fake GPUs to machine %q: %w", m.Name, err)
	}
	return nil
}
