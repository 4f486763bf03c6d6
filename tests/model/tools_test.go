package model_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/model"
)

// TestTools runs hook tools through the real jujuc binary, inside actions of the test charm,
// and checks their outputs, exit codes and Juju's rules.
func TestTools(t *testing.T) {
	m := newModel(t, modelOptions{})
	ctx := context.Background()
	deploy(t, m, "alpha", 2, nil)
	deploy(t, m, "beta", 1, nil)
	if _, err := m.Integrate(ctx, "alpha:source", "beta:sink"); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, m)
	src := fmt.Sprintf("source:%d", relationOf(t, m, "alpha", "source").ID)
	peer := fmt.Sprintf("peer:%d", relationOf(t, m, "alpha", "peer").ID)
	secret := relationOf(t, m, "alpha", "source").AppData["alpha"]["secret-id"]
	addr := m.Status(ctx).Applications["alpha"].Units["alpha/0"].PublicAddress

	tests := []struct {
		name   string
		unit   string
		argv   []string
		code   string
		out    string // exact, after trimming; "" checks nothing
		errHas string
	}{
		{"leader", "alpha/0", []string{"is-leader", "--format=json"}, "0", "true", ""},
		{"non-leader", "alpha/1", []string{"is-leader", "--format=json"}, "0", "false", ""},
		{"is-leader smart", "alpha/1", []string{"is-leader"}, "0", "False", ""},
		{"config int", "alpha/0", []string{"config-get", "count", "--format=json"}, "0", "3", ""},
		{"config unset", "alpha/0", []string{"config-get", "ratio", "--format=json"}, "0", "null", ""},
		{"config all", "alpha/0", []string{"config-get", "--all", "--format=json"}, "0", `{"count":3,"fail-hooks":"","grant-secret":true,"greeting":"hello","ratio":null,"slow-hooks":""}`, ""},
		{"relation-ids", "alpha/0", []string{"relation-ids", "peer", "--format=json"}, "0", fmt.Sprintf("[%q]", peer), ""},
		{"relation-ids unknown endpoint", "alpha/0", []string{"relation-ids", "nosuch", "--format=json"}, "0", "[]", ""},
		{"relation-list", "alpha/0", []string{"relation-list", "-r", src, "--format=json"}, "0", `["beta/0"]`, ""},
		{"relation-list peers", "alpha/0", []string{"relation-list", "-r", peer, "--format=json"}, "0", `["alpha/1"]`, ""},
		{"relation-list app", "alpha/0", []string{"relation-list", "-r", src, "--app", "--format=json"}, "0", `"beta"`, ""},
		{"relation-get remote app", "alpha/0", []string{"relation-get", "--app", "--format=json", "-r", src, "-", "beta"}, "0", `{"leader":"beta/0"}`, ""},
		{"relation-get key", "alpha/0", []string{"relation-get", "--format=json", "-r", src, "unit", "beta/0"}, "0", `"beta/0"`, ""},
		{"relation-get own app as non-leader", "alpha/1", []string{"relation-get", "--app", "--format=json", "-r", src, "-", "alpha"}, "1", "", "permission denied"},
		{"relation-get bad relation", "alpha/0", []string{"relation-get", "-r", "source:99", "-", "beta/0"}, "2", "", "relation not found"},
		{"relation-set app as non-leader", "alpha/1", []string{"relation-set", "--app", "-r", peer, "k=v"}, "1", "", "cannot write relation settings"},
		{"status-set app as non-leader", "alpha/1", []string{"status-set", "--application", "active", "x"}, "1", "", "not the leader"},
		{"status-set bad status", "alpha/0", []string{"status-set", "bogus", "x"}, "2", "", "invalid status"},
		{"status-get", "alpha/0", []string{"status-get", "--format=json"}, "0", `{"status":"active"}`, ""},
		{"status-get data", "alpha/0", []string{"status-get", "--include-data", "--format=json"}, "0", `{"message":"started","status":"active","status-data":{}}`, ""},
		{"bad flag", "alpha/0", []string{"is-leader", "--bogus"}, "2", "", "option provided but not defined: --bogus"},
		{"juju-log", "alpha/0", []string{"juju-log", "-l", "DEBUG", "hello from run-tool"}, "0", "", ""},
		{"action-get", "alpha/0", []string{"action-get", "stdin", "--format=json"}, "0", `""`, ""},
		{"network-get", "alpha/0", []string{"network-get", "source", "--ingress-address", "--format=json"}, "0", fmt.Sprintf("%q", addr), ""},
		{"network-get unknown", "alpha/0", []string{"network-get", "nosuch"}, "1", "", "no network config"},
		{"unit-get", "alpha/0", []string{"unit-get", "private-address"}, "0", addr, ""},
		{"opened-ports", "alpha/0", []string{"opened-ports", "--format=json"}, "0", `["8080/tcp"]`, ""},
		{"secret-ids", "alpha/0", []string{"secret-ids", "--format=json"}, "0", fmt.Sprintf("[%q]", strings.TrimPrefix(secret, "secret:")), ""},
		{"secret-info-get", "alpha/0", []string{"secret-info-get", "--label", "shared", "--format=json"}, "0", fmt.Sprintf(`{%q:{"revision":1,"label":"shared","owner":"application","rotation":"never"}}`, strings.TrimPrefix(secret, "secret:")), ""},
		{"secret-info-get not owner", "beta/0", []string{"secret-info-get", secret}, "1", "", "not found"},
		{"secret-set not owner", "beta/0", []string{"secret-set", secret, "token=x"}, "1", "", "permission denied"},
		{"secret-set non-leader", "alpha/1", []string{"secret-set", secret, "token=x"}, "1", "", "leader"},
		{"secret-add non-leader app secret", "alpha/1", []string{"secret-add", "token=x"}, "1", "", "not the leader"},
		{"secret-add bad key", "alpha/0", []string{"secret-add", "--owner", "unit", "k=x"}, "2", "", "not valid"},
		{"secret-get granted", "beta/0", []string{"secret-get", secret, "token"}, "0", "v1", ""},
		{"secret-get unknown label", "beta/0", []string{"secret-get", "--label", "shared"}, "1", "", "not found"},
		{"leader-set non-leader", "alpha/1", []string{"leader-set", "k=v"}, "1", "", "not the leader"},
		{"open-port bad", "alpha/0", []string{"open-port", "99999/tcp"}, "2", "", "port range bounds"},
		{"action-set reserved", "alpha/0", []string{"action-set", "stdout=x"}, "2", "", "reserved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := runTool(t, m, tt.unit, tt.argv...)
			if code != tt.code {
				t.Errorf("%v on %s: exit %s, want %s (stderr %q)", tt.argv, tt.unit, code, tt.code, stderr)
			}
			if tt.out != "" && strings.TrimSpace(out) != tt.out {
				t.Errorf("%v on %s: output %q, want %q", tt.argv, tt.unit, strings.TrimSpace(out), tt.out)
			}
			if tt.errHas != "" && (!strings.Contains(stderr, tt.errHas) || !strings.HasPrefix(stderr, "ERROR ")) {
				t.Errorf("%v on %s: stderr %q, want ERROR ... %q", tt.argv, tt.unit, stderr, tt.errHas)
			}
		})
	}

	t.Run("writes commit when the action succeeds", func(t *testing.T) {
		runTool(t, m, "alpha/0", "relation-set", "-r", src, "note=from-action")
		runTool(t, m, "alpha/0", "state-set", "mykey=myvalue")
		runTool(t, m, "alpha/0", "application-version-set", "2.0")
		out, _, _ := runTool(t, m, "alpha/0", "relation-get", "-r", src, "note", "alpha/0")
		if strings.TrimSpace(out) != "from-action" {
			t.Errorf("relation-get after relation-set in an earlier action = %q", out)
		}
		out, _, _ = runTool(t, m, "alpha/0", "state-get", "mykey")
		if strings.TrimSpace(out) != "myvalue" {
			t.Errorf("state-get = %q", out)
		}
		waitIdle(t, m)
		if v := m.Status(ctx).Applications["alpha"].Version; v != "2.0" {
			t.Errorf("application version %q, want 2.0", v)
		}
		// beta/0 saw alpha/0's new unit data.
		last := hooks(m)["beta/0"]
		if i := indexLast(last, "sink-relation-changed"); i < 0 || last[i].Env["JUJU_REMOTE_UNIT"] != "alpha/0" {
			t.Errorf("beta/0 did not get relation-changed for alpha/0's new data: %v", names(last))
		}
	})
}

func TestActions(t *testing.T) {
	m := newModel(t, modelOptions{})
	ctx := context.Background()
	deploy(t, m, "alpha", 1, nil)
	waitIdle(t, m)

	act, err := m.Run(ctx, "alpha/0", "echo", map[string]string{"message": "hi there"})
	if err != nil {
		t.Fatal(err)
	}
	if act.Status != "completed" || fmt.Sprint(act.Results) != "map[echo:map[message:hi there] result:ok]" {
		t.Errorf("echo: %s %v", act.Status, act.Results)
	}
	if len(act.Log) != 1 || !strings.HasSuffix(act.Log[0], " echoing") {
		t.Errorf("echo log %q", act.Log)
	}
	act, err = m.Run(ctx, "alpha/0", "fail", nil)
	if err != nil {
		t.Fatal(err)
	}
	if act.Status != "failed" || act.Message != "failing on purpose" {
		t.Errorf("fail: %s %q", act.Status, act.Message)
	}
	act, err = m.Run(ctx, "alpha/0", "bad-key", nil)
	if err != nil {
		t.Fatal(err)
	}
	if act.Status != "completed" || act.Results["exit-code"] != "2" || !strings.Contains(fmt.Sprint(act.Results["error"]), `key "Bad_Key" must start and end with lowercase alphanumeric`) {
		t.Errorf("bad-key: %s %v", act.Status, act.Results)
	}
	for _, tt := range []struct {
		name, action string
		params       map[string]string
		err          string
	}{
		{"missing required", "echo", nil, `"message" property is missing and required`},
		{"additional property", "echo", map[string]string{"message": "x", "other": "y"}, `additional property "other"`},
		{"unknown action", "nosuch", nil, `no action "nosuch"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Run(ctx, "alpha/0", tt.action, tt.params)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
		})
	}
	if _, err := m.Run(ctx, "alpha/9", "echo", map[string]string{"message": "x"}); err == nil {
		t.Errorf("action on a missing unit succeeded")
	}
	// Actions run as actions/<name> with JUJU_ACTION_NAME and JUJU_ACTION_UUID.
	rs := find(hooks(m)["alpha/0"], "echo")
	if len(rs) != 1 || rs[0].Env["JUJU_DISPATCH_PATH"] != "actions/echo" || rs[0].Env["JUJU_ACTION_NAME"] != "echo" || rs[0].Env["JUJU_ACTION_UUID"] == "" {
		t.Errorf("echo env: %+v", rs)
	}
}

func TestUpdateStatus(t *testing.T) {
	m := newModel(t, modelOptions{updateStatusInterval: 50 * time.Millisecond})
	deploy(t, m, "alpha", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := m.Wait(ctx, model.WaitOptions{Until: func(*model.Status) bool {
		return len(find(hooks(m)["alpha/0"], "update-status")) >= 2
	}})
	if err != nil {
		t.Fatal(err)
	}
	rs := hooks(m)["alpha/0"]
	if i := index(rs, "update-status", nil); i < index(rs, "start", nil) {
		t.Errorf("update-status before start: %v", names(rs))
	}
}

// TestClients checks libs/juju's clients against the real hook tools, and secret revocation.
func TestClients(t *testing.T) {
	m := newModel(t, modelOptions{})
	ctx := context.Background()
	deploy(t, m, "alpha", 2, nil)
	deploy(t, m, "beta", 1, nil)
	if _, err := m.Integrate(ctx, "alpha:source", "beta:sink"); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, m)
	act, err := m.Run(ctx, "alpha/0", "clients", nil)
	if err != nil {
		t.Fatal(err)
	}
	if act.Status != "completed" {
		t.Fatalf("clients: %s: %s\n%s", act.Status, act.Message, act.Output)
	}
	addr := m.Status(ctx).Applications["alpha"].Units["alpha/0"].PublicAddress
	want := map[string]any{
		"ingress": addr, "bind": addr, "private": addr, "unit-status": "active started",
		"app-units": "2", "ports": "[8080/tcp]", "remote": "beta beta/0",
		"shared": "shared rev 1 owner application", "owned": "2",
	}
	if d := cmp.Diff(want, act.Results); d != "" {
		t.Errorf("clients results (-want +got):\n%s", d)
	}
	if n := len(m.State().Secrets); n != 1 {
		t.Errorf("%d secrets after secret-remove, want 1", n)
	}
	secret := relationOf(t, m, "alpha", "source").AppData["alpha"]["secret-id"]
	if _, _, code := runTool(t, m, "beta/0", "secret-get", secret); code != "0" {
		t.Fatalf("granted secret not readable")
	}
	if act, err := m.Run(ctx, "alpha/0", "revoke", nil); err != nil || act.Status != "completed" {
		t.Fatalf("revoke: %v %+v", err, act)
	}
	if _, stderr, code := runTool(t, m, "beta/0", "secret-get", secret); code != "1" || !strings.Contains(stderr, "permission denied") {
		t.Errorf("revoked secret-get: exit %s %q", code, stderr)
	}
}
