package jujucli_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/autoscaler/jujucli"
	"github.com/charmed-slurm/operators/libs/command"
)

// recorder is a command.Runner that records argv and env and answers out.
type recorder struct {
	calls [][]string
	env   [][]string
	out   command.Output
}

func (r *recorder) Run(ctx context.Context, argv, env []string) (command.Output, error) {
	r.calls = append(r.calls, argv)
	r.env = append(r.env, env)
	return r.out, nil
}

func TestVerbs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		model string
		do    func(c *jujucli.CLI) error
		want  []string
	}{
		{"add-unit", "", func(c *jujucli.CLI) error { return c.AddUnit(context.Background(), "slurmd", 3) },
			[]string{"juju", "add-unit", "slurmd", "-n", "3"}},
		{"add-unit in a model", "hpc", func(c *jujucli.CLI) error { return c.AddUnit(context.Background(), "slurmd", 1) },
			[]string{"juju", "add-unit", "-m", "hpc", "slurmd", "-n", "1"}},
		{"remove-unit", "", func(c *jujucli.CLI) error { return c.RemoveUnit(context.Background(), "slurmd/3", "slurmd/5") },
			[]string{"juju", "remove-unit", "slurmd/3", "slurmd/5"}},
		{"exec on a unit", "", func(c *jujucli.CLI) error {
			_, err := jujucli.UnitRunner{CLI: c, Unit: "slurmctld/0"}.Run(context.Background(), []string{"squeue", "-h"}, []string{"SLURM_CONF=/etc/slurm/slurm.conf"})
			return err
		}, []string{"juju", "exec", "--unit", "slurmctld/0", "--", "env", "SLURM_CONF=/etc/slurm/slurm.conf", "squeue", "-h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{}
			c := &jujucli.CLI{Path: "juju", Model: tt.model, Runner: r, Env: []string{"JUJU_LOCAL_DIR=/tmp/m"}}
			if err := tt.do(c); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([][]string{tt.want}, r.calls); d != "" {
				t.Errorf("argv (-want +got):\n%s", d)
			}
			if d := cmp.Diff([][]string{{"JUJU_LOCAL_DIR=/tmp/m"}}, r.env); d != "" {
				t.Errorf("env (-want +got):\n%s", d)
			}
		})
	}
}

func TestFailedCommand(t *testing.T) {
	t.Parallel()
	r := &recorder{out: command.Output{ExitCode: 1, Stderr: []byte("ERROR cannot add unit: quota exceeded\n")}}
	c := &jujucli.CLI{Path: "juju", Runner: r}
	err := c.AddUnit(context.Background(), "slurmd", 1)
	var je *jujucli.Error
	if !errors.As(err, &je) || je.ExitCode != 1 || je.Stderr != "ERROR cannot add unit: quota exceeded" {
		t.Fatalf("AddUnit() error = %#v, want a *jujucli.Error with the message", err)
	}
}

// TestStatusOfTheLocalModel reads a `juju-local status --format=json` recorded by
// tests/e2e TestAutoscaleBurst after the burst (JUJU_STATUS_RECORD).
func TestStatusOfTheLocalModel(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/status-burst.json")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{out: command.Output{Stdout: data}}
	st, err := (&jujucli.CLI{Path: "juju-local", Runner: r}).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a := st.Applications["slurmd"]
	want := []string{"slurmd/0", "slurmd/1", "slurmd/2", "slurmd/3", "slurmd/4", "slurmd/5"}
	if d := cmp.Diff(want, a.UnitNames()); d != "" {
		t.Errorf("units (-want +got):\n%s", d)
	}
	if got := a.Leader(); got != "slurmd/0" {
		t.Errorf("leader %q, want slurmd/0", got)
	}
	if got := st.Applications["slurmctld"].Leader(); got != "slurmctld/0" {
		t.Errorf("slurmctld leader %q, want slurmctld/0", got)
	}
	for _, n := range want {
		if a.Units[n].Dying() {
			t.Errorf("%s dying, want alive", n)
		}
	}
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in  string
		dying     []bool
		leader    string
		wantError bool
	}{
		{name: "dying unit, no leader shown", in: `{"applications":{"slurmd":{"units":{"slurmd/10":{"life":"dying"},"slurmd/2":{}}}}}`,
			dying: []bool{false, true}, leader: "slurmd/2"},
		{name: "not json", in: `ERROR no controller`, wantError: true},
		{name: "no applications", in: `{"model":{}}`, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, err := jujucli.ParseStatus([]byte(tt.in))
			if (err != nil) != tt.wantError {
				t.Fatalf("ParseStatus() error = %v, want error %v", err, tt.wantError)
			}
			if err != nil {
				return
			}
			a := st.Applications["slurmd"]
			var dying []bool
			for _, n := range a.UnitNames() {
				dying = append(dying, a.Units[n].Dying())
			}
			if d := cmp.Diff(tt.dying, dying); d != "" {
				t.Errorf("dying by unit number (-want +got):\n%s", d)
			}
			if got := a.Leader(); got != tt.leader {
				t.Errorf("Leader() = %q, want %q", got, tt.leader)
			}
		})
	}
}

func FuzzParseStatus(f *testing.F) {
	if data, err := os.ReadFile("testdata/status-burst.json"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"applications":{"slurmd":{"units":{"slurmd/1":{"life":"dying","leader":true}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := jujucli.ParseStatus(data)
		if err != nil {
			return
		}
		for _, a := range st.Applications {
			if l := a.Leader(); l != "" {
				if _, ok := a.Units[l]; !ok {
					t.Fatalf("leader %q is not a unit", l)
				}
			}
			if len(a.UnitNames()) != len(a.Units) {
				t.Fatalf("UnitNames lost units")
			}
		}
	})
}
