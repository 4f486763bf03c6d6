package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// relatedTo is related with the controller saying it runs Slurm ctl.
func (e *env) relatedTo(ctl string) {
	e.t.Helper()
	e.related()
	v, err := slurm.ParseVersion(ctl)
	if err != nil {
		e.t.Fatal(err)
	}
	bag, err := slurmd.ControllerBag{Controllers: []string{"10.0.0.1:6817"}, AuthSecretID: string(secretID), ClusterName: "test", SlurmVersion: v}.Encode()
	if err != nil {
		e.t.Fatal(err)
	}
	e.state.Relations[0].RemoteAppData = bag
}

// TestNewerSlurmdRefused: a slurmd of a newer release than the controller's (an upgrade in the
// wrong order) is never started, and the unit says why, naming both versions; once the
// controller runs the same release, the next relation-changed starts it.
func TestNewerSlurmdRefused(t *testing.T) {
	e := newEnv(t)
	e.slurm.version = "26.05.5"
	if err := e.run(jujutest.Hook(juju.Install)); err != nil {
		t.Fatal(err)
	}
	e.relatedTo("24.11.5")
	e.joinHooks()
	want := "slurmd 26.05.5 is newer than slurmctld 24.11.5: Slurm accepts no daemon newer than its controller; upgrade slurmctld first"
	if st := e.status(); st.Code != juju.StatusBlocked || st.Message != want {
		t.Errorf("status %+v, want blocked: %s", st, want)
	}
	if calls := e.svcCalls(SlurmdService); len(calls) != 0 {
		t.Errorf("slurmd service calls %q: want none", calls)
	}
	if e.slurm.hasNode(node) {
		t.Errorf("node %s registered", node)
	}
	if _, err := os.Stat(filepath.Join(e.root, "/etc/slurm/slurm.key")); err == nil {
		t.Errorf("the auth key was written for a slurmd that is not started")
	}
	// update-status keeps saying it.
	if err := e.run(jujutest.Hook(juju.UpdateStatus)); err != nil {
		t.Fatal(err)
	}
	if st := e.status(); st.Code != juju.StatusBlocked || st.Message != want {
		t.Errorf("after update-status: %+v", st)
	}

	// The controller upgraded: its relation data changes, the node joins.
	e.state.Relations[0].RemoteAppData[slurmd.KeySlurmVersion] = "26.05.5"
	if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
		t.Fatal(err)
	}
	if !e.slurm.hasNode(node) {
		t.Fatalf("node %s did not register once the controller runs 26.05", node)
	}
	if st := e.status(); st.Code != juju.StatusActive || !strings.HasPrefix(st.Message, "node slurmd-3 idle") {
		t.Errorf("status %+v, want active idle", st)
	}
	if st := e.savedState(); st.VersionRefused != "" {
		t.Errorf("VersionRefused %q kept", st.VersionRefused)
	}
}

// TestOlderSlurmdAccepted: the right order of an upgrade (controller first) keeps a slurmd of
// the previous release running; one too old for the controller is refused.
func TestOlderSlurmdAccepted(t *testing.T) {
	for _, tt := range []struct {
		node, ctl string
		ok        bool
	}{
		{"24.11.5", "26.05.5", true},
		{"22.05.8", "26.05.5", false},
	} {
		t.Run(tt.node+" under "+tt.ctl, func(t *testing.T) {
			e := newEnv(t)
			e.slurm.version = tt.node
			if err := e.run(jujutest.Hook(juju.Install)); err != nil {
				t.Fatal(err)
			}
			e.relatedTo(tt.ctl)
			e.joinHooks()
			if got := e.slurm.hasNode(node); got != tt.ok {
				t.Fatalf("node registered: %v, want %v (status %+v)", got, tt.ok, e.status())
			}
			if !tt.ok && !strings.Contains(e.status().Message, "slurmd "+tt.node+" is too old for slurmctld "+tt.ctl) {
				t.Errorf("status %+v", e.status())
			}
		})
	}
}

// TestGresConfAutoDetectOff: on Slurm 26.05, whose slurmd -Z detects GPUs by itself, the node's
// gres.conf turns that off (the charm's detection is the one source), from install on;
// before, it says nothing.
func TestGresConfAutoDetectOff(t *testing.T) {
	for _, tt := range []struct {
		version string
		off     bool
	}{
		{"", false}, // 22.05.8
		{"24.11.5", false},
		{"26.05.5", true},
	} {
		t.Run("slurm "+tt.version, func(t *testing.T) {
			e := newEnv(t)
			e.slurm.version = tt.version
			if err := e.run(jujutest.Hook(juju.Install)); err != nil {
				t.Fatal(err)
			}
			// install writes the release's lines: the join, on the path to slurmd's
			// start, finds the file as it wants it.
			installed, err := os.ReadFile(filepath.Join(e.root, GresLocalConf))
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(installed), "\nAutoDetect=off\n"); has != tt.off {
				t.Errorf("after install %s says AutoDetect=off: %v, want %v:\n%s", GresLocalConf, has, tt.off, installed)
			}
			e.join()
			got, err := os.ReadFile(filepath.Join(e.root, GresLocalConf))
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(got), "\nAutoDetect=off\n"); has != tt.off {
				t.Errorf("%s says AutoDetect=off: %v, want %v:\n%s", GresLocalConf, has, tt.off, got)
			}
			// What slurmd runs with is what the file says: nothing to re-register.
			if st := e.savedState(); st.Applied == nil || st.Applied.GresConf != string(got) {
				t.Errorf("applied gres.conf %+v differs from the file", st.Applied)
			}
		})
	}
}

// TestSlurmdWaitsForReadableConf: a unit publishes its Slurm release in its unit databag on
// its first relation hook, before slurmd may start; while the controller's conf_min_version
// names a newer release (slurm.conf carries keys this slurmd cannot parse, and it would exit
// on them) slurmd is not started and the unit waits, saying why; once the controller drops
// conf_min_version the next relation-changed starts it. An unchanged hook writes the unit
// databag no more.
func TestSlurmdWaitsForReadableConf(t *testing.T) {
	e := newEnv(t)
	e.slurm.version = "24.11.5"
	if err := e.run(jujutest.Hook(juju.Install)); err != nil {
		t.Fatal(err)
	}
	e.relatedTo("26.05.5")
	e.state.Relations[0].RemoteAppData[slurmd.KeyConfMinVersion] = "25.11.0"
	e.joinHooks()
	if got := e.state.Relations[0].LocalUnitData[slurmd.KeySlurmVersion]; got != "24.11.5" {
		t.Errorf("unit databag slurm_version %q, want 24.11.5", got)
	}
	want := "slurmd 24.11.5 cannot read the configuration slurmctld serves (it needs Slurm 25.11 or later): waiting for slurmctld to leave out the keys slurmd 24.11 lacks"
	if st := e.status(); st.Code != juju.StatusWaiting || st.Message != want {
		t.Errorf("status %+v, want waiting: %s", st, want)
	}
	if calls := e.svcCalls(SlurmdService); len(calls) != 0 {
		t.Errorf("slurmd service calls %q: want none", calls)
	}
	if e.slurm.hasNode(node) {
		t.Errorf("node %s registered", node)
	}
	if tools := e.runTools(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); slices.Contains(tools, "relation-set") {
		t.Errorf("an unchanged relation-changed wrote relation data: %q", tools)
	}

	delete(e.state.Relations[0].RemoteAppData, slurmd.KeyConfMinVersion)
	if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
		t.Fatal(err)
	}
	if !e.slurm.hasNode(node) {
		t.Fatalf("node %s did not register once the controller serves a configuration it reads (status %+v)", node, e.status())
	}
	if st := e.savedState(); st.ConfWaiting != "" {
		t.Errorf("ConfWaiting %q kept", st.ConfWaiting)
	}
}
