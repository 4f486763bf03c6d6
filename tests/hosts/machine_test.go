package hosts_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
)

// TestMachineRebootUnderCommand: a command entered into a machine (as the local model runs
// hooks) and still running when the machine reboots dies with the machine, and the reboot
// completes. systemd-shutdown stops every process of the machine before it kills them; the
// nsenter that entered the command, outside, stops itself when its child stops and nobody in
// the machine can continue it: without the machine's care the command is a zombie nobody reaps
// and the machine's PID 1 never exits (the reboot hangs until the nsenter is killed).
func TestMachineRebootUnderCommand(t *testing.T) {
	for _, suite := range hoststest.Suites {
		t.Run(suite, func(t *testing.T) {
			t.Parallel()
			n := hoststest.New(t)
			m := hoststest.AddMachine(t, n, "m1", suite)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := m.Command(ctx, []string{"sleep", "600"})
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			before := m.Boots()
			if err := m.Reboot(ctx); err != nil {
				t.Fatalf("reboot with a command running in the machine: %v", err)
			}
			if m.Boots() != before+1 {
				t.Errorf("boots %d after one reboot from %d", m.Boots(), before)
			}
			select {
			case err := <-waited:
				if err == nil {
					t.Errorf("the command ended well across the reboot, want it killed")
				}
			case <-ctx.Done():
				t.Fatalf("the command entered before the reboot has not returned: %v", ctx.Err())
			}
		})
	}
}

// TestMachineService: a service started in a machine (as the local model starts the stand-in
// for a machine's Juju agent) runs as a process the test process can watch, and the machine's
// systemd stops it when the machine reboots, before it unmounts the binds the service requires.
func TestMachineService(t *testing.T) {
	for _, suite := range []string{"bookworm", "trixie"} {
		t.Run(suite, func(t *testing.T) {
			t.Parallel()
			n := hoststest.New(t)
			bind := t.TempDir()
			if err := os.WriteFile(filepath.Join(bind, "marker"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			m, err := n.AddMachine(ctx, hosts.MachineOptions{Name: "m1", Image: hoststest.Image(t, suite), Binds: []string{bind}})
			if err != nil {
				t.Fatal(err)
			}
			// Its stop records whether the bind was still there.
			stop := fmt.Sprintf("ExecStop=/bin/sh -c 'if test -e %s/marker; then echo mounted; else echo gone; fi >/var/tmp/stopped'", bind)
			p, err := m.StartService(ctx, "ad-svc", []string{"RequiresMountsFor=" + bind, stop}, "sleep", "infinity")
			if err != nil {
				t.Fatal(err)
			}
			if !p.Running() {
				t.Fatalf("service process %+v not running once started", p)
			}
			if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.PID)); err != nil || strings.TrimSpace(string(st)) != "sleep" {
				t.Errorf("process %d is %q (%v), want the service's sleep", p.PID, st, err)
			}
			if _, err := m.StartService(ctx, "ad-svc", nil, "sleep", "infinity"); err == nil {
				t.Errorf("a second service of the same name started")
			}
			if err := m.Reboot(ctx); err != nil {
				t.Fatal(err)
			}
			if p.Running() {
				t.Errorf("service process %+v of the last boot still running", p)
			}
			got, err := os.ReadFile(m.Path("/var/tmp/stopped"))
			if err != nil || strings.TrimSpace(string(got)) != "mounted" {
				t.Errorf("the service's stop found the bind %q (%v), want mounted", got, err)
			}
		})
	}
}

// TestMachineLifecycle boots a machine of each image and checks what a cloud machine gives:
// systemd as PID 1 with the image's Slurm (Debian 14's systemd 262 on a unified cgroup
// hierarchy: it refuses the host's legacy one), the network's address, a file that survives a
// reboot with a new boot id, a power-off that keeps the disk, and another boot.
func TestMachineLifecycle(t *testing.T) {
	for _, tc := range []struct {
		suite, slurm, systemd string
	}{
		{"bookworm", "slurm-wlm 22.05", "systemd 252"},
		{"trixie", "slurm-wlm 24.11", "systemd 257"},
		{"forky", "slurm-wlm 26.05", "systemd 262"},
	} {
		t.Run(tc.suite, func(t *testing.T) {
			t.Parallel()
			n := hoststest.New(t)
			m := hoststest.AddMachine(t, n, "m1", tc.suite)
			peer := hoststest.AddHost(t, n, "peer")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()

			run := func(argv ...string) string {
				t.Helper()
				out, err := m.Run(ctx, argv...)
				if err != nil {
					t.Fatal(err)
				}
				return strings.TrimSpace(string(out))
			}
			if got := run("hostname"); got != "m1" {
				t.Errorf("hostname = %q, want m1", got)
			}
			if got := run("cat", "/proc/1/comm"); got != "systemd" {
				t.Errorf("PID 1 is %q, want systemd", got)
			}
			// CommandIn runs in a directory of the machine's own file system.
			run("mkdir", "-p", "/var/lib/cmdin/inside")
			if out, err := m.CommandIn(ctx, "/var/lib/cmdin", []string{"sh", "-c", "pwd; ls"}).Output(); err != nil || string(out) != "/var/lib/cmdin\ninside\n" {
				t.Errorf("CommandIn /var/lib/cmdin ran in %q (%v), want the machine's directory", out, err)
			}
			if got := run("systemctl", "--version"); !strings.HasPrefix(got, tc.systemd) {
				t.Errorf("systemctl --version = %q, want %s...", got, tc.systemd)
			}
			if got := run("slurmd", "-V"); !strings.HasPrefix(got, tc.slurm) {
				t.Errorf("slurmd -V = %q, want %s...", got, tc.slurm)
			}
			// The charms start Slurm and munge themselves.
			for _, unit := range []string{"munge", "slurmd", "slurmctld"} {
				out, _ := m.Run(ctx, "systemctl", "is-enabled", unit)
				if got := strings.TrimSpace(string(out)); got != "disabled" {
					t.Errorf("%s is %q on a fresh machine, want disabled", unit, got)
				}
			}
			if got := run("ip", "-4", "-o", "addr", "show", "eth0"); !strings.Contains(got, " "+m.Addr.String()+"/") {
				t.Errorf("eth0 = %q, want address %s", got, m.Addr)
			}
			// The machine reaches a host of the network: bash's /dev/tcp connects to a listener there.
			ln, err := peer.Listen(ctx, "tcp", net.JoinHostPort(peer.Addr.String(), "0"))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			accepted := make(chan error, 1)
			go func() {
				c, err := ln.Accept()
				if err == nil {
					c.Close()
				}
				accepted <- err
			}()
			if _, err := m.Run(ctx, "bash", "-c", `exec 3<>"/dev/tcp/$0/$1"`, peer.Addr.String(), strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)); err != nil {
				t.Errorf("machine cannot reach a host of the network: %v", err)
			} else if err := <-accepted; err != nil {
				t.Errorf("host of the network saw no connection from the machine: %v", err)
			}

			// Files written through Path are the machine's files.
			if err := os.WriteFile(m.Path("/var/lib/juju/marker"), []byte("kept\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			boot1, err := m.BootID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pid1 := m.PID()
			asked := time.Now()
			if err := m.Reboot(ctx); err != nil {
				t.Fatal(err)
			}
			// The new boot's times, as systemd inside recorded them: after the request, and
			// finished by the time Reboot returned.
			bt, err := m.BootTimes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if back := time.Now(); !asked.Before(bt.Started) || bt.Finished.Before(bt.Started) || bt.Finished.After(back) {
				t.Errorf("boot times %+v, want reboot asked (%v) < started <= finished <= back (%v)", bt, asked, back)
			}
			boot2, err := m.BootID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if boot2 == boot1 || boot2 == "" {
				t.Errorf("boot id after reboot = %q, before %q: want a new one", boot2, boot1)
			}
			if m.PID() == pid1 {
				t.Errorf("PID 1 is still process %d after the reboot", pid1)
			}
			if got := run("cat", "/var/lib/juju/marker"); got != "kept" {
				t.Errorf("marker after reboot = %q, want kept", got)
			}
			if d := cmp.Diff(2, m.Boots()); d != "" {
				t.Errorf("boots (-want +got):\n%s", d)
			}

			if err := m.PowerOff(ctx); err != nil {
				t.Fatal(err)
			}
			if m.Running() || m.PID() != 0 {
				t.Fatalf("machine still running after power-off (PID 1 %d)", m.PID())
			}
			if _, err := m.Run(ctx, "true"); err == nil {
				t.Error("a command ran on a machine that is off")
			}
			data, err := os.ReadFile(m.Path("/var/lib/juju/marker"))
			if err != nil || string(data) != "kept\n" {
				t.Errorf("disk while off: %q, %v; want kept", data, err)
			}
			if err := m.Boot(ctx); err != nil {
				t.Fatal(err)
			}
			boot3, err := m.BootID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if boot3 == boot2 || boot3 == boot1 {
				t.Errorf("boot id after power-on = %q: want a new one (before: %q, %q)", boot3, boot1, boot2)
			}
		})
	}
}

// TestMachineRemove checks that RemoveMachine leaves no process, namespace or mount behind
// and frees the name.
func TestMachineRemove(t *testing.T) {
	n := hoststest.New(t)
	m := hoststest.AddMachine(t, n, "gone", "bookworm")
	pids := []int{m.PID()}
	netns := m.NetNS
	if err := n.RemoveMachine("gone"); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if isAlive(pid) {
			t.Errorf("process %d of the machine survived RemoveMachine", pid)
		}
	}
	if _, err := os.Stat("/run/netns/" + netns); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace %s left behind: %v", netns, err)
	}
	if _, err := os.Stat(m.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("machine directory left behind: %v", err)
	}
	if n.Machine("gone") != nil {
		t.Error("removed machine still listed")
	}
	hoststest.AddHost(t, n, "gone") // the name is free again
	ctx := context.Background()
	if _, err := n.AddMachine(ctx, hosts.MachineOptions{Name: "gone", Image: hoststest.Image(t, "bookworm")}); err == nil {
		t.Error("AddMachine took the name of a host")
	}
}

const machineCrashChildEnv = "HOSTS_TEST_MACHINE_CRASH_CHILD_REGISTRY"

// crashChildNetwork is the network of a crash child test (a test process that builds a network
// and is then killed): on the registry named by the environment variable env, in
// HOSTS_TEST_CRASH_CHILD_DIR. Without env the test is skipped as the helper of parent.
func crashChildNetwork(t *testing.T, env, parent string) *hosts.Network {
	t.Helper()
	registry := os.Getenv(env)
	if registry == "" {
		t.Skip("helper for " + parent)
	}
	pebble, err := hoststest.PebbleBin()
	if err != nil {
		t.Fatal(err)
	}
	n, err := hosts.NewNetwork(context.Background(), hosts.NetworkOptions{Prefix: hoststest.Prefix, Dir: os.Getenv("HOSTS_TEST_CRASH_CHILD_DIR"), PebbleBin: pebble, RegistryDir: registry})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMachineCrashChild(t *testing.T) {
	n := crashChildNetwork(t, machineCrashChildEnv, "TestMachineSweepAfterCrash")
	ctx := context.Background()
	m, err := n.AddMachine(ctx, hosts.MachineOptions{Name: "crash", Image: os.Getenv("HOSTS_TEST_CRASH_CHILD_IMAGE")})
	if err != nil {
		t.Fatal(err)
	}
	// A process of the machine's network namespace that no parent-death signal reaches.
	stray := exec.Command("nsenter", "--net=/run/netns/"+m.NetNS, "--", "sleep", "infinity")
	stray.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("READY %s %s %d %d\n", m.NetNS, m.Dir, m.PID(), stray.Process.Pid)
	select {} // until killed
}

// TestMachineSweepAfterCrash kills a process that owns a booted machine and checks that the
// machine shuts down with it and that the next NewNetwork on the registry sweeps its
// namespace and whatever is left in it.
func TestMachineSweepAfterCrash(t *testing.T) {
	img := hoststest.Image(t, "bookworm")
	registry := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMachineCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), machineCrashChildEnv+"="+registry,
		"HOSTS_TEST_CRASH_CHILD_DIR="+filepath.Join(t.TempDir(), "net"), "HOSTS_TEST_CRASH_CHILD_IMAGE="+img)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var fields []string
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if f := strings.Fields(sc.Text()); len(f) == 5 && f[0] == "READY" {
			fields = f
			break
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	pebbleBin, err := hoststest.PebbleBin()
	if err != nil {
		t.Fatal(err)
	}
	sweep := func(ctx context.Context) error {
		n, err := hosts.NewNetwork(ctx, hosts.NetworkOptions{Prefix: hoststest.Prefix, Dir: filepath.Join(registry, "sweep"), PebbleBin: pebbleBin, RegistryDir: registry, StopTimeout: 5 * time.Second})
		if err != nil {
			return err
		}
		return n.Close()
	}
	if fields == nil {
		sweep(context.Background())
		t.Fatalf("crash child did not get ready: %s", strings.Join(lines, "\n"))
	}
	netns, dir := fields[1], fields[2]
	pid1, _ := strconv.Atoi(fields[3])
	stray, _ := strconv.Atoi(fields[4])
	t.Cleanup(func() { syscall.Kill(stray, syscall.SIGKILL) })

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := waitDead(ctx, pid1); err != nil {
		t.Errorf("the machine's systemd (%d) survived its owner: %v", pid1, err)
	}
	if !isAlive(stray) {
		t.Fatal("the stray process died with the owner: this test cannot check the sweep")
	}
	if err := sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/run/netns/" + netns); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace %s not swept: %v", netns, err)
	}
	if err := waitDead(ctx, stray); err != nil {
		t.Errorf("stray process %d not swept: %v", stray, err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), dir) {
		t.Errorf("a mount of the crashed machine is left: %s", dir)
	}
}

// BenchmarkMachineDown is what the local model's agent pays before every hook to know its
// machine is not going down: Up (the machine's PID 1 is systemd, not systemd-shutdown: what it
// checked before), Running on the agent's service (what it checks now), and StartService, which
// it pays once a boot.
//
//	CI=true go test -run '^$' -bench 'BenchmarkMachineDown/(Up|Running)' -benchtime 2000x -count 5 ./tests/hosts/
//	CI=true go test -run '^$' -bench 'BenchmarkMachineDown/StartService' -benchtime 20x -count 5 ./tests/hosts/
func BenchmarkMachineDown(b *testing.B) {
	n := hoststest.New(b)
	m := hoststest.AddMachine(b, n, "m1", "bookworm")
	ctx := context.Background()
	p, err := m.StartService(ctx, "ad-agent", nil, "sleep", "infinity")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Up", func(b *testing.B) {
		for b.Loop() {
			if !m.Up() {
				b.Fatal("machine not up")
			}
		}
	})
	b.Run("Running", func(b *testing.B) {
		for b.Loop() {
			if !p.Running() {
				b.Fatal("service not running")
			}
		}
	})
	i := 0 // unit names stay unique across the runs of the sub-benchmark
	b.Run("StartService", func(b *testing.B) {
		for b.Loop() {
			i++
			if _, err := m.StartService(ctx, "ad-bench-"+strconv.Itoa(i), nil, "sleep", "infinity"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestMachinesOwnCgroups: two Debian 14 machines (systemd 262 on the unified hierarchy) each
// get cgroups of their own, and restart a unit of the same name at the same time, many times,
// without one machine's systemd removing the cgroup the other is starting the unit into. With
// the machines sharing one /payload, such restarts failed now and then with "Failed to spawn
// executor: No such file or directory" (result 'resources').
func TestMachinesOwnCgroups(t *testing.T) {
	n := hoststest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	img := hoststest.Image(t, "forky")
	var ms []*hosts.Machine
	for _, name := range []string{"m1", "m2"} {
		m, err := n.AddMachine(ctx, hosts.MachineOptions{Name: name, Image: img})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	seen := map[string]string{}
	for _, m := range ms {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", m.PID()))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			_, path, _ := strings.Cut(line, ":")
			if !strings.HasPrefix(path, ":") && !strings.HasPrefix(path, "name=systemd:") {
				continue // a v1 controller hierarchy: not the machine's
			}
			if !strings.Contains(path, "/charmed-slurm/"+m.NetNS+"/") {
				t.Errorf("machine %s's PID 1 is in cgroup %q, want one below charmed-slurm/%s", m.Name, path, m.NetNS)
			}
			if other, ok := seen[path]; ok {
				t.Errorf("machines %s and %s share cgroup %q", other, m.Name, path)
			}
			seen[path] = m.Name
		}
	}
	unit := "[Unit]\nStartLimitIntervalSec=0\n[Service]\nExecStart=/bin/sleep infinity\n"
	for _, m := range ms {
		if err := os.WriteFile(m.Path("/etc/systemd/system/ad-cg.service"), []byte(unit), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := m.Run(ctx, "systemctl", "daemon-reload"); err != nil {
			t.Fatalf("%s: daemon-reload: %v: %s", m.Name, err, out)
		}
	}
	errs := make(chan error, len(ms))
	for _, m := range ms {
		go func() {
			for i := range 30 {
				if out, err := m.Run(ctx, "systemctl", "restart", "ad-cg.service"); err != nil {
					errs <- fmt.Errorf("%s: restart %d: %v: %s", m.Name, i, err, out)
					return
				}
			}
			errs <- nil
		}()
	}
	for range ms {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
