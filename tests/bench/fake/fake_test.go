package fake_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/bench/fake"
)

func TestAnswersFromFixture(t *testing.T) {
	fx := fake.Fixture{
		Leader:  true,
		Config:  map[string]any{"cluster-name": "bench", "max": 3},
		Ingress: "10.1.2.3",
		Relations: []fake.Relation{{ID: "slurmd:1", Endpoint: "slurmd", RemoteApp: "slurmd", Units: []string{"slurmd/0"},
			Data: map[string]map[string]string{"slurmd": {"nodeset": "NodeSet=slurmd Feature=slurmd"}}}},
		Secrets:  map[string]map[string]string{"secret:abc": {"key": "a2V5", "keyid": "1"}},
		Labels:   map[string]string{"auth-key": "secret:abc"},
		Commands: []fake.Command{{Argv: []string{"scontrol", "ping"}, Stdout: "UP\n"}, {Argv: []string{"scontrol", "delete"}, Stderr: "busy\n", Exit: 1}},
	}
	dir := t.TempDir()
	fixture, logPath := filepath.Join(dir, "fx.json"), filepath.Join(dir, "calls.log")
	data, _ := json.Marshal(fx)
	if err := os.WriteFile(fixture, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(fake.FixtureEnv, fixture)
	t.Setenv(fake.LogEnv, logPath)
	tests := []struct {
		name           string
		argv           []string
		stdout, stderr string
		code           int
	}{
		{"relation-ids", []string{"/x/relation-ids", "slurmd", "--format=json"}, `["slurmd:1"]` + "\n", "", 0},
		{"relation-ids other endpoint", []string{"relation-ids", "peers", "--format=json"}, "[]\n", "", 0},
		{"relation-list", []string{"relation-list", "-r", "slurmd:1", "--format=json"}, `["slurmd/0"]` + "\n", "", 0},
		{"relation-list app", []string{"relation-list", "-r", "slurmd:1", "--app", "--format=json"}, `"slurmd"` + "\n", "", 0},
		{"relation-get app", []string{"relation-get", "--app", "--format=json", "-r", "slurmd:1", "-", "slurmd"}, `{"nodeset":"NodeSet=slurmd Feature=slurmd"}` + "\n", "", 0},
		{"relation-get unknown relation", []string{"relation-get", "--format=json", "-r", "slurmd:9", "-", "slurmd/0"}, "", "ERROR invalid value \"slurmd:9\" for option -r: relation not found\n", 2},
		{"config-get", []string{"config-get", "--all", "--format=json"}, `{"cluster-name":"bench","max":3}` + "\n", "", 0},
		{"is-leader", []string{"is-leader", "--format=json"}, "true\n", "", 0},
		{"secret-get by label", []string{"secret-get", "--label", "auth-key", "--format=json"}, `{"key":"a2V5","keyid":"1"}` + "\n", "", 0},
		{"secret-get by id", []string{"secret-get", "secret:abc", "--format=json"}, `{"key":"a2V5","keyid":"1"}` + "\n", "", 0},
		{"secret-get unknown", []string{"secret-get", "secret:zzz", "--format=json"}, "", "ERROR secret \"secret:zzz\" not found\n", 1},
		{"secret-add", []string{"secret-add", "--label", "x", "key=v"}, "secret:d3b5s2fmp25c7abcdef0\n", "", 0},
		{"ingress", []string{"network-get", "slurmd", "--ingress-address", "--format=json"}, `"10.1.2.3"` + "\n", "", 0},
		{"status-set", []string{"status-set", "active", "ok"}, "", "", 0},
		{"stub with answer", []string{"/usr/bin/scontrol", "ping"}, "UP\n", "", 0},
		{"stub failing", []string{"scontrol", "delete", "nodename=x"}, "", "busy\n", 1},
		{"stub without answer", []string{"squeue", "-h"}, "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := fake.Main(tt.argv, strings.NewReader(""), &stdout, &stderr)
			if d := cmp.Diff([]any{tt.code, tt.stdout, tt.stderr}, []any{code, stdout.String(), stderr.String()}); d != "" {
				t.Errorf("%q (-want +got code, stdout, stderr):\n%s", tt.argv, d)
			}
		})
	}
	calls, _ := os.ReadFile(logPath)
	if n := strings.Count(string(calls), "\n"); n != len(tests) {
		t.Errorf("call log has %d lines, want %d:\n%s", n, len(tests), calls)
	}
	if !strings.HasPrefix(string(calls), "relation-ids slurmd --format=json\n") {
		t.Errorf("call log starts %q", calls)
	}
}

func TestAnswers(t *testing.T) {
	for name, want := range map[string]bool{"/usr/sbin/slurmd": true, "relation-get": true, "dispatch": false, "python3": false} {
		if got := fake.Answers(name); got != want {
			t.Errorf("Answers(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestBadFixture(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fx.json")
	os.WriteFile(p, []byte("{"), 0o644)
	t.Setenv(fake.FixtureEnv, p)
	t.Setenv(fake.LogEnv, "")
	var stdout, stderr bytes.Buffer
	if code := fake.Main([]string{"is-leader"}, nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "cannot read fixture") {
		t.Errorf("code %d, stderr %q", code, stderr.String())
	}
}

func TestMeasure(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m.json")
	t.Setenv(fake.MeasureOutEnv, out)
	t.Setenv(fake.LogEnv, "")
	t.Setenv(fake.FixtureEnv, "")
	for _, tt := range []struct {
		name string
		argv []string
		code int
	}{
		{"success", []string{"bench-measure", "/bin/true"}, 0},
		{"failure", []string{"/tools/bench-measure", "/bin/false"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(out)
			var stdout, stderr bytes.Buffer
			if code := fake.Main(tt.argv, nil, &stdout, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var m fake.Measurement
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			if m.Exit != tt.code || m.WallNS <= 0 || m.MaxRSSKiB <= 0 {
				t.Errorf("measurement %+v", m)
			}
		})
	}
	var stderr bytes.Buffer
	if code := fake.Main([]string{"bench-measure", "/nonexistent/cmd"}, nil, &bytes.Buffer{}, &stderr); code != 127 || !strings.Contains(stderr.String(), "/nonexistent/cmd") {
		t.Errorf("missing command: exit %d, stderr %q", code, stderr.String())
	}
}
