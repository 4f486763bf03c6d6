package machines_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
)

// TestSystemdBackend runs libs/service/systemd's Real tests (real D-Bus, real unit files and
// drop-ins, real munged; no daemon-reload where none is needed) inside a booted machine of each
// image: Debian 12 (systemd 252), Debian 13 (systemd 257) and Debian 14 (systemd 262).
func TestSystemdBackend(t *testing.T) {
	_, data := testBinary(t, "./libs/service/systemd")
	for _, suite := range hoststest.Suites {
		t.Run(suite, func(t *testing.T) {
			t.Parallel()
			n := hoststest.New(t)
			m := hoststest.AddMachine(t, n, "sd", suite)
			if err := hosts.WriteExecutable(m.Path("/root/systemd.test"), data, 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := m.Command(ctx, []string{"/root/systemd.test", "-test.run=^TestReal", "-test.v", "-test.count=1"})
			cmd.Env = append(cmd.Env, "SYSTEMD_REAL_TEST=1")
			out, err := cmd.CombinedOutput()
			t.Logf("on %s:\n%s", suite, out)
			if err != nil {
				// What systemd itself says of the units the tests drove, before the machine goes.
				diag, _ := m.Run(ctx, "sh", "-c", "systemctl --no-pager status slurmd.service munge.service; journalctl --no-pager -n 60 -o short-precise")
				t.Logf("systemd on %s after the failure:\n%s", suite, diag)
				t.Fatalf("the real systemd tests failed on %s: %v", suite, err)
			}
			for _, name := range []string{"TestRealLifecycle", "TestRealNoReload", "TestRealSuccessSignals"} {
				if strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), "--- PASS: "+name+" ") {
					t.Fatalf("the real systemd tests did not all run on %s (%s)", suite, name)
				}
			}
		})
	}
}
