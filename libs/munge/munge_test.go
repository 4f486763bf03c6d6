package munge_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service"
)

// failingMunge answers `munge -n` with munge's own error until it has been asked `fails` times.
type failingMunge struct {
	fails, calls int
}

func (f *failingMunge) Run(ctx context.Context, argv, env []string) (command.Output, error) {
	f.calls++
	if len(argv) != 2 || argv[0] != munge.ClientPath || argv[1] != "-n" {
		return command.Output{}, errors.New("unexpected command " + strings.Join(argv, " "))
	}
	if f.calls <= f.fails {
		return command.Output{ExitCode: 1, Stderr: []byte("munge: Error: Failed to access \"/run/munge/munge.socket.2\": No such file or directory\n")}, nil
	}
	return command.Output{Stdout: []byte("MUNGE:AwQFAAB...:\n")}, nil
}

func TestWait(t *testing.T) {
	t.Parallel()
	f := &failingMunge{fails: 3}
	if err := munge.Wait(context.Background(), f, "", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if f.calls != 4 {
		t.Errorf("munge -n ran %d times, want 4 (three failures, then an answer)", f.calls)
	}
}

func TestWaitGivesUpWithCtx(t *testing.T) {
	t.Parallel()
	f := &failingMunge{fails: 1 << 30}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := munge.Wait(ctx, f, "", time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "Failed to access") {
		t.Errorf("got %v, want the deadline and munge's last error", err)
	}
}

// services is a fake service.Manager recording its calls.
type services struct {
	active bool
	calls  []string
}

func (s *services) record(call string) error { s.calls = append(s.calls, call); return nil }
func (s *services) Configure(_ context.Context, spec service.Spec) error {
	return s.record("configure " + spec.Name + " " + strings.Join(spec.Command, " ") + " as " + spec.User)
}
func (s *services) Enable(_ context.Context, n string) error  { return s.record("enable " + n) }
func (s *services) Disable(_ context.Context, n string) error { return s.record("disable " + n) }
func (s *services) Start(_ context.Context, n string) error   { return s.record("start " + n) }
func (s *services) Stop(_ context.Context, n string) error    { return s.record("stop " + n) }
func (s *services) Restart(_ context.Context, n string) error { return s.record("restart " + n) }
func (s *services) Spawn(_ context.Context, n string) error   { return s.record("spawn " + n) }
func (s *services) Respawn(_ context.Context, n string) error { return s.record("respawn " + n) }
func (s *services) Status(_ context.Context, n string) (service.Status, error) {
	if s.active {
		return service.Status{Name: n, State: service.StateActive}, nil
	}
	return service.Status{Name: n, State: service.StateInactive}, nil
}

func TestDaemonEnsure(t *testing.T) {
	t.Parallel()
	define := []string{"configure munge /usr/sbin/munged --foreground as munge", "enable munge"}
	start, restart := slices.Concat(define, []string{"spawn munge"}), slices.Concat(define, []string{"respawn munge"})
	for _, tt := range []struct {
		name    string
		active  bool
		restart bool
		want    []string
	}{
		{name: "not running: started", want: start},
		{name: "running, key unchanged: left alone", active: true},
		{name: "not running, key changed: started", restart: true, want: start},
		{name: "running, key changed: restarted", active: true, restart: true, want: restart},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			s := &services{active: tt.active}
			d := &munge.Daemon{Services: s, Name: munge.ServiceName(service.Systemd), Runner: &failingMunge{}, Root: root,
				LookupUser: func(string) (int, int, error) { return os.Getuid(), os.Getgid(), nil }, PollInterval: time.Millisecond}
			if err := d.Ensure(context.Background(), tt.restart); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, s.calls); d != "" {
				t.Errorf("service calls (-want +got):\n%s", d)
			}
			if st, err := os.Stat(filepath.Join(root, munge.SocketDir)); err != nil || !st.IsDir() {
				t.Errorf("%s not created: %v", munge.SocketDir, err)
			}
		})
	}
}

// TestPrepare: Prepare defines a munged that is not active and neither enables nor starts
// it (its key may not be written yet); Start then does the rest of what Ensure does.
func TestPrepare(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name            string
		active, restart bool
		prepared, all   []string
	}{
		{name: "not running", prepared: []string{"configure munge /usr/sbin/munged --foreground as munge"},
			all: []string{"configure munge /usr/sbin/munged --foreground as munge", "enable munge", "spawn munge"}},
		{name: "running, key unchanged", active: true},
		{name: "running, key changed", active: true, restart: true,
			all: []string{"configure munge /usr/sbin/munged --foreground as munge", "enable munge", "respawn munge"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &services{active: tt.active}
			d := &munge.Daemon{Services: s, Name: munge.ServiceName(service.Systemd), Runner: &failingMunge{}, Root: t.TempDir(),
				LookupUser: func(string) (int, int, error) { return os.Getuid(), os.Getgid(), nil }, PollInterval: time.Millisecond}
			p, err := d.Prepare(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.prepared, s.calls); d != "" {
				t.Errorf("service calls of Prepare (-want +got):\n%s", d)
			}
			if err := p.Start(context.Background(), tt.restart); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.all, s.calls); d != "" {
				t.Errorf("service calls of Prepare and Start (-want +got):\n%s", d)
			}
		})
	}
}

func TestDaemonEnsureNotAnswering(t *testing.T) {
	t.Parallel()
	d := &munge.Daemon{Services: &services{}, Runner: &failingMunge{fails: 1 << 30}, Root: t.TempDir(),
		LookupUser: func(string) (int, int, error) { return os.Getuid(), os.Getgid(), nil },
		Timeout:    20 * time.Millisecond, PollInterval: time.Millisecond}
	if err := d.Ensure(context.Background(), false); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want the bounded wait's deadline", err)
	}
}

func TestServiceName(t *testing.T) {
	t.Parallel()
	if got := munge.ServiceName(service.Pebble); got != "munged" {
		t.Errorf("Pebble: %q", got)
	}
	if got := munge.ServiceName(service.Systemd); got != "munge" {
		t.Errorf("systemd: %q", got)
	}
}

// socketMunge answers `munge -n` as munged does: only once its socket accepts connections.
type socketMunge struct {
	socket string
	calls  atomic.Int32
}

func (f *socketMunge) Run(ctx context.Context, argv, env []string) (command.Output, error) {
	f.calls.Add(1)
	c, err := net.Dial("unix", f.socket)
	if err != nil {
		return command.Output{ExitCode: 1, Stderr: []byte("munge: Error: Failed to access \"" + f.socket + "\"\n")}, nil
	}
	c.Close()
	return command.Output{Stdout: []byte("MUNGE:AwQFAAB...:\n")}, nil
}

// TestWaitForSocket: with munged's socket given, the try comes as soon as munged listens (at
// 300 ms), and no `munge -n` runs before (the wait for the socket lasts up to maxEvery, 1 s).
func TestWaitForSocket(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "munge.socket.2")
	f := &socketMunge{socket: sock}
	go func() {
		time.Sleep(300 * time.Millisecond)
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(func() { l.Close() })
	}()
	t0 := time.Now()
	if err := munge.Wait(context.Background(), f, sock, time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 450*time.Millisecond {
		t.Errorf("answered after %v: not when the socket listened (300 ms)", d)
	}
	if f.calls.Load() != 1 {
		t.Errorf("munge -n ran %d times, want once: when the socket listened", f.calls.Load())
	}
}

// TestStartListenReady: with ListenReady, Start's wait ends once munged's socket accepts a
// connection and runs no `munge -n`; without it, one `munge -n` proves the answer. A munged
// that never listens ends the wait at Timeout, naming the socket.
func TestStartListenReady(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		listenReady bool
		listen      bool
		wantCalls   int32
		wantErr     bool
	}{
		{name: "listening, ListenReady: no munge -n", listenReady: true, listen: true, wantCalls: 0},
		{name: "listening, default: one munge -n", listen: true, wantCalls: 1},
		{name: "not listening, ListenReady: the bounded wait's error", listenReady: true, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			sock := filepath.Join(root, munge.Socket)
			f := &socketMunge{socket: sock}
			d := &munge.Daemon{Services: &services{}, Runner: f, Root: root, ListenReady: tt.listenReady,
				LookupUser: func(string) (int, int, error) { return os.Getuid(), os.Getgid(), nil },
				Timeout:    50 * time.Millisecond, PollInterval: time.Millisecond}
			p, err := d.Prepare(context.Background()) // creates the socket's directory
			if err != nil {
				t.Fatal(err)
			}
			if tt.listen {
				l, err := net.Listen("unix", sock)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
			}
			err = p.Start(context.Background(), false)
			if tt.wantErr {
				if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), sock) {
					t.Errorf("got %v, want the deadline naming %s", err, sock)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := f.calls.Load(); got != tt.wantCalls {
				t.Errorf("munge -n ran %d times, want %d", got, tt.wantCalls)
			}
		})
	}
}
