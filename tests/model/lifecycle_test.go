package model_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/model"
)

func TestDeployOrder(t *testing.T) {
	forEachMachines(t, func(t *testing.T, prov func(*testing.T, string) model.Provisioner) {
		m := newModel(t, modelOptions{provIn: prov})
		deploy(t, m, "alpha", 2, nil)
		waitIdle(t, m)
		h := hooks(m)

		// Juju's start-up order; relation-created for the peer relation comes after install.
		want0 := []string{"install", "peer-relation-created", "leader-elected", "config-changed", "start"}
		want1 := []string{"install", "peer-relation-created", "leader-settings-changed", "config-changed", "start"}
		if d := cmp.Diff(want0, names(h["alpha/0"])[:5]); d != "" {
			t.Errorf("alpha/0 start-up hooks (-want +got):\n%s", d)
		}
		if d := cmp.Diff(want1, names(h["alpha/1"])[:5]); d != "" {
			t.Errorf("alpha/1 start-up hooks (-want +got):\n%s", d)
		}
		// Then each peer joins the other, and relation-changed follows the join.
		for unit, remote := range map[string]string{"alpha/0": "alpha/1", "alpha/1": "alpha/0"} {
			rs := h[unit]
			env := map[string]string{"JUJU_REMOTE_UNIT": remote}
			j, c := index(rs, "peer-relation-joined", env), index(rs, "peer-relation-changed", env)
			if j < 5 || c < j {
				t.Errorf("%s: peer-relation-joined at %d, changed at %d for %s; hooks %v", unit, j, c, remote, names(rs))
			}
		}

		st := m.State()
		peer := relationOf(t, m, "alpha", "peer")
		inst := h["alpha/0"][0].Env
		joined := h["alpha/0"][index(h["alpha/0"], "peer-relation-joined", nil)].Env
		got := map[string]string{}
		for _, k := range []string{"JUJU_UNIT_NAME", "JUJU_MODEL_NAME", "JUJU_MODEL_UUID", "JUJU_VERSION", "JUJU_HOOK_NAME", "JUJU_DISPATCH_PATH", "JUJU_MACHINE_ID", "JUJU_RELATION"} {
			got[k] = inst[k]
		}
		for _, k := range []string{"JUJU_RELATION", "JUJU_RELATION_ID", "JUJU_REMOTE_UNIT", "JUJU_REMOTE_APP", "JUJU_HOOK_NAME"} {
			got["joined:"+k] = joined[k]
		}
		want := map[string]string{
			"JUJU_UNIT_NAME": "alpha/0", "JUJU_MODEL_NAME": "test", "JUJU_MODEL_UUID": st.UUID,
			"JUJU_VERSION": model.JujuVersion, "JUJU_HOOK_NAME": "install", "JUJU_DISPATCH_PATH": "hooks/install",
			"JUJU_MACHINE_ID": st.Units["alpha/0"].Machine, "JUJU_RELATION": "",
			"joined:JUJU_RELATION": "peer", "joined:JUJU_RELATION_ID": "peer:" + itoa(peer.ID),
			"joined:JUJU_REMOTE_UNIT": "alpha/1", "joined:JUJU_REMOTE_APP": "alpha",
			"joined:JUJU_HOOK_NAME": "peer-relation-joined",
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("hook environment (-want +got):\n%s", d)
		}
		if !strings.HasSuffix(inst["JUJU_CHARM_DIR"], "/var/lib/juju/agents/unit-alpha-0/charm") {
			t.Errorf("JUJU_CHARM_DIR = %q", inst["JUJU_CHARM_DIR"])
		}
		for _, r := range h["alpha/0"] {
			if r.WD != r.Env["JUJU_CHARM_DIR"] {
				t.Errorf("%s ran in %q, want the charm directory %q", r.Hook, r.WD, r.Env["JUJU_CHARM_DIR"])
			}
		}
		if !strings.HasPrefix(inst["PATH"], strings.TrimSuffix(inst["JUJU_CHARM_DIR"], "agents/unit-alpha-0/charm")+"tools/unit-alpha-0:") {
			t.Errorf("PATH = %q, want the unit's tools dir first", inst["PATH"])
		}
		for _, k := range []string{"JUJU_CONTEXT_ID", "JUJU_AGENT_SOCKET_ADDRESS"} {
			if inst[k] == "" {
				t.Errorf("%s not set", k)
			}
		}
		// Non-leaders cannot write application data; the leader did.
		if d := cmp.Diff(map[string]string{"leader": "alpha/0"}, peer.AppData["alpha"]); d != "" {
			t.Errorf("peer app data (-want +got):\n%s", d)
		}
		if got := peer.UnitData["alpha/1"]["app-write"]; got != "refused" {
			t.Errorf("alpha/1 app-write = %q, want refused", got)
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestIntegrate(t *testing.T) {
	forEachMachines(t, func(t *testing.T, prov func(*testing.T, string) model.Provisioner) {
		m := newModel(t, modelOptions{provIn: prov})
		ctx := context.Background()
		deploy(t, m, "alpha", 1, nil)
		deploy(t, m, "beta", 1, map[string]string{"greeting": "hi"})
		waitIdle(t, m)
		if _, err := m.Integrate(ctx, "alpha:source", "beta:sink"); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		h := hooks(m)
		rel := relationOf(t, m, "beta", "sink")
		rs := h["beta/0"]
		c := index(rs, "sink-relation-created", nil)
		j := index(rs, "sink-relation-joined", map[string]string{"JUJU_REMOTE_UNIT": "alpha/0"})
		ch := index(rs, "sink-relation-changed", map[string]string{"JUJU_REMOTE_UNIT": "alpha/0"})
		if c < 0 || j < c || ch < j {
			t.Errorf("beta/0 relation hooks out of order (created %d, joined %d, changed %d): %v", c, j, ch, names(rs))
		}
		if got := rel.UnitData["beta/0"]["greeting"]; got != "hi" {
			t.Errorf("beta/0 greeting = %q, want hi (config)", got)
		}
		if got := rel.UnitData["beta/0"]["secret-token"]; got != "v1" {
			t.Errorf("beta/0 read secret token %q, want v1 (error %q)", got, rel.UnitData["beta/0"]["secret-error"])
		}

		act, err := m.Run(ctx, "alpha/0", "rotate", map[string]string{"token": "v2"})
		if err != nil || act.Status != "completed" {
			t.Fatalf("rotate: %v %+v", err, act)
		}
		waitIdle(t, m)
		h = hooks(m)
		sc := find(h["beta/0"], "secret-changed")
		if len(sc) != 1 {
			t.Fatalf("beta/0 ran secret-changed %d times, want 1: %v", len(sc), names(h["beta/0"]))
		}
		id := relationOf(t, m, "alpha", "source").AppData["alpha"]["secret-id"]
		if sc[0].Env["JUJU_SECRET_ID"] != id {
			t.Errorf("JUJU_SECRET_ID = %q, want %q", sc[0].Env["JUJU_SECRET_ID"], id)
		}
		if got := relationOf(t, m, "beta", "sink").UnitData["beta/0"]["secret-token"]; got != "v2" {
			t.Errorf("after rotation beta/0 secret token = %q, want v2", got)
		}
		if n := len(find(h["alpha/0"], "secret-changed")); n != 0 {
			t.Errorf("the owner ran secret-changed %d times", n)
		}

		// add-unit: the new unit starts up, joins both relations, and reads the secret (granted
		// to its application); the others see it join.
		if _, err := m.AddUnit(ctx, "beta", 1); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		h = hooks(m)
		nu := h["beta/1"]
		want := []string{"install", "peer-relation-created", "sink-relation-created", "leader-settings-changed", "config-changed", "start"}
		if len(nu) < len(want) {
			t.Fatalf("beta/1 hooks: %v", names(nu))
		}
		if d := cmp.Diff(want, names(nu)[:len(want)]); d != "" {
			t.Errorf("beta/1 start-up hooks (-want +got):\n%s", d)
		}
		for _, c := range []struct{ unit, hook, remote string }{
			{"beta/1", "sink-relation-joined", "alpha/0"},
			{"beta/1", "sink-relation-changed", "alpha/0"},
			{"beta/1", "peer-relation-joined", "beta/0"},
			{"beta/0", "peer-relation-joined", "beta/1"},
			{"alpha/0", "source-relation-joined", "beta/1"},
			{"alpha/0", "source-relation-changed", "beta/1"},
		} {
			if index(h[c.unit], c.hook, map[string]string{"JUJU_REMOTE_UNIT": c.remote}) < 0 {
				t.Errorf("%s did not run %s for %s: %v", c.unit, c.hook, c.remote, names(h[c.unit]))
			}
		}
		if got := relationOf(t, m, "beta", "sink").UnitData["beta/1"]["secret-token"]; got != "v2" {
			t.Errorf("beta/1 secret token = %q, want v2", got)
		}
	})
}

func TestSecrets(t *testing.T) {
	m := newModel(t, modelOptions{})
	ctx := context.Background()
	deploy(t, m, "alpha", 1, map[string]string{"grant-secret": "false"})
	deploy(t, m, "beta", 1, nil)
	deploy(t, m, "gamma", 1, nil)
	if _, err := m.Integrate(ctx, "alpha:source", "beta:sink"); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, m)
	rel := relationOf(t, m, "beta", "sink")
	if got := rel.UnitData["beta/0"]["secret-error"]; !strings.Contains(got, "permission denied") {
		t.Errorf("ungranted secret-get error = %q, want permission denied", got)
	}
	if got := rel.UnitData["beta/0"]["secret-token"]; got != "" {
		t.Errorf("ungranted secret read as %q", got)
	}
	id := rel.AppData["alpha"]["secret-id"]
	// An unrelated application cannot read it either.
	_, stderr, code := runTool(t, m, "gamma/0", "secret-get", id, "--format=json")
	if code != "1" || !strings.Contains(stderr, "permission denied") {
		t.Errorf("gamma secret-get: code %s stderr %q", code, stderr)
	}
	if err := m.SetConfig(ctx, "alpha", map[string]string{"grant-secret": "true"}, nil); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, m)
	rel = relationOf(t, m, "beta", "sink")
	if got := rel.UnitData["beta/0"]["secret-token"]; got != "v1" {
		t.Errorf("after the grant beta/0 read %q (error %q), want v1", got, rel.UnitData["beta/0"]["secret-error"])
	}
	out, _, code := runTool(t, m, "beta/0", "secret-get", id, "--format=json")
	if code != "0" || strings.TrimSpace(out) != `{"token":"v1"}` {
		t.Errorf("granted secret-get: code %s out %q", code, out)
	}
}

func TestHookFailure(t *testing.T) {
	forEachMachines(t, func(t *testing.T, prov func(*testing.T, string) model.Provisioner) {
		// Automatic retries off: the unit stays in error until resolved.
		m := newModel(t, modelOptions{provIn: prov, hookRetry: -1})
		ctx := context.Background()
		deploy(t, m, "alpha", 1, nil)
		waitIdle(t, m)
		// beta/0 installs while alpha/0's leader writes its application data: its first
		// relation hook after created is then the application-level changed (see
		// TestRuleAppChangedFirst).
		deploy(t, m, "beta", 1, map[string]string{"fail-hooks": "sink-relation-changed", "slow-hooks": "install=3s"})
		if _, err := m.Integrate(ctx, "alpha:source", "beta:sink"); err != nil {
			t.Fatal(err)
		}
		err := m.Wait(ctx, model.WaitOptions{})
		var ue *model.UnitError
		if !errors.As(err, &ue) || ue.Unit != "beta/0" || ue.Message != `hook failed: "sink-relation-changed"` {
			t.Fatalf("Wait = %v, want beta/0 in error", err)
		}
		st := m.Status(ctx)
		u := st.Applications["beta"].Units["beta/0"]
		if d := cmp.Diff(model.StatusValue{Current: "error", Message: `hook failed: "sink-relation-changed"`}, model.StatusValue{Current: u.WorkloadStatus.Current, Message: u.WorkloadStatus.Message}); d != "" {
			t.Errorf("workload status (-want +got):\n%s", d)
		}
		rel := relationOf(t, m, "beta", "sink")
		data := rel.UnitData["beta/0"]
		// Juju's first relation hook after created is the application-level changed (alpha's
		// leader has set its application data): it fails, and its writes are discarded.
		if data["failed-write"] != "" || data["last-hook"] != "sink-relation-created" {
			t.Errorf("failed hook's relation writes were kept: %v", data)
		}
		if d := cmp.Diff([]string{"8080/tcp"}, u.OpenPorts); d != "" {
			t.Errorf("failed hook's port was kept (-want +got):\n%s", d)
		}
		// Stop failing, then resolve: the same hook runs again and its writes land.
		if err := m.SetConfig(ctx, "beta", nil, []string{"fail-hooks"}); err != nil {
			t.Fatal(err)
		}
		if err := m.Resolve(ctx, "beta/0", true); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		rs := hooks(m)["beta/0"]
		changed := find(rs, "sink-relation-changed")
		if len(changed) < 2 || changed[0].Env["JUJU_REMOTE_UNIT"] != changed[1].Env["JUJU_REMOTE_UNIT"] {
			t.Errorf("want the failed sink-relation-changed run again: %v", names(rs))
		}
		if got := relationOf(t, m, "beta", "sink").UnitData["beta/0"]["last-hook"]; got != "sink-relation-changed" {
			t.Errorf("after resolve last-hook = %q", got)
		}
		if err := m.Resolve(ctx, "beta/0", true); err == nil {
			t.Errorf("resolving a unit that is not in error succeeded")
		}
	})
}

func TestRemoveUnit(t *testing.T) {
	forEachMachines(t, func(t *testing.T, prov func(*testing.T, string) model.Provisioner) {
		m := newModel(t, modelOptions{provIn: prov})
		ctx := context.Background()
		deploy(t, m, "alpha", 2, nil)
		deploy(t, m, "beta", 1, nil)
		if _, err := m.Integrate(ctx, "alpha", "beta:sink"); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		// Remove the leader: it departs, breaks, stops, is removed; alpha/1 becomes leader.
		if err := m.RemoveUnit(ctx, "alpha/0"); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		h := hooks(m)
		leaver := h["alpha/0"]
		pd := index(leaver, "peer-relation-departed", map[string]string{"JUJU_REMOTE_UNIT": "alpha/1", "JUJU_DEPARTING_UNIT": "alpha/0"})
		sd := index(leaver, "source-relation-departed", map[string]string{"JUJU_REMOTE_UNIT": "beta/0", "JUJU_DEPARTING_UNIT": "alpha/0", "JUJU_REMOTE_APP": "beta"})
		pb, sb := index(leaver, "peer-relation-broken", nil), index(leaver, "source-relation-broken", nil)
		stop, remove := index(leaver, "stop", nil), index(leaver, "remove", nil)
		// Juju runs no relation-broken for a peer relation on a leaving unit.
		if pd < 0 || sd < 0 || pb >= 0 || sb < sd || stop < sb || remove != stop+1 || remove != len(leaver)-1 {
			t.Errorf("leaving unit's hooks: %v", names(leaver))
		}
		if d := index(h["beta/0"], "sink-relation-departed", map[string]string{"JUJU_REMOTE_UNIT": "alpha/0", "JUJU_DEPARTING_UNIT": "alpha/0"}); d < 0 {
			t.Errorf("beta/0 did not see alpha/0 depart: %v", names(h["beta/0"]))
		}
		if index(h["beta/0"], "sink-relation-broken", nil) >= 0 {
			t.Errorf("beta/0 broke its relation although alpha/1 remains")
		}
		stay := h["alpha/1"]
		d := index(stay, "peer-relation-departed", map[string]string{"JUJU_REMOTE_UNIT": "alpha/0", "JUJU_DEPARTING_UNIT": "alpha/0"})
		le := len(stay) - 1 - indexLast(stay, "leader-elected")
		if d < 0 || indexLast(stay, "leader-elected") < 0 || le < 0 {
			t.Errorf("alpha/1 hooks after removal: %v", names(stay))
		}
		st := m.Status(ctx)
		if _, ok := st.Applications["alpha"].Units["alpha/0"]; ok {
			t.Errorf("alpha/0 still in status")
		}
		if !st.Applications["alpha"].Units["alpha/1"].Leader {
			t.Errorf("alpha/1 is not the leader")
		}
		if len(st.Machines) != 2 {
			t.Errorf("machines left: %v", st.Machines)
		}
	})
}

// TestMoveLeader: leadership moved to another unit: it runs leader-elected, the former
// leader resigns (is-leader false from then on) and runs leader-settings-changed after the
// next leader-set; status shows the new leader.
func TestMoveLeader(t *testing.T) {
	forEachMachines(t, func(t *testing.T, prov func(*testing.T, string) model.Provisioner) {
		m := newModel(t, modelOptions{provIn: prov})
		ctx := context.Background()
		deploy(t, m, "alpha", 2, nil)
		waitIdle(t, m)
		before := len(hooks(m)["alpha/1"])
		if err := m.MoveLeader(ctx, "alpha/1"); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		h := hooks(m)
		if i := indexLast(h["alpha/1"], "leader-elected"); i < before {
			t.Errorf("alpha/1 ran no leader-elected after the move: %v", names(h["alpha/1"]))
		}
		if i := indexLast(h["alpha/0"], "leader-elected"); i != index(h["alpha/0"], "leader-elected", nil) {
			t.Errorf("alpha/0 ran leader-elected again: %v", names(h["alpha/0"]))
		}
		st := m.Status(ctx)
		if !st.Applications["alpha"].Units["alpha/1"].Leader || st.Applications["alpha"].Units["alpha/0"].Leader {
			t.Errorf("leaders after the move: alpha/0 %v, alpha/1 %v", st.Applications["alpha"].Units["alpha/0"].Leader, st.Applications["alpha"].Units["alpha/1"].Leader)
		}
		if err := m.MoveLeader(ctx, "alpha/9"); err == nil {
			t.Error("moved leadership to a unit that does not exist")
		}
	})
}

func indexLast(rs []record, hook string) int {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Hook == hook {
			return i
		}
	}
	return -1
}

func TestRemoveApp(t *testing.T) {
	forEachMachines(t, func(t *testing.T, prov func(*testing.T, string) model.Provisioner) {
		m := newModel(t, modelOptions{provIn: prov})
		ctx := context.Background()
		deploy(t, m, "alpha", 2, nil)
		deploy(t, m, "beta", 1, nil)
		if _, err := m.Integrate(ctx, "alpha:source", "beta:sink"); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		if err := m.RemoveApplication(ctx, "alpha"); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		h := hooks(m)
		b := h["beta/0"]
		d0 := index(b, "sink-relation-departed", map[string]string{"JUJU_REMOTE_UNIT": "alpha/0", "JUJU_DEPARTING_UNIT": "alpha/0"})
		d1 := index(b, "sink-relation-departed", map[string]string{"JUJU_REMOTE_UNIT": "alpha/1", "JUJU_DEPARTING_UNIT": "alpha/1"})
		br := index(b, "sink-relation-broken", map[string]string{"JUJU_REMOTE_APP": "alpha"})
		if d0 < 0 || d1 < 0 || br < d0 || br < d1 {
			t.Errorf("beta/0 hooks: %v", names(b))
		}
		for _, u := range []string{"alpha/0", "alpha/1"} {
			rs := h[u]
			if n := len(rs); n < 2 || rs[n-2].Hook != "stop" || rs[n-1].Hook != "remove" {
				t.Errorf("%s hooks: %v", u, names(rs))
			}
		}
		st := m.State()
		if _, ok := st.Applications["alpha"]; ok {
			t.Errorf("alpha still in the model")
		}
		for _, r := range st.Relations {
			if _, ok := st.Applications[r.Endpoints[0].App]; !ok || len(r.Endpoints) > 1 {
				t.Errorf("relation %d left: %+v", r.ID, r.Endpoints)
			}
		}
		if len(st.Secrets) != 0 {
			t.Errorf("secrets of the removed application left: %v", st.Secrets)
		}
		if len(st.Machines) != 1 {
			t.Errorf("machines left: %v", st.Machines)
		}
	})
}

func TestHookRetry(t *testing.T) {
	dir, err := os.MkdirTemp("", "jlm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	m, err := model.New(ctx, model.Options{Dir: dir, Tools: toolsBin, UpdateStatusInterval: time.Hour, HookRetry: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	deploy(t, m, "alpha", 1, map[string]string{"fail-hooks": "install"})
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// Juju retries the failed hook by itself...
	if err := m.Wait(wctx, model.WaitOptions{AllowErrors: true, Until: func(*model.Status) bool {
		return len(find(hooks(m)["alpha/0"], "install")) >= 3
	}}); err != nil {
		t.Fatal(err)
	}
	// ...until it succeeds.
	if err := m.SetConfig(ctx, "alpha", nil, []string{"fail-hooks"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Wait(wctx, model.WaitOptions{AllowErrors: true, Until: model.AllActive}); err != nil {
		t.Fatal(err)
	}
	rs := hooks(m)["alpha/0"]
	if n := len(find(rs, "start")); n != 1 || index(rs, "start", nil) < indexLast(rs, "install") {
		t.Errorf("hooks: %v", names(rs))
	}
}
