package hosts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PrivateDirs are the directories every host gets its own copy of.
var PrivateDirs = []string{
	"/etc/slurm", "/etc/munge", "/etc/default",
	"/var/spool/slurmd", "/var/spool/slurmctld", "/var/lib/slurm", "/var/log/slurm",
	"/var/lib/munge", "/var/log/munge", "/var/lib/juju", "/var/lib/pebble",
	"/var/lib/mysql", // the test database charm's data directory (tests/charms/mariadb)
	"/root",          // the working directory of Command: files a job or a test writes there stay in the host
	// Scratch space of jobs and daemons (Open MPI's session directory, Slurm's PMIx directories
	// under /tmp): hosts sharing them collide on names made of a user and job id alone.
	"/tmp", "/var/tmp",
}

// TmpfsDirs are the host's private tmpfs mounts, empty when the host starts: /run (the runtime
// state of its daemons, holding /run/munge) and /dev/shm (POSIX shared memory).
var TmpfsDirs = []string{"/run", "/dev/shm"}

// PebbleDir is the value of PEBBLE inside every host.
const PebbleDir = "/var/lib/pebble/default"

// DefaultPath is PATH for commands run by (*Host).Command.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// HostOptions configures AddHost.
type HostOptions struct {
	// Name is the hostname: a lower-case DNS label of at most 32 characters,
	// unique in the network.
	Name string
	// Binds are paths of the test machine (directories or files) the host sees at the same
	// path although they lie in one of its private directories (PrivateDirs): the local
	// model's directory and hook tools under /tmp, for example. Every other path outside the
	// private directories is the test machine's anyway. A bind cannot be a private directory
	// itself nor lie in a private tmpfs (TmpfsDirs).
	Binds []string
}

// Host is one machine of a Network.
type Host struct {
	// Name is the host's hostname.
	Name string
	// Addr is the host's only address (on eth0, in the network's Subnet).
	Addr netip.Addr
	// Dir is the host-side directory holding the host's private files; see
	// Path.
	Dir string
	// NetNS is the name of the host's network namespace (/run/netns/<NetNS>).
	NetNS string
	// Binds are the paths of the test machine shown inside the host (HostOptions.Binds).
	Binds []string

	holder    *child // unshare, anchoring the UTS, mount and PID namespaces; its inner process is the host's PID 1
	pebble    *child // nsenter; its inner process is Pebble
	grace     time.Duration
	nsCreated bool
}

// maxHosts bounds the hosts of a network (a Linux bridge takes at most 1024 ports).
const maxHosts = 1000

// OnLinkBits is the prefix length of every host's address on eth0: the whole 10.0.0.0/8 is
// on-link, so that hosts past the 240th, whose addresses run on past the network's /24 (see
// hostAddr), reach and are reached by the others. Each network is its own layer-2 segment (its
// own bridge, no route anywhere), so addresses only need to be unique within one network.
const OnLinkBits = 8

// hostAddr is the address of the network's i-th host (from 1): subnet's .10+i for the first
// 240 hosts, then the addresses that follow.
func hostAddr(subnet netip.Prefix, i int) netip.Addr {
	a := subnet.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 + uint32(10+i)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

var hostnameRE = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$`)

// maxSocketPath is the size of sun_path in struct sockaddr_un, NUL included.
const maxSocketPath = 108

// AddHost creates a host on the network and starts its Pebble. It returns once
// Pebble's socket answers.
func (n *Network) AddHost(ctx context.Context, opts HostOptions) (h *Host, err error) {
	name := opts.Name
	if !hostnameRE.MatchString(name) {
		return nil, fmt.Errorf("cannot add host: invalid name %q (want a lower-case DNS label of at most 32 characters)", name)
	}
	for _, b := range opts.Binds {
		if err := checkBind(b); err != nil {
			return nil, fmt.Errorf("cannot add host %q: %w", name, err)
		}
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, fmt.Errorf("cannot add host %q: network is closed", name)
	}
	if _, ok := n.hosts[name]; ok || n.reserved[name] {
		n.mu.Unlock()
		return nil, fmt.Errorf("cannot add host %q: name already in use", name)
	}
	if n.next >= maxHosts {
		n.mu.Unlock()
		return nil, fmt.Errorf("cannot add host %q: network is full (%d hosts)", name, maxHosts)
	}
	n.next++
	i := n.next
	h = &Host{
		Name:  name,
		Addr:  hostAddr(n.Subnet, i),
		Dir:   filepath.Join(n.Dir, name),
		NetNS: n.Prefix + "-" + name,
		Binds: slices.Clone(opts.Binds),
		grace: n.opts.StopTimeout,
	}
	// Close waits for hosts being added; the host joins n.hosts only once
	// it is complete.
	n.reserved[name] = true
	n.adding.Add(1)
	n.mu.Unlock()

	// The deferred cleanup uses host, not the named result h, which a `return nil, err` clears.
	host := h
	defer func() {
		n.mu.Lock()
		delete(n.reserved, name)
		if err == nil && n.closed {
			err = errors.New("network closed meanwhile")
		}
		if err == nil {
			n.hosts[name] = host
		}
		n.mu.Unlock()
		if err != nil {
			host.destroy(n.opts.StopTimeout)
			err = fmt.Errorf("cannot add host %q: %w", name, err)
			h = nil
		}
		n.adding.Done()
	}()

	if sock := h.PebbleSocket(); len(sock) >= maxSocketPath {
		return nil, fmt.Errorf("pebble socket path %q is %d bytes, over the %d-byte limit of unix sockets: use a shorter NetworkOptions.Dir", sock, len(sock), maxSocketPath-1)
	}
	if err := h.makeDirs(); err != nil {
		return nil, err
	}
	if err := n.addNetns(ctx, h.NetNS); err != nil {
		return nil, err
	}
	h.nsCreated = true
	if err := n.plug(ctx, h.NetNS, i, h.Addr); err != nil {
		return nil, err
	}
	if err := h.startHolder(ctx, n.opts.StartTimeout); err != nil {
		return nil, err
	}
	if err := h.setup(ctx); err != nil {
		return nil, err
	}
	if err := h.startPebble(ctx, n.opts.PebbleBin, n.opts.StartTimeout); err != nil {
		return nil, err
	}
	return h, nil
}

// Path maps a path inside the host to the host-side file backing it, for the
// host's private directories (PrivateDirs) and its /etc/hosts and
// /etc/resolv.conf. Files written there are seen by the host at once. For any
// other path (such as /run) use ProcPath.
func (h *Host) Path(inside string) string {
	return filepath.Join(h.Dir, filepath.Clean("/"+inside))
}

// ProcPath gives a host-side path that reaches any path inside the host's
// mount namespace (including its tmpfs /run), through /proc/<pid>/root. It is
// valid while the host runs.
func (h *Host) ProcPath(inside string) string {
	return procPath(h.PID(), inside)
}

// procPath names the path inside, of the mount namespace process pid is in, from this one:
// /proc/<pid>/root/<inside>, with inside kept below that root.
func procPath(pid int, inside string) string {
	return filepath.Join("/proc", strconv.Itoa(pid), "root", filepath.Clean("/"+inside))
}

// PID is the process anchoring the host's namespaces (the host's PID 1, by its PID on the
// machine); nsenter -t PID enters the host.
func (h *Host) PID() int { return h.holder.inner }

// PebblePID is the host's Pebble daemon (by its PID on the machine).
func (h *Host) PebblePID() int { return h.pebble.inner }

// PebbleSocket is the host-side path of the host's Pebble socket (inside the
// host it is PebbleDir/.pebble.socket).
func (h *Host) PebbleSocket() string {
	return h.Path(PebbleDir + "/.pebble.socket")
}

// Command returns a command running argv inside the host (its network, UTS,
// mount and PID namespaces) as root. Its environment is PATH=DefaultPath,
// HOME=/root, LANG=C.UTF-8 and PEBBLE=PebbleDir, not the caller's; append to
// cmd.Env to add more (SLURM_CONF, for example). The working directory is the
// host's private /root (cmd.Dir is ignored by nsenter), so files written to
// the working directory (a batch job's slurm-<id>.out) stay in the host.
//
// The command's process is nsenter, which runs argv as its child in the
// host's PID namespace: argv sees only the host's processes (its /proc is the
// host's own). Signals sent to cmd.Process do not reach argv, but the end of
// ctx kills both.
func (h *Host) Command(ctx context.Context, argv []string) *exec.Cmd {
	return h.CommandIn(ctx, "/root", argv)
}

// CommandIn is Command with the working directory dir, a path inside the host.
func (h *Host) CommandIn(ctx context.Context, dir string, argv []string) *exec.Cmd {
	// The directory is opened by nsenter before it enters the namespaces: name it through
	// /proc/<pid>/root.
	args := append([]string{"-t", strconv.Itoa(h.PID()), "--net", "--uts", "--ipc", "--mount", "--pid",
		"--wd=" + h.ProcPath(dir), "--"}, argv...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.Env = []string{"PATH=" + DefaultPath, "HOME=/root", "LANG=C.UTF-8", "PEBBLE=" + PebbleDir}
	// When ctx ends, kill argv too, not only nsenter (which passes no signal on).
	cmd.Cancel = func() error {
		if inner := onlyChild(cmd.Process.Pid); inner > 0 {
			syscall.Kill(inner, syscall.SIGKILL)
		}
		return cmd.Process.Kill()
	}
	return cmd
}

// Run runs argv inside the host and returns its combined output. A failure
// is a *CommandError naming the host and carrying the output.
func (h *Host) Run(ctx context.Context, argv ...string) ([]byte, error) {
	return h.RunEnv(ctx, nil, argv...)
}

// RunEnv is Run with extra environment variables ("K=V").
func (h *Host) RunEnv(ctx context.Context, env []string, argv ...string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("cannot run on host %q: empty command", h.Name)
	}
	cmd := h.Command(ctx, argv)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, &CommandError{Host: h.Name, Argv: argv, Output: out, Err: err}
	}
	return out, nil
}

// makeDirs creates the host-side private directories, with the owner and
// mode of the real ones (which are created when missing, as mountpoints), and
// the host's /etc/hosts and /etc/resolv.conf.
func (h *Host) makeDirs() error {
	for _, d := range PrivateDirs {
		st, err := os.Stat(d)
		if errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("cannot create mountpoint: %w", err)
			}
			st, err = os.Stat(d)
		}
		if err != nil {
			return err
		}
		hd := h.Path(d)
		if err := os.MkdirAll(hd, 0o755); err != nil {
			return err
		}
		sys := st.Sys().(*syscall.Stat_t)
		if err := os.Chown(hd, int(sys.Uid), int(sys.Gid)); err != nil {
			return err
		}
		// The sticky bit too: /tmp and /var/tmp are 1777.
		if err := os.Chmod(hd, st.Mode()&(fs.ModePerm|fs.ModeSticky|fs.ModeSetgid)); err != nil {
			return err
		}
	}
	for _, k := range h.shown() {
		if err := makeMountpoint(k, h.Path(k)); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(h.Path(PebbleDir), 0o755); err != nil {
		return err
	}
	hosts := fmt.Sprintf("127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n%s %s\n", h.Addr, h.Name)
	if err := os.WriteFile(h.Path("/etc/hosts"), []byte(hosts), 0o644); err != nil {
		return err
	}
	// No nameserver: lookups fail fast instead of leaving the machine.
	return os.WriteFile(h.Path("/etc/resolv.conf"), []byte("options attempts:1 timeout:1\n"), 0o644)
}

// hostInit is the host's PID 1: it waits forever, reaps the orphans the
// kernel gives it, and exits on SIGTERM (a PID 1 without a handler ignores
// it; unshare, its parent, blocks it).
const hostInit = `trap 'exit 0' TERM; while :; do sleep infinity & wait $!; done`

// startHolder starts the process that owns the host's UTS, mount and PID
// namespaces, inside its network namespace, and waits until it has them.
// unshare forks the host's PID 1 (hostInit) into the new PID namespace with
// its own /proc. When PID 1 exits (SIGTERM), or unshare dies (the test
// process dying: its parent-death signal; --kill-child then kills PID 1),
// the kernel kills every process of the host's PID namespace.
func (h *Host) startHolder(ctx context.Context, timeout time.Duration) error {
	cmd := exec.Command("nsenter", "--net=/run/netns/"+h.NetNS, "--",
		"unshare", "--uts", "--ipc", "--mount", "--propagation", "private",
		"--pid", "--fork", "--kill-child", "--mount-proc", "--",
		"/bin/sh", "-c", hostInit)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	c, err := startChild(cmd)
	if err != nil {
		return fmt.Errorf("cannot start namespace holder: %w", err)
	}
	h.holder = c
	// unshare's child execs sh only after the namespaces exist and /proc is mounted.
	return waitFor(ctx, timeout, c, "namespace holder", func() bool {
		inner := onlyChild(c.pid())
		if st, ok := readStat(inner); inner == 0 || !ok || st.comm != "sh" {
			return false
		}
		c.inner = inner
		return true
	})
}

// setupScript sets the hostname ($1) and makes the mounts that follow it, four arguments
// each (type, options, source, target), in order; it stops at the first that fails.
const setupScript = `hostname "$1" || exit 1; shift
while [ $# -ge 4 ]; do mount -t "$1" -o "$2" -- "$3" "$4" || exit 1; shift 4; done
[ $# -eq 0 ]`

// setup sets the hostname and makes the private mounts inside the host.
//
// The sources of the private mounts lie in the host's directory (Dir), which itself may lie in
// one of the private directories (under /tmp, as hoststest makes it): once that directory is
// covered inside the host, what lay in it is out of the host's sight. So each path the host
// must still see there (Dir itself, for the mounts AddFakeGPUs makes later, and Binds) is
// first bound inside the host-side copy of the directory that will cover it, at the same
// path, and that copy is mounted last, recursively, with those binds in it.
func (h *Host) setup(ctx context.Context) error {
	// Each mount is (type, options, source, target): `mount --bind` is `mount -o bind`.
	var mounts [][4]string
	bind := func(opt, src, dst string) { mounts = append(mounts, [4]string{"none", opt, src, dst}) }
	for _, k := range h.shown() {
		bind("bind", k, h.Path(k))
	}
	// Recursively: with the binds just made in them.
	last := privateDirOf(h.Dir)
	for _, d := range PrivateDirs {
		if d != last {
			bind("rbind", h.Path(d), d)
		}
	}
	for _, f := range []string{"/etc/hosts", "/etc/resolv.conf"} {
		bind("bind", h.Path(f), f)
	}
	if last != "" {
		bind("rbind", h.Path(last), last)
	}
	// Last: the tmpfs hides the root's /run (and so any source under it).
	mounts = append(mounts, [4]string{"tmpfs", "mode=0755", "tmpfs", "/run"},
		[4]string{"tmpfs", "mode=1777,nosuid,nodev", "tmpfs", "/dev/shm"})
	// One nsenter for the hostname and every mount, in order, stopping at the first that
	// fails; the names reach the shell as its arguments, never in its script. One nsenter per
	// step made 21 nsenter processes more per host (5400 in a scale step of 256 hosts).
	argv := []string{"nsenter", "-t", strconv.Itoa(h.PID()), "--uts", "--mount", "--", "/bin/sh", "-c", setupScript, "sh", h.Name}
	for _, m := range mounts {
		argv = append(argv, m[:]...)
	}
	if err := run(ctx, argv); err != nil {
		return fmt.Errorf("cannot set up host: %w", err)
	}
	munge := h.ProcPath("/run/munge")
	if err := os.Mkdir(munge, 0o755); err != nil {
		return fmt.Errorf("cannot set up host: %w", err)
	}
	if u, err := user.Lookup("munge"); err == nil {
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(munge, uid, gid); err != nil {
			return fmt.Errorf("cannot set up host: %w", err)
		}
	}
	return nil
}

// shown lists the paths of the test machine that lie in one of the host's private directories
// and that the host must still see at the same path: its own directory and its binds.
func (h *Host) shown() []string {
	var paths []string
	for _, p := range append([]string{h.Dir}, h.Binds...) {
		if privateDirOf(p) != "" {
			paths = append(paths, p)
		}
	}
	return paths
}

// privateDirOf is the private directory (PrivateDirs) that path lies in, or "".
func privateDirOf(path string) string {
	for _, d := range PrivateDirs {
		if strings.HasPrefix(path, d+"/") {
			return d
		}
	}
	return ""
}

// checkBind returns an error unless path can be shown inside a host (HostOptions.Binds).
func checkBind(path string) error {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return fmt.Errorf("bind %q is not a clean absolute path", path)
	}
	if slices.Contains(PrivateDirs, path) {
		return fmt.Errorf("bind %q is one of the host's private directories", path)
	}
	for _, d := range TmpfsDirs {
		if path == d || strings.HasPrefix(path, d+"/") {
			return fmt.Errorf("bind %q lies in the host's private tmpfs %s", path, d)
		}
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("bind %q: %w", path, err)
	}
	return nil
}

// makeMountpoint creates at target what a bind of src needs: a directory, or an empty file
// when src is not a directory.
func makeMountpoint(src, target string) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return os.MkdirAll(target, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// startPebble starts `pebble run --hold` inside the host and waits for its
// socket to answer.
func (h *Host) startPebble(ctx context.Context, bin string, timeout time.Duration) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(h.Dir, "pebble.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command("nsenter", "-t", strconv.Itoa(h.PID()), "--net", "--uts", "--ipc", "--mount", "--pid", "--",
		bin, "run", "--hold", "--create-dirs")
	cmd.Env = []string{"PATH=" + DefaultPath, "HOME=/root", "LANG=C.UTF-8", "PEBBLE=" + PebbleDir}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
	c, err := startChild(cmd)
	if err != nil {
		return fmt.Errorf("cannot start pebble: %w", err)
	}
	h.pebble = c
	sock := h.PebbleSocket()
	err = waitFor(ctx, timeout, c, "pebble", func() bool {
		if c.inner == 0 {
			// nsenter forks Pebble into the host's PID namespace.
			if c.inner = onlyChild(c.pid()); c.inner == 0 {
				return false
			}
		}
		conn, err := net.Dial("unix", sock)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	})
	if err != nil {
		out, _ := os.ReadFile(filepath.Join(h.Dir, "pebble.log"))
		return fmt.Errorf("%w; pebble log: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// waitFor polls ready until it is true, the process exits, ctx ends or the
// timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, c *child, what string, ready func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if ready() {
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s exited early: %v", what, c.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("cannot wait for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// destroy stops Pebble, then everything in the host's network namespace, and
// deletes the namespace and the host's directory.
func (h *Host) destroy(grace time.Duration) error {
	var errs []error
	h.pebble.stop(grace)
	if h.nsCreated {
		if err := deleteNetns(h.NetNS, grace); err != nil {
			errs = append(errs, err)
		}
	}
	h.holder.stop(grace) // normally gone already; this reaps it
	if err := os.RemoveAll(h.Dir); err != nil {
		errs = append(errs, fmt.Errorf("cannot remove host directory: %w", err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot remove host %q: %w", h.Name, errors.Join(errs...))
	}
	return nil
}
