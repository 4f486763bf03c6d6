package hosts_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
)

// TestKillAndSFTP: Kill SIGKILLs the host's processes of the names given, and no other
// host's; ServeSFTP answers an SFTP client's INIT with VERSION from another host.
func TestKillAndSFTP(t *testing.T) {
	t.Parallel()
	n := hoststest.New(t)
	a := hoststest.AddHost(t, n, "alpha")
	b := hoststest.AddHost(t, n, "beta")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A program of a name no other process has (every host's PID 1 keeps a sleep running), in each
	// host's private /root.
	for _, h := range []*hosts.Host{a, b} {
		if err := hosts.CopyExecutable("/bin/sleep", h.Path("/root/killme"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sleepA := a.Command(ctx, []string{"/root/killme", "300"})
	sleepB := b.Command(ctx, []string{"/root/killme", "300"})
	for _, c := range []interface{ Start() error }{sleepA, sleepB} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	// nsenter forks the sleep: wait until it runs.
	for _, h := range []*hosts.Host{a, b} {
		eventually(t, h.Name+": killme running", func() (bool, string) {
			out, err := h.Run(ctx, "pgrep", "-x", "killme")
			return err == nil, string(out)
		})
	}
	killed, err := a.Kill("killme")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"killme"}, killed); d != "" {
		t.Errorf("Kill(killme) (-want +got):\n%s", d)
	}
	if err := sleepA.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("alpha's killme ended with %v, want killed", err)
	}
	if out, err := b.Run(ctx, "pgrep", "-x", "killme"); err != nil {
		t.Errorf("beta's killme killed too: %v %s", err, out)
	}
	if _, err := a.Kill("killme", "nosuchdaemon"); err == nil || !strings.Contains(err.Error(), "killme, nosuchdaemon") {
		t.Errorf("Kill of no process: %v, want an error naming both", err)
	}

	srv, err := a.ServeSFTP(ctx, "/var/tmp/share", 7022)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if want := fmt.Sprintf("sftp://%s:7022/var/tmp/share", a.Addr); srv.Endpoint != want {
		t.Errorf("endpoint %q, want %q", srv.Endpoint, want)
	}
	// SSH_FXP_INIT version 3 (length 5, type 1); the answer starts with a length and type 2,
	// SSH_FXP_VERSION.
	var reply string
	eventually(t, "sftp-server answering", func() (bool, string) {
		// No half-close: socat closes a connection whose client shut its writing side down
		// before sftp-server, still starting, answers.
		out, err := b.Run(ctx, "timeout", "5", "bash", "-o", "pipefail", "-c", fmt.Sprintf(`exec 3<>/dev/tcp/%s/7022 && printf '\x00\x00\x00\x05\x01\x00\x00\x00\x03' >&3 && head -c5 <&3 | od -An -tx1`, a.Addr))
		reply = strings.Join(strings.Fields(string(out)), " ")
		return err == nil && len(reply) == len("00 00 00 00 02"), fmt.Sprintf("%q %v", reply, err)
	})
	if !strings.HasSuffix(reply, " 02") {
		t.Errorf("sftp-server answered %q, want SSH_FXP_VERSION (type 2)", reply)
	}
}

// eventually polls cond every 100 ms for up to 30 s (a loaded machine).
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
	}
	t.Fatalf("%s: not within 30s: %s", what, last)
}
