package cosagent_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
)

const ruleYAML = `groups:
  - name: slurm-nodes
    rules:
      - alert: SlurmNodeDown
        expr: slurm_nodes_down{%%juju_topology%%} > 0
        for: 1m
        labels:
          severity: critical
        annotations:
          summary: "{{ $value }} nodes down"
`

func TestApplyTopology(t *testing.T) {
	f, err := cosagent.ParseRules([]byte(ruleYAML))
	if err != nil {
		t.Fatal(err)
	}
	top := cosagent.Topology{Model: "hpc", ModelUUID: "0123456789abcdef", Application: "slurmctld"}
	got, err := f.ApplyTopology(top)
	if err != nil {
		t.Fatal(err)
	}
	want := cosagent.RuleFile{Groups: []cosagent.RuleGroup{{
		Name: "hpc_01234567_slurmctld_slurm_nodes_alerts",
		Rules: []cosagent.Rule{{
			Alert: "SlurmNodeDown",
			Expr:  `slurm_nodes_down{juju_application="slurmctld",juju_model="hpc",juju_model_uuid="0123456789abcdef"} > 0`,
			For:   "1m",
			Labels: map[string]string{
				"severity": "critical", "juju_model": "hpc", "juju_model_uuid": "0123456789abcdef", "juju_application": "slurmctld",
			},
			Annotations: map[string]string{"summary": "{{ $value }} nodes down"},
		}},
	}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ApplyTopology (-want +got):\n%s", diff)
	}
	// Applying it again is refused: no placeholder is left to fill.
	again, err := got.ApplyTopology(top)
	if err == nil {
		t.Errorf("a second ApplyTopology was accepted: %+v", again)
	}
	// The source is untouched.
	if f.Groups[0].Rules[0].Labels["juju_model"] != "" {
		t.Error("ApplyTopology changed its receiver's labels")
	}
	y, err := got.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := cosagent.ParseRules(y)
	if err != nil {
		t.Fatalf("cannot parse the rendered rules: %v\n%s", err, y)
	}
	if diff := cmp.Diff(got, back); diff != "" {
		t.Errorf("YAML round trip (-want +got):\n%s", diff)
	}
}

func TestParseRulesRefuses(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown field", "groups:\n  - name: g\n    interval: 1m\n    rules: []\n", "interval"},
		{"no alert name", "groups:\n  - name: g\n    rules:\n      - expr: up\n", "alert name"},
		{"no expr", "groups:\n  - name: g\n    rules:\n      - alert: A\n", "expr"},
		{"bad for", "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        for: soon\n", "not a duration"},
		{"group twice", "groups:\n  - name: g\n    rules: [{alert: A, expr: up}]\n  - name: g\n    rules: [{alert: B, expr: up}]\n", "twice"},
		{"two documents", "groups: []\n---\ngroups: []\n", "more than one"},
		{"bad label", "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        labels: {\"a-b\": x}\n", "label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cosagent.ParseRules([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseRules = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	f, _ := cosagent.ParseRules([]byte("groups:\n  - name: g\n    rules: [{alert: A, expr: up}]\n"))
	if _, err := f.ApplyTopology(cosagent.Topology{Model: "m", ModelUUID: "u", Application: "a"}); err == nil {
		t.Error("ApplyTopology accepted an expr without the placeholder")
	}
	if _, err := f.ApplyTopology(cosagent.Topology{Model: "m"}); err == nil {
		t.Error("ApplyTopology accepted an incomplete topology")
	}
}

func FuzzParseRules(f *testing.F) {
	f.Add(ruleYAML)
	f.Add("groups: []\n")
	f.Add("groups:\n  - name: g\n    rules: [{alert: A, expr: up, for: 1h30m}]\n")
	f.Fuzz(func(t *testing.T, src string) {
		rf, err := cosagent.ParseRules([]byte(src))
		if err != nil {
			return
		}
		y, err := rf.YAML()
		if err != nil {
			t.Fatalf("accepted %q but cannot render it: %v", src, err)
		}
		back, err := cosagent.ParseRules(y)
		if err != nil {
			t.Fatalf("cannot parse the rendering of %q: %v\n%s", src, err, y)
		}
		if diff := cmp.Diff(rf, back); diff != "" {
			t.Fatalf("round trip differs:\n%s", diff)
		}
	})
}
