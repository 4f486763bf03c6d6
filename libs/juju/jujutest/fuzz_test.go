package jujutest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// FuzzToolArgs feeds arbitrary command lines and stdin to the model's hook
// tool parser: it must answer (exit code and ERROR message, or output),
// never panic.
func FuzzToolArgs(f *testing.F) {
	f.Add("relation-set --app -r slurmd:3 --file -", `{"a":"b"}`)
	f.Add("relation-get --format=json -r 3 - slurmd/0", "")
	f.Add("secret-get secret:auth --label x --peek --format=json", "")
	f.Add("secret-add --owner unit key=abc", "")
	f.Add("action-set a.b.c=1 -x=", "")
	f.Add("network-get slurmd --ingress-address --egress-subnets --format=json", "")
	f.Add("juju-log -l -- --", "")
	f.Fuzz(func(t *testing.T, line, stdin string) {
		argv := strings.Fields(line)
		if len(argv) == 0 {
			return
		}
		in := jujutest.State{
			Unit: "slurmctld/0", Leader: true, PrivateAddress: "10.0.0.1",
			Relations: []jujutest.Relation{{ID: "slurmd:3", RemoteApp: "slurmd",
				RemoteUnits: map[string]map[string]string{"slurmd/0": {"a": "b"}}}},
			Secrets: []jujutest.Secret{{ID: "secret:auth", Owner: "slurmctld", Revisions: []map[string]string{{"key": "k"}}}},
		}
		ft := &fakeT{TB: t}
		h := func(ctx context.Context, hc *juju.HookContext) error {
			res, err := hc.Runner.Run(ctx, juju.Command{Args: argv, Stdin: []byte(stdin)})
			if err == nil && res.ExitCode != 0 && !strings.HasPrefix(string(res.Stderr), "ERROR ") {
				t.Errorf("%q: exit %d without an ERROR message: %q", argv, res.ExitCode, res.Stderr)
			}
			return nil
		}
		jujutest.Scenario{T: ft, Lenient: true}.Run(in, jujutest.ActionEvent("fuzz"), h)
	})
}
