package model_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/charmpack"
	"github.com/charmed-slurm/operators/tests/model"
)

// TestStatusJSON checks the shape of status as `juju status --format=json` prints it.
func TestStatusJSON(t *testing.T) {
	m := newModel(t, modelOptions{})
	ctx := context.Background()
	deploy(t, m, "alpha", 1, nil)
	deploy(t, m, "beta", 1, nil)
	if _, err := m.Integrate(ctx, "alpha:source", "beta:sink"); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, m)
	data, err := json.Marshal(m.Status(ctx))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	get := func(path ...string) any {
		var v any = doc
		for _, p := range path {
			mp, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = mp[p]
		}
		return v
	}
	unit := []string{"applications", "alpha", "units", "alpha/0"}
	got := map[string]any{
		"model":            get("model", "name"),
		"app status":       get("applications", "alpha", "application-status", "current"),
		"app version":      get("applications", "alpha", "version"),
		"charm":            get("applications", "alpha", "charm"),
		"relations":        get("applications", "alpha", "relations"),
		"workload":         get(append(unit, "workload-status", "current")...),
		"workload message": get(append(unit, "workload-status", "message")...),
		"agent":            get(append(unit, "juju-status", "current")...),
		"leader":           get(append(unit, "leader")...),
		"machine":          get(append(unit, "machine")...),
		"ports":            get(append(unit, "open-ports")...),
		"address":          get(append(unit, "public-address")...),
		"machine address":  get("machines", "0", "dns-name"),
		"machine state":    get("machines", "0", "juju-status", "current"),
	}
	want := map[string]any{
		"model": "test", "app status": "active", "app version": "1.2.3", "charm": "testcharm",
		"relations": map[string]any{
			"peer":   []any{map[string]any{"related-application": "alpha", "interface": "test-peer", "scope": "global"}},
			"source": []any{map[string]any{"related-application": "beta", "interface": "test", "scope": "global"}},
		},
		"workload": "active", "workload message": "started", "agent": "idle", "leader": true,
		"machine": "0", "ports": []any{"8080/tcp"}, "address": "127.0.0.1",
		"machine address": "127.0.0.1", "machine state": "started",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("status JSON (-want +got):\n%s", d)
	}
	var table strings.Builder
	if err := m.Status(ctx).WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"App ", "Unit ", "Machine ", "alpha/0*", "active", "8080/tcp", "started"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("status table lacks %q:\n%s", s, table.String())
		}
	}
}

// TestDeployPacked deploys a packed .charm (metadata.yaml, config.yaml, actions.yaml) and checks
// that its config and actions came through.
func TestDeployPacked(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "testcharm.charm")
	src := filepath.Join(repoTests(t), "testdata", "testcharm")
	if err := charmpack.Pack(context.Background(), charmpack.Options{Dir: src, Out: out, Dispatch: filepath.Join(charmDir, "dispatch")}); err != nil {
		t.Fatal(err)
	}
	m := newModel(t, modelOptions{})
	if _, err := m.Deploy(context.Background(), model.DeployOptions{Charm: out, Config: map[string]string{"count": "7"}}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, m)
	cfg, err := m.ConfigValues("testcharm")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]any{"count": int64(7), "fail-hooks": "", "grant-secret": true, "greeting": "hello", "slow-hooks": ""}, cfg); d != "" {
		t.Errorf("config (-want +got):\n%s", d)
	}
	act, err := m.Run(context.Background(), "testcharm/0", "echo", map[string]string{"message": "packed"})
	if err != nil || act.Status != "completed" {
		t.Fatalf("echo on the packed charm: %v %+v", err, act)
	}
	for _, tt := range []struct {
		name string
		opts model.DeployOptions
		err  string
	}{
		{"bad option", model.DeployOptions{Charm: out, Name: "x", Config: map[string]string{"count": "many"}}, `option "count": expected int`},
		{"unknown option", model.DeployOptions{Charm: out, Name: "y", Config: map[string]string{"nosuch": "1"}}, `unknown option "nosuch"`},
		{"existing", model.DeployOptions{Charm: out}, `application "testcharm" already exists`},
		{"bad name", model.DeployOptions{Charm: out, Name: "Bad_Name"}, `invalid application name`},
		{"missing charm", model.DeployOptions{Charm: filepath.Join(dir, "nosuch")}, `no such file`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Deploy(context.Background(), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
		})
	}
	if err := m.SetConfig(context.Background(), "testcharm", map[string]string{"ratio": "x"}, nil); err == nil || !strings.Contains(err.Error(), "expected float") {
		t.Errorf("bad float accepted: %v", err)
	}
	for _, pair := range [][2]string{{"testcharm:source", "testcharm:sink"}, {"testcharm", "nosuch"}, {"testcharm:nosuch", "testcharm"}} {
		if _, err := m.Integrate(context.Background(), pair[0], pair[1]); err == nil {
			t.Errorf("integrate %s %s succeeded", pair[0], pair[1])
		}
	}
}

func repoTests(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(wd) // tests/model → tests
}
