package model

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/juju/charm/v12"
	"gopkg.in/yaml.v3"
)

// jujuActions reads the test charm's actions with Juju's charm library (ReadActionsYaml) and
// with the model (ReadCharm's Action), for comparing their validation.
func jujuActions(t testing.TB) (*charm.Actions, map[string]Action) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "testcharm", "charmcraft.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Actions map[string]any    `yaml:"actions"`
		Model   map[string]Action `yaml:"-"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(raw.Actions)
	if err != nil {
		t.Fatal(err)
	}
	ja, err := charm.ReadActionsYaml("testcharm", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var mine map[string]Action
	if err := yaml.Unmarshal(b, &mine); err != nil {
		t.Fatal(err)
	}
	return ja, mine
}

// checkSameAsJuju parses args as juju run does and checks that the model's validation accepts
// exactly what Juju's ActionSpec.ValidateParams accepts.
func checkSameAsJuju(t *testing.T, ja *charm.Actions, mine map[string]Action, action string, args map[string]string) {
	t.Helper()
	params, err := parseActionArgs(args)
	if err != nil {
		return // juju run refuses it before validating too
	}
	spec := ja.ActionSpecs[action]
	jujuErr := spec.ValidateParams(params)
	ourErr := validateActionParams(mine[action], params)
	if (jujuErr == nil) != (ourErr == nil) {
		t.Errorf("%s %v: juju says %v, the model says %v", action, args, jujuErr, ourErr)
	}
}

func TestActionValidationMatchesJuju(t *testing.T) {
	ja, mine := jujuActions(t)
	for _, tt := range []struct {
		action string
		args   map[string]string
	}{
		{"typed", map[string]string{"level": "high"}},
		{"typed", map[string]string{"level": "mid"}},
		{"typed", map[string]string{"level": "10"}},
		{"typed", map[string]string{"level": "low", "count": "3"}},
		{"typed", map[string]string{"level": "low", "count": "3.5"}},
		{"typed", map[string]string{"level": "low", "count": "-1"}},
		{"typed", map[string]string{"level": "low", "count": "1e3"}},
		{"typed", map[string]string{"level": "low", "flag": "yes"}},
		{"typed", map[string]string{"level": "low", "flag": "1"}},
		{"typed", map[string]string{"level": "low", "text": ""}},
		{"typed", map[string]string{"level": "low", "text": "~"}},
		{"typed", map[string]string{"level": "low", "text": "[a, b]"}},
		{"typed", map[string]string{"level": "low", "opts.depth": "2"}},
		{"typed", map[string]string{"level": "low", "opts.width": "2"}},
		{"typed", map[string]string{"level": "low", "opts": "x"}},
		{"typed", map[string]string{"count": "1"}},
		{"typed", map[string]string{"level": "low", "colour": "red"}},
		{"echo", map[string]string{"message": "hi"}},
		{"echo", map[string]string{"message": "10"}},
		{"echo", map[string]string{}},
		{"fail", map[string]string{"other": "x"}}, // additionalProperties not false: allowed
		{"run-tool", map[string]string{"argv": `["a","b"]`}},
		{"run-tool", map[string]string{"argv": `'["a","b"]'`}},
	} {
		checkSameAsJuju(t, ja, mine, tt.action, tt.args)
	}
}

func FuzzActionValidationMatchesJuju(f *testing.F) {
	f.Add("typed", "level", "high", "count", "3")
	f.Add("typed", "level", "mid", "flag", "no")
	f.Add("typed", "opts.depth", "x", "level", "low")
	f.Add("echo", "message", "{a: 1}", "x", "")
	f.Fuzz(func(t *testing.T, action, k1, v1, k2, v2 string) {
		ja, mine := jujuActions(t)
		if _, ok := mine[action]; !ok {
			return
		}
		checkSameAsJuju(t, ja, mine, action, map[string]string{k1: v1, k2: v2})
	})
}
