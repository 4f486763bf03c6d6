package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// Values above what slurmd -C reports are refused before the node is touched.
func TestNodeConfigAboveMachine(t *testing.T) {
	tests := []struct {
		name, params, want string
	}{
		{"RealMemory", "Weight=2 RealMemory=24106", `parameters: key "RealMemory": 24106 is more than this machine has (24105, from slurmd -C); Slurm would refuse the node`},
		{"CPUs", "CPUs=64", `parameters: key "CPUs": 64 is more than this machine has (2, from slurmd -C); Slurm would refuse the node`},
		{"Sockets", "Sockets=2", `parameters: key "Sockets": 2 is more than this machine has (1, from slurmd -C); Slurm would refuse the node`},
		{"CoresPerSocket", "coresPerSocket=4", `parameters: key "CoresPerSocket": 4 is more than this machine has (2, from slurmd -C); Slurm would refuse the node`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.join()
			svcBefore := len(e.svc.Calls())
			a := e.action(map[string]any{"parameters": tt.params})
			if !a.Failed || a.Message != tt.want {
				t.Errorf("action failed=%v %q, want failure %q", a.Failed, a.Message, tt.want)
			}
			if len(e.slurmCalls()) != 0 || len(e.svc.Calls()) != svcBefore {
				t.Errorf("refused values touched the node: slurm %q, services %q", e.slurmCalls(), e.svc.Calls()[svcBefore:])
			}
		})
	}
	t.Run("at the machine's values", func(t *testing.T) {
		e := newEnv(t)
		e.join()
		if a := e.action(map[string]any{"parameters": "CPUs=2 RealMemory=24105"}); a.Failed {
			t.Errorf("action failed: %s", a.Message)
		}
	})
}

// A --conf Slurm refuses (the node registers INVALID_REG, or slurmd exits) is rolled back: the
// node runs its previous --conf, keeps its administrator's drain, and the action fails with
// Slurm's reason.
func TestNodeConfigRefusedRollsBack(t *testing.T) {
	tests := []struct {
		name, params, want  string
		exitOn, exitAfterOn string
	}{
		{name: "INVALID_REG", params: "TmpDisk=5000", want: `Slurm refused node-config "TmpDisk=5000": Low TmpDisk; node slurmd-3 restored with its previous configuration and state, node-config unchanged`},
		{name: "slurmd does not start", params: "Gres=gpu:1", exitOn: "Gres", want: `Slurm refused node-config "Gres=gpu:1": cannot restart slurmd: slurmd: fatal: bad Gres; node slurmd-3 restored`},
		{name: "slurmd exits before registering", params: "Gres=gpu:1", exitAfterOn: "Gres", want: `Slurm refused node-config "Gres=gpu:1": slurmd exited (service inactive) before node slurmd-3 registered; node slurmd-3 restored`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.joinManaging("gpu") // as every slurmctld does: Gres=gpu passes the charm's own check
			if a := e.action(map[string]any{"parameters": "Weight=4"}); a.Failed {
				t.Fatalf("node-config Weight=4: %s", a.Message)
			}
			e.slurm.set(func(h *host) { h.exitOn, h.exitAfterOn = tt.exitOn, tt.exitAfterOn })
			e.slurm.update(node, "state=drain", "reason=admin hold")
			before := e.savedState()
			a := e.action(map[string]any{"parameters": tt.params})
			if !a.Failed || !strings.HasPrefix(a.Message, tt.want) {
				t.Errorf("action failed=%v %q, want failure starting %q", a.Failed, a.Message, tt.want)
			}
			n, ok := e.slurm.Node(node)
			if !ok {
				t.Fatal("node not registered again")
			}
			if n.State.Has(slurm.FlagInvalidReg) || !n.State.Drain() || n.Reason != "admin hold" || !e.svc.Active(SlurmdService) {
				t.Errorf("node after the rollback %v (reason %q, slurmd active %v), want running, valid and drained for \"admin hold\"", n.State, n.Reason, e.svc.Active(SlurmdService))
			}
			if got := e.slurm.conf(node); got != before.Applied.Conf {
				t.Errorf("node registered with --conf %q, want the previous %q", got, before.Applied.Conf)
			}
			if cmd := strings.Join(e.svc.Command(SlurmdService), " "); !strings.HasSuffix(cmd, before.Applied.Conf) {
				t.Errorf("slurmd runs %q, want the previous --conf", cmd)
			}
			e.stateUnchanged(before)
		})
	}
}

// reset gives back the node's administrative state, not a drain Slurm set (INVALID_REG), and
// repairs a node left by an interrupted re-registration.
func TestNodeConfigResetRestoresState(t *testing.T) {
	e := newEnv(t)
	e.join()
	if a := e.action(map[string]any{"parameters": "Weight=4"}); a.Failed {
		t.Fatalf("node-config Weight=4: %s", a.Message)
	}
	// An earlier re-registration was interrupted after it saved the node's state: the node now
	// holds Slurm's INVALID_REG drain.
	e.slurm.Invalidate(node, "Low TmpDisk")
	e.state.Leader = true
	st := e.savedState()
	st.Restore = &NodeAdmin{Drain: true, Reason: "admin hold"}
	e.saveState(st)
	a := e.action(map[string]any{"reset": true})
	if a.Failed {
		t.Fatalf("reset: %s", a.Message)
	}
	n, _ := e.slurm.Node(node)
	if n.State.Has(slurm.FlagInvalidReg) || !n.State.Drain() || n.Reason != "admin hold" {
		t.Errorf("node after reset %v (reason %q), want valid and drained for \"admin hold\"", n.State, n.Reason)
	}
	if st := e.savedState(); st.Restore != nil || st.NodeConfig != "" {
		t.Errorf("saved state after reset: restore %+v, node-config %q", st.Restore, st.NodeConfig)
	}

	// A node whose only drain is Slurm's comes back undrained.
	e.slurm.Invalidate(node, "Low RealMemory")
	if a := e.action(map[string]any{"reset": true}); a.Failed {
		t.Fatalf("reset: %s", a.Message)
	}
	if n, _ := e.slurm.Node(node); n.State.Has(slurm.FlagInvalidReg) || n.State.Drain() {
		t.Errorf("node after reset %v, want valid and not drained", n.State)
	}
}

// A host whose supervisor and munged died: the unit says so, runs no Slurm command (each would
// time out), and its departure completes, leaving the node to the controller.
func TestDeadHost(t *testing.T) {
	e := newEnv(t)
	e.join()
	e.svc.Kill(errDead)
	e.slurm.set(func(h *host) { h.mungeUp = func() bool { return false } })
	before := len(e.slurm.callLog())
	if err := e.run(jujutest.Hook(juju.UpdateStatus)); err != nil {
		t.Fatal(err)
	}
	want := juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "node slurmd-3: slurmd and munged down (service manager unreachable)"}
	if d := cmp.Diff(want, e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	for _, c := range e.slurm.callLog()[before:] {
		if !strings.HasPrefix(c, munge.ClientPath) {
			t.Errorf("ran %q with munged down", c)
		}
	}

	// A live slurmd process (its pid file) while the supervisor is unreachable.
	pidFile := filepath.Join(e.root, SlurmdPidFile)
	comm := filepath.Join(e.root, "proc", "4242", "comm")
	for path, data := range map[string]string{pidFile: "4242\n", comm: "slurmd\n"} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.run(jujutest.Hook(juju.UpdateStatus)); err != nil {
		t.Fatal(err)
	}
	want.Message = "node slurmd-3: munged down (service manager unreachable)"
	if d := cmp.Diff(want, e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	if err := os.WriteFile(comm, []byte("bash\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	before = len(e.slurm.callLog())
	if err := e.run(departed()); err != nil {
		t.Fatalf("relation-departed on a dead host: %v", err)
	}
	if err := e.run(jujutest.Hook(juju.Stop)); err != nil {
		t.Fatalf("stop on a dead host: %v", err)
	}
	for _, c := range e.slurm.callLog()[before:] {
		if !strings.HasPrefix(c, munge.ClientPath) {
			t.Errorf("ran %q with munged down", c)
		}
	}
	want = juju.WorkloadStatus{Code: juju.StatusMaintenance, Message: "node slurmd-3 left for the controller to delete: munged down on this host"}
	if d := cmp.Diff(want, e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	if !e.savedState().Departed {
		t.Error("departure not recorded")
	}

	// A slurmd that still runs under a dead supervisor cannot be called stopped.
	e2 := newEnv(t)
	e2.join()
	e2.svc.Kill(errDead)
	pidFile2 := filepath.Join(e2.root, SlurmdPidFile)
	comm2 := filepath.Join(e2.root, "proc", strconv.Itoa(4243), "comm")
	for path, data := range map[string]string{pidFile2: "4243\n", comm2: "slurmd\n"} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := e2.run(departed()); err == nil || !strings.Contains(err.Error(), "cannot stop slurmd") {
		t.Errorf("departure with slurmd still running under a dead supervisor: %v, want cannot stop slurmd", err)
	}
}
