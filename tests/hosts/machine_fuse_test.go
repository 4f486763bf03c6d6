package hosts_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
)

// TestMachineSSHFSAndPowerCut: a Debian 13 and 14 machine mounts a share of another host with
// sshfs (the image's sshfs, through the /dev/fuse every machine gets), and what it writes is
// on the other host at once; PowerCut then kills every process of the machine with no
// shutdown (its services and its mount gone, the machine off and silent on the network, the
// other host's share intact) and Boot starts it again from the same disk, reachable again.
func TestMachineSSHFSAndPowerCut(t *testing.T) {
	for _, suite := range []string{"trixie", "forky"} {
		t.Run(suite, func(t *testing.T) {
			t.Parallel()
			n := hoststest.New(t)
			m := hoststest.AddMachine(t, n, "m1", suite)
			storage := hoststest.AddHost(t, n, "storage")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()

			if got := run(t, m, "stat", "-c", "%F", "/dev/fuse"); got != "character special file" {
				t.Fatalf("/dev/fuse in the machine is %q, want a character device", got)
			}
			const share, port = "/var/tmp/share", 7022
			if out, err := storage.Run(ctx, "mkdir", "-p", share); err != nil {
				t.Fatalf("mkdir: %v: %s", err, out)
			}
			srv := storage.Command(ctx, []string{"socat", fmt.Sprintf("TCP-LISTEN:%d,fork,reuseaddr,bind=%s", port, storage.Addr), "EXEC:/usr/lib/openssh/sftp-server"})
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				srv.Process.Signal(syscall.SIGTERM)
				srv.Wait()
			}()
			// As the filesystem-client stand-in runs it, but in the background (it daemonizes).
			run(t, m, "mkdir", "-p", "/mnt/share")
			deadline := time.Now().Add(30 * time.Second)
			for {
				out, err := m.Run(ctx, "sshfs", "-o", fmt.Sprintf("directport=%d,allow_other,dir_cache=no,attr_timeout=0,entry_timeout=0", port), fmt.Sprintf("%s:%s", storage.Addr, share), "/mnt/share")
				if err == nil {
					break
				}
				if time.Now().After(deadline) { // socat may not listen yet
					t.Fatalf("sshfs: %v: %s", err, out)
				}
				time.Sleep(200 * time.Millisecond)
			}
			if got := run(t, m, "findmnt", "-n", "-o", "FSTYPE", "/mnt/share"); got != "fuse.sshfs" {
				t.Fatalf("/mnt/share is %q, want fuse.sshfs", got)
			}
			run(t, m, "sh", "-c", "echo from-machine >/mnt/share/f && ln /mnt/share/f /mnt/share/g && mv /mnt/share/g /mnt/share/f")
			if got, err := os.ReadFile(storage.Path(filepath.Join(share, "f"))); err != nil || string(got) != "from-machine\n" {
				t.Errorf("the storage host's copy: %q, %v; want from-machine", got, err)
			}
			if err := os.WriteFile(m.Path("/var/lib/juju/kept"), []byte("kept\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			boot1, err := m.BootID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sshfs := run(t, m, "pgrep", "-x", "sshfs")
			pidns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", m.PID()))
			if err != nil {
				t.Fatal(err)
			}
			if procs := processesIn(pidns); len(procs) < 3 {
				t.Fatalf("%d processes in the machine before the cut, want systemd, its services and sshfs", len(procs))
			}

			if err := m.PowerCut(ctx); err != nil {
				t.Fatal(err)
			}
			if m.Running() || m.PID() != 0 {
				t.Errorf("machine running (%v, PID 1 %d) after its power cut", m.Running(), m.PID())
			}
			if left := processesIn(pidns); len(left) > 0 {
				t.Errorf("processes of the machine left after its power cut: %v (sshfs was %s inside)", left, sshfs)
			}
			if _, err := m.Run(ctx, "true"); err == nil {
				t.Error("a command ran in a machine whose power was cut")
			}
			// Nothing answers for it: a connection is not refused (a live network namespace
			// with no listener would), it gets no answer at all.
			out, err := storage.Run(ctx, "timeout", "8", "bash", "-c", `exec 3<>"/dev/tcp/$0/6817"`, m.Addr.String())
			if err == nil || strings.Contains(string(out), "refused") {
				t.Errorf("a connection to the machine after its power cut: %v: %s; want no answer", err, out)
			}
			if got, err := os.ReadFile(storage.Path(filepath.Join(share, "f"))); err != nil || string(got) != "from-machine\n" {
				t.Errorf("the storage host's copy after the cut: %q, %v", got, err)
			}

			if err := m.Boot(ctx); err != nil {
				t.Fatal(err)
			}
			if got := run(t, m, "cat", "/var/lib/juju/kept"); got != "kept" {
				t.Errorf("the machine's disk after the power cut: %q, want kept", got)
			}
			if boot2, err := m.BootID(ctx); err != nil || boot2 == boot1 {
				t.Errorf("boot id after the power cut %q (%v), was %q: want a new boot", boot2, err, boot1)
			}
			if out, err := m.Run(ctx, "findmnt", "/mnt/share"); err == nil {
				t.Errorf("the share is mounted again after the boot: %s", out)
			}
			if out, err := storage.Run(ctx, "timeout", "8", "bash", "-c", `exec 3<>"/dev/tcp/$0/6817"`, m.Addr.String()); !strings.Contains(string(out), "refused") {
				t.Errorf("a connection to the machine booted again (nothing listening): %v: %s; want it refused", err, out)
			}
		})
	}
}

// processesIn lists the PIDs (in the test's PID namespace) of the live processes in the PID
// namespace pidns (as /proc/<pid>/ns/pid reads: "pid:[inode]").
func processesIn(pidns string) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		if ns, err := os.Readlink(filepath.Join(d, "ns", "pid")); err != nil || ns != pidns {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil || strings.Contains(string(stat), ") Z ") { // a zombie is no process
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
