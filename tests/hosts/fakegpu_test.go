package hosts_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
)

// TestFakeGPUs checks the fake GPUs a host gets: device files only it sees,
// bound from /dev/null, and a stub nvidia-smi answering in its CSV format.
func TestFakeGPUs(t *testing.T) {
	t.Parallel()
	_, statErr := os.Stat("/dev/nvidia0")
	machineHasGPU := statErr == nil
	n := hoststest.New(t)
	g := hoststest.AddHost(t, n, "gpuhost")
	other := hoststest.AddHost(t, n, "plain")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := g.AddFakeGPUs(ctx, hosts.FakeGPUs{Model: "Tesla T4", Count: 2}); err != nil {
		t.Fatal(err)
	}
	if err := g.AddFakeGPUs(ctx, hosts.FakeGPUs{Model: "Tesla T4", Count: 1}); err == nil {
		t.Error("second AddFakeGPUs succeeded")
	}

	for _, dev := range []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl"} {
		if got := run(t, g, "stat", "-L", "-c", "%F %t:%T", dev); got != "character special file 1:3" {
			t.Errorf("%s inside the host: %q, want the character device 1:3 (/dev/null)", dev, got)
		}
	}
	// The rest of /dev still works inside the host.
	run(t, g, "sh", "-c", "echo x >/dev/null && head -c 4 /dev/urandom >/dev/null && test -c /dev/zero")
	if !machineHasGPU {
		if _, err := os.Stat("/dev/nvidia0"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the machine's /dev/nvidia0: %v, want it absent", err)
		}
	}
	if out, err := other.Run(ctx, "test", "-e", "/dev/nvidia0"); err == nil {
		t.Errorf("another host sees /dev/nvidia0: %s", out)
	}
	if out, err := other.Run(ctx, "nvidia-smi"); err == nil {
		t.Errorf("another host has nvidia-smi: %s", out)
	}

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"documented query", []string{"--query-gpu=minor_number,name,uuid", "--format=csv,noheader"},
			"0, Tesla T4, GPU-00000000-0000-4000-8000-000000000000\n1, Tesla T4, GPU-00000000-0000-4000-8000-000000000001"},
		{"header and units", []string{"--query-gpu=index,name,pci.bus_id,memory.total", "--format=csv"},
			"index, name, pci.bus_id, memory.total [MiB]\n0, Tesla T4, 00000000:01:00.0, 15360 MiB\n1, Tesla T4, 00000000:02:00.0, 15360 MiB"},
		{"nounits", []string{"--format=csv,noheader,nounits", "--query-gpu=memory.total"}, "15360\n15360"},
	}
	for _, tt := range tests {
		if got := run(t, g, append([]string{"nvidia-smi"}, tt.args...)...); got != tt.want {
			t.Errorf("%s: nvidia-smi %s (-want +got):\n%s", tt.name, strings.Join(tt.args, " "), cmp.Diff(tt.want, got))
		}
	}
	for _, args := range [][]string{
		{"--query-gpu=name,power.draw", "--format=csv"},
		{"--query-gpu=name"},
		{"--query-gpu=name", "--format=xml"},
		{"-L"},
	} {
		if out, err := g.Run(ctx, append([]string{"nvidia-smi"}, args...)...); err == nil {
			t.Errorf("nvidia-smi %s succeeded: %s", strings.Join(args, " "), out)
		}
	}

	if err := g.RemoveFakeGPU(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if out, err := g.Run(ctx, "test", "-e", "/dev/nvidia0"); err == nil {
		t.Errorf("/dev/nvidia0 still there after RemoveFakeGPU: %s", out)
	}
	if got := run(t, g, "nvidia-smi", "--query-gpu=index,minor_number", "--format=csv,noheader"); got != "0, 1" {
		t.Errorf("nvidia-smi after removing GPU 0: %q, want \"0, 1\"", got)
	}
	if err := g.RemoveFakeGPU(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := run(t, g, "nvidia-smi", "--query-gpu=name", "--format=csv,noheader"); got != "" {
		t.Errorf("nvidia-smi without GPUs: %q, want nothing", got)
	}
}
