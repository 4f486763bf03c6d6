package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/slurm"
)

func TestNodeConfigBadInput(t *testing.T) {
	tests := []struct {
		name    string
		params  map[string]any
		wantMsg string
	}{
		{"NodeName", map[string]any{"parameters": "NodeName=x"}, `parameters: key "NodeName" is managed by the charm and cannot be set`},
		{"NodeAddr", map[string]any{"parameters": "Weight=2 NodeAddr=10.0.0.1"}, `parameters: key "NodeAddr" is managed by the charm and cannot be set`},
		{"NodeHostname", map[string]any{"parameters": "nodehostname=h"}, `parameters: key "nodehostname" is managed by the charm and cannot be set`},
		{"State", map[string]any{"parameters": "State=idle"}, `parameters: key "State" is managed by the charm and cannot be set`},
		{"Reason", map[string]any{"parameters": `Reason="a b"`}, `parameters: key "Reason" is managed by the charm and cannot be set`},
		{"Port", map[string]any{"parameters": "Port=6818"}, `parameters: key "Port" is managed by the charm and cannot be set`},
		// Slurm 26.05's gres.conf lines of a dynamic node: a second source of the node's GRES.
		{"GresConf", map[string]any{"parameters": "GresConf=Name=gpu"}, `parameters: key "GresConf" is managed by the charm and cannot be set`},
		{"unknown key", map[string]any{"parameters": "Wieght=10"}, `parameters: unknown node key "Wieght" (did you mean "Weight"?)`},
		{"not a number", map[string]any{"parameters": "RealMemory=lots"}, `parameters: key "RealMemory": value "lots" is not a whole number`},
		{"Weight out of range", map[string]any{"parameters": "Weight=4294967296"}, `parameters: key "Weight": value 4294967296 is out of range (at most 4294967295)`},
		{"CPUs out of range", map[string]any{"parameters": "cpus=65536"}, `parameters: key "cpus": value 65536 is out of range (at most 65535)`},
		{"feature operator", map[string]any{"parameters": "Features=a|b"}, `parameters: key "Features": "a|b" is not a feature name a job can select with --constraint (feature names are letters, digits, '_', '-' and '.', separated by commas)`},
		{"feature with space", map[string]any{"parameters": `Features="a b"`}, `parameters: key "Features": "a b" is not a feature name a job can select with --constraint (feature names are letters, digits, '_', '-' and '.', separated by commas)`},
		{"feature shell", map[string]any{"parameters": "Features=$(touch${IFS}/tmp/x)"}, `parameters: key "Features": "$(touch${IFS}/tmp/x)" is not a feature name a job can select with --constraint (feature names are letters, digits, '_', '-' and '.', separated by commas)`},
		{"value too long", map[string]any{"parameters": "Features=" + strings.Repeat("a", 70000)}, `parameters: key "Features": value is 70000 characters long (at most 1024)`},
		{"syntax", map[string]any{"parameters": "Weight=1 Weight=2"}, `parameters: line 1, column 10: duplicate key "Weight" (first given at column 1)`},
		{"timeout", map[string]any{"parameters": "Weight=2", "timeout": "soon"}, `timeout: invalid duration "soon" (want e.g. 90s or 10m)`},
		{"negative timeout", map[string]any{"parameters": "Weight=2", "timeout": "-1s"}, `timeout: invalid duration "-1s" (want e.g. 90s or 10m)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.join()
			before := e.savedState()
			svcBefore := len(e.svc.Calls())
			a := e.action(tt.params)
			if !a.Failed || a.Message != tt.wantMsg {
				t.Errorf("action failed=%v message %q, want failure %q", a.Failed, a.Message, tt.wantMsg)
			}
			if len(e.slurmCalls()) != 0 {
				t.Errorf("bad input touched the node: %q", e.slurmCalls())
			}
			for _, c := range e.svc.Calls()[svcBefore:] {
				if !strings.HasPrefix(c, "status") {
					t.Errorf("bad input ran service call %q", c)
				}
			}
			e.stateUnchanged(before)
		})
	}
}

func TestNodeConfigApply(t *testing.T) {
	e := newEnv(t)
	e.join()
	// A job runs; it ends while the action waits.
	e.slurm.startJobs(node, 2, 3)
	a := e.action(map[string]any{"parameters": "Weight=10 Features=gpu,fast RealMemory=20000", "timeout": "1m"})
	if a.Failed {
		t.Fatalf("action failed: %s", a.Message)
	}
	wantConf := "CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=20000 Weight=10 Feature=slurmd,gpu,fast"
	want := map[string]string{
		"node":        node,
		"conf":        wantConf,
		"node-config": "Weight=10 Features=gpu,fast RealMemory=20000",
		"state":       "IDLE+DYNAMIC_NORM",
		"features":    "slurmd,gpu,fast",
		"cpus":        "2",
		"real-memory": "20000",
		"weight":      "10",
		"tmpdisk":     "0",
	}
	if d := cmp.Diff(want, a.Results); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
	wantCalls := []string{
		"scontrol update nodename=slurmd-3 state=drain reason=reconfiguring node slurmd-3",
		"scontrol delete nodename=slurmd-3",
	}
	if d := cmp.Diff(wantCalls, e.slurmCalls()); d != "" {
		t.Errorf("slurm calls (-want +got):\n%s", d)
	}
	if e.slurm.busyDeletes() != 0 {
		t.Errorf("delete tried while jobs ran")
	}
	if n, ok := e.slurm.Node(node); !ok || n.State.Drain() {
		t.Errorf("node %v (known %v): want re-registered and not drained (it was idle)", n.State, ok)
	}
	if len(a.Logs) == 0 || !strings.Contains(strings.Join(a.Logs, "\n"), "waiting for 2 jobs on slurmd-3") {
		t.Errorf("no progress logged: %q", a.Logs)
	}
	st := e.savedState()
	if st.NodeConfig != "Weight=10 Features=gpu,fast RealMemory=20000" || st.Applied.Conf != wantConf {
		t.Errorf("saved state %+v", st)
	}
	if d := cmp.Diff(active("node slurmd-3 idle"), e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}

	// Merged with the saved node-config; the node's down state is restored.
	e.slurm.update(node, "state=down", "reason=bad fan")
	a = e.action(map[string]any{"parameters": "Weight=20"})
	if a.Failed {
		t.Fatalf("action failed: %s", a.Message)
	}
	if got := a.Results["node-config"]; got != "Weight=20 Features=gpu,fast RealMemory=20000" {
		t.Errorf("node-config %q, want merged", got)
	}
	if n, _ := e.slurm.Node(node); !n.State.Down() || n.Reason != "bad fan" {
		t.Errorf("down state not restored: %v, reason %q", n.State, n.Reason)
	}

	// reset returns to the slurmd -C baseline.
	a = e.action(map[string]any{"reset": true})
	if a.Failed {
		t.Fatalf("action failed: %s", a.Message)
	}
	if got := a.Results["conf"]; got != "CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105 Feature=slurmd" {
		t.Errorf("conf after reset %q", got)
	}
	if e.savedState().NodeConfig != "" {
		t.Errorf("node-config not reset")
	}
}

func TestNodeConfigUnchanged(t *testing.T) {
	e := newEnv(t)
	e.join()
	a := e.action(map[string]any{"parameters": ""})
	if a.Failed || a.Results["node"] != node {
		t.Fatalf("action %+v", a)
	}
	if len(e.slurmCalls()) != 0 {
		t.Errorf("unchanged node-config touched the node: %q", e.slurmCalls())
	}
}

func TestNodeConfigTimeout(t *testing.T) {
	for _, prev := range []string{"idle", "drained"} {
		t.Run(prev, func(t *testing.T) {
			e := newEnv(t)
			e.join()
			e.slurm.startJobs(node, 2, -1)
			if prev == "drained" {
				e.slurm.update(node, "state=drain", "reason=admin")
			}
			before := e.savedState()
			a := e.action(map[string]any{"parameters": "Weight=10", "timeout": "2s"})
			if !a.Failed || !strings.Contains(a.Message, "2 jobs still running on slurmd-3") {
				t.Errorf("action failed=%v %q, want a timeout naming 2 jobs", a.Failed, a.Message)
			}
			n, _ := e.slurm.Node(node)
			if prev == "idle" && n.State.Drain() {
				t.Errorf("node left drained after the timeout")
			}
			if prev == "drained" && (!n.State.Drain() || n.Reason != "admin") {
				t.Errorf("admin drain lost: %v, reason %q", n.State, n.Reason)
			}
			if !e.svc.Active(SlurmdService) {
				t.Errorf("slurmd stopped")
			}
			e.stateUnchanged(before)
		})
	}
}

func TestNodeConfigBeforeJoin(t *testing.T) {
	e := newEnv(t)
	a := e.action(map[string]any{"parameters": "Weight=5"})
	if a.Failed {
		t.Fatalf("action failed: %s", a.Message)
	}
	if e.savedState().NodeConfig != "Weight=5" {
		t.Errorf("node-config not saved")
	}
	e.join()
	if cmd := strings.Join(e.svc.Command(SlurmdService), " "); !strings.Contains(cmd, "Weight=5 Feature=slurmd") {
		t.Errorf("slurmd command %q lacks the saved node-config", cmd)
	}
}

// TestConfigKeysPerRelease checks that partition-config and node-config are validated against
// the key set of the machine's Slurm release, as cached in the state's facts (22.05's while
// unknown).
func TestConfigKeysPerRelease(t *testing.T) {
	tests := []struct {
		name, facts         string // "": no facts cached yet
		partition, node     string
		partitionOK, nodeOK bool
	}{
		{name: "24.11 keys on 24.11", facts: "24.11.5", partition: "PowerDownOnIdle=YES MaxCPUsPerSocket=2", node: "RestrictedCoresPerGPU=1", partitionOK: true, nodeOK: true},
		{name: "24.11 keys on 22.05", facts: "22.05.8", partition: "PowerDownOnIdle=YES", node: "RestrictedCoresPerGPU=1"},
		{name: "24.11 keys, release unknown", partition: "MaxCPUsPerSocket=2", node: "RestrictedCoresPerGPU=1"},
		{name: "22.05 keys on 24.11", facts: "24.11.5", partition: "MaxTime=1:00:00", node: "Weight=2", partitionOK: true, nodeOK: true},
		{name: "bad value on 24.11", facts: "24.11.5", partition: "PowerDownOnIdle=maybe", node: "Weight=x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &hook{st: &State{}}
			if tt.facts != "" {
				h.st.Facts = &Facts{Version: tt.facts}
			}
			err := config{PartitionConfig: tt.partition}.validate(h.confKeys(), "slurmd")
			if (err == nil) != tt.partitionOK {
				t.Errorf("partition-config %q: %v, want ok=%v", tt.partition, err, tt.partitionOK)
			}
			_, err = ParseNodeConfig(h.confKeys(), tt.node)
			if (err == nil) != tt.nodeOK {
				t.Errorf("node-config %q: %v, want ok=%v", tt.node, err, tt.nodeOK)
			}
		})
	}
}

// TestNodeConfigOnReboot: node-config on-reboot=true stages the change without touching the
// running node (no drain, no delete, jobs keep running); the start after the reboot Slurm
// asked for registers the node with it through the transactional path (its jobs awaited), once
// Slurm has it back in service; a later plain node-config drops what is staged.
// TestNodeConfigOnReboot: a node-config staged with on-reboot=true leaves the running node
// alone, keeps slurmd from starting at boot and marks it staged for RebootProgram. When Slurm's
// reboot ran RebootProgram (which deleted the record before the machine went down), the start
// hook after the boot registers the node once, with the staged node-config; after a reboot
// Slurm did not ask for (the record kept), it re-registers the node (drain, delete, start).
func TestNodeConfigOnReboot(t *testing.T) {
	tests := []struct {
		name string
		// rebootProgram: Slurm's reboot ran RebootProgram, which deleted the node's record.
		rebootProgram bool
		wantCalls     []string
	}{
		{name: "rebooted by Slurm", rebootProgram: true},
		{name: "rebooted unasked", wantCalls: []string{
			"scontrol update nodename=slurmd-3 state=drain reason=reconfiguring node slurmd-3",
			"scontrol delete nodename=slurmd-3",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.join()
			e.slurm.startJobs(node, 1, 1000)
			a := e.action(map[string]any{"parameters": "Weight=7", "on-reboot": true})
			if a.Failed {
				t.Fatalf("action failed: %s", a.Message)
			}
			if a.Results["staged-node-config"] != "Weight=7" || a.Results["node-config"] != "" {
				t.Errorf("results %v", a.Results)
			}
			if got := e.slurmCalls(); len(got) != 0 {
				t.Errorf("staging touched the node: %q", got)
			}
			if st := e.savedState(); st.StagedNodeConfig != "Weight=7" || st.NodeConfig != "" || strings.Contains(st.Applied.Conf, "Weight") {
				t.Errorf("saved state %+v", st)
			}
			if msg := e.status().Message; !strings.HasSuffix(msg, "; node-config staged for the next reboot") {
				t.Errorf("status %q does not say what is staged", msg)
			}
			if got := e.marker(); got != "staged\n" {
				t.Errorf("%s = %q, want staged", StagedMarker, got)
			}
			if st, err := e.svc.Status(context.Background(), SlurmdService); err != nil || st.Enabled || !e.svc.Active(SlurmdService) {
				t.Errorf("slurmd after staging: %+v %v, want running and not started at boot", st, err)
			}

			// Slurm reboots the node once its job ended (scontrol reboot ASAP nextstate=resume).
			e.slurm.endJobsOn(node)
			if out, err := e.slurm.Cluster.Run(context.Background(), []string{"scontrol", "reboot", "ASAP", "nextstate=resume", "reason=rolling rebuild", node}, []string{"SLURM_CONF=" + filepath.Join(e.slurm.root, SpoolConf)}); err != nil || out.ExitCode != 0 {
				t.Fatalf("scontrol reboot: %v %s", err, out.Stderr)
			}
			if tt.rebootProgram {
				// RebootProgram deletes the record and says so (rebootScript), then reboots.
				if out, err := e.slurm.Cluster.Run(context.Background(), []string{"scontrol", "delete", "nodename=" + node}, []string{"SLURM_CONF=" + filepath.Join(e.slurm.root, SpoolConf)}); err != nil || out.ExitCode != 0 {
					t.Fatalf("scontrol delete: %v %s", err, out.Stderr)
				}
				if err := os.WriteFile(filepath.Join(e.root, StagedMarker), []byte("deleted\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.run(jujutest.Hook(juju.Stop)); err != nil {
				t.Fatal(err)
			}
			if tt.rebootProgram {
				e.svc.Exit(SlurmdService) // not started at boot
			} else {
				e.slurm.Rebooted(node)
			}
			before := len(e.slurmCalls())
			if err := e.run(jujutest.Hook(juju.Start)); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.wantCalls, e.slurmCalls()[before:]); d != "" {
				t.Errorf("slurm calls at start (-want +got):\n%s", d)
			}
			n, ok := e.slurm.Node(node)
			if !ok || n.State.Drain() || n.State.Down() || !strings.Contains(e.slurm.conf(node), "Weight=7") {
				t.Errorf("after the start: node %v known %v conf %q, want registered with Weight=7, in service", n.State, ok, e.slurm.conf(node))
			}
			if st, err := e.svc.Status(context.Background(), SlurmdService); err != nil || !st.Enabled || !e.svc.Active(SlurmdService) {
				t.Errorf("slurmd after the start: %+v %v, want running and started at boot", st, err)
			}
			if st := e.savedState(); st.StagedNodeConfig != "" || st.NodeConfig != "Weight=7" || !strings.Contains(st.Applied.Conf, "Weight=7") {
				t.Errorf("saved state after the start %+v", st)
			}
			if got := e.marker(); got != "" {
				t.Errorf("%s = %q after the start, want none", StagedMarker, got)
			}
			if d := cmp.Diff(active("node slurmd-3 idle"), e.status()); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}

			// A start with nothing staged touches nothing.
			before = len(e.slurmCalls())
			if err := e.run(jujutest.Hook(juju.Start)); err != nil {
				t.Fatal(err)
			}
			if got := e.slurmCalls()[before:]; len(got) != 0 {
				t.Errorf("start with nothing staged: %q", got)
			}

			// Staged again, then a plain node-config: applied now, the staged one dropped.
			if a := e.action(map[string]any{"parameters": "Weight=8", "on-reboot": true}); a.Failed {
				t.Fatalf("action failed: %s", a.Message)
			}
			if a := e.action(map[string]any{"parameters": "Weight=9"}); a.Failed || a.Results["weight"] != "9" {
				t.Fatalf("plain node-config: %+v", a)
			}
			if st := e.savedState(); st.StagedNodeConfig != "" || st.NodeConfig != "Weight=9" {
				t.Errorf("saved state %+v, want the staged node-config dropped", st)
			}
			if st, err := e.svc.Status(context.Background(), SlurmdService); err != nil || !st.Enabled || e.marker() != "" {
				t.Errorf("after the staged node-config was dropped: slurmd %+v %v, marker %q; want started at boot, no marker", st, err, e.marker())
			}
		})
	}
}

// TestNodeConfigStagedRefused: Slurm refuses the staged node-config at the boot's registration
// (the record deleted by RebootProgram): the node registers with its previous configuration,
// nothing stays staged, slurmd starts at boot again.
func TestNodeConfigStagedRefused(t *testing.T) {
	e := newEnv(t)
	e.join()
	if a := e.action(map[string]any{"parameters": "TmpDisk=5000", "on-reboot": true}); a.Failed {
		t.Fatalf("action failed: %s", a.Message)
	}
	if out, err := e.slurm.Cluster.Run(context.Background(), []string{"scontrol", "delete", "nodename=" + node}, []string{"SLURM_CONF=" + filepath.Join(e.slurm.root, SpoolConf)}); err != nil || out.ExitCode != 0 {
		t.Fatalf("scontrol delete: %v %s", err, out.Stderr)
	}
	if err := os.WriteFile(filepath.Join(e.root, StagedMarker), []byte("deleted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.svc.Exit(SlurmdService)
	if err := e.run(jujutest.Hook(juju.Start)); err != nil {
		t.Fatal(err)
	}
	n, ok := e.slurm.Node(node)
	if !ok || n.State.Has(slurm.FlagInvalidReg) || strings.Contains(e.slurm.conf(node), "TmpDisk") {
		t.Errorf("after the start: node %v known %v conf %q, want registered with its previous configuration", n.State, ok, e.slurm.conf(node))
	}
	if st := e.savedState(); st.StagedNodeConfig != "" || st.NodeConfig != "" || strings.Contains(st.Applied.Conf, "TmpDisk") {
		t.Errorf("saved state after the start %+v", st)
	}
	if st, err := e.svc.Status(context.Background(), SlurmdService); err != nil || !st.Enabled || e.marker() != "" {
		t.Errorf("slurmd %+v %v, marker %q; want started at boot, no marker", st, err, e.marker())
	}
}

// TestNodeConfigOnRebootNotBack: a start whose node Slurm still holds in its reboot (not
// back within RegisterTimeout) leaves the record alone and keeps the node-config staged.
func TestNodeConfigOnRebootNotBack(t *testing.T) {
	e := newEnv(t)
	e.join()
	if a := e.action(map[string]any{"parameters": "Weight=7", "on-reboot": true}); a.Failed {
		t.Fatalf("action failed: %s", a.Message)
	}
	if out, err := e.slurm.Cluster.Run(context.Background(), []string{"scontrol", "reboot", "ASAP", "nextstate=resume", "reason=rolling rebuild", node}, []string{"SLURM_CONF=" + filepath.Join(e.slurm.root, SpoolConf)}); err != nil || out.ExitCode != 0 {
		t.Fatalf("scontrol reboot: %v %s", err, out.Stderr)
	}
	e.charm.RegisterTimeout = 20 * time.Millisecond
	before := len(e.slurmCalls())
	if err := e.run(jujutest.Hook(juju.Start)); err != nil {
		t.Fatal(err)
	}
	if got := e.slurmCalls()[before:]; len(got) != 0 {
		t.Errorf("start touched a node still rebooting: %q", got)
	}
	if st := e.savedState(); st.StagedNodeConfig != "Weight=7" || strings.Contains(st.Applied.Conf, "Weight") {
		t.Errorf("saved state %+v, want the node-config still staged", st)
	}
}

// marker is StagedMarker's content ("" when there is none).
func (e *env) marker() string {
	data, _ := os.ReadFile(filepath.Join(e.root, StagedMarker))
	return string(data)
}

// TestNodeConfigStagedRebootFailed: RebootProgram deleted the record for the staged
// node-config but the machine did not reboot: once it is still up RebootGrace later,
// update-status registers the node with it (not before: the machine may be going down).
func TestNodeConfigStagedRebootFailed(t *testing.T) {
	e := newEnv(t)
	e.join()
	if a := e.action(map[string]any{"parameters": "Weight=7", "on-reboot": true}); a.Failed {
		t.Fatalf("action failed: %s", a.Message)
	}
	if out, err := e.slurm.Cluster.Run(context.Background(), []string{"scontrol", "delete", "nodename=" + node}, []string{"SLURM_CONF=" + filepath.Join(e.slurm.root, SpoolConf)}); err != nil || out.ExitCode != 0 {
		t.Fatalf("scontrol delete: %v %s", err, out.Stderr)
	}
	marker := filepath.Join(e.root, StagedMarker)
	if err := os.WriteFile(marker, []byte("deleted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Right after RebootProgram the machine is going down: update-status registers nothing.
	if err := e.run(jujutest.Hook(juju.UpdateStatus)); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.slurm.Node(node); ok {
		t.Errorf("update-status registered the node while its reboot was under way")
	}
	if st := e.savedState(); st.StagedNodeConfig != "Weight=7" || e.marker() != "deleted\n" {
		t.Errorf("staged %q, marker %q after update-status within the grace", st.StagedNodeConfig, e.marker())
	}
	// Still up a minute later: the reboot did not happen.
	then := time.Now().Add(-DefaultRebootGrace)
	if err := os.Chtimes(marker, then, then); err != nil {
		t.Fatal(err)
	}
	if err := e.run(jujutest.Hook(juju.UpdateStatus)); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.slurm.Node(node); !ok || !strings.Contains(e.slurm.conf(node), "Weight=7") {
		t.Errorf("node known %v conf %q, want registered with Weight=7", ok, e.slurm.conf(node))
	}
	if st := e.savedState(); st.StagedNodeConfig != "" || st.NodeConfig != "Weight=7" {
		t.Errorf("saved state %+v", st)
	}
	if d := cmp.Diff(active("node slurmd-3 idle"), e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
}
