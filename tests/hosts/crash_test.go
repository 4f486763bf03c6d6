package hosts_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
)

// crashChildEnv makes TestCrashChild act as a test process that builds a
// network and is then killed without cleaning up.
const crashChildEnv = "HOSTS_TEST_CRASH_CHILD_REGISTRY"

func TestCrashChild(t *testing.T) {
	n := crashChildNetwork(t, crashChildEnv, "TestSweepAfterCrash")
	ctx := context.Background()
	h, err := n.AddHost(ctx, hosts.HostOptions{Name: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	// A daemon of the host that no parent-death signal reaches: in the host's network
	// namespace but outside its PID namespace (whose processes all die with the host's PID 1).
	stray := exec.Command("nsenter", "--net=/run/netns/"+h.NetNS, "--", "sleep", "infinity")
	stray.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	// A process inside the host's PID namespace, started as tests start them.
	inner := h.Command(ctx, []string{"sleep", "infinity"})
	inner.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := inner.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until both run inside the host: nsenter has exec'd sleep (stray), nsenter has
	// forked sleep into the PID namespace (inner).
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	innerPID := 0
	for {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(stray.Process.Pid) + "/comm")
		children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", inner.Process.Pid, inner.Process.Pid))
		innerPID, _ = strconv.Atoi(strings.TrimSpace(string(children)))
		innerComm, _ := os.ReadFile("/proc/" + strconv.Itoa(innerPID) + "/comm")
		if strings.TrimSpace(string(comm)) == "sleep" && strings.TrimSpace(string(innerComm)) == "sleep" {
			break
		}
		<-tick.C
	}
	fmt.Printf("READY %s %s %d %d %d %d\n", n.Prefix, h.NetNS, h.PID(), h.PebblePID(), innerPID, stray.Process.Pid)
	select {} // until killed
}

// TestSweepAfterCrash kills a process that owns a network and checks that
// its host processes die with it and that the next NewNetwork sweeps its
// namespaces and stray processes.
func TestSweepAfterCrash(t *testing.T) {
	if reason := hoststest.Unavailable(); reason != "" {
		hoststest.Skip(t, reason)
	}
	registry := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+registry, "HOSTS_TEST_CRASH_CHILD_DIR="+filepath.Join(t.TempDir(), "net"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var fields []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 7 && f[0] == "READY" {
			fields = f
			break
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	// A test that stops before its own sweep below (or a child that failed half-way) would leave
	// the child's namespaces and processes behind: sweep them here then, as the next network on
	// the registry would.
	swept := false
	t.Cleanup(func() {
		if swept {
			return
		}
		pebbleBin, err := hoststest.PebbleBin()
		if err != nil {
			t.Errorf("cannot sweep the crash child's network: %v", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n, err := hosts.NewNetwork(ctx, hosts.NetworkOptions{Prefix: hoststest.Prefix, Dir: filepath.Join(registry, "sweep"), PebbleBin: pebbleBin, RegistryDir: registry, StopTimeout: 2 * time.Second})
		if err != nil {
			t.Errorf("cannot sweep the crash child's network: %v", err)
			return
		}
		if err := n.Close(); err != nil {
			t.Errorf("cannot sweep the crash child's network: %v", err)
		}
	})
	if fields == nil {
		t.Fatal("crash child did not get ready")
	}
	prefix, hostNS := fields[1], fields[2]
	var pids []int
	for _, f := range fields[3:] {
		pid, _ := strconv.Atoi(f)
		pids = append(pids, pid)
	}
	holder, pebble, inner, stray := pids[0], pids[1], pids[2], pids[3]
	t.Cleanup(func() { syscall.Kill(stray, syscall.SIGKILL) })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, pid := range []int{holder, pebble, inner} {
		if err := waitDead(ctx, pid); err != nil {
			t.Errorf("host process %d survived its owner: %v", pid, err)
		}
	}
	if !isAlive(stray) {
		t.Fatal("the stray process died with the owner: this test cannot check the sweep")
	}
	if _, err := os.Stat("/run/netns/" + hostNS); err != nil {
		t.Fatalf("host namespace gone before the sweep: %v", err)
	}

	pebbleBin, err := hoststest.PebbleBin()
	if err != nil {
		t.Fatal(err)
	}
	n, err := hosts.NewNetwork(ctx, hosts.NetworkOptions{Prefix: hoststest.Prefix, Dir: t.TempDir(), PebbleBin: pebbleBin, RegistryDir: registry, StopTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	swept = true
	defer n.Close()
	if _, err := os.Stat("/run/netns/" + hostNS); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace %s not swept: %v", hostNS, err)
	}
	if err := waitDead(ctx, stray); err != nil {
		t.Errorf("stray process %d not swept: %v", stray, err)
	}
	// The swept subnet is free again: its record left the registry and its switch namespace
	// is gone, unless the new network took the subnet. (It takes the lowest free one; another
	// test package's network on the same prefix may have held a lower one while the child
	// ran and let it go since, so the new network need not take the swept one.)
	state := filepath.Join(registry, "subnet-"+strings.TrimPrefix(prefix, hoststest.Prefix)+".netns")
	if n.Prefix != prefix {
		if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the swept subnet %s is still recorded in %s: %v", prefix, state, err)
		}
		if _, err := os.Stat("/run/netns/" + prefix + "sw"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the swept subnet's switch namespace %ssw is still there: %v", prefix, err)
		}
	}
}

func isAlive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(data), ") Z ")
}

func waitDead(ctx context.Context, pid int) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for isAlive(pid) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
