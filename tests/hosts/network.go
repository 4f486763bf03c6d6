package hosts

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultRegistryDir is where networks record their subnet leases and
// namespaces, so that concurrent networks (also in other processes) never
// share a subnet and leftovers of a dead process can be swept.
const DefaultRegistryDir = "/run/charmed-slurm-hosts"

// maxSubnets bounds the subnets 10.(201+k/256).(k%256).0/24 handed out.
const maxSubnets = 40 * 256

// NetworkOptions configures NewNetwork.
type NetworkOptions struct {
	// Prefix starts the name of every network namespace of this network
	// ("<Prefix><k>sw" for the switch, "<Prefix><k>-<host>" for hosts, where
	// k is the network's subnet lease). Lower-case letters and digits, at
	// most 8; default "hosts".
	Prefix string
	// Dir holds the per-host directories (Dir/<host>/...). It is created if
	// missing and removed by Close. Required; use a fresh directory.
	Dir string
	// PebbleBin is the pebble binary run as each host's supervisor. Required.
	PebbleBin string
	// RegistryDir overrides DefaultRegistryDir.
	RegistryDir string
	// StopTimeout is how long Close and RemoveHost wait after SIGTERM before
	// SIGKILL. Default 10s.
	StopTimeout time.Duration
	// StartTimeout bounds the wait for a host's Pebble socket. Default 30s.
	StartTimeout time.Duration
}

// Network is a private layer-2 segment of hosts. Its methods are safe for
// concurrent use.
type Network struct {
	// Prefix is the resolved namespace name prefix including the lease
	// number (for example "ht12"); every namespace of this network starts
	// with it.
	Prefix string
	// Subnet is the network's private /24.
	Subnet netip.Prefix
	// Dir holds the per-host directories.
	Dir string

	opts          NetworkOptions
	lease         *os.File
	state         string // registry file listing our namespaces
	switchNS      string
	switchCreated bool

	mu       sync.Mutex
	hosts    map[string]*Host
	machines map[string]*Machine // see machine.go
	reserved map[string]bool     // names of hosts being added (and of machines while they exist)
	adding   sync.WaitGroup      // AddHost calls in flight
	next     int                 // last host number handed out
	closed   bool
}

var prefixRE = regexp.MustCompile(`^[a-z][a-z0-9]{0,7}$`)

// NewNetwork creates a switch namespace with a bridge and leases a private
// subnet no other live network uses. Call Close to undo everything.
func NewNetwork(ctx context.Context, opts NetworkOptions) (*Network, error) {
	if opts.Prefix == "" {
		opts.Prefix = "hosts"
	}
	if !prefixRE.MatchString(opts.Prefix) {
		return nil, fmt.Errorf("cannot create network: invalid prefix %q (want 1-8 lower-case letters and digits, starting with a letter)", opts.Prefix)
	}
	if opts.Dir == "" {
		return nil, errors.New("cannot create network: no Dir given")
	}
	if opts.PebbleBin == "" {
		return nil, errors.New("cannot create network: no PebbleBin given")
	}
	if _, err := os.Stat(opts.PebbleBin); err != nil {
		return nil, fmt.Errorf("cannot create network: pebble binary: %w", err)
	}
	// Each host has its own /tmp, /root, ... (PrivateDirs): a pebble binary there, as in a
	// checkout cloned under /tmp, is not the file a host would run.
	if bin, err := filepath.Abs(opts.PebbleBin); err == nil {
		if d := privateDirOf(bin); d != "" {
			return nil, fmt.Errorf("cannot create network: pebble binary %s lies in %s, which every host replaces with its own: build it (or clone the repository) outside %s", bin, d, strings.Join(PrivateDirs, ", "))
		}
	}
	if opts.RegistryDir == "" {
		opts.RegistryDir = DefaultRegistryDir
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 10 * time.Second
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("cannot create network: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create network: %w", err)
	}
	if err := os.MkdirAll(opts.RegistryDir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create network registry: %w", err)
	}
	sweepStale(ctx, opts.RegistryDir, opts.StopTimeout)

	k, lease, err := leaseSubnet(opts.RegistryDir, opts.Prefix)
	if err != nil {
		return nil, err
	}
	n := &Network{
		Prefix:   opts.Prefix + strconv.Itoa(k),
		Subnet:   netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(201 + k/256), byte(k % 256), 0}), 24),
		Dir:      dir,
		opts:     opts,
		lease:    lease,
		state:    filepath.Join(opts.RegistryDir, fmt.Sprintf("subnet-%d.netns", k)),
		hosts:    make(map[string]*Host),
		reserved: make(map[string]bool),
		switchNS: opts.Prefix + strconv.Itoa(k) + "sw",
	}
	if err := n.createSwitch(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

func (n *Network) createSwitch(ctx context.Context) error {
	if err := n.addNetns(ctx, n.switchNS); err != nil {
		return err
	}
	n.switchCreated = true
	steps := [][]string{
		{"ip", "-n", n.switchNS, "link", "set", "lo", "up"},
		{"ip", "-n", n.switchNS, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", n.switchNS, "link", "set", "br0", "up"},
	}
	for _, argv := range steps {
		if err := run(ctx, argv); err != nil {
			return fmt.Errorf("cannot create switch: %w", err)
		}
	}
	return nil
}

// addNetns records name in the registry first, then creates the namespace,
// so a crash in between still lets a later sweep find it.
func (n *Network) addNetns(ctx context.Context, name string) error {
	f, err := os.OpenFile(n.state, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("cannot record namespace %q: %w", name, err)
	}
	_, err = fmt.Fprintln(f, name)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot record namespace %q: %w", name, err)
	}
	if err := run(ctx, []string{"ip", "netns", "add", name}); err != nil {
		return fmt.Errorf("cannot create network namespace: %w", err)
	}
	return nil
}

// Hosts returns the network's hosts, in no particular order.
func (n *Network) Hosts() []*Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	hs := make([]*Host, 0, len(n.hosts))
	for _, h := range n.hosts {
		hs = append(hs, h)
	}
	return hs
}

// Host returns the host called name, or nil.
func (n *Network) Host(name string) *Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hosts[name]
}

// RemoveHost stops everything running on the host and deletes its namespace
// and directory.
func (n *Network) RemoveHost(name string) error {
	n.mu.Lock()
	h := n.hosts[name]
	delete(n.hosts, name)
	n.mu.Unlock()
	if h == nil {
		return fmt.Errorf("cannot remove host %q: no such host", name)
	}
	return h.destroy(n.opts.StopTimeout)
}

// Close stops every process of every host (by PID, then anything left in the
// hosts' network namespaces), deletes all namespaces and Dir, and releases the
// subnet. It is safe to call more than once.
func (n *Network) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	n.adding.Wait() // they see closed and undo themselves
	n.mu.Lock()
	hs := make([]*Host, 0, len(n.hosts))
	for _, h := range n.hosts {
		hs = append(hs, h)
	}
	n.hosts = nil
	n.mu.Unlock()

	var errs []error
	var wg sync.WaitGroup
	var emu sync.Mutex
	for _, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.destroy(n.opts.StopTimeout); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		}()
	}
	wg.Wait()
	errs = append(errs, n.closeMachines()...)
	if n.switchCreated {
		if err := deleteNetns(n.switchNS, n.opts.StopTimeout); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(n.Dir); err != nil {
		errs = append(errs, fmt.Errorf("cannot remove network directory: %w", err))
	}
	if len(errs) == 0 {
		os.Remove(n.state)
	}
	n.lease.Close() // releases the flock
	return errors.Join(errs...)
}

// leaseSubnet takes an exclusive flock on the first free subnet lease file
// whose switch namespace name is not taken (by a leftover unknown to this
// registry). The lock lives as long as the returned file (or the process).
func leaseSubnet(registry, prefix string) (int, *os.File, error) {
	for k := 0; k < maxSubnets; k++ {
		f, err := os.OpenFile(filepath.Join(registry, fmt.Sprintf("subnet-%d.lock", k)), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return 0, nil, fmt.Errorf("cannot lease subnet: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		if _, err := os.Stat(filepath.Join("/run/netns", prefix+strconv.Itoa(k)+"sw")); err == nil {
			f.Close()
			continue
		}
		return k, f, nil
	}
	return 0, nil, errors.New("cannot lease subnet: all subnets in use")
}

// sweepStale deletes the namespaces (and kills their processes) of networks
// whose owner died without Close: their lease file is no longer locked.
func sweepStale(ctx context.Context, registry string, grace time.Duration) {
	states, _ := filepath.Glob(filepath.Join(registry, "subnet-*.netns"))
	for _, state := range states {
		lockPath := strings.TrimSuffix(state, ".netns") + ".lock"
		f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // in use by a live network
			continue
		}
		data, err := os.ReadFile(state)
		if err == nil {
			sc := bufio.NewScanner(bytes.NewReader(data))
			var names []string
			for sc.Scan() {
				if name := strings.TrimSpace(sc.Text()); name != "" {
					names = append(names, name)
				}
			}
			// Hosts first, the switch last (it is recorded first).
			failed := false
			for i := len(names) - 1; i >= 0; i-- {
				if ctx.Err() != nil {
					failed = true
					break
				}
				if err := deleteNetns(names[i], grace); err != nil {
					failed = true
				}
			}
			if !failed {
				os.Remove(state)
			}
		}
		f.Close()
	}
}

// deleteNetns kills every process inside the named network namespace and
// deletes it. A namespace that does not exist is not an error.
func deleteNetns(name string, grace time.Duration) error {
	path := filepath.Join("/run/netns", name)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := killNetns(path, grace); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, []string{"ip", "netns", "delete", name}); err != nil {
		return fmt.Errorf("cannot delete network namespace: %w", err)
	}
	return nil
}

// run runs argv and returns an error with its output if it fails.
func run(ctx context.Context, argv []string) error {
	return runInput(ctx, argv, "")
}

// runInput runs argv with input on its standard input (none when "") and returns an error
// with its output, and the input after "<<" in its command line, if it fails.
func runInput(ctx context.Context, argv []string, input string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	shown := argv
	if input != "" {
		cmd.Stdin = strings.NewReader(input)
		shown = append(slices.Clone(argv), "<<", input)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return &CommandError{Argv: shown, Output: out, Err: err}
	}
	return nil
}

// CommandError is returned when a command run by this package (or through
// (*Host).Run) fails; it carries the command's combined output.
type CommandError struct {
	Host   string // empty for commands run in the root namespace
	Argv   []string
	Output []byte
	Err    error
}

func (e *CommandError) Error() string {
	where := ""
	if e.Host != "" {
		where = " on host " + e.Host
	}
	out := strings.TrimSpace(string(e.Output))
	if len(out) > 2000 {
		out = "..." + out[len(out)-2000:]
	}
	if out == "" {
		return fmt.Sprintf("command %q%s failed: %v", e.Argv, where, e.Err)
	}
	return fmt.Sprintf("command %q%s failed: %v: %s", e.Argv, where, e.Err, out)
}

func (e *CommandError) Unwrap() error { return e.Err }
