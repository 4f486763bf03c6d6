package auto_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/auto"
)

func TestDetect(t *testing.T) {
	sock := filepath.Join(t.TempDir(), ".pebble.socket")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tt := range []struct {
		name    string
		env     map[string]string
		backend service.Backend
		munge   string
	}{
		{"pebble socket", map[string]string{"PEBBLE_SOCKET": sock}, service.Pebble, "munged"},
		{"pebble dir", map[string]string{"PEBBLE": filepath.Dir(sock)}, service.Pebble, "munged"},
		{"no socket", map[string]string{"PEBBLE_SOCKET": sock + ".missing", "PEBBLE": "/nonexistent"}, service.Systemd, "munge"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := auto.Detect(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.backend == service.Systemd && m.Backend == service.Pebble {
				t.Skip("this machine has Pebble's default socket")
			}
			got := []string{m.Backend.String(), munge.ServiceName(m.Backend)}
			if d := cmp.Diff([]string{tt.backend.String(), tt.munge}, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// pebbleServer serves Pebble's services API for one active service, munged, on a socket
// whose path it returns, until the test ends.
func pebbleServer(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "p.socket")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/services", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"type":"sync","status-code":200,"status":"OK","result":[{"name":"munged","startup":"enabled","current":"active"}]}`))
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return sock
}

// TestLazyPebble: the Manager connects on first use and forwards to the Pebble backend (here a
// server answering Pebble's services API for one service).
func TestLazyPebble(t *testing.T) {
	sock := pebbleServer(t)

	m := &auto.Manager{Backend: service.Pebble, Socket: sock}
	defer m.Close()
	st, err := m.Status(context.Background(), "munged")
	if err != nil {
		t.Fatal(err)
	}
	want := service.Status{Name: "munged", State: service.StateActive, Enabled: true}
	if d := cmp.Diff(want, st); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	if _, err := m.Status(context.Background(), "slurmd"); err == nil {
		t.Error("status of an unknown service succeeded")
	}
}

// TestConnectAhead: a connection started ahead serves the first call, and its failure is
// that call's error; Close waits for it.
func TestConnectAhead(t *testing.T) {
	sock := pebbleServer(t)

	ctx := context.Background()
	m := &auto.Manager{Backend: service.Pebble, Socket: sock}
	m.Connect(ctx)
	m.Connect(ctx) // a second call starts nothing more
	st, err := m.Status(ctx, "munged")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != service.StateActive {
		t.Errorf("state %q, want active", st.State)
	}
	m.Close()

	// A connection that cannot be made (no Pebble socket): the first call reports it.
	bad := &auto.Manager{Backend: service.Pebble, Socket: filepath.Join(t.TempDir(), "missing")}
	bad.Connect(ctx)
	if _, err := bad.Status(ctx, "munged"); err == nil {
		t.Error("status through a failed connection succeeded")
	}
	bad.Close()

	// Close alone waits for the connection started ahead.
	unused := &auto.Manager{Backend: service.Pebble, Socket: sock}
	unused.Connect(ctx)
	unused.Close()
}
