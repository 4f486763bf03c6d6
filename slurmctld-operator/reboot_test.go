package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// reboots are the scontrol reboot calls made so far.
func (h *host) reboots() [][]string {
	var out [][]string
	for _, c := range h.commands() {
		if c[0] == "scontrol" && c[1] == "reboot" {
			out = append(out, c)
		}
	}
	return out
}

func rebootCall(reason, nodes string) []string {
	return []string{"scontrol", "reboot", "ASAP", "nextstate=resume", "reason=" + reason, nodes}
}

func TestRebootAction(t *testing.T) {
	tests := []struct {
		name      string
		params    map[string]any
		wantCalls [][]string
		results   map[string]string
		failed    string
	}{{
		name:      "all at once",
		params:    map[string]any{"nodes": "slurmd-[0-2]", "reason": "kernel update", "max-unavailable": 3},
		wantCalls: [][]string{rebootCall("kernel update", "slurmd-[0-2]")},
		results:   map[string]string{"nodes": "slurmd-[0-2]", "max-unavailable": "3"},
	}, {
		name:      "more than the nodes",
		params:    map[string]any{"nodes": "slurmd-[0-1]", "reason": "kernel update", "max-unavailable": 10},
		wantCalls: [][]string{rebootCall("kernel update", "slurmd-[0-1]")},
		results:   map[string]string{"nodes": "slurmd-[0-1]", "max-unavailable": "2"},
	}, {
		name:      "default share: one of three",
		params:    map[string]any{"nodes": "slurmd-[0-2]", "reason": "kernel update"},
		wantCalls: [][]string{rebootCall("kernel update", "slurmd-0")},
		results:   map[string]string{"nodes": "slurmd-0", "queued": "slurmd-[1-2]", "max-unavailable": "1"},
	}, {
		name:   "zero refused",
		params: map[string]any{"nodes": "slurmd-[0-2]", "max-unavailable": 0},
		failed: "max-unavailable: 0: must be at least 1",
	}, {
		name:      "default reason",
		params:    map[string]any{"nodes": "slurmd-1"},
		wantCalls: [][]string{rebootCall(defaultRebootReason, "slurmd-1")},
		results:   map[string]string{"nodes": "slurmd-1", "max-unavailable": "1"},
	}, {
		name:      "rolling",
		params:    map[string]any{"nodes": "slurmd-[0-2]", "reason": "rebuild", "max-unavailable": 2},
		wantCalls: [][]string{rebootCall("rebuild", "slurmd-[0-1]")},
		results:   map[string]string{"nodes": "slurmd-[0-1]", "queued": "slurmd-2", "max-unavailable": "2"},
	}, {
		name:    "unknown node",
		params:  map[string]any{"nodes": "slurmd-[0-1],nope"},
		results: map[string]string{"nodes": "", "failed": "nope"},
		failed:  "node nope: no such node",
	}, {
		name:   "bad reason",
		params: map[string]any{"nodes": "slurmd-0", "reason": `a "quoted" reason`},
		failed: "reason: must not contain",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			got := e.action("reboot", tt.params)
			switch {
			case tt.failed != "":
				if !got.Failed || !strings.HasPrefix(got.Message, tt.failed) {
					t.Errorf("action: failed %v %q, want failure %q", got.Failed, got.Message, tt.failed)
				}
			case got.Failed:
				t.Errorf("action failed: %s", got.Message)
			}
			if tt.results != nil {
				if d := cmp.Diff(tt.results, got.Results); d != "" {
					t.Errorf("results (-want +got):\n%s", d)
				}
			}
			if d := cmp.Diff(tt.wantCalls, e.slurm.reboots()); d != "" {
				t.Errorf("reboot calls (-want +got):\n%s", d)
			}
		})
	}
}

// TestRollingReboot: with max-unavailable=1 each node is asked to reboot only once the one
// before is back (a new boot time, in service), the status counts the queue, and the plan ends.
func TestRollingReboot(t *testing.T) {
	e := newEnv(t)
	in := e.withApp("slurmd", "slurmd/0")
	for _, n := range []string{"slurmd-0", "slurmd-1", "slurmd-2"} {
		e.slurm.addNode(n, "slurmd", false)
	}
	e.slurm.addJob("slurmd", "slurmd-1")
	in.Action = jujutest.ActionState{Params: map[string]any{"nodes": "slurmd-[0-2]", "max-unavailable": 1, "reason": "rebuild"}}
	out := e.run(in, jujutest.ActionEvent("reboot"))
	if out.Action.Failed {
		t.Fatalf("reboot failed: %s", out.Action.Message)
	}
	// The action itself shows the rolling reboot in the unit status (no hook may come before
	// the next update-status).
	if s := out.UnitStatus.Message; !strings.Contains(s, "rebooting slurmd-0, 2 nodes queued (max-unavailable 1)") {
		t.Errorf("status %q right after the reboot action does not show the rolling reboot", s)
	}
	want := [][]string{rebootCall("rebuild", "slurmd-0")}
	status := func() string {
		e.t.Helper()
		out = e.run(out, jujutest.Hook(juju.UpdateStatus))
		return out.UnitStatus.Message
	}
	if s := status(); !strings.Contains(s, "rebooting slurmd-0, 2 nodes queued (max-unavailable 1)") {
		t.Errorf("status %q does not show the rolling reboot", s)
	}
	if d := cmp.Diff(want, e.slurm.reboots()); d != "" {
		t.Fatalf("slurmd-0 not back, yet (-want +got):\n%s", d)
	}
	for _, n := range []string{"slurmd-0", "slurmd-1"} {
		e.slurm.Rebooted(n)
		status()
		next := map[string]string{"slurmd-0": "slurmd-1", "slurmd-1": "slurmd-2"}[n]
		want = append(want, rebootCall("rebuild", next))
		if d := cmp.Diff(want, e.slurm.reboots()); d != "" {
			t.Fatalf("after %s came back (-want +got):\n%s", n, d)
		}
	}
	e.slurm.Rebooted("slurmd-2")
	if s := status(); strings.Contains(s, "rebooting") {
		t.Errorf("status %q after the last node came back", s)
	}
	if d := cmp.Diff(want, e.slurm.reboots()); d != "" {
		t.Errorf("extra reboots (-want +got):\n%s", d)
	}
}

func TestDefaultMaxUnavailable(t *testing.T) {
	for n, want := range map[int]int{1: 1, 3: 1, 10: 1, 11: 2, 20: 2, 64: 7, 256: 26} {
		if got := defaultMaxUnavailable(n); got != want {
			t.Errorf("defaultMaxUnavailable(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestRollingRebootUnknownNode: a node asked to reboot that Slurm does not know (its record
// deleted by RebootProgram for a staged node-config, until its unit registers it again after
// the boot) is still away, for as many checks as it takes: the next node is not asked. A node
// back but drained by its unit is still away. A node whose unit departs leaves the plan.
func TestRollingRebootUnknownNode(t *testing.T) {
	e := newEnv(t)
	in := e.withApp("slurmd", "slurmd/0", "slurmd/1", "slurmd/2")
	for _, n := range []string{"slurmd-0", "slurmd-1", "slurmd-2"} {
		e.slurm.addNode(n, "slurmd", false)
	}
	in.Action = jujutest.ActionState{Params: map[string]any{"nodes": "slurmd-[0-2]", "max-unavailable": 1, "reason": "rebuild"}}
	out := e.run(in, jujutest.ActionEvent("reboot"))
	if out.Action.Failed {
		t.Fatalf("reboot failed: %s", out.Action.Message)
	}
	scontrol := e.scontrol
	del := func(n string) { t.Helper(); scontrol("delete", "nodename="+n) }
	updateStatus := func() { out = e.run(out, jujutest.Hook(juju.UpdateStatus)) }
	want := [][]string{rebootCall("rebuild", "slurmd-0")}
	// slurmd-0 is away (deleted) for several checks, then back with a new boot.
	del("slurmd-0")
	for range 3 {
		updateStatus()
		if d := cmp.Diff(want, e.slurm.reboots()); d != "" {
			t.Fatalf("a node away with no record let the next go (-want +got):\n%s", d)
		}
	}
	if !strings.Contains(out.UnitStatus.Message, "rebooting slurmd-0") {
		t.Errorf("status %q does not show slurmd-0 rebooting", out.UnitStatus.Message)
	}
	// Back, but drained by its unit (registering it with a staged node-config): still away.
	e.slurm.addNode("slurmd-0", "slurmd", false)
	e.slurm.Rebooted("slurmd-0")
	scontrol("update", "nodename=slurmd-0", "state=drain", "reason=reconfiguring node slurmd-0")
	updateStatus()
	if d := cmp.Diff(want, e.slurm.reboots()); d != "" {
		t.Fatalf("a drained node counted as back (-want +got):\n%s", d)
	}
	scontrol("update", "nodename=slurmd-0", "state=resume")
	updateStatus()
	want = append(want, rebootCall("rebuild", "slurmd-1"))
	if d := cmp.Diff(want, e.slurm.reboots()); d != "" {
		t.Fatalf("after slurmd-0 came back (-want +got):\n%s", d)
	}
	// slurmd-1's unit is removed while it reboots: it leaves the plan, and slurmd-2 goes.
	del("slurmd-1")
	updateStatus()
	if d := cmp.Diff(want, e.slurm.reboots()); d != "" {
		t.Fatalf("a node away let the next go (-want +got):\n%s", d)
	}
	delete(out.Relations[0].RemoteUnits, "slurmd/1")
	out = e.run(out, jujutest.RelationHook(juju.RelationDeparted, "slurmd:1", "slurmd/1"))
	updateStatus()
	want = append(want, rebootCall("rebuild", "slurmd-2"))
	if d := cmp.Diff(want, e.slurm.reboots()); d != "" {
		t.Fatalf("after slurmd-1's unit departed (-want +got):\n%s", d)
	}
}
