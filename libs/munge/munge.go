// Package munge runs the MUNGE authentication daemon that Slurm before 23.11 uses
// (auth/munge) on a charm's host, through the host's service manager.
//
// The service's name depends on the service manager: under Pebble the charms define their
// own service "munged"; under systemd they drive Debian's packaged unit "munge"
// ([ServiceName]).
//
// [Daemon.Ensure] makes munged run with the key on disk: it creates munged's socket
// directory /run/munge (owned by the munge user; systemd creates it for Debian's unit,
// Pebble does not), defines and enables the service and (re)starts it when it is not
// running or the key changed, then waits until munged answers ([Wait]):
//
//	d := &munge.Daemon{Services: mgr, Name: munge.ServiceName(backend), Runner: command.Exec{}, Root: "/"}
//	changed, err := authkey.Write(ctx, "/etc/munge/munge.key", key, opts)
//	...
//	err = d.Ensure(ctx, changed) // restart only when the key changed
//
// [Daemon.Prepare] is Ensure's first half, which needs no key (the socket directory, the
// status, the service's definition), to run while the key is fetched; [Prepared.Start] the
// rest, once the key is written:
//
//	p, err := d.Prepare(ctx) // beside the key's fetch
//	changed, err := authkey.Write(ctx, "/etc/munge/munge.key", key, opts)
//	err = p.Start(ctx, changed)
//
// [Wait] is the readiness check alone: `munge -n` gets a credential encoded by munged, so
// its socket accepts requests and its key is loaded; it is tried as soon as munged's socket
// accepts a connection. [WaitListening] (Daemon.ListenReady) is the socket's check alone,
// with no process: munged listens only once its key is loaded.
package munge

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/poll"
	"github.com/charmed-slurm/operators/libs/service"
)

// Paths and names of Debian's munge package.
const (
	// ClientPath is the munge client, which Wait runs.
	ClientPath = "/usr/bin/munge"
	// DaemonPath is munged.
	DaemonPath = "/usr/sbin/munged"
	// SocketDir is munged's socket directory.
	SocketDir = "/run/munge"
	// Socket is munged's socket (its default, which the charms keep).
	Socket = SocketDir + "/munge.socket.2"
	// User runs munged and owns its key and socket directory.
	User = "munge"
)

// Defaults of a Daemon's zero fields.
const (
	DefaultTimeout      = 10 * time.Second
	DefaultPollInterval = 100 * time.Millisecond
)

// ServiceName is munged's service name under backend: "munge" (Debian's packaged unit)
// under systemd, "munged" (the charms' own service) under Pebble.
func ServiceName(backend service.Backend) string {
	if backend == service.Systemd {
		return "munge"
	}
	return "munged"
}

// Wait returns once munged answers on the host r runs commands on: `munge -n` gets a
// credential. Tries start 2 ms apart and double up to maxEvery (DefaultPollInterval when
// zero) until ctx ends; the error then names the last failure. Bound the wait with ctx.
//
// With socket (munged's socket as this process sees it; "" for none), each try waits first
// until the socket accepts a connection (a check of microseconds, where `munge -n` is a
// process), for at most maxEvery: a munged that has just started is asked as soon as it
// listens, and no `munge -n` runs before (one runs each maxEvery while nothing listens, for
// its error). A try whose socket listened but whose `munge -n` failed is followed by the
// pause.
func Wait(ctx context.Context, r command.Runner, socket string, maxEvery time.Duration) error {
	if maxEvery <= 0 {
		maxEvery = DefaultPollInterval
	}
	var last error
	for every := min(2*time.Millisecond, maxEvery); ; every = min(2*every, maxEvery) {
		// Before a try: the wait for the socket, up to maxEvery (a munged starting listens
		// within milliseconds; `munge -n` before then only fails, at a process's cost).
		paused := socket != "" && !listening(ctx, socket, maxEvery)
		out, err := r.Run(ctx, []string{ClientPath, "-n"}, nil)
		switch {
		case err != nil:
			last = err
		case out.ExitCode != 0:
			last = fmt.Errorf("munge -n exited %d: %s", out.ExitCode, bytes.TrimSpace(out.Stderr))
		default:
			return nil
		}
		stop := ctx.Err()
		if !paused && stop == nil {
			stop = poll.Sleep(ctx, every)
		}
		if stop != nil {
			return fmt.Errorf("cannot wait for munged to answer: %w (last: %v)", stop, last)
		}
	}
}

// listening polls socket every 250 µs until it accepts a connection, for at most d (when
// positive) or until ctx ends, and reports whether it did.
func listening(ctx context.Context, socket string, d time.Duration) bool {
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	var dialer net.Dialer
	for {
		if c, err := dialer.DialContext(ctx, "unix", socket); err == nil {
			c.Close()
			return true
		}
		if poll.Sleep(ctx, 250*time.Microsecond) != nil {
			return false
		}
	}
}

// Daemon is munged on a charm's host. Services and Runner are required.
type Daemon struct {
	// Services is the host's service manager.
	Services service.Manager
	// Name is the service's name (ServiceName); empty means "munged".
	Name string
	// Runner runs the readiness check (munge -n).
	Runner command.Runner
	// Root is prepended to SocketDir ("/" or empty in production, a temporary directory in
	// tests).
	Root string
	// LookupUser returns a user's uid and gid; nil means service.UserIDs.
	LookupUser func(name string) (uid, gid int, err error)
	// Timeout bounds the wait for a (re)started munged to answer; zero means DefaultTimeout.
	Timeout time.Duration
	// PollInterval is the longest pause between readiness checks; zero means
	// DefaultPollInterval.
	PollInterval time.Duration
	// ListenReady ends Start's wait once munged's socket accepts a connection, with no
	// `munge -n` (a process, on the path of a caller that starts a munge client next, such
	// as slurmd on a node's join): munged creates its socket only after it has read its key
	// and derived its subkeys (munged.c: create_subkeys, gids_create, then sock_create), and
	// exits before it if the key is missing or unusable; a connection made before munged's
	// accept loop runs waits in the socket's backlog and is answered. Without it the wait
	// ends with a credential encoded ([Wait]).
	ListenReady bool
}

// Service is the daemon's service name.
func (d *Daemon) Service() string {
	if d.Name != "" {
		return d.Name
	}
	return "munged"
}

// Ensure makes munged run: it creates the socket directory, and when munged is not active or
// restart is set (the key changed) defines, enables and (re)starts the service and waits,
// bounded by Timeout, until munged answers. A running munged is otherwise left alone.
// Ensure is Prepare, then Prepared.Start.
func (d *Daemon) Ensure(ctx context.Context, restart bool) error {
	p, err := d.Prepare(ctx)
	if err != nil {
		return err
	}
	return p.Start(ctx, restart)
}

// Prepared is munged's service as Prepare found and left it, ready for Start.
type Prepared struct {
	d *Daemon
	// active: the service manager said munged was active; configured: Prepare defined it.
	active, configured bool
}

// Prepare does the part of Ensure that needs no key, and so can run while the key is still
// being fetched: it creates the socket directory, asks whether munged is active and, when it
// is not, defines its service (neither enabled nor started: a host booting before the key
// is written does not start munged).
func (d *Daemon) Prepare(ctx context.Context) (*Prepared, error) {
	name := d.Service()
	lookup := d.LookupUser
	if lookup == nil {
		lookup = service.UserIDs
	}
	uid, gid, err := lookup(User)
	if err != nil {
		return nil, fmt.Errorf("cannot run %s: user %s: %w", name, User, err)
	}
	dir := filepath.Join(orRoot(d.Root), SocketDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", SocketDir, err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", SocketDir, err)
	}
	p := &Prepared{d: d}
	st, err := d.Services.Status(ctx, name)
	p.active = err == nil && st.State == service.StateActive
	if !p.active {
		if err := p.configure(ctx); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *Prepared) configure(ctx context.Context) error {
	name := p.d.Service()
	spec := service.Spec{Name: name, Summary: "MUNGE authentication service", Command: []string{DaemonPath, "--foreground"}, User: User}
	if err := p.d.Services.Configure(ctx, spec); err != nil {
		return fmt.Errorf("cannot configure %s: %w", name, err)
	}
	p.configured = true
	return nil
}

// Start finishes Ensure once the key is in place: when munged was not active or restart is
// set (the key changed), it enables and (re)starts the service, then waits, bounded by
// Timeout, until munged answers. A munged found active is otherwise left alone.
func (p *Prepared) Start(ctx context.Context, restart bool) error {
	d, name := p.d, p.d.Service()
	if p.active && !restart {
		return nil
	}
	if !p.configured {
		if err := p.configure(ctx); err != nil {
			return err
		}
	}
	if err := d.Services.Enable(ctx, name); err != nil {
		return fmt.Errorf("cannot enable %s: %w", name, err)
	}
	// Spawn and Respawn return once the process runs (no supervisor stay-up check); readiness
	// is checked by a credential round trip. A stopped munged is started, not restarted: a
	// restart is a stop and a start, one more step of the service manager on a new node's
	// join path.
	start, verb := d.Services.Spawn, "start"
	if p.active {
		start, verb = d.Services.Respawn, "restart"
	}
	if err := start(ctx, name); err != nil {
		return fmt.Errorf("cannot %s %s: %w", verb, name, err)
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	socket := filepath.Join(orRoot(d.Root), Socket)
	if d.ListenReady {
		return WaitListening(wctx, socket)
	}
	return Wait(wctx, d.Runner, socket, d.PollInterval)
}

// WaitListening returns once munged's socket (as this process sees it) accepts a
// connection, trying every 250 µs until ctx ends (bound the wait with ctx). A listening
// socket means munged has loaded its key (Daemon.ListenReady); `munge -n` ([Wait]) also
// proves a credential round trip, at the cost of a process.
func WaitListening(ctx context.Context, socket string) error {
	if listening(ctx, socket, 0) {
		return nil
	}
	err := ctx.Err()
	if err == nil {
		err = context.DeadlineExceeded
	}
	return fmt.Errorf("cannot wait for munged to listen on %s: %w", socket, err)
}

func orRoot(root string) string {
	if root == "" {
		return "/"
	}
	return root
}
