package model_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
	"github.com/charmed-slurm/operators/tests/model"
)

// newMachineModel is newModel (with o's other options) with every unit on a bookworm systemd
// machine.
func newMachineModel(t *testing.T, o modelOptions) *model.Model {
	t.Helper()
	img := hoststest.Image(t, "bookworm")
	o.provIn = func(t *testing.T, dir string) model.Provisioner {
		return &model.BaseMachines{
			Network: hoststest.New(t), Default: model.BaseBookworm,
			Images: map[string]string{model.BaseBookworm: img},
			Binds:  []string{dir, filepath.Dir(toolsBin)},
		}
	}
	return newModel(t, o)
}

// machineUnit deploys alpha with one unit on a bookworm machine and waits until it is idle:
// the model, a context bounding the test, and the boot id of the unit's machine.
func machineUnit(t *testing.T) (*model.Model, context.Context, string) {
	t.Helper()
	m := newMachineModel(t, modelOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	deploy(t, m, "alpha", 1, nil)
	waitIdle(t, m)
	return m, ctx, bootID(t, m, "alpha/0")
}

// bootID is the boot id status shows for unit's machine.
func bootID(t *testing.T, m *model.Model, unit string) string {
	t.Helper()
	st := m.Status(context.Background())
	app, _, _ := strings.Cut(unit, "/")
	id := st.Machines[st.Applications[app].Units[unit].Machine].BootID
	if id == "" {
		t.Fatalf("status shows no boot id for %s's machine", unit)
	}
	return id
}

// TestReboot: a reboot runs no hook as the machine goes down (Juju runs stop only on a unit
// being removed), and start once it has booted with a new boot id (no config-changed: the
// config is unchanged), never remove; a reboot asked for inside the machine (as Slurm's
// RebootProgram does) runs start the same way.
func TestReboot(t *testing.T) {
	t.Parallel()
	m, ctx, first := machineUnit(t)
	before := len(hooks(m)["alpha/0"])

	if err := m.Reboot(ctx, "0"); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, m)
	second := bootID(t, m, "alpha/0")
	if second == first {
		t.Errorf("boot id unchanged by the reboot: %s", first)
	}
	got := names(hooks(m)["alpha/0"][before:])
	if want := []string{"start"}; !slices.Equal(got, want) {
		t.Errorf("hooks around the reboot: %v, want %v", got, want)
	}
	// The machine's uptime is its own, as Slurm's reboot detection needs: it restarted with
	// the boot, well below this machine's.
	var up strings.Builder
	if _, err := m.Exec(ctx, "alpha/0", []string{"cat", "/proc/uptime"}, &up, &up); err != nil {
		t.Fatal(err)
	}
	host, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	if in, out := seconds(t, up.String()), seconds(t, string(host)); in >= out-1 {
		t.Errorf("machine uptime %.0f s after its reboot, this machine's %.0f s", in, out)
	}

	before = len(hooks(m)["alpha/0"])
	var out strings.Builder
	if _, err := m.Exec(ctx, "alpha/0", []string{"systemctl", "reboot"}, &out, &out); err != nil {
		t.Logf("systemctl reboot: %v (%s)", err, out.String())
	}
	for bootID(t, m, "alpha/0") == second {
		select {
		case <-ctx.Done():
			t.Fatalf("no new boot id after systemctl reboot: %v", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	waitIdle(t, m)
	got = names(hooks(m)["alpha/0"][before:])
	if want := []string{"start"}; !slices.Equal(got, want) {
		t.Errorf("hooks after a reboot from inside: %v, want %v", got, want)
	}
	if u := m.Status(ctx).Applications["alpha"].Units["alpha/0"]; u.JujuStatus.Current != "idle" {
		t.Errorf("alpha/0 agent %+v after the reboots, want idle", u.JujuStatus)
	}
}

// TestRebootCutsHook: a hook cut off by its machine's shutdown (a reboot asked inside the
// machine while the hook runs: its process is killed) is not a failed hook: the unit is never
// in error, and the hook runs again first once the machine is back (then start, as after any
// reboot), as Juju 3.6 queues a terminated hook again.
func TestRebootCutsHook(t *testing.T) {
	t.Parallel()
	m, ctx, first := machineUnit(t)
	before := len(hooks(m)["alpha/0"])
	if err := m.SetConfig(ctx, "alpha", map[string]string{"slow-hooks": "config-changed=15s"}, nil); err != nil {
		t.Fatal(err)
	}
	for len(hooks(m)["alpha/0"]) == before {
		select {
		case <-ctx.Done():
			t.Fatal("config-changed did not start")
		case <-time.After(50 * time.Millisecond):
		}
	}
	lines, unsubscribe := m.Subscribe()
	defer unsubscribe()
	var out strings.Builder
	if _, err := m.Exec(ctx, "alpha/0", []string{"systemctl", "reboot"}, &out, &out); err != nil {
		t.Logf("systemctl reboot: %v (%s)", err, out.String())
	}
	// Wait sees the unit busy until it is back and has run what was cut off: no UnitError.
	waitIdle(t, m)
	cutOff := false
	for len(lines) > 0 {
		l := <-lines
		cutOff = cutOff || strings.Contains(l, `hook "config-changed" cut off by the machine's shutdown`)
		if strings.Contains(l, "hook failed") {
			t.Errorf("a hook cut off by the shutdown counted as failed: %s", l)
		}
	}
	if !cutOff {
		t.Errorf("the model did not see config-changed cut off by the shutdown")
	}
	if id := bootID(t, m, "alpha/0"); id == first {
		t.Errorf("boot id unchanged: the machine did not reboot")
	}
	got := names(hooks(m)["alpha/0"][before:])
	if want := []string{"config-changed", "config-changed", "start"}; !slices.Equal(got, want) {
		t.Errorf("hooks around the cut-off config-changed: %v, want %v", got, want)
	}
	if u := m.Status(ctx).Applications["alpha"].Units["alpha/0"]; u.JujuStatus.Current != "idle" {
		t.Errorf("alpha/0 agent %+v after the reboot, want idle", u.JujuStatus)
	}
}

// TestRebootUnderUpdateStatus: no hook starts on a machine that is going down: Juju's agent
// starts none once systemd stops its service (jujud-machine-<id>), as a shutdown begins. The
// machine reboots from inside (systemctl reboot, as Slurm's RebootProgram does) while
// update-status falls due every 100 ms, three times, with a service that takes a second to stop.
// No hook fails, every hook found systemd running (or stopping other units), and in each boot at
// most one hook found the agent's service stopped: the hook in flight when the shutdown reached
// it (it can between the agent's last look and the charm's first, as between jujud's choice of a
// hook and its SIGTERM).
func TestRebootUnderUpdateStatus(t *testing.T) {
	t.Parallel()
	m := newMachineModel(t, modelOptions{updateStatusInterval: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lines, unsubscribe := m.Subscribe()
	var failed []string
	stop, drained := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case l := <-lines:
				if strings.Contains(l, "hook failed") {
					failed = append(failed, l)
				}
				continue
			case <-stop:
			}
			if len(lines) == 0 {
				return
			}
		}
	}()
	deploy(t, m, "alpha", 1, nil)
	// The waits below poll the hooks the charm recorded, not m.Wait: with update-status due
	// every 100 ms, an agent whose hooks take longer than that (on a loaded machine) is never
	// idle, and m.Wait waits for idle.
	waitFor := func(what string, done func() bool) {
		t.Helper()
		for !done() {
			select {
			case <-ctx.Done():
				t.Fatalf("%s: %v", what, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	waitFor("alpha/0's start hook", func() bool { return len(find(hooks(m)["alpha/0"], "start")) > 0 })

	// updateStatusIn waits until update-status has run n times in boot.
	updateStatusIn := func(boot string, n int) {
		t.Helper()
		waitFor(fmt.Sprintf("update-status %d times in boot %s", n, boot), func() bool {
			got := 0
			for _, r := range find(hooks(m)["alpha/0"], "update-status") {
				if r.Boot == boot {
					got++
				}
			}
			return got >= n
		})
	}
	boot := bootID(t, m, "alpha/0")
	for i := range 3 {
		// A workload that takes a second to stop, as slurmd does: the machine is going down
		// for that long before its file systems go.
		var out strings.Builder
		slow := []string{"systemd-run", "--unit=slow-stop", "--property=ExecStop=/bin/sleep 1", "/bin/sleep", "infinity"}
		if code, err := m.Exec(ctx, "alpha/0", slow, &out, &out); err != nil || code != 0 {
			t.Fatalf("%v: exit %d, %v (%s)", slow, code, err, out.String())
		}
		updateStatusIn(boot, 2)
		out.Reset()
		if _, err := m.Exec(ctx, "alpha/0", []string{"systemctl", "reboot"}, &out, &out); err != nil {
			t.Logf("systemctl reboot: %v (%s)", err, out.String())
		}
		for bootID(t, m, "alpha/0") == boot {
			select {
			case <-ctx.Done():
				t.Fatalf("reboot %d: no new boot id after systemctl reboot: %v", i+1, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
		boot = bootID(t, m, "alpha/0")
	}
	updateStatusIn(boot, 2)
	unsubscribe()
	close(stop)
	<-drained

	for _, l := range failed {
		t.Errorf("a hook failed: %s", l)
	}
	// Per boot: the hooks that found the agent's service stopped (the shutdown reached it
	// between the agent's look and the charm's: one at most, the hook in flight), and those that
	// found systemd stopping other units first (as under Juju, whose agent runs on until systemd
	// stops its service).
	late, stopping, perBoot := map[string][]string{}, map[string]int{}, map[string]int{}
	for _, r := range hooks(m)["alpha/0"] {
		perBoot[r.Boot]++
		switch r.System {
		case "running", "degraded":
		case "stopping":
			stopping[r.Boot]++
		default:
			t.Errorf("%s started with systemd %q (boot %s), want running", r.Hook, r.System, r.Boot)
		}
		if r.Agent != "active" {
			late[r.Boot] = append(late[r.Boot], fmt.Sprintf("%s (agent %s, systemd %s)", r.Hook, r.Agent, r.System))
		}
	}
	for b, n := range perBoot {
		t.Logf("boot %s: %d hooks, %d found systemd stopping, %d the agent's service stopped", b, n, stopping[b], len(late[b]))
	}
	for b, hs := range late {
		if len(hs) > 1 {
			t.Errorf("boot %s: %d hooks started once the agent's service had stopped: %v", b, len(hs), hs)
		}
	}
}

// TestRebootRefused: a machine that cannot reboot, an unknown target.
func TestRebootRefused(t *testing.T) {
	m := newModel(t, modelOptions{})
	deploy(t, m, "alpha", 1, nil)
	waitIdle(t, m)
	ctx := context.Background()
	for _, tc := range []struct{ target, want string }{
		{"alpha/0", "cannot reboot"},
		{"7", "no such machine or unit"},
	} {
		err := m.Reboot(ctx, tc.target)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Reboot(%q) = %v, want an error containing %q", tc.target, err, tc.want)
		}
	}
}

// seconds is the first field of /proc/uptime.
func seconds(t *testing.T, uptime string) float64 {
	t.Helper()
	f := strings.Fields(uptime)
	if len(f) == 0 {
		t.Fatalf("bad /proc/uptime %q", uptime)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
