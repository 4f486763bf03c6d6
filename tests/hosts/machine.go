package hosts

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MachineOptions configures AddMachine.
type MachineOptions struct {
	// Name is the hostname: a lower-case DNS label of at most 32 characters, unique in the
	// network among hosts and machines.
	Name string
	// Image is the root directory of a bootable Debian image (scripts/images.sh builds them
	// under build/images/<suite>/root). It is the read-only lower layer of the machine's root:
	// the machine writes to its own upper layer, so many machines share one image.
	Image string
	// Binds are directories or files of the test machine bind-mounted read-write at the same
	// path inside the machine (the local model's socket and hook tools, for example).
	Binds []string
	// BootTimeout bounds each boot (until systemd reports the system running or degraded).
	// Default 2 minutes.
	BootTimeout time.Duration
}

// Machine is a host of a Network booted by systemd-nspawn from a Debian image, with systemd
// as its PID 1, in its own network namespace wired to the network's bridge as a Host's is.
//
// Its root is an overlay: the shared image below, Dir/upper above, mounted at Dir/root in a
// private mount namespace anchored by a holder process, so the mount disappears with the
// machine's processes even when the test process dies. The upper layer survives reboots and
// power-offs; it goes with RemoveMachine or Close.
//
// A reboot asked for inside (systemctl reboot) makes systemd-nspawn exit with status 133; the
// machine's supervisor boots it again at once, as a cloud would restart an instance, with a new
// boot id. A power-off (systemctl poweroff) or a power cut (PowerCut: no shutdown at all)
// leaves it off until Boot. The test machine's /dev/fuse, when it has one, is bound into it
// (FUSE file systems such as sshfs mount inside, as on a cloud machine).
type Machine struct {
	// Name is the machine's hostname.
	Name string
	// Addr is the machine's only address (on eth0, in the network's Subnet).
	Addr netip.Addr
	// Dir holds the machine's upper layer (Dir/upper), the overlay mountpoint (Dir/root) and
	// its console log (Dir/console.log).
	Dir string
	// NetNS is the name of the machine's network namespace (/run/netns/<NetNS>).
	NetNS string
	// Image is the image the machine booted from.
	Image string
	// Binds are the paths shared with the test machine (MachineOptions.Binds).
	Binds []string

	grace       time.Duration
	bootTimeout time.Duration
	systemd     int // the image's systemd version (ImageSystemd)
	holder      *child
	nsCreated   bool

	mu     sync.Mutex
	nspawn *child // the current boot's systemd-nspawn; nil while off
	pid1   int    // the current boot's PID 1 (systemd), 0 until known
	boots  int    // boots started
	// unplugged: its link is down since a power cut, until the next Boot.
	unplugged bool
	closing   bool
	exited    chan struct{} // closed when the current boot's nspawn exits and is not restarted
}

// NspawnExitReboot is systemd-nspawn's exit status when the machine asked for a reboot.
const NspawnExitReboot = 133

// AddMachine creates a machine on the network and boots it. It returns once systemd inside
// reports the system running (or degraded: some units of a full distribution cannot start in
// a container).
func (n *Network) AddMachine(ctx context.Context, opts MachineOptions) (m *Machine, err error) {
	name := opts.Name
	if !hostnameRE.MatchString(name) {
		return nil, fmt.Errorf("cannot add machine: invalid name %q (want a lower-case DNS label of at most 32 characters)", name)
	}
	if st, err := os.Stat(filepath.Join(opts.Image, "sbin/init")); err != nil || st.IsDir() {
		return nil, fmt.Errorf("cannot add machine %q: image %q has no sbin/init (build it with scripts/images.sh)", name, opts.Image)
	}
	image, err := filepath.Abs(opts.Image)
	if err != nil {
		return nil, fmt.Errorf("cannot add machine %q: %w", name, err)
	}
	systemd, err := ImageSystemd(image)
	if err != nil {
		return nil, fmt.Errorf("cannot add machine %q: %w", name, err)
	}
	if _, err := exec.LookPath("systemd-nspawn"); err != nil {
		return nil, fmt.Errorf("cannot add machine %q: %w (install systemd-container)", name, err)
	}
	if err := raiseInotifyInstances(MinInotifyInstances); err != nil {
		return nil, fmt.Errorf("cannot add machine %q: %w", name, err)
	}
	for _, b := range opts.Binds {
		if !filepath.IsAbs(b) || strings.Contains(b, ":") {
			return nil, fmt.Errorf("cannot add machine %q: bind %q is not an absolute path without ':'", name, b)
		}
	}
	if opts.BootTimeout <= 0 {
		opts.BootTimeout = 2 * time.Minute
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, fmt.Errorf("cannot add machine %q: network is closed", name)
	}
	if _, ok := n.hosts[name]; ok || n.reserved[name] {
		n.mu.Unlock()
		return nil, fmt.Errorf("cannot add machine %q: name already in use", name)
	}
	if n.next >= maxHosts {
		n.mu.Unlock()
		return nil, fmt.Errorf("cannot add machine %q: network is full (%d hosts)", name, maxHosts)
	}
	n.next++
	i := n.next
	m = &Machine{
		Name:        name,
		Addr:        hostAddr(n.Subnet, i),
		Dir:         filepath.Join(n.Dir, name),
		NetNS:       n.Prefix + "-" + name,
		Image:       image,
		Binds:       opts.Binds,
		grace:       n.opts.StopTimeout,
		bootTimeout: opts.BootTimeout,
		systemd:     systemd,
	}
	// The name stays reserved for as long as the machine exists, so AddHost refuses it too.
	n.reserved[name] = true
	n.adding.Add(1)
	n.mu.Unlock()

	machine := m
	defer func() {
		n.mu.Lock()
		if err == nil && n.closed {
			err = errors.New("network closed meanwhile")
		}
		if err == nil {
			if n.machines == nil {
				n.machines = make(map[string]*Machine)
			}
			n.machines[name] = machine
		} else {
			delete(n.reserved, name)
		}
		n.mu.Unlock()
		if err != nil {
			machine.destroy()
			err = fmt.Errorf("cannot add machine %q: %w", name, err)
			m = nil
		}
		n.adding.Done()
	}()

	for _, d := range []string{m.Dir, m.upper(), m.work(), m.root()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := n.addNetns(ctx, m.NetNS); err != nil {
		return nil, err
	}
	m.nsCreated = true
	if err := n.plug(ctx, m.NetNS, i, m.Addr); err != nil {
		return nil, err
	}
	if err := m.startHolder(ctx, n.opts.StartTimeout); err != nil {
		return nil, err
	}
	if err := m.mountRoot(ctx); err != nil {
		return nil, err
	}
	if err := m.Boot(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// Machine returns the machine called name, or nil.
func (n *Network) Machine(name string) *Machine {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.machines[name]
}

// Machines returns the network's machines, in no particular order.
func (n *Network) Machines() []*Machine {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Collect(maps.Values(n.machines))
}

// RemoveMachine powers the machine off (SIGTERM to systemd-nspawn, which asks systemd for a
// clean shutdown), stops whatever is left in its network namespace, and deletes its
// namespace and directory.
func (n *Network) RemoveMachine(name string) error {
	n.mu.Lock()
	m := n.machines[name]
	delete(n.machines, name)
	if m != nil {
		delete(n.reserved, name)
	}
	n.mu.Unlock()
	if m == nil {
		return fmt.Errorf("cannot remove machine %q: no such machine", name)
	}
	return m.destroy()
}

// closeMachines destroys every machine; Close calls it.
func (n *Network) closeMachines() []error {
	n.mu.Lock()
	ms := make([]*Machine, 0, len(n.machines))
	for name, m := range n.machines {
		ms = append(ms, m)
		delete(n.reserved, name)
	}
	n.machines = nil
	n.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(ms))
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.destroy()
		}()
	}
	wg.Wait()
	return errs
}

func (m *Machine) upper() string { return filepath.Join(m.Dir, "upper") }
func (m *Machine) work() string  { return filepath.Join(m.Dir, "work") }
func (m *Machine) root() string  { return filepath.Join(m.Dir, "root") }

// startHolder starts the process that owns the machine's mount namespace (where its overlay
// root is mounted), inside its network namespace, and waits until it has it.
func (m *Machine) startHolder(ctx context.Context, timeout time.Duration) error {
	cmd := exec.Command("nsenter", "--net=/run/netns/"+m.NetNS, "--",
		"unshare", "--mount", "--propagation", "private", "--", "sleep", "infinity")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	c, err := startChild(cmd)
	if err != nil {
		return fmt.Errorf("cannot start namespace holder: %w", err)
	}
	m.holder = c
	return waitFor(ctx, timeout, c, "namespace holder", func() bool {
		comm, err := os.ReadFile("/proc/" + strconv.Itoa(c.pid()) + "/comm")
		return err == nil && strings.TrimSpace(string(comm)) == "sleep"
	})
}

// mountRoot mounts the overlay root in the holder's mount namespace and writes the machine's
// own files into it: hostname, hosts and resolv.conf.
func (m *Machine) mountRoot(ctx context.Context) error {
	opts := "lowerdir=" + m.Image + ",upperdir=" + m.upper() + ",workdir=" + m.work()
	argv := []string{"nsenter", "-t", strconv.Itoa(m.holder.pid()), "--mount", "--",
		"mount", "-t", "overlay", "overlay", "-o", opts, m.root()}
	if err := run(ctx, argv); err != nil {
		return fmt.Errorf("cannot mount the machine's root: %w", err)
	}
	files := map[string]string{
		"/etc/hostname": m.Name + "\n",
		"/etc/hosts":    fmt.Sprintf("127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n%s %s\n", m.Addr, m.Name),
		// No nameserver: lookups fail fast instead of leaving the machine.
		"/etc/resolv.conf": "options attempts:1 timeout:1\n",
	}
	for p, content := range files {
		path := m.Path(p)
		os.Remove(path) // resolv.conf may be a symlink in the image
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return fmt.Errorf("cannot write the machine's %s: %w", p, err)
		}
	}
	return nil
}

// Path maps a path inside the machine to a path the test process can read and write, through
// the holder's view of the overlay root. It is valid for the machine's whole life, also while
// it is off.
func (m *Machine) Path(inside string) string {
	return procPath(m.holder.pid(), filepath.Join(m.root(), filepath.Clean("/"+inside)))
}

// nspawnArgv is the command line of one boot. nspawn keys its runtime files on the host by
// the machine's name (/run/systemd/nspawn/propagate/<name>, created at boot and removed at
// exit), and /run is the test machine's: two tests' machines both named juju-1 removed each
// other's ("Failed to mount /run/systemd/nspawn/propagate/juju-1 ... No such file or
// directory", a boot failing in CI with the HA tests in parallel). So nspawn knows the machine
// by its network namespace's name, unique among the networks running; its hostname stays
// Name. The machine boots in a new time namespace whose
// boot-time clock starts at about zero, as a real machine's uptime does: Slurm takes a node's
// boot time from it (sysinfo) and tells a finished reboot, or an unexpected one, by it.
func (m *Machine) nspawnArgv() []string {
	argv := []string{"nsenter", "-t", strconv.Itoa(m.holder.pid()), "--net", "--mount", "--",
		"unshare", "--time", "--boottime", strconv.FormatInt(-bootOffset(), 10), "--",
		"systemd-nspawn", "--quiet", "--register=no", "--keep-unit", "--boot",
		"--directory=" + m.root(), "--machine=" + m.NetNS, "--hostname=" + m.Name,
		"--network-namespace-path=/run/netns/" + m.NetNS,
		"--resolv-conf=off", "--timezone=off", "--link-journal=no", "--console=read-only"}
	for _, b := range m.Binds {
		argv = append(argv, "--bind="+b)
	}
	// FUSE, as a cloud machine's kernel offers it (sshfs: the controllers' shared storage in
	// the HA tests, docs/ha.md). nspawn gives a machine no /dev/fuse unless bound.
	if st, err := os.Stat(fuseDevice); err == nil && st.Mode()&os.ModeCharDevice != 0 {
		argv = append(argv, "--bind="+fuseDevice)
	}
	return argv
}

// fuseDevice is the FUSE device every machine gets when the test machine has it.
const fuseDevice = "/dev/fuse"

// Boot starts the machine if it is off and waits until it has booted.
func (m *Machine) Boot(ctx context.Context) error {
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		return fmt.Errorf("cannot boot machine %q: it is being removed", m.Name)
	}
	if m.nspawn == nil {
		if m.unplugged {
			if err := run(ctx, m.linkArgv("up")); err != nil {
				m.mu.Unlock()
				return fmt.Errorf("cannot boot machine %q: %w", m.Name, err)
			}
			m.unplugged = false
		}
		if err := m.startLocked(); err != nil {
			m.mu.Unlock()
			return fmt.Errorf("cannot boot machine %q: %w", m.Name, err)
		}
	}
	m.mu.Unlock()
	return m.WaitBooted(ctx)
}

// startLocked starts systemd-nspawn and the goroutine supervising it.
func (m *Machine) startLocked() error {
	log, err := os.OpenFile(filepath.Join(m.Dir, "console.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	procs, err := m.machineCgroups()
	if err != nil {
		return err
	}
	argv := cgroupArgv(procs, m.nspawnArgv())
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = nspawnEnv(m.systemd)
	cmd.Stdout, cmd.Stderr = log, log
	// The test process dying asks the machine for a clean shutdown; the crash sweep kills
	// what is left in its network namespace.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
	c, err := startChild(cmd)
	if err != nil {
		return fmt.Errorf("cannot start systemd-nspawn: %w", err)
	}
	m.nspawn, m.pid1 = c, 0
	m.boots++
	m.exited = make(chan struct{})
	go m.supervise(c)
	go m.unstop(c)
	return nil
}

// unstop keeps the commands entered into the machine from holding up its shutdown, for the
// life of one boot (c). A command runs as a child of nsenter, which waits for it outside the
// machine. systemd-shutdown, the last step of a shutdown, stops every process of the machine
// (kill(-1, SIGSTOP)) before it signals them; nsenter, seeing its child stop, stops itself,
// and nothing in the machine can see it to continue it. The command then dies a zombie that
// nobody reaps: systemd-shutdown waits for it (90 s), and the machine's PID 1 cannot exit until
// it is reaped. So once PID 1 is systemd-shutdown, unstop continues every stopped nsenter that
// entered this boot (it reaps its child and exits as its child did), and tells systemd-shutdown
// with a SIGCHLD (it waits for SIGCHLD, which only its own children would send) to look again.
// What a real machine's agent runs dies with the agent's service instead.
func (m *Machine) unstop(c *child) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	pid1 := 0
	for {
		select {
		case <-c.done:
			return
		case <-tick.C:
		}
		if pid1 == 0 {
			m.mu.Lock()
			current := m.nspawn == c
			m.mu.Unlock()
			if !current {
				return
			}
			if pid1 = m.PID(); pid1 == 0 {
				continue
			}
		}
		if !shuttingDown(pid1) {
			continue
		}
		continueEntered(pid1)
		syscall.Kill(pid1, syscall.SIGCHLD)
	}
}

// continueEntered sends SIGCONT to every stopped nsenter of this machine's that entered PID 1
// pid1 (commandIn's "nsenter -t <pid1> ...").
func continueEntered(pid1 int) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	target := strconv.Itoa(pid1)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); !ok || st.comm != "nsenter" || st.state != 'T' {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 2 && args[1] == "-t" && args[2] == target {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}
}

// supervise waits for one boot's nspawn to exit and boots again on a reboot request.
func (m *Machine) supervise(c *child) {
	<-c.done
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nspawn != c {
		return
	}
	m.nspawn, m.pid1 = nil, 0
	m.removeMachineCgroups() // the boot's processes are gone with its PID 1
	if !m.closing && c.cmd.ProcessState.ExitCode() == NspawnExitReboot {
		time.AfterFunc(RebootDelay, m.bootAgain)
		return
	}
	close(m.exited)
}

// RebootDelay is how long a rebooting machine stays down before it boots again, as a real
// machine's firmware takes seconds: a boot is never in the same second as the shutdown
// (Slurm, at one-second resolution, tells a finished reboot by a boot time after its request).
const RebootDelay = 2 * time.Second

// bootAgain boots the machine after a reboot's delay, unless it is being removed.
func (m *Machine) bootAgain() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nspawn != nil {
		return
	}
	if m.closing || m.startLocked() != nil {
		close(m.exited)
	}
}

// Running reports whether the machine is on (booting or booted).
func (m *Machine) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nspawn != nil
}

// Boots is the number of boots started so far (the first one included).
func (m *Machine) Boots() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.boots
}

// Up reports whether the machine is running a boot: false while it is off, between a shutdown
// and the next boot, or once its systemd has handed over to systemd-shutdown (the last step of
// a shutdown: services stopped, file systems and binds unmounted, every process being killed).
// While systemd still stops units, Up is true: a service of the machine's (StartService) tells
// when systemd stopped it.
func (m *Machine) Up() bool {
	pid := m.PID()
	return pid != 0 && !shuttingDown(pid)
}

// systemState is what `systemctl is-system-running` says in the machine whose PID 1 is pid
// ("running", "degraded", "stopping", ...; "" when it does not answer). It exits non-zero for
// every state but running: its output is the state.
func (m *Machine) systemState(ctx context.Context, pid int) string {
	out, _ := m.commandIn(ctx, pid, "", []string{"systemctl", "is-system-running"}).Output()
	return strings.TrimSpace(string(out))
}

// PID is the process ID, in the test process's PID namespace, of the running machine's PID 1
// (systemd), or 0 when it is off or not started yet. nsenter -t PID -a enters the machine.
func (m *Machine) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nspawn == nil {
		return 0
	}
	if m.pid1 != 0 && !initOf(m.pid1, m.nspawn.pid()) {
		// The boot's systemd has exited (the machine is shutting down, nspawn not yet): a
		// command must not enter a dead process, or one that took its PID.
		m.pid1 = 0
	}
	if m.pid1 == 0 {
		m.pid1 = containerInit(m.nspawn.pid())
	}
	return m.pid1
}

// WaitBooted waits until the machine's systemd reports the system running or degraded, within
// the boot timeout.
func (m *Machine) WaitBooted(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.bootTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		if pid := m.PID(); pid != 0 {
			last = m.systemState(ctx, pid)
			if last == "running" || last == "degraded" {
				return nil
			}
		}
		m.mu.Lock()
		exited := m.exited
		off := m.nspawn == nil
		m.mu.Unlock()
		if off {
			return fmt.Errorf("machine %q is off; console: %s", m.Name, m.consoleTail())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("machine %q did not boot (systemd: %q): %w; console: %s", m.Name, last, ctx.Err(), m.consoleTail())
		case <-exited:
		case <-tick.C:
		}
	}
}

// consoleTail is the end of the console log, for errors.
func (m *Machine) consoleTail() string {
	data, _ := os.ReadFile(filepath.Join(m.Dir, "console.log"))
	s := strings.TrimSpace(string(data))
	if len(s) > 1500 {
		s = "..." + s[len(s)-1500:]
	}
	return s
}

// Command returns a command running argv inside the running machine (all its namespaces: it
// sees the machine's processes and files as a login would) as root, with the same environment
// as (*Host).Command minus PEBBLE. With the machine off, the command fails to start.
func (m *Machine) Command(ctx context.Context, argv []string) *exec.Cmd {
	return m.commandIn(ctx, m.PID(), "", argv)
}

// CommandIn is Command with the working directory dir, a path inside the machine.
func (m *Machine) CommandIn(ctx context.Context, dir string, argv []string) *exec.Cmd {
	return m.commandIn(ctx, m.PID(), dir, argv)
}

// commandIn runs argv in the namespaces of pid, in dir when it is not empty (nsenter opens it
// before it enters them: it is named through /proc/<pid>/root).
func (m *Machine) commandIn(ctx context.Context, pid int, dir string, argv []string) *exec.Cmd {
	args := []string{"-t", strconv.Itoa(pid), "-a"}
	if dir != "" {
		args = append(args, "--wd="+procPath(pid, dir))
	}
	args = append(append(args, "--"), argv...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.Env = []string{"PATH=" + DefaultPath, "HOME=/root", "LANG=C.UTF-8"}
	return cmd
}

// Run runs argv inside the machine and returns its combined output. A failure is a
// *CommandError naming the machine and carrying the output.
func (m *Machine) Run(ctx context.Context, argv ...string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("cannot run on machine %q: empty command", m.Name)
	}
	if m.PID() == 0 {
		return nil, fmt.Errorf("cannot run on machine %q: it is off", m.Name)
	}
	out, err := m.Command(ctx, argv).CombinedOutput()
	if err != nil {
		return out, &CommandError{Host: m.Name, Argv: argv, Output: out, Err: err}
	}
	return out, nil
}

// BootID is the running machine's boot id (/proc/sys/kernel/random/boot_id inside), new on
// every boot.
func (m *Machine) BootID(ctx context.Context) (string, error) {
	out, err := m.Run(ctx, "cat", "/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(out)), err
}

// StartService starts argv in the running machine as the transient service unit (systemd-run
// --unit=unit, Type=exec: it returns once argv runs) with the unit and service properties props
// ("RequiresMountsFor=/some/path", as systemd-run --property takes them), and returns its main
// process as the test process sees it. The machine's systemd stops the service when the machine
// goes down, in the order its properties set (a service that requires a mount stops before
// it is unmounted): Running on the Proc tells, in one read of /proc, that it has.
func (m *Machine) StartService(ctx context.Context, unit string, props []string, argv ...string) (Proc, error) {
	pid1 := m.PID()
	if pid1 == 0 {
		return Proc{}, fmt.Errorf("cannot start service %s on machine %q: it is off", unit, m.Name)
	}
	run := []string{"systemd-run", "--quiet", "--unit=" + unit, "--property=Type=exec"}
	for _, p := range props {
		run = append(run, "--property="+p)
	}
	run = append(append(run, "--"), argv...)
	show := []string{"systemctl", "show", "--property=MainPID", "--value", unit}
	var inside int
	for _, c := range [][]string{run, show} {
		out, err := m.commandIn(ctx, pid1, "", c).CombinedOutput()
		if err != nil {
			return Proc{}, &CommandError{Host: m.Name, Argv: c, Output: out, Err: err}
		}
		inside, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	// systemd forked it: it is a child of the machine's PID 1 whose innermost PID is inside.
	for _, pid := range children(pid1) {
		if ns := nsPIDs(pid); inside > 0 && len(ns) > 0 && ns[len(ns)-1] == inside {
			if p, ok := procOf(pid); ok {
				return p, nil
			}
		}
	}
	return Proc{}, fmt.Errorf("cannot start service %s on machine %q: its main process (%d in the machine) is not running", unit, m.Name, inside)
}

// Reboot asks the machine's systemd for a reboot, as `systemctl reboot` on a real machine
// would, and waits until the machine has booted again.
func (m *Machine) Reboot(ctx context.Context) error {
	before := m.Boots()
	if _, err := m.Run(ctx, "systemctl", "reboot"); err != nil {
		return fmt.Errorf("cannot reboot machine %q: %w", m.Name, err)
	}
	return m.waitBoot(ctx, before)
}

// waitBoot waits for boot number after+1 to be started, then for it to finish booting.
func (m *Machine) waitBoot(ctx context.Context, after int) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for m.Boots() <= after {
		m.mu.Lock()
		exited := m.exited
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("machine %q did not restart: %w", m.Name, ctx.Err())
		case <-exited:
			return fmt.Errorf("machine %q stopped instead of rebooting; console: %s", m.Name, m.consoleTail())
		case <-tick.C:
		}
	}
	return m.WaitBooted(ctx)
}

// PowerOff asks the machine's systemd for a power-off and waits until the machine is off.
// Its disk (the upper layer) is kept: Boot starts it again.
func (m *Machine) PowerOff(ctx context.Context) error {
	return m.turnOff(ctx, "power off", func() error {
		// systemctl may be cut off by the shutdown it starts: its error says nothing.
		m.Command(ctx, []string{"systemctl", "poweroff"}).Run()
		return nil
	})
}

// turnOff runs off on a running machine and waits until the machine is off (what: what it
// did not do, in the error of a timeout). A machine that is off is left alone.
func (m *Machine) turnOff(ctx context.Context, what string, off func() error) error {
	m.mu.Lock()
	exited := m.exited
	on := m.nspawn != nil
	m.mu.Unlock()
	if !on {
		return nil
	}
	if err := off(); err != nil {
		return err
	}
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("machine %q did not %s: %w", m.Name, what, ctx.Err())
	}
}

// PowerCut turns the machine off at once, as a power failure would: its network link goes
// down first, so that nothing leaves it any more (a dead machine closes no connection and
// refuses none: its peers' packets go unanswered, as its ARP), then its PID 1 (systemd) is
// killed with SIGKILL, and every process of the machine dies with it (the kernel kills a PID
// namespace's processes when its init dies); nothing shuts down, nothing is saved or
// unmounted. It waits until the machine is off. Its disk (the upper layer) is kept: Boot
// brings the link up and starts it again.
func (m *Machine) PowerCut(ctx context.Context) error {
	return m.turnOff(ctx, "go off after its power cut", func() error {
		pid := m.PID()
		if pid == 0 {
			return fmt.Errorf("cannot cut the power of machine %q: its PID 1 is not known yet", m.Name)
		}
		m.mu.Lock()
		m.unplugged = true
		m.mu.Unlock()
		if err := run(ctx, m.linkArgv("down")); err != nil {
			return fmt.Errorf("cannot cut the power of machine %q: %w", m.Name, err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return fmt.Errorf("cannot cut the power of machine %q: %w", m.Name, err)
		}
		return nil
	})
}

// linkArgv sets the machine's eth0 up or down.
func (m *Machine) linkArgv(state string) []string {
	return []string{"ip", "-n", m.NetNS, "link", "set", "eth0", state}
}

// destroy stops the machine (SIGTERM to nspawn: a clean shutdown, SIGKILL after the grace
// period), then everything left in its network namespace, and deletes the namespace and its
// directory (the overlay mount goes with the holder's mount namespace).
func (m *Machine) destroy() error {
	m.mu.Lock()
	m.closing = true
	c := m.nspawn
	m.mu.Unlock()
	c.stop(m.grace)
	var errs []error
	if m.nsCreated {
		if err := deleteNetns(m.NetNS, m.grace); err != nil {
			errs = append(errs, err)
		}
	}
	m.holder.stop(m.grace)
	if err := os.RemoveAll(m.Dir); err != nil {
		errs = append(errs, fmt.Errorf("cannot remove machine directory: %w", err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot remove machine %q: %w", m.Name, errors.Join(errs...))
	}
	return nil
}

// containerInit finds the container's PID 1 among the descendants of nspawn (nspawn forks an
// inner nspawn that forks the init): the process whose PID in its own namespace is 1.
func containerInit(nspawn int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	parent := map[int]int{}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := ppid(pid); pp > 0 {
			parent[pid] = pp
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		descends := false
		for p, depth := parent[pid], 0; p > 0 && depth < 4; p, depth = parent[p], depth+1 {
			if p == nspawn {
				descends = true
				break
			}
		}
		if descends && nsPIDIsOne(pid) {
			return pid
		}
	}
	return 0
}

// initOf reports whether pid is still the PID 1 of a container below nspawn (its PID in its
// own namespace is 1 and nspawn is among its first ancestors).
func initOf(pid, nspawn int) bool {
	if !nsPIDIsOne(pid) {
		return false
	}
	for p, depth := ppid(pid), 0; p > 0 && depth < 4; p, depth = ppid(p), depth+1 {
		if p == nspawn {
			return true
		}
	}
	return false
}

// ppid is pid's parent from /proc/<pid>/stat, or 0.
func ppid(pid int) int {
	st, _ := readStat(pid)
	return st.ppid
}

// shuttingDown reports whether the process pid, a machine's PID 1, has handed over to
// systemd-shutdown (the last step of a shutdown), or is gone.
func shuttingDown(pid int) bool {
	st, ok := readStat(pid)
	return !ok || strings.HasPrefix(st.comm, "systemd-shutdow")
}

// nsPIDIsOne reports whether pid is PID 1 of a nested PID namespace (NSpid ends in 1).
func nsPIDIsOne(pid int) bool {
	ns := nsPIDs(pid)
	return len(ns) >= 2 && ns[len(ns)-1] == 1
}

// nsPIDs is pid's NSpid line of /proc/<pid>/status: its PID in each PID namespace it is in,
// from this process's namespace inwards (nil when pid is gone).
func nsPIDs(pid int) []int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			var out []int
			for _, f := range strings.Fields(rest) {
				n, err := strconv.Atoi(f)
				if err != nil {
					return nil
				}
				out = append(out, n)
			}
			return out
		}
	}
	return nil
}

// bootOffset is this machine's uptime in whole seconds (/proc/uptime): the offset that makes
// a new time namespace's boot-time clock start below one second.
func bootOffset() int64 {
	data, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	up, err := strconv.ParseFloat(f[0], 64)
	if err != nil || up < 1 {
		return 0
	}
	return int64(up)
}

// MinInotifyInstances is the fs.inotify.max_user_instances AddMachine makes sure of. Every
// machine's systemd, journald, logind and dbus-daemon hold inotify instances (about 5 per
// machine), all as root, so all machines share root's budget: at the kernel's default of 128,
// about 24 machines up at once (tests run in parallel, each cluster 3–6 machines, rebooting)
// leave a booting machine's services failing with "Too many open files".
const MinInotifyInstances = 4096

// raiseInotifyInstances raises fs.inotify.max_user_instances to at least n (never lowers it).
func raiseInotifyInstances(n int) error {
	const path = "/proc/sys/fs/inotify/max_user_instances"
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", path, err)
	}
	cur, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return fmt.Errorf("cannot read %s: %q", path, data)
	}
	if cur >= n {
		return nil
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(n)), 0o644); err != nil {
		return fmt.Errorf("cannot raise %s from %d to %d (machines share root's inotify instances): %w", path, cur, n, err)
	}
	return nil
}
