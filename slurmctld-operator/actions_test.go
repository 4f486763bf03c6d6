package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// threeNodes returns a controller with application slurmd and nodes slurmd-0 (idle),
// slurmd-1 (running job 1) and slurmd-2 (drained).
func (e *env) threeNodes() jujutest.State {
	e.t.Helper()
	in := e.withApp("slurmd", "slurmd/0")
	e.slurm.addNode("slurmd-0", "slurmd", false)
	e.slurm.addNode("slurmd-1", "slurmd", false)
	e.slurm.addNode("slurmd-2", "slurmd", true)
	e.slurm.addJob("slurmd", "slurmd-1")
	return in
}

// action runs action name with params on threeNodes.
func (e *env) action(name string, params map[string]any) jujutest.ActionState {
	e.t.Helper()
	in := e.threeNodes()
	in.Action = jujutest.ActionState{Params: params}
	return e.run(in, jujutest.ActionEvent(name)).Action
}

func TestShowCurrentConfig(t *testing.T) {
	e := newEnv(t)
	got := e.action("show-current-config", nil)
	want := map[string]string{
		"slurm-conf":                e.read(confPath),
		"includes.partition-slurmd": e.read(partitionPath("slurmd")),
	}
	if d := cmp.Diff(want, got.Results); d != "" || got.Failed {
		t.Errorf("results (-want +got):\n%s (failed %v %s)", d, got.Failed, got.Message)
	}
}

func TestNodeActions(t *testing.T) {
	tests := []struct {
		name      string
		action    string
		params    map[string]any
		wantCalls [][]string
		results   map[string]string
		failed    string // action-fail message prefix
	}{{
		name: "drain hostlist", action: "set-node-state",
		params:    map[string]any{"nodes": "slurmd-[0-1]", "state": "drain", "reason": "maintenance"},
		wantCalls: [][]string{{"scontrol", "update", "nodename=slurmd-0", "state=drain", "reason=maintenance"}, {"scontrol", "update", "nodename=slurmd-1", "state=drain", "reason=maintenance"}},
		results:   map[string]string{"nodes": "slurmd-[0-1]", "state": "drain"},
	}, {
		name: "resume", action: "set-node-state",
		params:    map[string]any{"nodes": "slurmd-2", "state": "RESUME"},
		wantCalls: [][]string{{"scontrol", "update", "nodename=slurmd-2", "state=resume"}},
		results:   map[string]string{"nodes": "slurmd-2", "state": "resume"},
	}, {
		name: "bad state", action: "set-node-state",
		params: map[string]any{"nodes": "slurmd-0", "state": "sleepy"},
		failed: `state: "sleepy" is not one of idle, resume, drain`,
	}, {
		name: "reason required", action: "set-node-state",
		params: map[string]any{"nodes": "slurmd-0", "state": "down"},
		failed: "reason: required for state down",
	}, {
		name: "bad hostlist", action: "set-node-state",
		params: map[string]any{"nodes": "slurmd-[0-", "state": "idle"},
		failed: "nodes: ",
	}, {
		name: "no nodes", action: "set-node-state",
		params: map[string]any{"nodes": " ", "state": "idle"},
		failed: "nodes: no node given",
	}, {
		name: "unknown node", action: "set-node-state",
		params:  map[string]any{"nodes": "slurmd-0,nope", "state": "drain", "reason": "x"},
		results: map[string]string{"nodes": "slurmd-0", "failed": "nope", "state": "drain"},
		failed:  "node nope: no such node",
	}, {
		name: "drain", action: "drain",
		params:    map[string]any{"nodes": "slurmd-0", "reason": "disk"},
		wantCalls: [][]string{{"scontrol", "update", "nodename=slurmd-0", "state=drain", "reason=disk"}},
		results:   map[string]string{"nodes": "slurmd-0", "state": "drain"},
	}, {
		name: "drain needs reason", action: "drain",
		params: map[string]any{"nodes": "slurmd-0", "reason": ""},
		failed: "reason: required to drain nodes",
	}, {
		name: "resume drained", action: "resume",
		params:    map[string]any{"nodes": "slurmd-2"},
		wantCalls: [][]string{{"scontrol", "update", "nodename=slurmd-2", "state=resume"}},
		results:   map[string]string{"nodes": "slurmd-2", "state": "resume"},
	}, {
		name: "resume idle", action: "resume",
		params:  map[string]any{"nodes": "slurmd-0"},
		results: map[string]string{"nodes": "", "failed": "slurmd-0", "state": "resume"},
		failed:  "node slurmd-0 is neither drained nor down",
	}, {
		name: "delete idle", action: "delete-node",
		params:    map[string]any{"nodes": "slurmd-0"},
		wantCalls: [][]string{{"scontrol", "delete", "nodename=slurmd-0"}},
		results:   map[string]string{"deleted": "slurmd-0"},
	}, {
		name: "delete busy refused", action: "delete-node",
		params:  map[string]any{"nodes": "slurmd-[0-1]"},
		results: map[string]string{"deleted": "slurmd-0", "failed": "slurmd-1"},
		failed:  "node slurmd-1 has running jobs 1: not deleted (force=true cancels them)",
	}, {
		name: "delete busy forced", action: "delete-node",
		params: map[string]any{"nodes": "slurmd-1", "force": true},
		wantCalls: [][]string{
			{"scontrol", "update", "nodename=slurmd-1", "state=drain", "reason=deleted by the delete-node action"},
			{"scancel", "1"},
			{"scontrol", "delete", "nodename=slurmd-1"},
		},
		results: map[string]string{"deleted": "slurmd-1", "cancelled-jobs": "1"},
	}, {
		name: "delete unknown", action: "delete-node",
		params:  map[string]any{"nodes": "nope"},
		results: map[string]string{"deleted": "", "failed": "nope"},
		failed:  "node nope: no such node",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			got := e.action(tt.action, tt.params)
			if tt.failed != "" {
				if !got.Failed || !strings.HasPrefix(got.Message, tt.failed) {
					t.Errorf("failed %v %q, want failure %q", got.Failed, got.Message, tt.failed)
				}
			} else if got.Failed {
				t.Errorf("action failed: %s", got.Message)
			}
			if tt.results != nil {
				if d := cmp.Diff(tt.results, got.Results); d != "" {
					t.Errorf("results (-want +got):\n%s", d)
				}
			}
			var calls [][]string
			for _, c := range e.slurm.commands() {
				if (c[0] == "scontrol" && (c[1] == "update" || c[1] == "delete")) || c[0] == "scancel" {
					calls = append(calls, c)
				}
			}
			if tt.wantCalls != nil || tt.failed != "" && tt.results == nil {
				if d := cmp.Diff(tt.wantCalls, calls); d != "" {
					t.Errorf("commands (-want +got):\n%s", d)
				}
			}
		})
	}
}

func TestRotateAuthKey(t *testing.T) {
	e := newEnv(t)
	in := e.withApp("slurmd", "slurmd/0")
	oldKey := e.read("/etc/munge/munge.key")
	e.svc.ResetCalls()
	out := e.run(in, jujutest.ActionEvent("rotate-auth-key"))
	if out.Action.Failed {
		t.Fatalf("failed: %s", out.Action.Message)
	}
	sec := out.Secrets[0]
	if len(sec.Revisions) != 2 {
		t.Fatalf("revisions: %d", len(sec.Revisions))
	}
	key, keyID, err := slurmd.DecodeAuthSecret(sec.Revisions[1])
	if err != nil || keyID != "2" {
		t.Fatalf("new revision: id %q, %v", keyID, err)
	}
	newKey := e.read("/etc/munge/munge.key")
	if newKey == oldKey || newKey != string(key) {
		t.Errorf("munge key not replaced by the new revision")
	}
	if d := cmp.Diff([]string{"configure munged", "enable munged", "respawn munged"}, e.svc.Calls()); d != "" {
		t.Errorf("service calls (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"keyid": "2", "secret-id": string(sec.ID)}, out.Action.Results); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
	// Again: key id 3. A later configure keeps the new key and does not restart munged.
	out = e.run(out, jujutest.ActionEvent("rotate-auth-key"))
	if out.Action.Results["keyid"] != "3" {
		t.Errorf("results %v", out.Action.Results)
	}
	e.svc.ResetCalls()
	e.run(out, jujutest.Hook(juju.ConfigChanged))
	if e.svc.count("respawn munged") != 0 {
		t.Errorf("munged restarted by config-changed after a rotation")
	}
}

func TestRotateAuthKeyRefused(t *testing.T) {
	e := newEnv(t)
	in := baseState()
	in.Unit, in.Leader = "slurmctld/1", false
	out := e.run(in, jujutest.ActionEvent("rotate-auth-key"))
	if !out.Action.Failed || out.Action.Message != "rotate-auth-key must run on the leader unit" {
		t.Errorf("action %+v", out.Action)
	}
	// Leader without a secret yet.
	out = e.run(baseState(), jujutest.ActionEvent("rotate-auth-key"))
	if !out.Action.Failed || !strings.HasPrefix(out.Action.Message, "no auth key secret yet") {
		t.Errorf("action %+v", out.Action)
	}
}

// TestNodeActionsRefreshStatus: after an action changed nodes, the unit status counts them as
// they are now, not as the last hook saw them.
func TestNodeActionsRefreshStatus(t *testing.T) {
	for _, tt := range []struct {
		action string
		params map[string]any
		want   string
	}{
		{"drain", map[string]any{"nodes": "slurmd-0", "reason": "disk"}, "slurmctld up, 3 nodes (0 idle, 1 allocated, 2 drained)"},
		{"set-node-state", map[string]any{"nodes": "slurmd-1", "state": "drain", "reason": "x"}, "slurmctld up, 3 nodes (1 idle, 0 allocated, 1 drained, 1 draining)"},
		{"resume", map[string]any{"nodes": "slurmd-2"}, "slurmctld up, 3 nodes (2 idle, 1 allocated, 0 drained)"},
		{"delete-node", map[string]any{"nodes": "slurmd-0"}, "slurmctld up, 2 nodes (0 idle, 1 allocated, 1 drained)"},
	} {
		t.Run(tt.action, func(t *testing.T) {
			e := newEnv(t)
			in := e.run(e.threeNodes(), jujutest.Hook(juju.UpdateStatus))
			if d := cmp.Diff(jujuStatus(juju.StatusActive, "slurmctld up, 3 nodes (1 idle, 1 allocated, 1 drained)"), in.UnitStatus); d != "" {
				t.Fatalf("status before (-want +got):\n%s", d)
			}
			in.Action = jujutest.ActionState{Params: tt.params}
			out := e.run(in, jujutest.ActionEvent(tt.action))
			if out.Action.Failed {
				t.Fatal(out.Action.Message)
			}
			if d := cmp.Diff(jujuStatus(juju.StatusActive, tt.want), out.UnitStatus); d != "" {
				t.Errorf("status after %s (-want +got):\n%s", tt.action, d)
			}
		})
	}
}
