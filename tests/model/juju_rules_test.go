package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/model"
)

// The tests of this file check, one rule each, the Juju 3.6 behaviours listed in
// docs/fidelity.md. They run on local machines: the rules are the model's, not the hosts'.

func localModel(t *testing.T) *model.Model {
	return newModel(t, modelOptions{})
}

// waitFor waits until cond holds on the model's hooks (errors allowed); the bound only keeps a
// broken model from hanging.
func waitFor(t *testing.T, m *model.Model, what string, cond func(h map[string][]record) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := m.Wait(ctx, model.WaitOptions{AllowErrors: true, Until: func(*model.Status) bool { return cond(hooks(m)) }})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// Juju runs relation-changed for a remote unit right after that unit's relation-joined
// (worker/uniter/relation/resolver.go: ChangedPending).
func TestRuleJoinedThenChanged(t *testing.T) {
	m := localModel(t)
	deploy(t, m, "alpha", 3, nil)
	deploy(t, m, "beta", 2, nil)
	if _, err := m.Integrate(context.Background(), "alpha:source", "beta:sink"); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, m)
	pairs := 0
	for unit, rs := range hooks(m) {
		for i, r := range rs {
			if !strings.HasSuffix(r.Hook, "-relation-joined") {
				continue
			}
			ep := strings.TrimSuffix(r.Hook, "-relation-joined")
			if i+1 >= len(rs) || rs[i+1].Hook != ep+"-relation-changed" ||
				rs[i+1].Env["JUJU_REMOTE_UNIT"] != r.Env["JUJU_REMOTE_UNIT"] || rs[i+1].Env["JUJU_RELATION_ID"] != r.Env["JUJU_RELATION_ID"] {
				t.Errorf("%s: %s of %s not followed by its relation-changed: %v", unit, r.Hook, r.Env["JUJU_REMOTE_UNIT"], names(rs))
				continue
			}
			pairs++
		}
	}
	// alpha: 3×2 peer joins and 3×2 joins of beta units; beta: 2×1 peer joins, 2×3 alpha joins.
	if pairs != 6+6+2+6 {
		t.Errorf("%d joined/changed pairs, want 20", pairs)
	}
}

// When the remote application's databag has data, Juju runs the application-level
// relation-changed (JUJU_REMOTE_UNIT empty) before any unit joins ("trigger all app hooks
// first"), so relation-list may be empty in a unit's first relation hook.
//
// Which a unit sees first, the other side's application data or its units, is a race in Juju
// (a unit enters the relation's scope as its agent first sees the relation, before its
// relation-created): here beta/0 is still installing when the relation is made, so alpha/0's
// leader has written its application data by the time beta/0 sees the relation.
func TestRuleAppChangedFirst(t *testing.T) {
	m := localModel(t)
	deploy(t, m, "alpha", 1, nil)
	waitIdle(t, m)
	deploy(t, m, "beta", 1, map[string]string{"slow-hooks": "install=3s"})
	if _, err := m.Integrate(context.Background(), "alpha:source", "beta:sink"); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, m)
	var got []string
	for _, r := range hooks(m)["beta/0"] {
		if strings.HasPrefix(r.Hook, "sink-") {
			remote, ok := r.Env["JUJU_REMOTE_UNIT"]
			if !ok {
				remote = "(unset)"
			}
			got = append(got, fmt.Sprintf("%s remote=%q members=%s", r.Hook, remote, r.Members))
		}
	}
	want := []string{
		`sink-relation-created remote="" members=[]`,
		`sink-relation-changed remote="" members=[]`,
		`sink-relation-joined remote="alpha/0" members=["alpha/0"]`,
		`sink-relation-changed remote="alpha/0" members=["alpha/0"]`,
	}
	if len(got) > len(want) {
		got = got[:len(want)] // alpha/0 writes its unit data again later: more changed hooks
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("beta/0 relation hooks (-want +got):\n%s", d)
	}
}

// Juju enforces an endpoint's limit when relating (state/relation.go: "would exceed its
// maximum relation limit of 1").
func TestRuleRelationLimit(t *testing.T) {
	m := localModel(t)
	ctx := context.Background()
	deploy(t, m, "alpha", 1, nil)
	deploy(t, m, "gamma", 1, nil)
	deploy(t, m, "beta", 1, nil)
	if _, err := m.Integrate(ctx, "beta:controller", "alpha:controlled"); err != nil {
		t.Fatal(err)
	}
	_, err := m.Integrate(ctx, "beta:controller", "gamma:controlled")
	if !errors.Is(err, model.ErrQuotaLimitExceeded) || !strings.Contains(err.Error(), "establishing a new relation for beta:controller would exceed its maximum relation limit of 1") {
		t.Errorf("second controller: err = %v, want the limit refused", err)
	}
	// The provider side has no limit: gamma may serve another requirer.
	deploy(t, m, "delta", 1, nil)
	if _, err := m.Integrate(ctx, "delta:controller", "alpha:controlled"); err != nil {
		t.Errorf("second requirer of alpha: %v", err)
	}
}

// Failed hooks are retried automatically by default, first after 5 s (model config
// automatically-retry-hooks; retry strategy 5 s doubling to 5 min).
func TestRuleHookRetryByDefault(t *testing.T) {
	m := localModel(t) // HookRetry zero: Juju's default
	deploy(t, m, "alpha", 1, map[string]string{"fail-hooks": "install"})
	waitFor(t, m, "install retried", func(h map[string][]record) bool { return len(find(h["alpha/0"], "install")) >= 2 })
	if err := m.SetConfig(context.Background(), "alpha", nil, []string{"fail-hooks"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, "start", func(h map[string][]record) bool { return index(h["alpha/0"], "start", nil) >= 0 })
}

// relation-ids keeps listing a dying relation until the unit's relation-broken, in which the
// relation is broken and left out (runner/context RelationIds; the referee found the model
// listing it there).
func TestRuleRelationIDsDying(t *testing.T) {
	m := localModel(t)
	ctx := context.Background()
	deploy(t, m, "alpha", 1, nil)
	deploy(t, m, "beta", 1, nil)
	id, err := m.Integrate(ctx, "alpha:source", "beta:sink")
	if err != nil {
		t.Fatal(err)
	}
	waitIdle(t, m)
	if err := m.RemoveRelation(ctx, "alpha", "beta"); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, m)
	rs := hooks(m)["beta/0"]
	for hook, want := range map[string]string{"sink-relation-departed": fmt.Sprintf(`["sink:%d"]`, id), "sink-relation-broken": "[]"} {
		i := index(rs, hook, nil)
		if i < 0 || rs[i].IDs != want {
			t.Errorf("%s: relation-ids printed %q, want %s (hooks %v)", hook, rs[max(i, 0)].IDs, want, names(rs))
		}
	}
	if out, _, _ := runTool(t, m, "beta/0", "relation-ids", "sink", "--format=json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("after relation-broken, relation-ids = %s, want []", out)
	}
}

// juju refresh runs upgrade-charm, then config-changed, on every unit.
func TestRuleRefresh(t *testing.T) {
	m := localModel(t)
	ctx := context.Background()
	deploy(t, m, "alpha", 2, nil)
	waitIdle(t, m)
	before := hooks(m)
	if err := m.Refresh(ctx, "alpha", charmDir); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, m)
	// Juju's uniter restarts its resolver loop with a new remote state watcher once the new
	// charm is deployed: the unit that does not lead runs leader-settings-changed again.
	for u, want := range map[string][]string{
		"alpha/0": {"upgrade-charm", "config-changed"},
		"alpha/1": {"upgrade-charm", "config-changed", "leader-settings-changed"},
	} {
		if got := names(hooks(m)[u][len(before[u]):]); !slices.Equal(got, want) {
			t.Errorf("%s after the refresh: %v, want %v", u, got, want)
		}
	}
	if err := m.Refresh(ctx, "nosuch", charmDir); err == nil {
		t.Errorf("refreshing a missing application succeeded")
	}
}

// After the leader's leader-set, the other units run leader-settings-changed; the leader does
// not.
func TestRuleLeaderSettingsChanged(t *testing.T) {
	m := localModel(t)
	deploy(t, m, "alpha", 2, nil)
	waitIdle(t, m)
	before := hooks(m)
	if _, _, code := runTool(t, m, "alpha/0", "leader-set", "colour=blue"); code != "0" {
		t.Fatalf("leader-set exit %s", code)
	}
	waitIdle(t, m)
	after := hooks(m)
	count := func(h map[string][]record, u string) int { return len(find(h[u], "leader-settings-changed")) }
	if got := count(after, "alpha/1") - count(before, "alpha/1"); got != 1 {
		t.Errorf("alpha/1 ran leader-settings-changed %d times after leader-set, want 1", got)
	}
	if got := count(after, "alpha/0"); got != 0 {
		t.Errorf("the leader ran leader-settings-changed %d times", got)
	}
	if out, _, _ := runTool(t, m, "alpha/1", "leader-get", "colour"); strings.TrimSpace(out) != "blue" {
		t.Errorf("alpha/1 leader-get colour = %q", out)
	}
}

// The owner of a secret gets secret-remove for a revision no consumer tracks any more, and
// secret-expired when a revision expires (JUJU_SECRET_ID, JUJU_SECRET_LABEL and
// JUJU_SECRET_REVISION set).
func TestRuleSecretOwnerHooks(t *testing.T) {
	m := localModel(t)
	ctx := context.Background()
	deploy(t, m, "alpha", 1, nil)
	deploy(t, m, "beta", 1, nil)
	if _, err := m.Integrate(ctx, "alpha:source", "beta:sink"); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, m)
	act, err := m.Run(ctx, "alpha/0", "rotate", map[string]string{"token": "v2"})
	if err != nil || act.Status != "completed" {
		t.Fatalf("rotate: %v %+v", err, act)
	}
	waitFor(t, m, "secret-remove", func(h map[string][]record) bool { return index(h["alpha/0"], "secret-remove", nil) >= 0 })
	waitIdle(t, m)
	rs := hooks(m)["alpha/0"]
	r := rs[index(rs, "secret-remove", nil)]
	var id string
	for sid, sec := range m.State().Secrets {
		if sec.Label == "shared" {
			id = sid
			if len(sec.Revisions) != 1 || sec.Revisions[0].Revision != 2 {
				t.Errorf("revisions left after secret-remove: %+v", sec.Revisions)
			}
		}
	}
	got := map[string]string{"id": r.Env["JUJU_SECRET_ID"], "label": r.Env["JUJU_SECRET_LABEL"], "rev": r.Env["JUJU_SECRET_REVISION"]}
	if d := cmp.Diff(map[string]string{"id": id, "label": "shared", "rev": "1"}, got); d != "" {
		t.Errorf("secret-remove environment (-want +got):\n%s", d)
	}

	out, stderr, code := runTool(t, m, "alpha/0", "secret-add", "--owner", "unit", "--label", "brief", "--expire", "1s", "key=value")
	if code != "0" {
		t.Fatalf("secret-add --expire: exit %s: %s", code, stderr)
	}
	waitFor(t, m, "secret-expired", func(h map[string][]record) bool { return index(h["alpha/0"], "secret-expired", nil) >= 0 })
	rs = hooks(m)["alpha/0"]
	r = rs[index(rs, "secret-expired", nil)]
	if r.Env["JUJU_SECRET_ID"] != strings.TrimSpace(out) || r.Env["JUJU_SECRET_REVISION"] != "1" || r.Env["JUJU_SECRET_LABEL"] != "brief" {
		t.Errorf("secret-expired environment: %v", r.Env)
	}
}

// Juju exports the common variables even when empty, JUJU_REMOTE_UNIT empty on
// application-level and broken relation hooks, and JUJU_ACTION_TAG for actions.
func TestRuleHookEnvironment(t *testing.T) {
	m := localModel(t)
	ctx := context.Background()
	deploy(t, m, "alpha", 1, nil)
	waitIdle(t, m)
	act, err := m.Run(ctx, "alpha/0", "echo", map[string]string{"message": "x"})
	if err != nil {
		t.Fatal(err)
	}
	rs := hooks(m)["alpha/0"]
	inst := rs[index(rs, "install", nil)].Env
	for _, k := range []string{"JUJU_AVAILABILITY_ZONE", "JUJU_PRINCIPAL_UNIT", "JUJU_API_ADDRESSES", "JUJU_CHARM_HTTP_PROXY", "JUJU_CHARM_HTTPS_PROXY", "JUJU_CHARM_FTP_PROXY", "JUJU_CHARM_NO_PROXY"} {
		if v, ok := inst[k]; !ok || v != "" {
			t.Errorf("install: %s = %q (set %v), want exported empty", k, v, ok)
		}
	}
	for _, k := range []string{"JUJU_RELATION", "JUJU_REMOTE_UNIT", "JUJU_ACTION_NAME", "JUJU_SECRET_ID"} {
		if _, ok := inst[k]; ok {
			t.Errorf("install: %s is set", k)
		}
	}
	echo := rs[index(rs, "echo", nil)].Env
	got := map[string]string{"tag": echo["JUJU_ACTION_TAG"], "uuid": echo["JUJU_ACTION_UUID"], "name": echo["JUJU_ACTION_NAME"]}
	if d := cmp.Diff(map[string]string{"tag": "action-" + act.ID, "uuid": act.ID, "name": "echo"}, got); d != "" {
		t.Errorf("action environment (-want +got):\n%s", d)
	}
	if v, ok := echo["JUJU_HOOK_NAME"]; !ok || v != "" {
		t.Errorf("action: JUJU_HOOK_NAME = %q (set %v), want exported empty", v, ok)
	}
}

// juju run parses each value as YAML and validates the parameters against the action's JSON
// schema before queuing (required, enum, types, additionalProperties), then inserts defaults.
func TestRuleActionSchema(t *testing.T) {
	m := localModel(t)
	ctx := context.Background()
	deploy(t, m, "alpha", 1, nil)
	waitIdle(t, m)
	for _, tt := range []struct {
		name   string
		params map[string]string
		want   string // the params the action saw, as JSON, or the error
	}{
		{"typed", map[string]string{"level": "high", "count": "3", "flag": "true"}, `{"count":3,"flag":true,"level":"high","text":"none"}`},
		{"yaml 1.1 boolean", map[string]string{"level": "low", "flag": "yes"}, `{"flag":true,"level":"low","text":"none"}`},
		{"quoted number stays a string", map[string]string{"level": "low", "text": `"10"`}, `{"level":"low","text":"10"}`},
		{"empty value is a string", map[string]string{"level": "low", "text": ""}, `{"level":"low","text":""}`},
		{"nested key", map[string]string{"level": "low", "opts.depth": "2"}, `{"level":"low","opts":{"depth":2},"text":"none"}`},
		{"integer for a string", map[string]string{"level": "low", "text": "10"}, `(root).text : must be of type string, given 10`},
		{"not in enum", map[string]string{"level": "mid"}, `(root).level : must match one of the enum values ["low","high"], given "mid"`},
		{"below minimum", map[string]string{"level": "low", "count": "-1"}, `(root).count : must be greater than or equal to 0`},
		{"string for an integer", map[string]string{"level": "low", "count": "three"}, `(root).count : must be of type integer, given "three"`},
		{"missing required", map[string]string{"count": "1"}, `"level" property is missing and required`},
		{"additional property", map[string]string{"level": "low", "colour": "red"}, `additional property "colour" is not allowed`},
		{"nested additional property", map[string]string{"level": "low", "opts.width": "1"}, `(root).opts : additional property "width" is not allowed`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			act, err := m.Run(ctx, "alpha/0", "typed", tt.params)
			if strings.HasPrefix(tt.want, "{") {
				if err != nil || act.Status != "completed" {
					t.Fatalf("typed %v: %v %+v", tt.params, err, act)
				}
				var got, want any
				json.Unmarshal([]byte(fmt.Sprint(act.Results["params"])), &got)
				json.Unmarshal([]byte(tt.want), &want)
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("params (-want +got):\n%s", d)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "validation failed: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("typed %v: err = %v, want %q", tt.params, err, tt.want)
			}
		})
	}
}

// A unit in error still runs actions, as under Juju.
func TestRuleActionsRunInError(t *testing.T) {
	m := newModel(t, modelOptions{hookRetry: -1})
	deploy(t, m, "alpha", 1, nil)
	waitIdle(t, m)
	if err := m.SetConfig(context.Background(), "alpha", map[string]string{"fail-hooks": "config-changed"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, "config-changed failure", func(map[string][]record) bool {
		return m.State().Units["alpha/0"].Failed != nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	act, err := m.Run(ctx, "alpha/0", "echo", map[string]string{"message": "in error"})
	if err != nil || act.Status != "completed" {
		t.Errorf("action on a unit in error: %v %+v", err, act)
	}
}

// juju integrate matches a provider with a requirer of the same interface, and refuses an
// ambiguous pair, a relation of an application with itself and an existing relation.
func TestRuleIntegrateMatching(t *testing.T) {
	m := localModel(t)
	ctx := context.Background()
	deploy(t, m, "alpha", 1, nil)
	deploy(t, m, "beta", 1, nil)
	for _, tt := range []struct{ a, b, err string }{
		{"alpha", "beta", "ambiguous relation"},
		{"alpha:source", "alpha:sink", "cannot be related to itself"},
		{"alpha:source", "beta:controller", "no relations found"},
		{"alpha:nosuch", "beta", `has no endpoint "nosuch"`},
	} {
		if _, err := m.Integrate(ctx, tt.a, tt.b); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("integrate %s %s: err = %v, want %q", tt.a, tt.b, err, tt.err)
		}
	}
	if _, err := m.Integrate(ctx, "beta:sink", "alpha"); err != nil {
		t.Fatalf("integrate by interface: %v", err)
	}
	if _, err := m.Integrate(ctx, "alpha:source", "beta:sink"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second identical relation: err = %v", err)
	}
}

// Juju sets no timeout on a hook: it runs until it exits (worker/uniter/runner/runner.go runs
// the hook process with no deadline; only the machine lock waits). A config-changed that takes
// longer than a minute (longer than any bound the model keeps elsewhere) completes and is not
// retried.
func TestRuleNoHookTimeout(t *testing.T) {
	t.Parallel()
	m := newModel(t, modelOptions{hookRetry: -1})
	deploy(t, m, "alpha", 1, nil)
	waitIdle(t, m)
	const slow = 61 * time.Second
	if err := m.SetConfig(context.Background(), "alpha", map[string]string{"slow-hooks": "config-changed=" + slow.String()}, nil); err != nil {
		t.Fatal(err)
	}
	ended := func() []span { return spansOf(spans(m)["alpha/0"], "config-changed") }
	waitFor(t, m, "the slow config-changed to end", func(map[string][]record) bool { return len(ended()) >= 2 })
	if f := m.State().Units["alpha/0"].Failed; f != nil {
		t.Fatalf("the slow hook failed: %+v", f)
	}
	runs := ended()
	if took := runs[len(runs)-1].End.Sub(runs[len(runs)-1].Start); took < slow {
		t.Errorf("the slow config-changed ran %v, want at least %v (it was cut short)", took, slow)
	}
	if n := len(find(hooks(m)["alpha/0"], "config-changed")); n != len(runs) {
		t.Errorf("config-changed started %d times and ended %d times: a run was retried or cut", n, len(runs))
	}
}

// spansOf returns the spans of hook.
func spansOf(ss []span, hook string) []span {
	var out []span
	for _, s := range ss {
		if s.Hook == hook {
			out = append(out, s)
		}
	}
	return out
}

// The machine lock: hooks (and actions) of the units of one machine run one at a time
// (worker/uniter/operation/executor.go acquires the machine lock around each operation). The
// model places one unit per machine (no --to), so the rule is that each unit's hooks, its
// relation hooks and an action sent during a slow hook never overlap, and no two units share a
// machine.
func TestRuleMachineLock(t *testing.T) {
	t.Parallel()
	m := localModel(t)
	slow := map[string]string{"slow-hooks": "install=1s,source-relation-joined=1s,sink-relation-joined=1s,source-relation-changed=500ms,sink-relation-changed=500ms"}
	deploy(t, m, "alpha", 2, slow)
	deploy(t, m, "beta", 2, slow)
	ctx := context.Background()
	if _, err := m.Integrate(ctx, "alpha:source", "beta:sink"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, "alpha/0 in a slow relation-joined", func(h map[string][]record) bool {
		return index(h["alpha/0"], "source-relation-joined", nil) >= 0
	})
	act, err := m.Run(ctx, "alpha/0", "echo", map[string]string{"message": "during a hook"})
	if err != nil || act.Status != "completed" {
		t.Fatalf("action: %v %+v", err, act)
	}
	waitIdle(t, m)
	machines := map[string]string{}
	for _, a := range m.Status(ctx).Applications {
		for unit, u := range a.Units {
			if other, ok := machines[u.Machine]; ok {
				t.Errorf("%s and %s share machine %s", other, unit, u.Machine)
			}
			machines[u.Machine] = unit
		}
	}
	all := spans(m)
	for _, unit := range []string{"alpha/0", "alpha/1", "beta/0", "beta/1"} {
		ss := all[unit]
		if len(ss) < 6 {
			t.Errorf("%s: only %d hooks logged: %v", unit, len(ss), ss)
		}
		for i, s := range ss {
			if s.Start.IsZero() {
				t.Errorf("%s: %s ended with no start before it: hooks overlapped", unit, s.Hook)
				continue
			}
			if i > 0 && s.Start.Before(ss[i-1].End) {
				t.Errorf("%s: %s started at %v, before %s ended at %v", unit, s.Hook, s.Start, ss[i-1].Hook, ss[i-1].End)
			}
		}
	}
	if len(spansOf(all["alpha/0"], "echo")) != 1 {
		t.Errorf("alpha/0 did not log the action once: %v", all["alpha/0"])
	}
}
