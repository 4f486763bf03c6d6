package jujutest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// fakeT records the failures jujutest reports instead of failing the test.
type fakeT struct {
	testing.TB
	errs []string
}

type fatal struct{}

func (f *fakeT) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
	panic(fatal{})
}

// runFake runs the scenario with a fakeT and returns what it reported.
func runFake(t *testing.T, lenient bool, in jujutest.State, ev juju.Event, h juju.Handler) (out jujutest.State, reported []string, err error) {
	t.Helper()
	ft := &fakeT{TB: t}
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(fatal); !ok {
				panic(p)
			}
		}
		reported = ft.errs
	}()
	out, err = jujutest.Scenario{T: ft, Lenient: lenient}.Run(in, ev, h)
	return out, ft.errs, err
}

func controller() jujutest.State {
	return jujutest.State{
		Unit:   "slurmctld/0",
		Leader: true,
		Relations: []jujutest.Relation{{
			ID:            "slurmd:3",
			RemoteApp:     "slurmd",
			RemoteAppData: map[string]string{"partition": "PartitionName=slurmd Nodes=slurmd"},
			RemoteUnits: map[string]map[string]string{
				"slurmd/0": {"node": "slurmd-0"},
				"slurmd/1": {"node": "slurmd-1"},
			},
		}},
	}
}

func TestRelationDataRoundTrip(t *testing.T) {
	t.Parallel()
	var seen struct {
		ids   []juju.RelationID
		units []string
		app   string
		data  map[string]string
		unit  map[string]string
	}
	h := func(ctx context.Context, hc *juju.HookContext) error {
		r := hc.Relations
		var err error
		if seen.ids, err = r.IDs(ctx, "slurmd"); err != nil {
			return err
		}
		id := seen.ids[0]
		if seen.units, err = r.Units(ctx, id); err != nil {
			return err
		}
		if seen.app, err = r.RemoteApp(ctx, id); err != nil {
			return err
		}
		if seen.data, err = r.AppData(ctx, id, seen.app); err != nil {
			return err
		}
		if seen.unit, err = r.UnitData(ctx, id, hc.Event.RemoteUnit); err != nil {
			return err
		}
		if err := r.SetAppData(ctx, id, map[string]string{"controllers": `["10.0.0.1:6817"]`, "cluster": "hpc"}); err != nil {
			return err
		}
		return r.SetUnitData(ctx, id, map[string]string{"hostname": "ctl\n\"0\""})
	}
	in := controller()
	in.Relations[0].LocalAppData = map[string]string{"cluster": "old", "stale": "x"}
	out, err := jujutest.Run(t, in, jujutest.RelationHook(juju.RelationChanged, "slurmd:3", "slurmd/1"), h)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]juju.RelationID{"slurmd:3"}, seen.ids); d != "" {
		t.Errorf("ids (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"slurmd/0", "slurmd/1"}, seen.units); d != "" {
		t.Errorf("units (-want +got):\n%s", d)
	}
	if seen.app != "slurmd" || seen.unit["node"] != "slurmd-1" || seen.data["partition"] == "" {
		t.Errorf("read app %q, unit data %v, app data %v", seen.app, seen.unit, seen.data)
	}
	want := map[string]string{"controllers": `["10.0.0.1:6817"]`, "cluster": "hpc", "stale": "x"}
	if d := cmp.Diff(want, out.Relations[0].LocalAppData); d != "" {
		t.Errorf("app data (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"hostname": "ctl\n\"0\""}, out.Relations[0].LocalUnitData); d != "" {
		t.Errorf("unit data (-want +got):\n%s", d)
	}
	if in.Relations[0].LocalAppData["cluster"] != "old" {
		t.Error("Run modified its input State")
	}

	// An empty value deletes the key.
	del := func(ctx context.Context, hc *juju.HookContext) error {
		return hc.Relations.SetAppData(ctx, "slurmd:3", map[string]string{"stale": ""})
	}
	out, err = jujutest.Run(t, out, jujutest.Hook(juju.UpdateStatus), del)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Relations[0].LocalAppData["stale"]; ok {
		t.Error("empty value did not delete the key")
	}
}

// Each rule a buggy charm can break is caught: the tool fails like Juju's
// and the test fails, unless the scenario is lenient.
func TestRulesAreEnforced(t *testing.T) {
	t.Parallel()
	follower := controller()
	follower.Unit, follower.Leader = "slurmctld/1", false
	owned := jujutest.Secret{ID: "secret:auth", Owner: "slurmctld", Revisions: []map[string]string{{"key": "k1"}}}
	followerWithSecret := follower
	followerWithSecret.Secrets = []jujutest.Secret{owned}
	otherUnits := controller()
	otherUnits.Secrets = []jujutest.Secret{{ID: "secret:mine", Owner: "slurmctld/1", Revisions: []map[string]string{{"key": "k1"}}}}

	tests := []struct {
		name     string
		in       jujutest.State
		ev       juju.Event
		call     func(ctx context.Context, hc *juju.HookContext) error
		wantRule string
		wantTool string
	}{{
		name: "non-leader writes app data",
		in:   follower,
		ev:   jujutest.Hook(juju.ConfigChanged),
		call: func(ctx context.Context, hc *juju.HookContext) error {
			return hc.Relations.SetAppData(ctx, "slurmd:3", map[string]string{"a": "b"})
		},
		wantRule: "only the leader may write its application's databag",
		wantTool: "ERROR cannot write relation settings",
	}, {
		name: "non-leader reads own app data",
		in:   follower,
		ev:   jujutest.Hook(juju.ConfigChanged),
		call: func(ctx context.Context, hc *juju.HookContext) error {
			_, err := hc.Relations.AppData(ctx, "slurmd:3", "slurmctld")
			return err
		},
		wantRule: "only the leader may read its own application's databag",
		wantTool: "ERROR permission denied",
	}, {
		name: "non-leader sets app status",
		in:   follower,
		ev:   jujutest.Hook(juju.UpdateStatus),
		call: func(ctx context.Context, hc *juju.HookContext) error {
			return hc.Status.SetApp(ctx, juju.StatusActive, "")
		},
		wantRule: "only the leader may set the application status",
		wantTool: "ERROR this unit is not the leader",
	}, {
		name: "non-leader reads app status",
		in:   follower,
		ev:   jujutest.Hook(juju.UpdateStatus),
		call: func(ctx context.Context, hc *juju.HookContext) error {
			_, err := hc.Status.App(ctx)
			return err
		},
		wantRule: "only the leader may read the application status",
	}, {
		name: "non-leader creates app secret",
		in:   follower,
		ev:   jujutest.Hook(juju.Install),
		call: func(ctx context.Context, hc *juju.HookContext) error {
			_, err := hc.Secrets.Add(ctx, map[string]string{"key": "x"}, juju.SecretAddOptions{})
			return err
		},
		wantRule: "only the leader may create application-owned secrets",
	}, {
		name: "non-leader changes app secret",
		in:   followerWithSecret,
		ev:   jujutest.Hook(juju.ConfigChanged),
		call: func(ctx context.Context, hc *juju.HookContext) error {
			return hc.Secrets.Set(ctx, "secret:auth", map[string]string{"key": "k2"}, juju.SecretSetOptions{})
		},
		wantRule: "only the owner of secret secret:auth",
		wantTool: "ERROR permission denied",
	}, {
		name: "non-leader grants app secret",
		in:   followerWithSecret,
		ev:   jujutest.Hook(juju.ConfigChanged),
		call: func(ctx context.Context, hc *juju.HookContext) error {
			return hc.Secrets.Grant(ctx, "secret:auth", "slurmd:3", "")
		},
		wantRule: "only the owner of secret secret:auth",
	}, {
		name: "leader removes another unit's secret",
		in:   otherUnits,
		ev:   jujutest.Hook(juju.ConfigChanged),
		call: func(ctx context.Context, hc *juju.HookContext) error {
			return hc.Secrets.Remove(ctx, "secret:mine", 0)
		},
		wantRule: "only the owner of secret secret:mine",
	}, {
		name: "invalid secret key",
		in:   controller(),
		ev:   jujutest.Hook(juju.Install),
		call: func(ctx context.Context, hc *juju.HookContext) error {
			_, err := hc.Secrets.Add(ctx, map[string]string{"Key": "x"}, juju.SecretAddOptions{})
			return err
		},
		wantRule: "secret keys are lowercase",
	}, {
		name: "invalid action-set key",
		in:   controller(),
		ev:   jujutest.ActionEvent("show"),
		call: func(ctx context.Context, hc *juju.HookContext) error {
			return hc.Actions.Set(ctx, map[string]string{"Node_State": "x"})
		},
		wantRule: "action-set keys are lowercase",
		wantTool: `ERROR key "Node_State" must start and end with lowercase alphanumeric`,
	}, {
		name: "action-set key ending in a dash",
		in:   controller(),
		ev:   jujutest.ActionEvent("show"),
		call: func(ctx context.Context, hc *juju.HookContext) error {
			return hc.Actions.Set(ctx, map[string]string{"node.state-": "x"})
		},
		wantRule: "action-set keys are lowercase",
	}, {
		name: "reserved action-set key",
		in:   controller(),
		ev:   jujutest.ActionEvent("show"),
		call: func(ctx context.Context, hc *juju.HookContext) error {
			return hc.Actions.Set(ctx, map[string]string{"stdout": "x"})
		},
		wantRule: "reserved",
	}, {
		name: "action tool in a hook",
		in:   controller(),
		ev:   jujutest.Hook(juju.Start),
		call: func(ctx context.Context, hc *juju.HookContext) error {
			var p map[string]any
			return hc.Actions.Params(ctx, &p)
		},
		wantRule: "action tools work only in actions",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var toolErr error
			h := func(ctx context.Context, hc *juju.HookContext) error {
				toolErr = tc.call(ctx, hc)
				return toolErr
			}
			_, reported, err := runFake(t, false, tc.in, tc.ev, h)
			if err == nil || toolErr == nil {
				t.Fatalf("the broken rule gave no error")
			}
			if len(reported) != 1 || !strings.Contains(reported[0], tc.wantRule) {
				t.Errorf("reported %q, want one failure naming %q", reported, tc.wantRule)
			}
			if tc.wantTool != "" {
				var hte *juju.HookToolError
				if !errors.As(toolErr, &hte) || !strings.HasPrefix(hte.Stderr, tc.wantTool) {
					t.Errorf("tool error %v, want stderr starting %q", toolErr, tc.wantTool)
				}
			}
			// Lenient: the same tool error, no test failure.
			_, reported, err = runFake(t, true, tc.in, tc.ev, h)
			if err == nil || len(reported) != 0 {
				t.Errorf("lenient: error %v, reported %q; want an error and no failure", err, reported)
			}
		})
	}
}

func TestFailingHookDiscardsWrites(t *testing.T) {
	t.Parallel()
	in := controller()
	in.Secrets = []jujutest.Secret{{ID: "secret:auth", Owner: "slurmctld", Revisions: []map[string]string{{"key": "k1"}}}}
	h := func(ctx context.Context, hc *juju.HookContext) error {
		if err := hc.Relations.SetAppData(ctx, "slurmd:3", map[string]string{"controllers": "x"}); err != nil {
			return err
		}
		if err := hc.Relations.SetUnitData(ctx, "slurmd:3", map[string]string{"a": "b"}); err != nil {
			return err
		}
		if _, err := hc.Secrets.Add(ctx, map[string]string{"key": "x"}, juju.SecretAddOptions{Label: "new"}); err != nil {
			return err
		}
		if err := hc.Secrets.Set(ctx, "secret:auth", map[string]string{"key": "k2"}, juju.SecretSetOptions{}); err != nil {
			return err
		}
		if err := hc.Secrets.Grant(ctx, "secret:auth", "slurmd:3", ""); err != nil {
			return err
		}
		if err := hc.Ports.Open(ctx, juju.Port{Number: 6817, Protocol: "tcp"}); err != nil {
			return err
		}
		if err := hc.Status.SetUnit(ctx, juju.StatusBlocked, "bad config"); err != nil {
			return err
		}
		return errors.New("boom")
	}
	out, err := jujutest.Run(t, in, jujutest.Hook(juju.ConfigChanged), h)
	if err == nil || err.Error() != "boom" {
		t.Fatalf("got error %v, want boom", err)
	}
	want := in
	want.Model = "test-model"
	// Status and the log line take effect at once, as under Juju.
	want.UnitStatus = juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "bad config"}
	want.Logs = []jujutest.Log{{Level: juju.LevelError, Message: "hook config-changed failed: boom"}}
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("state after failing hook (-want +got):\n%s", d)
	}

	// The same handler without the error commits everything.
	ok := func(ctx context.Context, hc *juju.HookContext) error {
		if err := h(ctx, hc); err != nil && err.Error() != "boom" {
			return err
		}
		return nil
	}
	out, err = jujutest.Run(t, in, jujutest.Hook(juju.ConfigChanged), ok)
	if err != nil {
		t.Fatal(err)
	}
	if out.Relations[0].LocalAppData["controllers"] != "x" || len(out.Secrets) != 2 || len(out.Ports) != 1 {
		t.Errorf("successful hook did not commit: %+v", out)
	}
	if d := cmp.Diff([]map[string]string{{"key": "k1"}, {"key": "k2"}}, out.Secrets[0].Revisions); d != "" {
		t.Errorf("revisions (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]jujutest.Grant{{Relation: "slurmd:3"}}, out.Secrets[0].Grants); d != "" {
		t.Errorf("grants (-want +got):\n%s", d)
	}
}

// compute is a slurmd unit related to slurmctld, which owns secret:auth.
func compute(grants ...jujutest.Grant) jujutest.State {
	return jujutest.State{
		Unit: "slurmd/1",
		Relations: []jujutest.Relation{{
			ID: "slurmctld:3", RemoteApp: "slurmctld",
			RemoteAppData: map[string]string{"auth_secret_id": "secret:auth"},
			RemoteUnits:   map[string]map[string]string{"slurmctld/0": {}},
		}},
		Secrets: []jujutest.Secret{{
			ID: "secret:auth", Owner: "slurmctld", Label: "",
			Revisions: []map[string]string{{"key": "k1"}, {"key": "k2"}},
			Tracked:   1,
			Grants:    grants,
		}},
	}
}

func TestSecretVisibility(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      jujutest.State
		id      juju.SecretID
		opts    juju.SecretGetOptions
		want    map[string]string
		wantErr string
	}{
		{name: "granted to the application", in: compute(jujutest.Grant{Relation: "slurmd:3"}), id: "secret:auth", want: map[string]string{"key": "k1"}},
		{name: "granted to this unit", in: compute(jujutest.Grant{Relation: "slurmd:3", Unit: "slurmd/1"}), id: "secret:auth", want: map[string]string{"key": "k1"}},
		{name: "granted to another unit", in: compute(jujutest.Grant{Relation: "slurmd:3", Unit: "slurmd/0"}), id: "secret:auth", wantErr: "ERROR permission denied"},
		{name: "not granted", in: compute(), id: "secret:auth", wantErr: "ERROR permission denied"},
		{name: "granted over a relation this unit is not in", in: compute(jujutest.Grant{Relation: "slurmd:9"}), id: "secret:auth", wantErr: "ERROR permission denied"},
		{name: "unknown id", in: compute(jujutest.Grant{Relation: "slurmd:3"}), id: "secret:nope", wantErr: `ERROR secret "nope" not found`},
		{name: "unknown label", in: compute(jujutest.Grant{Relation: "slurmd:3"}), opts: juju.SecretGetOptions{Label: "x"}, wantErr: `ERROR secret "x" not found`},
		{name: "peek", in: compute(jujutest.Grant{Relation: "slurmd:3"}), id: "secret:auth", opts: juju.SecretGetOptions{Peek: true}, want: map[string]string{"key": "k2"}},
		{name: "refresh", in: compute(jujutest.Grant{Relation: "slurmd:3"}), id: "secret:auth", opts: juju.SecretGetOptions{Refresh: true}, want: map[string]string{"key": "k2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got map[string]string
			h := func(ctx context.Context, hc *juju.HookContext) error {
				var err error
				got, err = hc.Secrets.Get(ctx, tc.id, tc.opts)
				return err
			}
			// Not being able to read a secret is not a broken rule: the
			// charm gets Juju's error and must cope.
			_, err := jujutest.Run(t, tc.in, jujutest.Hook(juju.ConfigChanged), h)
			if tc.wantErr != "" {
				var hte *juju.HookToolError
				if !errors.As(err, &hte) || strings.TrimSpace(hte.Stderr) != tc.wantErr {
					t.Fatalf("got error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("content (-want +got):\n%s", d)
			}
		})
	}
}

func TestSecretTracking(t *testing.T) {
	t.Parallel()
	in := compute(jujutest.Grant{Relation: "slurmd:3"})
	in.Secrets[0].Tracked = 0
	read := func(opts juju.SecretGetOptions, got *string) juju.Handler {
		return func(ctx context.Context, hc *juju.HookContext) error {
			c, err := hc.Secrets.Get(ctx, hc.Event.SecretID, opts)
			*got = c["key"]
			return err
		}
	}
	var got string
	// The first read tracks the latest revision.
	out, err := jujutest.Run(t, in, jujutest.SecretHook(juju.SecretChanged, "secret:auth", 0), read(juju.SecretGetOptions{Label: "auth"}, &got))
	if err != nil || got != "k2" || out.Secrets[0].Tracked != 2 || out.Secrets[0].Label != "auth" {
		t.Fatalf("first read: %v, %q, tracked %d, label %q", err, got, out.Secrets[0].Tracked, out.Secrets[0].Label)
	}
	// The owner publishes revision 3; the consumer keeps reading 2 ...
	out.Secrets[0].Revisions = append(out.Secrets[0].Revisions, map[string]string{"key": "k3"})
	ev := jujutest.SecretHook(juju.SecretChanged, "secret:auth", 0)
	if out, err = jujutest.Run(t, out, ev, read(juju.SecretGetOptions{}, &got)); err != nil || got != "k2" {
		t.Fatalf("tracked read: %v, %q", err, got)
	}
	// ... until it refreshes; by label this time.
	if out, err = jujutest.Run(t, out, ev, read(juju.SecretGetOptions{Label: "auth", Refresh: true}, &got)); err != nil || got != "k3" || out.Secrets[0].Tracked != 3 {
		t.Fatalf("refresh: %v, %q, tracked %d", err, got, out.Secrets[0].Tracked)
	}
}

func TestSecretOwnerLifecycle(t *testing.T) {
	t.Parallel()
	var id juju.SecretID
	var info juju.SecretInfo
	var ids []juju.SecretID
	h := func(ctx context.Context, hc *juju.HookContext) error {
		var err error
		id, err = hc.Secrets.Add(ctx, map[string]string{"key": "k1", "keyid": "1"}, juju.SecretAddOptions{Label: "auth", Description: "munge key"})
		if err != nil {
			return err
		}
		if _, err := hc.Secrets.Add(ctx, map[string]string{"key": "k1"}, juju.SecretAddOptions{Label: "auth"}); err == nil {
			return errors.New("a second secret with the same label was accepted")
		}
		if err := hc.Secrets.Grant(ctx, id, "slurmd:3", ""); err != nil {
			return err
		}
		if err := hc.Secrets.Grant(ctx, id, "slurmd:3", "slurmctld/0"); err == nil {
			return errors.New("a grant to a unit of another application was accepted")
		}
		if err := hc.Secrets.Set(ctx, id, map[string]string{"key": "k1", "keyid": "1"}, juju.SecretSetOptions{}); err != nil {
			return err
		}
		if err := hc.Secrets.Set(ctx, id, map[string]string{"key": "k2", "keyid": "2"}, juju.SecretSetOptions{}); err != nil {
			return err
		}
		if info, err = hc.Secrets.InfoByLabel(ctx, "auth"); err != nil {
			return err
		}
		if ids, err = hc.Secrets.IDs(ctx); err != nil {
			return err
		}
		c, err := hc.Secrets.Get(ctx, id, juju.SecretGetOptions{})
		if err != nil {
			return err
		}
		if c["keyid"] != "2" {
			return fmt.Errorf("owner read revision with keyid %q, want the latest", c["keyid"])
		}
		return nil
	}
	out, err := jujutest.Run(t, controller(), jujutest.Hook(juju.LeaderElected), h)
	if err != nil {
		t.Fatal(err)
	}
	wantInfo := juju.SecretInfo{ID: id, Revision: 2, Label: "auth", Owner: juju.OwnerApplication, Description: "munge key",
		Access: []juju.SecretAccess{{Target: "application-slurmd", Scope: "relation-3", Role: "view"}}}
	if d := cmp.Diff(wantInfo, info); d != "" {
		t.Errorf("info (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]juju.SecretID{id}, ids); d != "" {
		t.Errorf("ids (-want +got):\n%s", d)
	}
	wantSecret := jujutest.Secret{ID: id, Owner: "slurmctld", Label: "auth", Description: "munge key",
		Revisions: []map[string]string{{"key": "k1", "keyid": "1"}, {"key": "k2", "keyid": "2"}},
		Grants:    []jujutest.Grant{{Relation: "slurmd:3"}}}
	if d := cmp.Diff([]jujutest.Secret{wantSecret}, out.Secrets); d != "" {
		t.Errorf("secrets (-want +got):\n%s", d)
	}

	// Revoke, remove a revision, then the whole secret.
	h2 := func(ctx context.Context, hc *juju.HookContext) error {
		if err := hc.Secrets.Revoke(ctx, id, "slurmd:3"); err != nil {
			return err
		}
		if err := hc.Secrets.Remove(ctx, id, 1); err != nil {
			return err
		}
		if err := hc.Secrets.Remove(ctx, id, 1); err == nil {
			return errors.New("removing a removed revision was accepted")
		}
		return nil
	}
	out, err = jujutest.Run(t, out, jujutest.Hook(juju.ConfigChanged), h2)
	if err != nil {
		t.Fatal(err)
	}
	wantSecret.Grants = []jujutest.Grant{}
	wantSecret.Revisions[0] = nil
	if d := cmp.Diff([]jujutest.Secret{wantSecret}, out.Secrets, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("secrets (-want +got):\n%s", d)
	}
	out, err = jujutest.Run(t, out, jujutest.Hook(juju.ConfigChanged), func(ctx context.Context, hc *juju.HookContext) error {
		return hc.Secrets.Remove(ctx, id, 0)
	})
	if err != nil || len(out.Secrets) != 0 {
		t.Fatalf("remove: %v, secrets %+v", err, out.Secrets)
	}
}

func TestUnitOwnedSecret(t *testing.T) {
	t.Parallel()
	in := controller()
	in.Leader = false
	h := func(ctx context.Context, hc *juju.HookContext) error {
		id, err := hc.Secrets.Add(ctx, map[string]string{"token": "t"}, juju.SecretAddOptions{Owner: juju.OwnerUnit})
		if err != nil {
			return err
		}
		return hc.Secrets.Set(ctx, id, map[string]string{"token": "t2"}, juju.SecretSetOptions{})
	}
	out, err := jujutest.Run(t, in, jujutest.Hook(juju.Install), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Secrets) != 1 || out.Secrets[0].Owner != "slurmctld/0" || len(out.Secrets[0].Revisions) != 2 {
		t.Errorf("secrets %+v", out.Secrets)
	}
}

func TestAction(t *testing.T) {
	t.Parallel()
	type params struct {
		Parameters string `json:"parameters"`
		Reset      bool   `json:"reset"`
	}
	in := controller()
	in.Action.Params = map[string]any{"parameters": "Weight=10", "reset": true}
	var got params
	h := func(ctx context.Context, hc *juju.HookContext) error {
		if err := hc.Actions.Params(ctx, &got); err != nil {
			return err
		}
		if err := hc.Actions.Log(ctx, "draining"); err != nil {
			return err
		}
		if err := hc.Actions.Set(ctx, map[string]string{"node.weight": "10", "node.state": "idle"}); err != nil {
			return err
		}
		if err := hc.Relations.SetUnitData(ctx, "slurmd:3", map[string]string{"weight": "10"}); err != nil {
			return err
		}
		return errors.New("cannot re-register node")
	}
	out, err := jujutest.Run(t, in, jujutest.ActionEvent("node-config"), h)
	if err == nil {
		t.Fatal("want the handler's error")
	}
	if d := cmp.Diff(params{Parameters: "Weight=10", Reset: true}, got); d != "" {
		t.Errorf("params (-want +got):\n%s", d)
	}
	// Results, logs and the failure survive; relation data does not.
	want := jujutest.ActionState{
		Params:  in.Action.Params,
		Results: map[string]string{"node.weight": "10", "node.state": "idle"},
		Failed:  true, Message: "cannot re-register node",
		Logs: []string{"draining"},
	}
	if d := cmp.Diff(want, out.Action); d != "" {
		t.Errorf("action (-want +got):\n%s", d)
	}
	if out.Relations[0].LocalUnitData != nil {
		t.Errorf("a failed action's relation write was kept: %v", out.Relations[0].LocalUnitData)
	}
}

func TestRouterThroughMain(t *testing.T) {
	t.Parallel()
	r := juju.NewRouter()
	r.Handle(juju.Install, func(ctx context.Context, hc *juju.HookContext) error {
		return hc.Status.SetUnit(ctx, juju.StatusMaintenance, "installing")
	})
	// An unhandled hook is a no-op.
	out, err := jujutest.Run(t, controller(), jujutest.Hook(juju.Start), r.Dispatch)
	if !errors.Is(err, juju.ErrNoHandler) {
		t.Errorf("got %v, want ErrNoHandler", err)
	}
	if d := cmp.Diff([]jujutest.Log{{Level: juju.LevelDebug, Message: `no handler for hook "start"`}}, out.Logs); d != "" {
		t.Errorf("logs (-want +got):\n%s", d)
	}
	// An unhandled action fails.
	out, _ = jujutest.Run(t, controller(), jujutest.ActionEvent("frobnicate"), r.Dispatch)
	if !out.Action.Failed || out.Action.Message != `no handler for action "frobnicate"` {
		t.Errorf("action %+v, want failed", out.Action)
	}
	out, err = jujutest.Run(t, controller(), jujutest.Hook(juju.Install), r.Dispatch)
	if err != nil || out.UnitStatus.Code != juju.StatusMaintenance {
		t.Errorf("install: %v, status %+v", err, out.UnitStatus)
	}
}

func TestRelationDepartedAndBroken(t *testing.T) {
	t.Parallel()
	var listed []string
	var departing string
	h := func(ctx context.Context, hc *juju.HookContext) error {
		var err error
		listed, err = hc.Relations.Units(ctx, hc.Event.Relation)
		if err != nil {
			return err
		}
		departing = hc.Event.DepartingUnit
		// The departing unit's data is still readable during the hook.
		_, err = hc.Relations.UnitData(ctx, hc.Event.Relation, hc.Event.RemoteUnit)
		return err
	}
	out, err := jujutest.Run(t, controller(), jujutest.RelationHook(juju.RelationDeparted, "slurmd:3", "slurmd/1"), h)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"slurmd/0"}, listed); d != "" {
		t.Errorf("relation-list in departed (-want +got):\n%s", d)
	}
	if departing != "slurmd/1" {
		t.Errorf("departing unit %q", departing)
	}
	if _, ok := out.Relations[0].RemoteUnits["slurmd/1"]; ok {
		t.Error("departed unit still in the relation after the hook")
	}
	out, err = jujutest.Run(t, out, jujutest.RelationHook(juju.RelationBroken, "slurmd:3", ""), func(context.Context, *juju.HookContext) error { return nil })
	if err != nil || len(out.Relations) != 0 {
		t.Errorf("broken: %v, relations %+v", err, out.Relations)
	}
}

func TestOtherTools(t *testing.T) {
	t.Parallel()
	type cfg struct {
		Cluster string `json:"cluster-name"`
	}
	in := controller()
	in.Config = map[string]any{"cluster-name": "hpc", "unset": nil}
	in.PrivateAddress = "10.0.0.1"
	in.Ports = []juju.Port{{Number: 6818, Protocol: "tcp"}}
	var (
		c        cfg
		leader   bool
		ingress  string
		private  string
		netInfo  juju.NetworkInfo
		appSt    juju.AppStatus
		unitSt   juju.WorkloadStatus
		openedTo []juju.Port
	)
	h := func(ctx context.Context, hc *juju.HookContext) error {
		var err error
		if err = hc.Config.Decode(ctx, &c); err != nil {
			return err
		}
		if leader, err = hc.Leadership.IsLeader(ctx); err != nil {
			return err
		}
		if ingress, err = hc.Network.IngressAddress(ctx, "slurmd"); err != nil {
			return err
		}
		if private, err = hc.Network.PrivateAddress(ctx); err != nil {
			return err
		}
		if netInfo, err = hc.Network.Get(ctx, "slurmd"); err != nil {
			return err
		}
		if err = hc.Ports.Open(ctx, juju.Port{Number: 6817, Protocol: "tcp"}); err != nil {
			return err
		}
		if err = hc.Ports.Close(ctx, juju.Port{Number: 6818, Protocol: "tcp"}); err != nil {
			return err
		}
		if openedTo, err = hc.Ports.Opened(ctx); err != nil {
			return err
		}
		if err = hc.Status.SetUnit(ctx, juju.StatusActive, "-ready"); err != nil {
			return err
		}
		if err = hc.Status.SetApp(ctx, juju.StatusWaiting, "2 nodes"); err != nil {
			return err
		}
		if unitSt, err = hc.Status.Unit(ctx); err != nil {
			return err
		}
		if appSt, err = hc.Status.App(ctx); err != nil {
			return err
		}
		return hc.Log.Log(ctx, juju.LevelInfo, "-x")
	}
	out, err := jujutest.Run(t, in, jujutest.Hook(juju.ConfigChanged), h)
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster != "hpc" || !leader || ingress != "10.0.0.1" || private != "10.0.0.1" || netInfo.IngressAddresses[0] != "10.0.0.1" {
		t.Errorf("config %+v, leader %v, ingress %q, private %q, network %+v", c, leader, ingress, private, netInfo)
	}
	if d := cmp.Diff([]juju.Port{{Number: 6817, Protocol: "tcp"}}, openedTo); d != "" {
		t.Errorf("opened ports (-want +got):\n%s", d)
	}
	wantUnit := juju.WorkloadStatus{Code: juju.StatusActive, Message: "-ready", Data: map[string]any{}}
	if d := cmp.Diff(wantUnit, unitSt); d != "" {
		t.Errorf("unit status (-want +got):\n%s", d)
	}
	wantApp := juju.AppStatus{WorkloadStatus: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "2 nodes", Data: map[string]any{}},
		Units: map[string]juju.WorkloadStatus{"slurmctld/0": wantUnit}}
	if d := cmp.Diff(wantApp, appSt); d != "" {
		t.Errorf("app status (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]jujutest.Log{{Level: juju.LevelInfo, Message: "-x"}}, out.Logs); d != "" {
		t.Errorf("logs (-want +got):\n%s", d)
	}
	if out.UnitStatus.Message != "-ready" || out.AppStatus.Code != juju.StatusWaiting {
		t.Errorf("statuses %+v %+v", out.UnitStatus, out.AppStatus)
	}
}

func TestBadStateOrEventFailsTheTest(t *testing.T) {
	t.Parallel()
	nop := func(context.Context, *juju.HookContext) error { return nil }
	tests := []struct {
		name string
		in   jujutest.State
		ev   juju.Event
		want string
	}{
		{"no unit", jujutest.State{}, jujutest.Hook(juju.Install), "State.Unit"},
		{"bad relation id", jujutest.State{Unit: "a/0", Relations: []jujutest.Relation{{ID: "x", RemoteApp: "b"}}}, jujutest.Hook(juju.Install), "invalid relation id"},
		{"foreign remote unit", jujutest.State{Unit: "a/0", Relations: []jujutest.Relation{{ID: "x:1", RemoteApp: "b", RemoteUnits: map[string]map[string]string{"c/0": nil}}}}, jujutest.Hook(juju.Install), "not a unit of b"},
		{"secret without revisions", jujutest.State{Unit: "a/0", Secrets: []jujutest.Secret{{ID: "secret:x", Owner: "a"}}}, jujutest.Hook(juju.Install), "no revisions"},
		{"event on a missing relation", controller(), jujutest.RelationHook(juju.RelationJoined, "slurmd:4", "slurmd/0"), "not in the State"},
		{"secret-remove without revision", controller(), jujutest.SecretHook(juju.SecretRemove, "secret:x", 0), "JUJU_SECRET_REVISION"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, reported, _ := runFake(t, false, tc.in, tc.ev, nop)
			if len(reported) != 1 || !strings.Contains(reported[0], tc.want) {
				t.Errorf("reported %q, want a failure naming %q", reported, tc.want)
			}
		})
	}
}

// A tool jujutest does not model fails the test even when lenient: the
// test would otherwise prove nothing.
func TestUnmodelledTool(t *testing.T) {
	t.Parallel()
	h := func(ctx context.Context, hc *juju.HookContext) error {
		_, err := hc.Runner.Run(ctx, juju.Command{Args: []string{"goal-state", "--format=json"}})
		return err
	}
	for _, lenient := range []bool{false, true} {
		_, reported, err := runFake(t, lenient, controller(), jujutest.Hook(juju.Start), h)
		if err == nil || len(reported) != 1 || !strings.Contains(reported[0], "is not modelled") {
			t.Errorf("lenient=%v: error %v, reported %q", lenient, err, reported)
		}
	}
}

func TestToolUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"relation-get", "--bogus"}, "ERROR option provided but not defined: --bogus"},
		{[]string{"relation-get", "-r"}, "ERROR option needs an argument: -r"},
		{[]string{"relation-get", "-r", "slurmd:9", "-", "slurmd/0", "--format=json"}, `ERROR invalid value "slurmd:9" for option -r: relation not found`},
		{[]string{"relation-get", "-r", "other:3", "-", "slurmd/0", "--format=json"}, `ERROR invalid value "other:3" for option -r: relation not found`},
		{[]string{"relation-get", "-r", "3", "-", "slurmd/7", "--format=json"}, `ERROR cannot read settings for unit "slurmd/7"`},
		{[]string{"relation-set", "-r", "3", "novalue"}, `ERROR expected "key=value", got "novalue"`},
		{[]string{"relation-set", "-r", "3", "--file", "-"}, "ERROR jujutest reads relation-set settings files as JSON"},
		{[]string{"is-leader"}, "ERROR jujutest models only --format=json output of is-leader"},
		{[]string{"juju-log", "-l", "LOUD", "x"}, `ERROR invalid log level "LOUD"`},
		{[]string{"juju-log"}, "ERROR no message specified"},
		{[]string{"status-set", "error", "x"}, `ERROR invalid status "error"`},
		{[]string{"open-port", "0/tcp"}, `ERROR invalid port "0/tcp"`},
		{[]string{"secret-get", "--format=json"}, "ERROR require either a secret URI or label"},
		{[]string{"network-get", "--format=json"}, "ERROR no endpoint specified"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.argv, " "), func(t *testing.T) {
			t.Parallel()
			var res juju.Result
			h := func(ctx context.Context, hc *juju.HookContext) error {
				var err error
				res, err = hc.Runner.Run(ctx, juju.Command{Args: tc.argv})
				return err
			}
			if _, _, err := runFake(t, true, controller(), jujutest.Hook(juju.Start), h); err != nil {
				t.Fatal(err)
			}
			if res.ExitCode == 0 || !strings.HasPrefix(string(res.Stderr), tc.want) {
				t.Errorf("exit %d, stderr %q; want failure starting %q", res.ExitCode, res.Stderr, tc.want)
			}
		})
	}
}

// TestPeerAppDataReadByEveryUnit: in a peer relation a unit that is not the leader reads the
// application's bag (Juju's relation-get and the local model allow it); outside peer relations
// it may not read its own application's bag.
func TestPeerAppDataReadByEveryUnit(t *testing.T) {
	in := jujutest.State{
		Unit: "slurmctld/1",
		Relations: []jujutest.Relation{
			{ID: "peers:0", RemoteApp: "slurmctld", LocalAppData: map[string]string{"k": "v"}},
			{ID: "slurmd:3", RemoteApp: "slurmd", LocalAppData: map[string]string{"k": "v"}},
		},
	}
	var got map[string]string
	_, reported, err := runFake(t, false, in, jujutest.Hook(juju.UpdateStatus), func(ctx context.Context, hc *juju.HookContext) error {
		var err error
		got, err = hc.Relations.AppData(ctx, "peers:0", "slurmctld")
		return err
	})
	if err != nil || len(reported) != 0 || got["k"] != "v" {
		t.Errorf("peer app data: %v, %v (reported %v)", got, err, reported)
	}
	_, reported, _ = runFake(t, false, in, jujutest.Hook(juju.UpdateStatus), func(ctx context.Context, hc *juju.HookContext) error {
		_, err := hc.Relations.AppData(ctx, "slurmd:3", "slurmctld")
		return err
	})
	if len(reported) == 0 {
		t.Error("a non-leader read its own application's bag in a non-peer relation unreported")
	}
}
