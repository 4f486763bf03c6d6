package slurm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
	"github.com/google/go-cmp/cmp"
)

func TestCheckConfig(t *testing.T) {
	t.Parallel()
	ok := &slurmtest.Runner{}
	ok.Expect(slurmtest.Real("checkconf-ok"))
	c := &slurm.Client{Runner: ok}
	if err := c.CheckConfig(context.Background(), "/etc/slurm/.candidate-1/slurm.conf"); err != nil {
		t.Fatalf("CheckConfig of a file Slurm reads: %v", err)
	}

	bad := &slurmtest.Runner{}
	bad.Expect(slurmtest.Real("checkconf-refused"))
	c = &slurm.Client{Runner: bad}
	err := c.CheckConfig(context.Background(), "/etc/slurm/.candidate-1/slurm.conf")
	var ce *slurm.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("CheckConfig: %v, want a *ConfigError", err)
	}
	want := &slurm.ConfigError{
		Conf: "/etc/slurm/.candidate-1/slurm.conf", Key: "MaxTime", Value: "abc",
		File:     "/etc/slurm/.candidate-1/slurm.conf",
		Messages: []string{`Bad value "abc" for MaxTime`, `"Include" failed in file /etc/slurm/.candidate-1/slurm.conf line 4`},
	}
	if d := cmp.Diff(want, ce); d != "" {
		t.Errorf("ConfigError (-want +got):\n%s", d)
	}
}

func TestParseConfigErrorForms(t *testing.T) {
	t.Parallel()
	tests := []struct{ text, key, value string }{
		{"scontrol: error: MaxNodes value (abc) is not a valid number\nscontrol: error: Parse error in file /x/slurm.conf line 4: \" MaxNodes=abc\"\n", "MaxNodes", "abc"},
		{"scontrol: error: \"maybe\" is not a valid option for \"Default\"\n", "Default", "maybe"},
		{"scontrol: error: Bad value for SelectTypeParameters: CR_Bogus\n", "SelectTypeParameters", "CR_Bogus"},
		{"scontrol: error: MinNodes value (-1) is less than zero\n", "MinNodes", "-1"},
		{"scontrol: error: Priority value \"abc\" is not a valid number\n", "Priority", "abc"},
		{"scontrol: error: Parsing error at unrecognized key: MaxTme\n", "MaxTme", ""},
	}
	for _, tt := range tests {
		r := &slurmtest.Runner{}
		r.Expect(slurmtest.Case{Argv: []string{"scontrol", "show", "hostnames", "x"}, Output: command.Output{Stderr: []byte(tt.text), ExitCode: 1}})
		err := (&slurm.Client{Runner: r}).CheckConfig(context.Background(), "/x/slurm.conf")
		var ce *slurm.ConfigError
		if !errors.As(err, &ce) || ce.Key != tt.key || ce.Value != tt.value {
			t.Errorf("%q: got %#v, want key %q value %q", tt.text, err, tt.key, tt.value)
		}
	}
}

func FuzzCheckConfigOutput(f *testing.F) {
	f.Add("scontrol: error: Bad value \"abc\" for MaxTime\nscontrol: fatal: Unable to process configuration file\n")
	f.Add("scontrol: error: MaxNodes value (abc) is not a valid number\n")
	f.Add("garbage")
	f.Fuzz(func(t *testing.T, text string) {
		r := &slurmtest.Runner{}
		r.Expect(slurmtest.Case{Argv: []string{"scontrol", "show", "hostnames", "x"}, Output: command.Output{Stderr: []byte(text), ExitCode: 1}})
		err := (&slurm.Client{Runner: r}).CheckConfig(context.Background(), "/x/slurm.conf")
		var ce *slurm.ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("a refused configuration gave %v, want a *ConfigError", err)
		}
		_ = ce.Error()
	})
}

// TestCheckDbdConfig replays slurmdbd 22.05's own parser (slurmdbd -V with SLURM_CONF in a
// candidate directory, recorded): a file it reads gives the version; an unknown key, a bad
// value and a mode it refuses give a *ConfigError naming what it names.
func TestCheckDbdConfig(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		want *slurm.ConfigError // nil: Slurm reads it
	}{
		{name: "dbdconf-ok"},
		{name: "dbdconf-unknown-key", want: &slurm.ConfigError{Key: "PurgeJobAfte", Messages: []string{
			"_parse_next_key: Parsing error at unrecognized key: PurgeJobAfte",
			"Could not open/read/parse slurmdbd.conf file /etc/slurm/.candidate-1/slurmdbd.conf"}}},
		{name: "dbdconf-bad-value", want: &slurm.ConfigError{Key: "MessageTimeout", Value: "abc", Messages: []string{
			`MessageTimeout value "abc" is not a valid number`,
			"Could not open/read/parse slurmdbd.conf file /etc/slurm/.candidate-1/slurmdbd.conf"}}},
		{name: "dbdconf-mode", want: &slurm.ConfigError{Messages: []string{
			"slurmdbd.conf file /etc/slurm/.candidate-1/slurmdbd.conf should be 600 is 644 accessible for group or others"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &slurmtest.Runner{}
			r.Expect(slurmtest.Real(tt.name))
			v, err := (&slurm.Client{Runner: r}).CheckDbdConfig(context.Background(), "/etc/slurm/.candidate-1")
			if tt.want == nil {
				if err != nil || v != (slurm.Version{Major: 22, Minor: 5, Micro: 8}) {
					t.Fatalf("version %v, error %v", v, err)
				}
				return
			}
			var ce *slurm.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a *ConfigError", err)
			}
			tt.want.Conf = "/etc/slurm/.candidate-1/slurmdbd.conf"
			if d := cmp.Diff(tt.want, ce); d != "" {
				t.Errorf("ConfigError (-want +got):\n%s", d)
			}
		})
	}
}
