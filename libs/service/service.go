// Package service manages the daemons the operators run (slurmd, slurmctld, munged)
// through one [Manager] interface, whatever supervises them on the host.
//
// Two backends implement it:
//
//   - package service/pebble: Pebble layers, one per service, over Pebble's API. Used on the
//     local model's hosts and in Kubernetes sidecars.
//   - package service/systemd: systemd over D-Bus, with the service's environment and its
//     command's arguments in /etc/default/<name> and its command path and restart policy in
//     a unit drop-in (a new command line needs no daemon-reload).
//
// [Detect] picks the backend at start-up: a Pebble socket ($PEBBLE_SOCKET, else
// $PEBBLE/.pebble.socket, else /var/lib/pebble/default/.pebble.socket) means Pebble,
// anything else systemd. The caller constructs the backend from the [Backend] it returns.
//
// Usage is the same for both:
//
//	err := m.Configure(ctx, service.Spec{
//		Name:    "slurmd",
//		Command: []string{"/usr/sbin/slurmd", "-D", "-Z", "--conf", "CPUs=2 Feature=compute"},
//	})
//	err = m.Enable(ctx, "slurmd")   // start at boot / when the supervisor starts
//	err = m.Restart(ctx, "slurmd")  // apply the new command line
//	err = m.Spawn(ctx, "munged")    // start, return once the process runs; check readiness
//	st, err := m.Status(ctx, "slurmd")
//
// Configure only records the service definition; a running service keeps its old command
// line until it is restarted. Commands must stay in the foreground (slurmd -D,
// slurmctld -D, munged -F): both backends supervise the process directly and restart it
// when it fails.
package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// signalNameRE is a signal's name as systemd's SuccessExitStatus= takes it, compiled when a
// service names one (its counted repetitions cost every hook's start otherwise).
var signalNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^SIG[A-Z0-9]{2,8}([+-][0-9]{1,2})?$`) })

// Spec defines a service.
type Spec struct {
	// Name is the service name ("slurmd"); for systemd also the unit name without
	// ".service".
	Name string
	// Summary is a one-line description.
	Summary string
	// Command is the argv to run, in the foreground. Command[0] should be an absolute
	// path for systemd.
	Command []string
	// Environment holds extra environment variables.
	Environment map[string]string
	// User runs the command as this user when set.
	User string
	// KillDelay is how long to wait after SIGTERM before SIGKILL on stop; zero keeps the
	// backend's default.
	KillDelay time.Duration
	// KillAll makes a stop (or restart) signal every process the service started, not only
	// its main one: systemd's KillMode=control-group, where Debian's slurmd and sackd units
	// say KillMode=process (which keeps slurmd's job steps across a restart, but leaves a
	// child sackd forked to fetch the configuration running after sackd stops). Pebble
	// signals the service's process group whatever this says.
	KillAll bool
	// SuccessSignals are signals ("SIGUSR1") whose death counts as a clean exit: systemd's
	// SuccessExitStatus=, so that a stop the process ends by such a signal leaves the unit
	// inactive, not failed (slurmdbd 26.05 can die by the SIGUSR1 it sends itself to wake its
	// RPC thread while it shuts down on SIGTERM). Pebble records a service it stopped as
	// inactive whatever its exit, and ignores this.
	SuccessSignals []string
	// StayStopped makes a process that exits with status 0 stay stopped: the supervisor
	// restarts the service after a failure only. systemd does so for every service
	// (Restart=on-failure, the drop-in's); Pebble's default restarts a service whatever its
	// exit, so its layer says on-success: ignore. Pebble reads this when it starts the
	// process: a definition changed while it runs applies from its next start. For a daemon
	// that exits 0 only when told to (slurmctld shut down by a backup's takeover, or
	// `scontrol shutdown`).
	StayStopped bool
}

// Validate reports the first problem with s, naming the bad field.
func (s Spec) Validate() error {
	if err := ValidateName(s.Name); err != nil {
		return err
	}
	if len(s.Command) == 0 || s.Command[0] == "" {
		return fmt.Errorf("invalid service %q: empty command", s.Name)
	}
	for _, a := range s.Command {
		if strings.ContainsAny(a, "\x00\n\r") {
			return fmt.Errorf("invalid service %q: command argument %q contains a newline or NUL", s.Name, a)
		}
	}
	for _, sig := range s.SuccessSignals {
		if !signalNameRE().MatchString(sig) {
			return fmt.Errorf("invalid service %q: success signal %q is not a signal name (SIGUSR1, SIGRTMIN+1)", s.Name, sig)
		}
	}
	for k, v := range s.Environment {
		if k == "" || strings.ContainsAny(k, "=\x00\n\r \t") {
			return fmt.Errorf("invalid service %q: bad environment variable name %q", s.Name, k)
		}
		if strings.ContainsAny(v, "\x00\n\r") {
			return fmt.Errorf("invalid service %q: environment variable %s contains a newline or NUL", s.Name, k)
		}
	}
	if strings.ContainsAny(s.User, " \t\n\r\x00:/") {
		return fmt.Errorf("invalid service %q: bad user %q", s.Name, s.User)
	}
	if s.KillDelay < 0 {
		return fmt.Errorf("invalid service %q: negative kill delay %v", s.Name, s.KillDelay)
	}
	return nil
}

// ValidateName checks a service name: letters, digits, '-', '_', '.', '@', starting with a
// letter or digit.
func ValidateName(name string) error {
	if name == "" {
		return errors.New("invalid service name: empty")
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			i > 0 && (r == '-' || r == '_' || r == '.' || r == '@')
		if !ok {
			return fmt.Errorf("invalid service name %q", name)
		}
	}
	return nil
}

// State is a service's current state.
type State string

const (
	StateActive       State = "active"       // running
	StateInactive     State = "inactive"     // stopped (or never started)
	StateFailed       State = "failed"       // exited with an error and not being restarted
	StateActivating   State = "activating"   // starting, or waiting to be restarted after a failure
	StateDeactivating State = "deactivating" // stopping
)

// Status is a service's state and since when it holds.
type Status struct {
	Name    string
	State   State
	Since   time.Time // zero when the backend does not know
	Enabled bool      // started when the supervisor starts (boot)
}

// ErrUnknownService is returned (wrapped) for a service the backend does not know.
var ErrUnknownService = errors.New("unknown service")

// Manager manages services. Every method waits until the supervisor has finished the
// operation (or ctx ends). Stopping a stopped service and starting a running one are not
// errors. Methods other than Configure need the service to be configured first (with
// systemd: its unit installed) and return an error wrapping ErrUnknownService otherwise.
//
// Two ways to start: Start and Restart wait for the supervisor's whole start operation,
// including any check it makes that the process stays up (Pebble keeps a start change
// open for 1 s to see the service survive; a command that exits at once is an error).
// Spawn and Respawn return as soon as the supervisor reports the service active, that is
// its process was started (with systemd's Type=simple units this is what a start job
// waits for anyway); a process that dies right after may go unnoticed, so the caller
// checks readiness itself (a socket answering, a node registering). Use them on paths
// where the caller waits for the daemon's own readiness.
type Manager interface {
	// Configure creates or replaces the service definition. It does not start, stop or
	// restart the service.
	Configure(ctx context.Context, spec Spec) error
	// Enable makes the service start when the supervisor starts (at boot).
	Enable(ctx context.Context, name string) error
	// Disable undoes Enable.
	Disable(ctx context.Context, name string) error
	Start(ctx context.Context, name string) error
	Stop(ctx context.Context, name string) error
	// Restart stops (if running) and starts the service with its current definition.
	Restart(ctx context.Context, name string) error
	// Spawn starts the service like Start but returns once the supervisor reports it
	// active (its process started), without the supervisor's stay-up check.
	Spawn(ctx context.Context, name string) error
	// Respawn restarts the service like Restart but returns once the supervisor reports
	// the new process active, without the supervisor's stay-up check.
	Respawn(ctx context.Context, name string) error
	Status(ctx context.Context, name string) (Status, error)
}

// Definer is a Manager that can hold the part of a service's definition that does not
// depend on its command's arguments before they are known (systemd: the unit's drop-in, and
// a reload when systemd holds another), so that Configure, with the arguments, has only the
// rest left to do. Pebble's definition is one layer: it has no such part.
type Definer interface {
	// Define makes the supervisor hold what of spec's definition does not depend on
	// spec.Command[1:]. It neither starts, stops nor enables the service.
	Define(ctx context.Context, spec Spec) error
}

// Define calls m's Define when m is a Definer, and does nothing otherwise.
func Define(ctx context.Context, m Manager, spec Spec) error {
	if d, ok := m.(Definer); ok {
		return d.Define(ctx, spec)
	}
	return nil
}

// Backend names which service manager a host uses.
type Backend int

const (
	Systemd Backend = iota
	Pebble
)

func (b Backend) String() string {
	if b == Pebble {
		return "pebble"
	}
	return "systemd"
}

// DefaultPebbleDir is where Pebble keeps its state when $PEBBLE is unset.
const DefaultPebbleDir = "/var/lib/pebble/default"

// Detect chooses the backend: Pebble when a Pebble socket exists at $PEBBLE_SOCKET, else at
// $PEBBLE/.pebble.socket, else at DefaultPebbleDir/.pebble.socket; systemd otherwise. It
// returns the socket path for Pebble. lookupEnv is os.LookupEnv in production; stat is
// os.Stat (nil means os.Stat).
func Detect(lookupEnv func(string) (string, bool), stat func(string) (os.FileInfo, error)) (Backend, string) {
	if stat == nil {
		stat = os.Stat
	}
	var candidates []string
	if s, ok := lookupEnv("PEBBLE_SOCKET"); ok && s != "" {
		candidates = append(candidates, s)
	}
	if d, ok := lookupEnv("PEBBLE"); ok && d != "" {
		candidates = append(candidates, filepath.Join(d, ".pebble.socket"))
	}
	candidates = append(candidates, filepath.Join(DefaultPebbleDir, ".pebble.socket"))
	for _, c := range candidates {
		if fi, err := stat(c); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return Pebble, c
		}
	}
	return Systemd, ""
}
