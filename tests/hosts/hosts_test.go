package hosts_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/canonical/pebble/client"
	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
)

// runner is a host or a machine.
type runner interface {
	Run(ctx context.Context, argv ...string) ([]byte, error)
}

// run runs argv on h (30 s at most) and returns its output, trimmed; a failure fails the test.
func run(t *testing.T, h runner, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := h.Run(ctx, argv...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// serve runs an HTTP server on h answering with h's name.
func serve(t *testing.T, h *hosts.Host) string {
	t.Helper()
	l, err := h.Listen(context.Background(), "tcp", net.JoinHostPort(h.Addr.String(), "8080"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, h.Name)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String() + "/"
}

func TestTwoHosts(t *testing.T) {
	t.Parallel()
	n := hoststest.New(t)
	a := hoststest.AddHost(t, n, "alpha")
	b := hoststest.AddHost(t, n, "beta")

	t.Run("identity", func(t *testing.T) {
		for _, h := range []*hosts.Host{a, b} {
			if got := run(t, h, "hostname"); got != h.Name {
				t.Errorf("hostname on %s = %q", h.Name, got)
			}
			if !n.Subnet.Contains(h.Addr) {
				t.Errorf("host %s address %s not in %s", h.Name, h.Addr, n.Subnet)
			}
			addrs := run(t, h, "ip", "-o", "-4", "addr", "show", "dev", "eth0")
			if !strings.Contains(addrs, " "+h.Addr.String()+"/8 ") {
				t.Errorf("eth0 on %s: %q, want %s/8", h.Name, addrs, h.Addr)
			}
			if routes := run(t, h, "ip", "route", "show", "default"); routes != "" {
				t.Errorf("host %s has a default route: %q", h.Name, routes)
			}
			if got := run(t, h, "cat", "/etc/resolv.conf"); strings.Contains(got, "nameserver") {
				t.Errorf("host %s resolv.conf has a nameserver: %q", h.Name, got)
			}
			hostsFile := run(t, h, "cat", "/etc/hosts")
			if !strings.Contains(hostsFile, h.Addr.String()+" "+h.Name) {
				t.Errorf("host %s /etc/hosts = %q", h.Name, hostsFile)
			}
		}
		if a.Addr == b.Addr {
			t.Errorf("hosts share address %s", a.Addr)
		}
	})

	t.Run("reach each other, not the root namespace", func(t *testing.T) {
		urlA, urlB := serve(t, a), serve(t, b)
		if got := run(t, b, "curl", "-sS", "--max-time", "10", urlA); got != "alpha" {
			t.Errorf("beta -> alpha answered %q", got)
		}
		if got := run(t, a, "curl", "-sS", "--max-time", "10", urlB); got != "beta" {
			t.Errorf("alpha -> beta answered %q", got)
		}
		// The root namespace cannot reach the network. (Where the root
		// namespace has a default route, something outside may accept the
		// connection: what matters is that alpha never answers.)
		hc := &http.Client{Timeout: 3 * time.Second}
		if resp, err := hc.Get(urlA); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) == "alpha" {
				t.Errorf("root namespace reached alpha at %s", urlA)
			}
		}
		out, err := exec.Command("ip", "-o", "addr").CombinedOutput()
		if err != nil {
			t.Fatal(err)
		}
		prefix := strings.TrimSuffix(n.Subnet.Addr().String(), ".0")
		if strings.Contains(string(out), " "+prefix+".") {
			t.Errorf("root namespace has an address in %s:\n%s", n.Subnet, out)
		}
		out, err = exec.Command("ip", "route", "show").CombinedOutput()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), prefix+".") {
			t.Errorf("root namespace has a route to %s: %s", n.Subnet, out)
		}
	})

	t.Run("private files", func(t *testing.T) {
		if err := os.WriteFile(a.Path("/etc/slurm/marker"), []byte("alpha\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := run(t, a, "cat", "/etc/slurm/marker"); got != "alpha" {
			t.Errorf("alpha sees %q", got)
		}
		for _, where := range []string{b.Path("/etc/slurm/marker"), "/etc/slurm/marker"} {
			if _, err := os.Stat(where); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: %v, want not to exist", where, err)
			}
		}
		if _, err := b.Run(context.Background(), "cat", "/etc/slurm/marker"); err == nil {
			t.Errorf("beta sees alpha's /etc/slurm/marker")
		}
		// Files written inside land in the host's directory.
		run(t, b, "touch", "/var/lib/juju/inside")
		if _, err := os.Stat(b.Path("/var/lib/juju/inside")); err != nil {
			t.Error(err)
		}
		// /run is a private tmpfs holding /run/munge.
		if got := run(t, a, "stat", "-f", "-c", "%T", "/run"); got != "tmpfs" {
			t.Errorf("/run on alpha is %q", got)
		}
		want := "root 755"
		if _, err := user.Lookup("munge"); err == nil {
			want = "munge 755"
		}
		if got := run(t, a, "stat", "-c", "%U %a", "/run/munge"); got != want {
			t.Errorf("/run/munge on alpha: %q, want %q", got, want)
		}
	})

	t.Run("private scratch space and IPC", func(t *testing.T) {
		// What a job or a daemon writes to /tmp, /var/tmp or /dev/shm stays in its host, as
		// on separate machines: names made of a user and a job id alone (Slurm's PMIx
		// directories, Open MPI's session directory) no longer collide.
		name := fmt.Sprintf("hosts-test-%d", os.Getpid())
		for _, dir := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
			file := dir + "/" + name
			run(t, a, "sh", "-c", "echo alpha > "+file)
			if got := run(t, a, "cat", file); got != "alpha" {
				t.Errorf("alpha reads %q from its %s", got, file)
			}
			if got := run(t, a, "stat", "-c", "%U %a", dir); got != "root 1777" {
				t.Errorf("%s on alpha: %q, want root 1777", dir, got)
			}
			if _, err := b.Run(context.Background(), "test", "-e", file); err == nil {
				t.Errorf("beta sees alpha's %s", file)
			}
			if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the test machine's %s: %v, want not to exist", file, err)
				os.Remove(file)
			}
		}
		if got := run(t, a, "stat", "-f", "-c", "%T", "/dev/shm"); got != "tmpfs" {
			t.Errorf("/dev/shm on alpha is %q, want tmpfs", got)
		}
		// /tmp and /var/tmp are the host's directories on disk (Path reaches them).
		if _, err := os.Stat(a.Path("/tmp/" + name)); err != nil {
			t.Errorf("alpha's /tmp/%s is not in its directory: %v", name, err)
		}
		// SysV IPC: a shared memory segment made on alpha is alpha's own.
		out := run(t, a, "ipcmk", "-M", "4096")
		id := strings.TrimSpace(strings.TrimPrefix(out, "Shared memory id:"))
		if _, err := strconv.Atoi(id); err != nil {
			t.Fatalf("ipcmk on alpha said %q", out)
		}
		if got := run(t, a, "ipcs", "-m", "-i", id); !strings.Contains(got, "shmid="+id) {
			t.Errorf("alpha does not see its segment %s: %q", id, got)
		}
		if out, err := b.Run(context.Background(), "ipcs", "-m"); err != nil || strings.Contains(string(out), "4096") {
			t.Errorf("beta's ipcs -m (%v):\n%s\nwant no segment of alpha's", err, out)
		}
		run(t, a, "ipcrm", "-m", id)
	})

	t.Run("binds", func(t *testing.T) {
		// A host shows the test machine's paths it is given, although they lie in its
		// private /tmp; the rest of its /tmp stays its own.
		dir := t.TempDir()
		file := filepath.Join(t.TempDir(), "file")
		for _, f := range []string{filepath.Join(dir, "in-dir"), file} {
			if err := os.WriteFile(f, []byte("shared\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		g, err := n.AddHost(ctx, hosts.HostOptions{Name: "gamma", Binds: []string{dir, file}})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{filepath.Join(dir, "in-dir"), file} {
			if got := run(t, g, "cat", f); got != "shared" {
				t.Errorf("gamma reads %q from %s", got, f)
			}
		}
		run(t, g, "touch", filepath.Join(dir, "from-gamma"))
		if _, err := os.Stat(filepath.Join(dir, "from-gamma")); err != nil {
			t.Errorf("a file gamma wrote in the bound directory: %v", err)
		}
		run(t, g, "touch", "/tmp/gamma-own")
		if _, err := os.Stat("/tmp/gamma-own"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("gamma's /tmp/gamma-own on the test machine: %v", err)
			os.Remove("/tmp/gamma-own")
		}
		for _, tt := range []struct{ bind, want string }{
			{"/tmp", "one of the host's private directories"},
			{"/run/netns", "private tmpfs /run"},
			{"/dev/shm/x", "private tmpfs /dev/shm"},
			{"tmp/x", "not a clean absolute path"},
			{"/tmp/../etc", "not a clean absolute path"},
			{filepath.Join(dir, "missing"), "no such file"},
		} {
			_, err := n.AddHost(ctx, hosts.HostOptions{Name: "delta", Binds: []string{tt.bind}})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.bind) {
				t.Errorf("bind %q: %v, want an error naming it: %s", tt.bind, err, tt.want)
			}
		}
	})

	t.Run("pebble", func(t *testing.T) {
		c, err := client.New(&client.Config{Socket: a.PebbleSocket()})
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.SysInfo()
		if err != nil {
			t.Fatal(err)
		}
		if info.Version == "" {
			t.Error("pebble reports no version")
		}
		// Pebble runs inside the host: a service it starts sees the host.
		layer := "services:\n  hn:\n    override: replace\n    command: sh -c 'hostname > /var/lib/juju/hn; exec sleep 1000'\n"
		if err := c.AddLayer(&client.AddLayerOptions{Label: "t", LayerData: []byte(layer)}); err != nil {
			t.Fatal(err)
		}
		id, err := c.Start(&client.ServiceOptions{Names: []string{"hn"}})
		if err != nil {
			t.Fatal(err)
		}
		if chg, err := c.WaitChange(id, nil); err != nil || chg.Err != "" {
			t.Fatalf("start: %v %v", err, chg)
		}
		got, err := os.ReadFile(a.Path("/var/lib/juju/hn"))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff("alpha\n", string(got)); d != "" {
			t.Errorf("service hostname (-want +got):\n%s", d)
		}
	})

	t.Run("own processes and working directory", func(t *testing.T) {
		// A process of alpha's, started as tests start daemons.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		proc := a.Command(ctx, []string{"sleep", "4242"})
		if err := proc.Start(); err != nil {
			t.Fatal(err)
		}
		defer proc.Wait()
		defer cancel()
		if got := run(t, a, "sh", "-c", "until pgrep -f 'sleep 4242'; do sleep 0.02; done"); got == "" {
			t.Fatal("alpha does not see its own process")
		}
		// beta sees none of alpha's processes: neither the one above nor alpha's Pebble.
		for _, pattern := range []string{"sleep 4242", "pebble"} {
			out, err := b.Run(context.Background(), "pgrep", "-af", pattern)
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if pattern == "sleep 4242" && err == nil {
				t.Errorf("beta sees alpha's process: %q", out)
			}
			if pattern == "pebble" && (err != nil || len(lines) != 1) {
				t.Errorf("beta's pgrep -af pebble = %q (%v), want beta's own Pebble only", out, err)
			}
		}
		// Every host has its own PID 1, and its own /proc.
		for _, h := range []*hosts.Host{a, b} {
			if got := run(t, h, "cat", "/proc/1/comm"); got != "sh" {
				t.Errorf("PID 1 on %s is %q, want the host's sh", h.Name, got)
			}
			if got := run(t, h, "sh", "-c", "echo $$"); got == strconv.Itoa(os.Getpid()) {
				t.Errorf("%s sees machine PIDs", h.Name)
			}
		}
		// The working directory is the host's own /root: what a command (or a batch job
		// submitted from there) writes to it lands in the host's directory.
		if got := run(t, b, "pwd"); got != "/root" {
			t.Errorf("working directory on beta: %q, want /root", got)
		}
		if out, err := b.CommandIn(ctx, "/etc", []string{"pwd"}).Output(); err != nil || strings.TrimSpace(string(out)) != "/etc" {
			t.Errorf("CommandIn /etc on beta ran in %q (%v), want /etc", out, err)
		}
		name := fmt.Sprintf("hosts-test-%d.out", os.Getpid())
		run(t, b, "sh", "-c", "echo job > "+name)
		if _, err := os.Stat(b.Path("/root/" + name)); err != nil {
			t.Errorf("file written in beta's working directory: %v", err)
		}
		for _, where := range []string{"/root/" + name, "/" + name, a.Path("/root/" + name)} {
			if _, err := os.Stat(where); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: %v, want not to exist", where, err)
				os.Remove(where)
			}
		}
	})
}

func TestCleanup(t *testing.T) {
	t.Parallel()
	if reason := hoststest.Unavailable(); reason != "" {
		hoststest.Skip(t, reason)
	}
	pebble, err := hoststest.PebbleBin()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n, err := hosts.NewNetwork(ctx, hosts.NetworkOptions{Prefix: hoststest.Prefix, Dir: t.TempDir(), PebbleBin: pebble, StopTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			n.Close()
		}
	})
	h1, err := n.AddHost(ctx, hosts.HostOptions{Name: "one"})
	if err != nil {
		t.Fatal(err)
	}
	h2, err := n.AddHost(ctx, hosts.HostOptions{Name: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.AddHost(ctx, hosts.HostOptions{Name: "two"}); err == nil {
		t.Error("duplicate host name accepted")
	}
	if _, err := n.AddHost(ctx, hosts.HostOptions{Name: "Bad_Name"}); err == nil || !strings.Contains(err.Error(), `"Bad_Name"`) {
		t.Errorf("bad host name: %v", err)
	}
	// A stray process inside the host, started neither by us nor by Pebble,
	// that ignores SIGTERM.
	stray := h2.Command(ctx, []string{"sh", "-c", "trap '' TERM; while :; do sleep 1; done"})
	stray.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	strayDone := make(chan struct{})
	go func() { stray.Wait(); close(strayDone) }()

	pids := []int{h1.PID(), h1.PebblePID(), h2.PID(), h2.PebblePID(), stray.Process.Pid}
	if err := n.RemoveHost("one"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", h1.NetNS)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("netns of removed host: %v", err)
	}
	if n.Host("one") != nil || n.Host("two") != h2 {
		t.Errorf("hosts after removal: %v", n.Hosts())
	}
	// Namespaces are checked by identity (their nsfs inode), not by name: once Close frees the
	// subnet, a parallel test may lease it and create namespaces of the same names.
	nsIno := map[string]uint64{}
	for _, name := range []string{n.Prefix + "sw", h2.NetNS} {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join("/run/netns", name), &st); err != nil {
			t.Fatalf("namespace %s of a live network: %v", name, err)
		}
		nsIno[name] = st.Ino
	}
	start := time.Now()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	<-strayDone
	t.Logf("close took %v", time.Since(start))
	for _, pid := range pids {
		if data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !strings.Contains(string(data), ") Z ") {
			t.Errorf("process %d still alive: %s", pid, data)
		}
	}
	for name, ino := range nsIno {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join("/run/netns", name), &st); err == nil && st.Ino == ino {
			t.Errorf("namespace left behind: %s", name)
		}
	}
	if _, err := os.Stat(n.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("network dir left behind: %v", err)
	}
}

func TestMunge(t *testing.T) {
	t.Parallel()
	n := hoststest.New(t)
	a := hoststest.AddHost(t, n, "ma")
	b := hoststest.AddHost(t, n, "mb")
	c := hoststest.AddHost(t, n, "mc")
	key := bytes.Repeat([]byte("k"), 64)
	other := bytes.Repeat([]byte("o"), 64)
	ctx := context.Background()
	for _, tc := range []struct {
		h   *hosts.Host
		key []byte
	}{{a, key}, {b, key}, {c, other}} {
		if err := hosts.StartMunge(ctx, tc.h, tc.key); err != nil {
			t.Fatal(err)
		}
	}
	cred, err := a.Run(ctx, "munge", "-n")
	if err != nil {
		t.Fatal(err)
	}
	unmunge := func(h *hosts.Host) error {
		cmd := h.Command(ctx, []string{"unmunge"})
		cmd.Stdin = bytes.NewReader(cred)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	if err := unmunge(b); err != nil {
		t.Errorf("same key: unmunge on mb: %v", err)
	}
	if err := unmunge(c); err == nil {
		t.Errorf("other key: unmunge on mc accepted ma's credential")
	}
	if err := hosts.StartMunge(ctx, a, []byte("short")); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("short key: %v", err)
	}
}

// A host that cannot be added (here: a Pebble socket path over the unix limit) gives an error
// naming the cause, leaves nothing behind, and does not keep Close waiting.
func TestAddHostFailure(t *testing.T) {
	t.Parallel()
	if reason := hoststest.Unavailable(); reason != "" {
		hoststest.Skip(t, reason)
	}
	pebble, err := hoststest.PebbleBin()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	n, err := hosts.NewNetwork(ctx, hosts.NetworkOptions{Prefix: hoststest.Prefix, Dir: long, PebbleBin: pebble})
	if err != nil {
		t.Fatal(err)
	}
	_, err = n.AddHost(ctx, hosts.HostOptions{Name: "h"})
	if err == nil || !strings.Contains(err.Error(), "unix sockets") {
		t.Errorf("AddHost with a %d-byte dir: got %v, want the socket limit named", len(long), err)
	}
	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close still waiting for the failed AddHost after a minute")
	}
}

// A pebble binary in a host's private directory (a checkout cloned under /tmp) is refused with
// a message naming the directory: each host would see its own, empty /tmp instead.
func TestNewNetworkRefusesPebbleInPrivateDir(t *testing.T) {
	f, err := os.CreateTemp("/tmp", "pebble-")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(f.Name()) })
	_, err = hosts.NewNetwork(context.Background(), hosts.NetworkOptions{Prefix: "pt", Dir: t.TempDir(), PebbleBin: f.Name(), RegistryDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "lies in /tmp, which every host replaces with its own") {
		t.Fatalf("NewNetwork with pebble in /tmp: got %v, want the /tmp refusal", err)
	}
}
