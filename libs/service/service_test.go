package service_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/charmed-slurm/operators/libs/service"
)

func listen(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
}

func TestDetect(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.socket")
	listen(t, sock)
	pebbleDir := filepath.Join(dir, "pebble")
	if err := os.Mkdir(pebbleDir, 0o755); err != nil {
		t.Fatal(err)
	}
	listen(t, filepath.Join(pebbleDir, ".pebble.socket"))
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defaultSock := filepath.Join(service.DefaultPebbleDir, ".pebble.socket")
	// stat pretends DefaultPebbleDir's socket exists when fakeDefault is set.
	statWith := func(fakeDefault bool) func(string) (os.FileInfo, error) {
		return func(p string) (os.FileInfo, error) {
			if p == defaultSock {
				if fakeDefault {
					return os.Stat(sock)
				}
				return nil, os.ErrNotExist
			}
			return os.Stat(p)
		}
	}
	for _, tt := range []struct {
		name        string
		env         map[string]string
		fakeDefault bool
		want        service.Backend
		wantSocket  string
	}{
		{"PEBBLE_SOCKET", map[string]string{"PEBBLE_SOCKET": sock, "PEBBLE": pebbleDir}, false, service.Pebble, sock},
		{"PEBBLE", map[string]string{"PEBBLE": pebbleDir}, false, service.Pebble, filepath.Join(pebbleDir, ".pebble.socket")},
		{"missing PEBBLE_SOCKET falls through", map[string]string{"PEBBLE_SOCKET": filepath.Join(dir, "nope"), "PEBBLE": pebbleDir}, false, service.Pebble, filepath.Join(pebbleDir, ".pebble.socket")},
		{"default dir", nil, true, service.Pebble, defaultSock},
		{"not a socket", map[string]string{"PEBBLE_SOCKET": plain}, false, service.Systemd, ""},
		{"nothing", nil, false, service.Systemd, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			b, s := service.Detect(lookup, statWith(tt.fakeDefault))
			if b != tt.want || s != tt.wantSocket {
				t.Errorf("Detect = %v %q, want %v %q", b, s, tt.want, tt.wantSocket)
			}
		})
	}
}

func TestSpecValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		spec service.Spec
		ok   bool
	}{
		{"good", service.Spec{Name: "slurmd", Command: []string{"/usr/sbin/slurmd", "-D"}, Environment: map[string]string{"A": "b c"}}, true},
		{"empty name", service.Spec{Command: []string{"x"}}, false},
		{"bad name", service.Spec{Name: "../x", Command: []string{"x"}}, false},
		{"no command", service.Spec{Name: "a"}, false},
		{"newline arg", service.Spec{Name: "a", Command: []string{"x", "a\nb"}}, false},
		{"bad env name", service.Spec{Name: "a", Command: []string{"x"}, Environment: map[string]string{"A B": "x"}}, false},
		{"bad user", service.Spec{Name: "a", Command: []string{"x"}, User: "a:b"}, false},
		{"negative kill delay", service.Spec{Name: "a", Command: []string{"x"}, KillDelay: -1}, false},
		{"success signals", service.Spec{Name: "a", Command: []string{"x"}, SuccessSignals: []string{"SIGUSR1", "SIGRTMIN+1"}}, true},
		{"success signal by number", service.Spec{Name: "a", Command: []string{"x"}, SuccessSignals: []string{"10"}}, false},
		{"success signal with a newline", service.Spec{Name: "a", Command: []string{"x"}, SuccessSignals: []string{"SIGUSR1\nExecStart=/bin/evil"}}, false},
		{"success signal with a space", service.Spec{Name: "a", Command: []string{"x"}, SuccessSignals: []string{"SIGUSR1 SIGTERM"}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.spec.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
