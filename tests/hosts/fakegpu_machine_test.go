package hosts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
)

// TestFakeGPUsOnMachine checks the fake GPUs of a machine booted by systemd (Debian 13): the
// device files are the character device 1:3 inside it and a process inside can open them,
// the stub nvidia-smi answers the documented query on its PATH, and the machine's own /dev
// still works.
func TestFakeGPUsOnMachine(t *testing.T) {
	t.Parallel()
	n := hoststest.New(t)
	m := hoststest.AddMachine(t, n, "gpumach", "trixie")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.AddFakeGPUs(ctx, hosts.FakeGPUs{Model: "Tesla T4", Count: 2}); err != nil {
		t.Fatal(err)
	}
	if err := m.AddFakeGPUs(ctx, hosts.FakeGPUs{Model: "Tesla T4", Count: 1}); err == nil {
		t.Error("second AddFakeGPUs succeeded")
	}
	in := func(argv ...string) string {
		t.Helper()
		out, err := m.Run(ctx, argv...)
		if err != nil {
			t.Fatalf("%q on the machine: %v", argv, err)
		}
		return strings.TrimSpace(string(out))
	}
	for _, dev := range []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl"} {
		if got := in("stat", "-L", "-c", "%F %t:%T", dev); got != "character special file 1:3" {
			t.Errorf("%s on the machine: %q, want the character device 1:3", dev, got)
		}
	}
	// A service's process (the device cgroup of the machine applies) opens them.
	in("systemd-run", "--wait", "--quiet", "--pipe", "sh", "-c", "echo x >/dev/nvidia1 && head -c 1 /dev/nvidia0 >/dev/null")
	in("sh", "-c", "echo x >/dev/null && test -c /dev/zero")
	want := "0, Tesla T4, GPU-00000000-0000-4000-8000-000000000000\n1, Tesla T4, GPU-00000000-0000-4000-8000-000000000001"
	if got := in("env", "PATH=/usr/local/sbin:/usr/bin:/bin", "nvidia-smi", "--query-gpu=minor_number,name,uuid", "--format=csv,noheader"); got != want {
		t.Errorf("nvidia-smi on the machine: %q, want %q", got, want)
	}
	if out, err := m.Run(ctx, "test", "-e", "/dev/nvidia2"); err == nil {
		t.Errorf("a third GPU exists: %s", out)
	}
}
