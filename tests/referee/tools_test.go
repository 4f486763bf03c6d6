package main

import (
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/tests/model"
)

// state is a one-unit model: application alpha (leader alpha/0) with one string option.
func state(value any) *model.State {
	return &model.State{
		Applications: map[string]*model.Application{"alpha": {
			Name: "alpha", Leader: "alpha/0",
			Charm:  &model.Charm{Name: "alpha", Options: map[string]model.Option{"touch": {Type: "string"}}},
			Config: map[string]any{"touch": value},
		}},
		Units:     map[string]*model.Unit{"alpha/0": {Name: "alpha/0", App: "alpha"}},
		Relations: map[int]*model.Relation{}, Secrets: map[string]*model.Secret{}, Actions: map[string]*model.ActionRun{},
		Machines: map[string]*model.MachineState{},
	}
}

// TestJudge checks that the referee passes what Juju's tools do and fails what they do not:
// each case is a tool call as a model could have served it.
func TestJudge(t *testing.T) {
	r, err := newToolReplayer()
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	tests := []struct {
		name           string
		argv           []string
		value          any
		stdout, stderr string
		code           int
		wantDiff       string // "" for none
	}{
		{"config-get value", []string{"config-get", "touch"}, "x", "x\n", "", 0, ""},
		{"config-get empty prints nothing", []string{"config-get", "touch"}, "", "", "", 0, ""},
		{"config-get empty with a newline", []string{"config-get", "touch"}, "", "\n", "", 0, `Stdout: ""`},
		{"is-leader json", []string{"is-leader", "--format=json"}, "x", "true\n", "", 0, ""},
		{"bad flag exits 2", []string{"is-leader", "--bogus"}, "x", "", "ERROR option provided but not defined: --bogus\n", 2, ""},
		{"bad flag exit 1", []string{"is-leader", "--bogus"}, "x", "", "ERROR option provided but not defined: --bogus\n", 1, "Code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := state(tt.value)
			call := &model.ToolCall{Unit: "alpha/0", App: "alpha", Hook: model.Hook{Kind: "config-changed"},
				Before: s, After: s, Argv: tt.argv, Stdout: tt.stdout, Stderr: tt.stderr, Code: tt.code}
			diff := r.judge(call)
			switch {
			case tt.wantDiff == "" && diff != "":
				t.Errorf("unexpected difference: %s", diff)
			case tt.wantDiff != "" && !strings.Contains(diff, tt.wantDiff):
				t.Errorf("difference %q, want one naming %q", diff, tt.wantDiff)
			}
		})
	}
}
