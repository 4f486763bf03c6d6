package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// toolLog sits between a hook and jujutest's model: it records every hook tool the hook runs
// and makes the tools fail picks fail as a real tool does (exit 1, ERROR on stderr). It is safe
// for concurrent use (Charm.AskLeaderEarly).
type toolLog struct {
	next  juju.Runner
	mu    sync.Mutex
	calls []string
	fail  func(args []string) bool
}

func (l *toolLog) Run(ctx context.Context, cmd juju.Command) (juju.Result, error) {
	l.mu.Lock()
	l.calls = append(l.calls, cmd.Args[0])
	l.mu.Unlock()
	if l.fail != nil && l.fail(cmd.Args) {
		return juju.Result{ExitCode: 1, Stderr: []byte("ERROR injected failure\n")}, nil
	}
	return l.next.Run(ctx, cmd)
}

// runTools runs ev like run, returning the hook tools it ran and its error; fail (may be
// nil) picks tool calls that fail.
func (e *env) runTools(in jujutest.State, ev juju.Event, fail func(args []string) bool) (jujutest.State, []string, error) {
	e.t.Helper()
	log := &toolLog{fail: fail}
	h := func(ctx context.Context, hc *juju.HookContext) error {
		log.next = hc.Runner
		return e.c.Router().Dispatch(ctx, juju.NewHookContext(hc.Event, log))
	}
	out, err := jujutest.Run(e.t, in, ev, h)
	return out, log.calls, err
}

// writeTools are the hook tools that change the model (and that Juju discards when the hook
// fails, status aside); readTools are the reads the record saves.
var (
	writeTools = []string{"relation-set", "secret-add", "secret-set", "secret-grant", "secret-revoke", "open-port", "close-port", "status-set"}
	readTools  = []string{"secret-get", "secret-info-get", "relation-ids"}
)

func only(calls, tools []string) []string {
	var got []string
	for _, c := range calls {
		if slices.Contains(tools, c) {
			got = append(got, c)
		}
	}
	return got
}

// joined is a started controller with one slurmd application related and ready.
func (e *env) joined() jujutest.State {
	e.t.Helper()
	in := e.started()
	in.Relations = []jujutest.Relation{relation("slurmd:1", "slurmd", compute(e.t, "slurmd", ""), "slurmd/0")}
	out := e.run(in, jujutest.RelationHook(juju.RelationCreated, "slurmd:1", ""))
	out = e.run(out, jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/0"))
	return e.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
}

func TestUnchangedHookWritesNothing(t *testing.T) {
	tests := []struct {
		name string
		ev   juju.Event
		want []string // every hook tool of the second run
	}{
		// Only config-changed reads the configuration; the others use the copy it kept. The
		// configure hooks list the mount and peer relations once each (high availability).
		{"config-changed", jujutest.Hook(juju.ConfigChanged), []string{"config-get", "is-leader", "relation-ids", "network-get", "relation-ids"}},
		{"start", jujutest.Hook(juju.Start), []string{"is-leader", "relation-ids", "network-get", "relation-ids"}},
		{"update-status", jujutest.Hook(juju.UpdateStatus), []string{"is-leader"}},
		{"relation-created", jujutest.RelationHook(juju.RelationCreated, "slurmd:1", ""), []string{"is-leader"}},
		{"relation-joined", jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/0"), []string{"is-leader"}},
		// The application's data, then the unit's (its Slurm release: metricsgate.go).
		{"relation-changed", jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"),
			[]string{"is-leader", "relation-list", "relation-get", "relation-get"}},
		{"install", jujutest.Hook(juju.Install), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			out := e.run(e.joined(), tt.ev)
			reconfigures := e.slurm.count("scontrol", "reconfigure")
			svc := len(e.svc.Calls())
			again, calls, err := e.runTools(out, tt.ev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, calls); d != "" {
				t.Errorf("hook tools of the unchanged hook (-want +got):\n%s", d)
			}
			if n := e.slurm.count("scontrol", "reconfigure"); n != reconfigures {
				t.Errorf("%d reconfigures by the unchanged hook", n-reconfigures)
			}
			for _, c := range e.svc.Calls()[svc:] {
				if !strings.HasPrefix(c, "configure") && !strings.HasPrefix(c, "enable") {
					t.Errorf("service call %q by the unchanged hook", c)
				}
			}
			if d := cmp.Diff(out.Relations, again.Relations); d != "" {
				t.Errorf("relations changed (-before +after):\n%s", d)
			}
		})
	}
}

// TestFailedHookWritesRedone: a hook that fails after writing has its writes discarded by
// Juju; the next hook must write them again, not trust a record of them.
func TestFailedHookWritesRedone(t *testing.T) {
	t.Run("first configure", func(t *testing.T) {
		e := newEnv(t)
		failActive := func(args []string) bool { return args[0] == "status-set" && slices.Contains(args, "active") }
		out, calls, err := e.runTools(baseState(), jujutest.Hook(juju.ConfigChanged), failActive)
		if err == nil {
			t.Fatal("hook did not fail")
		}
		if d := cmp.Diff([]string{"secret-add", "status-set", "open-port", "status-set"}, only(calls, writeTools)); d != "" {
			t.Errorf("writes of the failed hook (-want +got):\n%s", d)
		}
		if len(out.Ports) != 0 || len(out.Secrets) != 0 {
			t.Fatalf("failed hook kept ports %v, secrets %v", out.Ports, out.Secrets)
		}
		out, calls, err = e.runTools(out, jujutest.Hook(juju.ConfigChanged), nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"secret-add", "open-port", "status-set"}, only(calls, writeTools)); d != "" {
			t.Errorf("writes of the retry (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]juju.Port{{Number: SlurmctldPort, Protocol: "tcp"}}, out.Ports); d != "" {
			t.Errorf("ports (-want +got):\n%s", d)
		}
		if len(out.Secrets) != 1 {
			t.Fatalf("secrets %+v", out.Secrets)
		}
		key, _, err := slurmd.DecodeAuthSecret(out.Secrets[0].Revisions[0])
		if err != nil || e.read("/etc/munge/munge.key") != string(key) {
			t.Errorf("munge key is not the secret's (%v)", err)
		}
	})
	t.Run("new relation", func(t *testing.T) {
		e := newEnv(t)
		in := e.started()
		in.Relations = []jujutest.Relation{relation("slurmd:1", "slurmd", nil, "slurmd/0")}
		failSet := func(args []string) bool { return args[0] == "relation-set" }
		out, calls, err := e.runTools(in, jujutest.RelationHook(juju.RelationCreated, "slurmd:1", ""), failSet)
		if err == nil {
			t.Fatal("hook did not fail")
		}
		if d := cmp.Diff([]string{"secret-grant", "relation-set"}, only(calls, writeTools)); d != "" {
			t.Errorf("writes of the failed hook (-want +got):\n%s", d)
		}
		if len(out.Secrets[0].Grants) != 0 || len(out.Relations[0].LocalAppData) != 0 {
			t.Fatalf("failed hook kept grants %v, data %v", out.Secrets[0].Grants, out.Relations[0].LocalAppData)
		}
		out, calls, err = e.runTools(out, jujutest.RelationHook(juju.RelationCreated, "slurmd:1", ""), nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"secret-grant", "relation-set"}, only(calls, writeTools)); d != "" {
			t.Errorf("writes of the retry (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]jujutest.Grant{{Relation: "slurmd:1"}}, out.Secrets[0].Grants); d != "" {
			t.Errorf("grants (-want +got):\n%s", d)
		}
		if _, err := slurmd.DecodeControllerBag(out.Relations[0].LocalAppData); err != nil {
			t.Errorf("controller data after the retry: %v", err)
		}
	})
	t.Run("address change", func(t *testing.T) {
		e := newEnv(t)
		in := e.joined()
		in.Relations = append(in.Relations, relation("slurmd:2", "gpu", nil, "gpu/0"))
		in = e.run(in, jujutest.RelationHook(juju.RelationCreated, "slurmd:2", ""))
		in.PrivateAddress = "10.0.0.9"
		// slurmd:1 is written, slurmd:2 fails: the hook fails and Juju drops both.
		failSecond := func(args []string) bool { return args[0] == "relation-set" && slices.Contains(args, "slurmd:2") }
		out, calls, err := e.runTools(in, jujutest.Hook(juju.ConfigChanged), failSecond)
		if err == nil {
			t.Fatal("hook did not fail")
		}
		if n := len(only(calls, []string{"relation-set"})); n != 2 {
			t.Errorf("%d relation-set calls, want 2", n)
		}
		for _, r := range out.Relations {
			if strings.Contains(r.LocalAppData[slurmd.KeyControllers], "10.0.0.9") {
				t.Errorf("failed hook's data kept on %s", r.ID)
			}
		}
		out, calls, err = e.runTools(out, jujutest.Hook(juju.ConfigChanged), nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"relation-set", "relation-set"}, only(calls, []string{"relation-set"})); d != "" {
			t.Errorf("relation-set calls of the retry (-want +got):\n%s", d)
		}
		for _, r := range out.Relations {
			if got := r.LocalAppData[slurmd.KeyControllers]; got != `["10.0.0.9:6817"]` {
				t.Errorf("%s controllers %s after the retry", r.ID, got)
			}
		}
		if !strings.Contains(e.read(confPath), "SlurmctldHost=ctl(10.0.0.9)\n") {
			t.Errorf("slurm.conf has the old address")
		}
		// A relation hook uses the address the configure hook read.
		_, calls, err = e.runTools(out, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"), nil)
		if err != nil || slices.Contains(calls, "network-get") || slices.Contains(calls, "relation-set") {
			t.Errorf("relation-changed after the address change: %v, tools %q", err, calls)
		}
	})
}

// TestRecordNotTrusted: a new leadership term and upgrade-charm write everything again but the
// port, which is the unit's own; a unit that is not the leader keeps no record but its port.
// leader-elected runs no is-leader; upgrade-charm reads the configuration again.
func TestRecordNotTrusted(t *testing.T) {
	for _, tt := range []struct {
		kind    juju.Kind
		want    []string
		notWant []string
	}{
		{juju.LeaderElected, []string{"secret-get", "relation-ids", "relation-set", "network-get"}, []string{"config-get", "is-leader", "open-port"}},
		{juju.UpgradeCharm, []string{"config-get", "is-leader", "secret-get", "relation-ids", "relation-set", "network-get"}, []string{"open-port"}},
	} {
		t.Run(string(tt.kind), func(t *testing.T) {
			e := newEnv(t)
			in := e.joined()
			_, calls, err := e.runTools(in, jujutest.Hook(tt.kind), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.want {
				if !slices.Contains(calls, want) {
					t.Errorf("%s did not run %s: %q", tt.kind, want, calls)
				}
			}
			for _, no := range tt.notWant {
				if slices.Contains(calls, no) {
					t.Errorf("%s ran %s: %q", tt.kind, no, calls)
				}
			}
		})
	}
	t.Run("port closed", func(t *testing.T) {
		// No record of the port (a hook that opened it failed): leader-elected opens it.
		e := newEnv(t)
		in := e.run(baseState(), jujutest.Hook(juju.Install))
		_, calls, err := e.runTools(in, jujutest.Hook(juju.LeaderElected), nil)
		if err != nil || !slices.Contains(calls, "open-port") || slices.Contains(calls, "is-leader") {
			t.Errorf("first leader-elected: %v, tools %q", err, calls)
		}
	})
	t.Run("standby", func(t *testing.T) {
		e := newEnv(t)
		in := e.joined()
		st, _ := e.c.loadState()
		if st.Published == nil || !st.Published.PortOpen || st.Published.Relations["slurmd:1"].Data == nil {
			t.Fatalf("leader keeps no record: %+v", st.Published)
		}
		in.Leader = false
		in = e.run(in, jujutest.Hook(juju.ConfigChanged))
		if st, _ := e.c.loadState(); st.Published == nil || !cmp.Equal(*st.Published, published{PortOpen: true}) {
			t.Errorf("standby keeps a record beyond its port: %+v", st.Published)
		}
		// Leader again: everything is written again but the port.
		in.Leader = true
		_, calls, err := e.runTools(in, jujutest.Hook(juju.LeaderElected), nil)
		if err != nil || !slices.Contains(calls, "relation-set") || !slices.Contains(calls, "secret-get") || slices.Contains(calls, "open-port") {
			t.Errorf("new term: %v, tools %q", err, calls)
		}
	})
	t.Run("rotation", func(t *testing.T) {
		e := newEnv(t)
		in := e.joined()
		out := e.run(in, jujutest.ActionEvent("rotate-auth-key"))
		if out.Action.Failed {
			t.Fatal(out.Action.Message)
		}
		// The action recorded the revision it installed: configure reads no secret.
		_, calls, err := e.runTools(out, jujutest.Hook(juju.ConfigChanged), nil)
		// The mount and peer relations are listed on every configure hook (high
		// availability), the slurmd relations not.
		if err != nil || len(only(calls, readTools)) != 2 || len(only(calls, []string{"relation-ids"})) != 2 {
			t.Errorf("config-changed after a rotation: %v, tools %q", err, calls)
		}
		// The key file no longer matches the record (changed behind the charm's back):
		// the secret is read and the key written again.
		if err := writeTestFile(e.c.Path("/etc/munge/munge.key"), "tampered"); err != nil {
			t.Fatal(err)
		}
		_, calls, err = e.runTools(out, jujutest.Hook(juju.ConfigChanged), nil)
		if err != nil || !slices.Contains(calls, "secret-get") {
			t.Errorf("config-changed after the key file changed: %v, tools %q", err, calls)
		}
		key, _, _ := slurmd.DecodeAuthSecret(out.Secrets[0].Revisions[1])
		if e.read("/etc/munge/munge.key") != string(key) {
			t.Errorf("key file not restored from the secret")
		}
	})
}

func writeTestFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }

// TestConfigReadOnce: config-get runs on config-changed, upgrade-charm and when the state
// keeps no configuration; other hooks validate the kept copy, a bad value included.
func TestConfigReadOnce(t *testing.T) {
	e := newEnv(t)
	in := baseState()
	tools := func(ev juju.Event) []string {
		t.Helper()
		out, calls, err := e.runTools(in, ev, nil)
		if err != nil {
			t.Fatal(err)
		}
		in = out
		return calls
	}
	if d := cmp.Diff([]string{"status-set"}, tools(jujutest.Hook(juju.Install))); d != "" {
		t.Errorf("install's hook tools: no config-get, no is-leader (-want +got):\n%s", d)
	}
	// Juju's order: leader-elected before the first config-changed; nothing kept yet.
	if calls := tools(jujutest.Hook(juju.LeaderElected)); !slices.Contains(calls, "config-get") || slices.Contains(calls, "is-leader") {
		t.Errorf("first leader-elected: tools %q, want config-get and no is-leader", calls)
	}
	if calls := tools(jujutest.Hook(juju.Start)); slices.Contains(calls, "config-get") {
		t.Errorf("start read the configuration again: %q", calls)
	}
	in.Config["slurm-conf-parameters"] = "NoSuchKey=1"
	if calls := tools(jujutest.Hook(juju.ConfigChanged)); !slices.Contains(calls, "config-get") {
		t.Errorf("config-changed did not read the configuration: %q", calls)
	}
	if in.UnitStatus.Code != juju.StatusBlocked || !strings.Contains(in.UnitStatus.Message, "NoSuchKey") {
		t.Fatalf("bad parameters: status %+v, want blocked naming the key", in.UnitStatus)
	}
	// The kept copy is validated again: still blocked, with no config-get.
	if calls := tools(jujutest.Hook(juju.UpdateStatus)); slices.Contains(calls, "config-get") {
		t.Errorf("update-status read the configuration: %q", calls)
	}
	if in.UnitStatus.Code != juju.StatusBlocked {
		t.Errorf("update-status with the kept bad value: %+v, want blocked", in.UnitStatus)
	}
	in.Config["slurm-conf-parameters"] = ""
	tools(jujutest.Hook(juju.ConfigChanged))
	if in.UnitStatus.Code != juju.StatusActive {
		t.Errorf("after the fix: %+v, want active", in.UnitStatus)
	}
	if st, _ := e.c.loadState(); st.Config == nil || st.Config.SlurmConfParameters != "" || st.Config.ClusterName != "charmed-slurm" {
		t.Errorf("kept configuration %+v", st.Config)
	}
}
