package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/service"
)

// withHA adds to a started leader's state a mounted filesystem-client and a peer, slurmctld/1
// (host ctl1), that mounted the storage too.
func withHA(in jujutest.State) jujutest.State {
	in.Relations = append(in.Relations,
		jujutest.Relation{ID: "mount:5", RemoteApp: "filesystem-client",
			RemoteUnits: map[string]map[string]string{"filesystem-client/0": {"mounted": "true"}}},
		jujutest.Relation{ID: "slurmctld-peers:0", RemoteApp: "slurmctld",
			RemoteUnits: map[string]map[string]string{"slurmctld/1": {"hostname": "ctl1", "address": "10.0.0.2", "storage": "mounted"}}},
	)
	return in
}

// TestHALeader: once the shared storage is mounted, the leader moves the state there, lists
// the peer that mounted it as the backup (itself first), restarts its slurmctld once for the
// new SlurmctldHost list, and shares the configuration, the controllers and the auth secret;
// slurmd units get both controllers, primary first, also from a hook that does not plan the
// controllers (a slurmd unit joining).
func TestHALeader(t *testing.T) {
	e := newEnv(t)
	in := e.joined()
	if err := os.MkdirAll(e.c.Path(stateSaveDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeTestFile(e.c.Path(stateSaveDir+"/node_state"), "nodes"); err != nil {
		t.Fatal(err)
	}
	restarts := e.svc.restarts("slurmctld") + e.svc.count("stop slurmctld")
	out := e.run(withHA(in), jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/1"))
	conf := e.read(confPath)
	if !strings.Contains(conf, "StateSaveLocation=/mnt/slurmctld-statefs/checkpoint\n") {
		t.Errorf("StateSaveLocation not on the shared storage:\n%s", conf)
	}
	if !strings.Contains(conf, "SlurmctldHost=ctl(10.0.0.1)\nSlurmctldHost=ctl1(10.0.0.2)\n") {
		t.Errorf("SlurmctldHost lines:\n%s", conf)
	}
	if got := e.read(sharedStateDir + "/node_state"); got != "nodes" {
		t.Errorf("state not moved: node_state %q", got)
	}
	if n := e.svc.restarts("slurmctld") + e.svc.count("stop slurmctld") - restarts; n < 1 || n > 2 {
		t.Errorf("%d stops and restarts of slurmctld, want the stop for the move and at most one restart", n)
	}
	var mountBag, peerBag map[string]string
	for _, r := range out.Relations {
		switch r.ID {
		case "mount:5":
			mountBag = r.LocalAppData
		case "slurmctld-peers:0":
			peerBag = r.LocalAppData
		}
	}
	if d := cmp.Diff(map[string]string{"mountpoint": `"/mnt/slurmctld-statefs"`, "noexec": "true", "nosuid": "true", "nodev": "true", "read_only": "false"}, mountBag); d != "" {
		t.Errorf("mount request (-want +got):\n%s", d)
	}
	ctls, err := decodeControllers(peerBag["controllers"])
	if err != nil || len(ctls) != 2 || ctls[0].Unit != "slurmctld/0" || ctls[1].Unit != "slurmctld/1" {
		t.Errorf("peer controllers %v, %v", ctls, err)
	}
	var files map[string]string
	if err := json.Unmarshal([]byte(peerBag["conf"]), &files); err != nil || files["slurm.conf"] != conf {
		t.Errorf("shared configuration: %v", err)
	}
	if peerBag["auth-secret-id"] == "" {
		t.Error("no auth secret id for the peers")
	}
	want := []string{"10.0.0.1:6817", "10.0.0.2:6817"}
	check := func(when string, st jujutest.State) {
		t.Helper()
		for _, r := range st.Relations {
			if r.ID != "slurmd:1" {
				continue
			}
			b, err := slurmd.DecodeControllerBag(r.LocalAppData)
			if err != nil || !cmp.Equal(b.Controllers, want) {
				t.Errorf("%s: slurmd relation controllers %v, %v; want %v", when, b.Controllers, err, want)
			}
		}
	}
	check("peer changed", out)
	out = e.run(out, jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/0"))
	check("slurmd joined", out)
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if !strings.Contains(out.UnitStatus.Message, "primary of 2") {
		t.Errorf("status %+v does not name the role", out.UnitStatus)
	}
}

// TestHABackupWithoutStorage: a second unit without the mount relation stays blocked naming
// it and runs no slurmctld.
func TestHABackupWithoutStorage(t *testing.T) {
	e := newEnv(t)
	in := baseState()
	in.Unit, in.Leader = "slurmctld/1", false
	in.Relations = []jujutest.Relation{{ID: "slurmctld-peers:0", RemoteApp: "slurmctld",
		RemoteUnits: map[string]map[string]string{"slurmctld/0": {"hostname": "ctl0", "address": "10.0.0.9"}}}}
	out := e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
	if out.UnitStatus.Code != juju.StatusBlocked || !strings.Contains(out.UnitStatus.Message, "integrate slurmctld with filesystem-client (mount relation)") {
		t.Errorf("status %+v", out.UnitStatus)
	}
	if e.svc.isActive("slurmctld") || e.exists(confPath) {
		t.Error("a backup without shared storage runs slurmctld or has a slurm.conf")
	}
	if got := out.Relations[0].LocalUnitData; got["hostname"] != "ctl" || got["storage"] != "" {
		t.Errorf("peer unit data %v", got)
	}
}

// TestHABackup: a unit with the storage mounted, listed by the leader, writes the leader's
// configuration, installs the key from the application's secret and runs slurmctld.
func TestHABackup(t *testing.T) {
	e, leader := haLeader(t, 0)
	peerBag := peerAppBag(leader)
	conf := e.read(confPath)
	b, in := haBackup(t, leader)
	out := b.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
	if got := b.read(confPath); got != conf {
		t.Errorf("backup's slurm.conf differs from the leader's:\n%s", cmp.Diff(conf, got))
	}
	if !b.svc.isActive("slurmctld") {
		t.Errorf("backup runs no slurmctld; status %+v", out.UnitStatus)
	}
	if got := b.read("/etc/munge/munge.key"); got != e.read("/etc/munge/munge.key") {
		t.Error("backup's auth key differs from the leader's")
	}
	if out.UnitStatus.Code != juju.StatusActive {
		t.Errorf("status %+v", out.UnitStatus)
	}

	// In control (its heartbeat, index 1) with the same controllers: a new partition include
	// is applied with a reconfigure, not a restart that would leave no controller.
	hb := make([]byte, 16)
	binary.BigEndian.PutUint64(hb[:8], uint64(time.Now().Unix()))
	binary.BigEndian.PutUint64(hb[8:], 1)
	if err := os.MkdirAll(b.c.Path(sharedStateDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.c.Path(sharedStateDir+"/heartbeat"), hb, 0o600); err != nil {
		t.Fatal(err)
	}
	var files map[string]string
	if err := json.Unmarshal([]byte(peerBag["conf"]), &files); err != nil {
		t.Fatal(err)
	}
	files["partition-gpu.conf"] = "NodeSet=gpu Feature=gpu\nPartitionName=gpu Nodes=gpu\n"
	raw, _ := json.Marshal(files)
	bag := maps.Clone(peerBag)
	bag["conf"] = string(raw)
	out.Relations[1].LocalAppData = bag
	restarts, reconfigures := b.svc.restarts("slurmctld"), b.slurm.count("scontrol", "reconfigure")
	out = b.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
	if b.svc.restarts("slurmctld") != restarts || b.slurm.count("scontrol", "reconfigure") != reconfigures+1 {
		t.Errorf("the active backup restarted (%d) or did not reconfigure once (%d)", b.svc.restarts("slurmctld")-restarts, b.slurm.count("scontrol", "reconfigure")-reconfigures)
	}
	if !strings.Contains(out.UnitStatus.Message, "active controller (backup 1 of 2)") {
		t.Errorf("status %+v", out.UnitStatus)
	}

	// The backup becomes the leader (slurmctld/0 is gone): it keeps running on the shared
	// state, lists itself alone and restarts once for that; it never stops to move state.
	stops := b.svc.count("stop slurmctld")
	out.Leader = true
	out.Relations[1].RemoteUnits = map[string]map[string]string{}
	out = b.run(out, jujutest.Hook(juju.LeaderElected))
	if n := b.svc.count("stop slurmctld"); n != stops {
		t.Errorf("the new leader stopped slurmctld %d times", n-stops)
	}
	if conf := b.read(confPath); !strings.Contains(conf, "StateSaveLocation=/mnt/slurmctld-statefs/checkpoint\n") || strings.Count(conf, "SlurmctldHost=") != 1 || !strings.Contains(conf, "SlurmctldHost=ctl1(10.0.0.2)") {
		t.Errorf("the new leader's slurm.conf:\n%s", conf)
	}
	if want := jujuStatus(juju.StatusMaintenance, "slurmctld restarting to run with the controllers ctl1(10.0.0.2); running jobs keep running"); !b.svc.isActive("slurmctld") || !cmp.Equal(want, out.UnitStatus) {
		t.Errorf("the new leader: slurmctld active %v, status %+v, want %+v", b.svc.isActive("slurmctld"), out.UnitStatus, want)
	}
	out = b.run(out, jujutest.Hook(juju.UpdateStatus)) // the waiter's wake: it answers
	if out.UnitStatus.Code != juju.StatusActive {
		t.Errorf("the new leader once slurmctld answers: status %+v", out.UnitStatus)
	}
}

// TestTakeoverAction: on a backup, `scontrol takeover <its index>`; refused on the primary
// and on a unit that is not a controller.
func TestTakeoverAction(t *testing.T) {
	ctls := []controller{{Unit: "slurmctld/0", Host: "ctl", Addr: "10.0.0.1"}, {Unit: "slurmctld/1", Host: "ctl1", Addr: "10.0.0.2"}}
	raw, err := encodeControllers(ctls)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		unit    string
		ctls    string
		running bool
		active  uint64 // the heartbeat's controller index
		failed  bool
	}{
		{"slurmctld/1", raw, true, 0, false},
		{"slurmctld/0", raw, true, 1, true}, // a primary running takes control by itself
		{"slurmctld/2", raw, true, 0, true},
		{"slurmctld/1", "", true, 0, true},
		{"slurmctld/1", raw, false, 0, true}, // nothing to take control with
	} {
		e := newEnv(t)
		e.c.ControlWait = 20 * time.Millisecond
		if tc.running {
			startFake(t, e)
		}
		writeHeartbeat(t, e, tc.active)
		e.slurm.before = func(argv []string) {
			if slices.Equal(argv, []string{"scontrol", "takeover", "1"}) {
				writeHeartbeat(t, e, 1)
			}
		}
		in := baseState()
		in.Unit, in.Leader = tc.unit, false
		in.Relations = []jujutest.Relation{{ID: "slurmctld-peers:0", RemoteApp: "slurmctld", LocalAppData: map[string]string{"controllers": tc.ctls}}}
		out := e.run(in, jujutest.ActionEvent("takeover"))
		took := e.slurm.count("scontrol", "takeover")
		if out.Action.Failed != tc.failed || (took == 1) == tc.failed {
			t.Errorf("%s with controllers %q (running %v): failed %v (%s), %d takeovers", tc.unit, tc.ctls, tc.running, out.Action.Failed, out.Action.Message, took)
		}
		if tc.failed {
			continue
		}
		if got := out.Action.Results["in-control"]; got != "slurmctld/1" {
			t.Errorf("in-control %q, want slurmctld/1 (results %v)", got, out.Action.Results)
		}
		r, err := decodeControlRecord(out.Relations[0].LocalUnitData[peerKeyTookControl])
		if err != nil || !slices.Equal(r.From, []string{"slurmctld/0"}) || !strings.HasPrefix(r.ID, "slurmctld/1@") {
			t.Errorf("takeover record %+v, %v", r, err)
		}
	}
}

// startFake configures and starts slurmctld in e's fake service manager.
func startFake(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	if err := e.svc.Configure(ctx, service.Spec{Name: svcSlurmctld, Command: []string{"/usr/sbin/slurmctld"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Start(ctx, svcSlurmctld); err != nil {
		t.Fatal(err)
	}
}

// TestHALoginNodes: login units (sackd relation) get every controller, primary first, from
// the same list as slurmd units, once the leader lists a backup and its slurmctld answers
// after the restart for it (the pass that finishes the restart), and again from a hook that
// does not plan the controllers (a login unit's relation-changed).
func TestHALoginNodes(t *testing.T) {
	e := newEnv(t)
	in := e.loginJoined()
	if err := os.MkdirAll(e.c.Path(stateSaveDir), 0o755); err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.1:6817", "10.0.0.2:6817"}
	out := e.run(withHA(in), jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/1"))
	out = e.run(out, jujutest.Hook(juju.UpdateStatus)) // the waiter's wake: it answers
	if d := cmp.Diff(want, loginBag(t, out).Controllers); d != "" {
		t.Errorf("login controllers after the backup joined (-want +got):\n%s", d)
	}
	out = e.run(out, jujutest.RelationHook(juju.RelationChanged, loginRel, "login/0"))
	if d := cmp.Diff(want, loginBag(t, out).Controllers); d != "" {
		t.Errorf("login controllers from a hook that does not plan them (-want +got):\n%s", d)
	}
}

// TestHALeaving: the first hook of a unit that leaves (a relation-departed naming itself)
// hands control over with Slurm's own protocol before anything stops its slurmctld: when it
// may be in control it asks the first backup to take over (`scontrol takeover 1`) with its
// slurmctld still running and no stop asked of its supervisor, waits (bounded) for the
// slurmctld to end (the backup's REQUEST_SHUTDOWN makes it save its state and exit), and
// only then stops the service (nothing left to stop, or the fallback). A backup that does
// not answer, or a slurmctld that does not end in time, is stopped all the same; a unit
// not in control just stops. No later hook of the unit starts slurmctld again.
func TestHALeaving(t *testing.T) {
	for _, tc := range []struct {
		name      string
		active    uint64 // the heartbeat's controller index
		exits     bool   // slurmctld ends on the takeover request (Slurm's REQUEST_SHUTDOWN)
		refused   bool   // the backup does not answer the takeover request
		takeovers int
		status    string
	}{
		{"in control", 0, true, false, 1, "leaving: slurmctld stopped, control handed to slurmctld/1"},
		// Not in control: the request is harmless (Slurm skips it on a controller in
		// control), and the primary asks whatever the heartbeat says (its storage may be
		// gone already).
		{"primary not in control", 1, true, false, 1, "leaving: slurmctld stopped, control handed to slurmctld/1"},
		{"no heartbeat", 99, true, false, 1, "leaving: slurmctld stopped, control handed to slurmctld/1"},
		// The fallbacks: stopped all the same.
		{"slurmctld does not end", 0, false, false, 1, "leaving: slurmctld stopped, control handed to slurmctld/1"},
		{"backup not answering", 0, false, true, 1, "leaving: slurmctld stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, out := haLeader(t, tc.active)
			e.c.ControlWait = 50 * time.Millisecond
			if !e.svc.isActive("slurmctld") {
				t.Fatal("slurmctld not running before the removal")
			}
			starts := e.svc.count("start slurmctld") + e.svc.restarts("slurmctld")
			stops := e.svc.count("stop slurmctld")
			// At the takeover request: slurmctld still runs, no stop asked yet.
			var atTakeover []string
			e.slurm.before = func(argv []string) {
				if len(argv) < 2 || argv[0] != "scontrol" || argv[1] != "takeover" {
					return
				}
				atTakeover = append(atTakeover, fmt.Sprintf("active %v, stops %d", e.svc.isActive("slurmctld"), e.svc.count("stop slurmctld")-stops))
				if tc.exits {
					e.svc.Exit("slurmctld")
				}
			}
			e.slurm.SetUnreachable(tc.refused)

			// Dying, the unit resigned its leadership (as Juju's uniter and the model do).
			out.Leader = false
			departs := jujutest.RelationHook(juju.RelationDeparted, "slurmd:1", "slurmd/0")
			departs.DepartingUnit = "slurmctld/0"
			out = e.run(out, departs)
			if d := cmp.Diff([]string{"active true, stops 0"}, atTakeover); d != "" {
				t.Errorf("at the takeover request (-want +got):\n%s", d)
			}
			if e.svc.isActive("slurmctld") {
				t.Error("slurmctld still runs on the leaving unit")
			}
			if n := e.svc.count("stop slurmctld") - stops; n != 1 {
				t.Errorf("%d stops of slurmctld, want 1 (after the takeover request)", n)
			}
			if n := e.slurm.count("scontrol", "takeover", "1"); n != tc.takeovers {
				t.Errorf("%d takeovers of backup 1, want %d", n, tc.takeovers)
			}
			if out.UnitStatus.Code != juju.StatusMaintenance || out.UnitStatus.Message != tc.status {
				t.Errorf("status %+v, want maintenance %q", out.UnitStatus, tc.status)
			}
			e.slurm.SetUnreachable(false)
			// The rest of the departure, in an order Juju may choose: the peers go (the storage
			// still mounted: a backup's configure would start slurmctld), then the storage.
			for _, ev := range []juju.Event{
				jujutest.RelationHook(juju.RelationDeparted, "slurmctld-peers:0", "slurmctld/1"),
				jujutest.Hook(juju.UpdateStatus),
				jujutest.RelationHook(juju.RelationBroken, "mount:5", ""),
			} {
				if ev.Kind == juju.RelationDeparted {
					ev.DepartingUnit = "slurmctld/0"
				}
				out = e.run(out, ev)
			}
			if n := e.svc.count("start slurmctld") + e.svc.restarts("slurmctld") - starts; n != 0 || e.svc.isActive("slurmctld") {
				t.Errorf("slurmctld started %d times after the unit began leaving (active %v)", n, e.svc.isActive("slurmctld"))
			}
			if n := e.slurm.count("scontrol", "takeover"); n != tc.takeovers {
				t.Errorf("%d takeovers in all, want %d", n, tc.takeovers)
			}
		})
	}
}

// TestHALeavingBackup: a backup that leaves asks no takeover: standing by, its request would
// shut down the controller in control; in control with no other backup, there is nobody to
// hand to. It stops its slurmctld in its first departure hook and never starts it again.
func TestHALeavingBackup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		active uint64 // the heartbeat's controller index
	}{
		{"standing by", 0},
		{"in control, no other backup", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, leader := haLeader(t, 0)
			b, in := haBackup(t, leader)
			in = b.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
			if !b.svc.isActive("slurmctld") {
				t.Fatalf("backup runs no slurmctld; status %+v", in.UnitStatus)
			}
			writeHeartbeat(t, b, tc.active)
			departs := jujutest.RelationHook(juju.RelationDeparted, "slurmctld-peers:0", "slurmctld/0")
			departs.DepartingUnit = "slurmctld/1"
			out := b.run(in, departs)
			if b.svc.isActive("slurmctld") {
				t.Error("slurmctld still runs on the leaving backup")
			}
			if n := b.slurm.count("scontrol", "takeover"); n != 0 {
				t.Errorf("%d takeover requests, want none", n)
			}
			if out.UnitStatus.Code != juju.StatusMaintenance || out.UnitStatus.Message != "leaving: slurmctld stopped" {
				t.Errorf("status %+v", out.UnitStatus)
			}
			starts := b.svc.count("start slurmctld") + b.svc.restarts("slurmctld")
			b.run(out, jujutest.Hook(juju.ConfigChanged))
			if n := b.svc.count("start slurmctld") + b.svc.restarts("slurmctld") - starts; n != 0 || b.svc.isActive("slurmctld") {
				t.Errorf("slurmctld started %d times after the unit began leaving", n)
			}
		})
	}
}

// TestHABackupRemoved: a backup standing by that leaves (its peer relation departed) leaves the
// controller in control untouched: no restart, no reconfigure, slurm.conf as it was (the
// backup stays in SlurmctldHost, marked gone, until slurmctld next starts), while the slurmd
// units get the primary alone. A controller added later replaces it with one restart. When
// the backup that leaves is the one in control, the leader restarts for the shorter list.
func TestHABackupRemoved(t *testing.T) {
	for _, tc := range []struct {
		name     string
		active   uint64 // the heartbeat's controller index
		restarts int
	}{
		{"standing by", 0, 0},
		{"in control", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, out := haLeader(t, tc.active)
			conf := e.read(confPath)
			restarts, reconfigures := e.svc.restarts("slurmctld"), e.slurm.count("scontrol", "reconfigure")

			out.Relations[len(out.Relations)-1].RemoteUnits = map[string]map[string]string{}
			out = e.run(out, jujutest.RelationHook(juju.RelationDeparted, "slurmctld-peers:0", "slurmctld/1"))
			if n := e.svc.restarts("slurmctld") - restarts; n != tc.restarts {
				t.Errorf("%d restarts of slurmctld, want %d", n, tc.restarts)
			}
			if n := e.slurm.count("scontrol", "reconfigure") - reconfigures; n != 0 {
				t.Errorf("%d reconfigures of slurmctld, want none", n)
			}
			got := e.read(confPath)
			if tc.restarts == 0 && got != conf {
				t.Errorf("slurm.conf changed:\n%s", cmp.Diff(conf, got))
			}
			if tc.restarts == 1 && strings.Count(got, "SlurmctldHost=") != 1 {
				t.Errorf("slurm.conf after the restart:\n%s", got)
			}
			for _, r := range out.Relations {
				if r.ID != "slurmd:1" {
					continue
				}
				b, err := slurmd.DecodeControllerBag(r.LocalAppData)
				if d := cmp.Diff([]string{"10.0.0.1:6817"}, b.Controllers); err != nil || d != "" {
					t.Errorf("slurmd relation controllers (-want +got, %v):\n%s", err, d)
				}
			}
			if tc.restarts > 0 {
				return
			}
			if strings.Contains(out.UnitStatus.Message, "of 2") {
				t.Errorf("status %+v counts the backup that left", out.UnitStatus)
			}
			// Quiet hooks change nothing, also when they find no heartbeat (the controller in
			// control replaces the file: 22.05 unlinks it, then links the new one); a new
			// controller replaces the one that left.
			if err := os.Remove(e.c.Path(sharedStateDir + "/heartbeat")); err != nil {
				t.Fatal(err)
			}
			out = e.run(out, jujutest.Hook(juju.UpdateStatus))
			out = e.run(out, jujutest.Hook(juju.ConfigChanged))
			if n := e.svc.restarts("slurmctld") - restarts; n != 0 || e.read(confPath) != conf {
				t.Errorf("%d restarts after quiet hooks, slurm.conf changed %v", n, e.read(confPath) != conf)
			}
			out.Relations[len(out.Relations)-1].RemoteUnits = map[string]map[string]string{"slurmctld/2": {"hostname": "ctl2", "address": "10.0.0.3", "storage": "mounted"}}
			out = e.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/2"))
			if n := e.svc.restarts("slurmctld") - restarts; n != 1 {
				t.Errorf("%d restarts for the new controller, want 1", n)
			}
			if got := e.read(confPath); !strings.Contains(got, "SlurmctldHost=ctl(10.0.0.1)\nSlurmctldHost=ctl2(10.0.0.3)\n") || strings.Contains(got, "ctl1") {
				t.Errorf("SlurmctldHost after a controller was added:\n%s", got)
			}
		})
	}
}

// TestHALeaderChange: Juju moves the leadership from slurmctld/0 (primary, in control) to the
// running backup slurmctld/1, both staying: the new leader keeps the controllers' order, writes
// the same configuration and neither restarts nor reconfigures its slurmctld; the slurmd units
// get the same controllers; the former leader, now a backup, changes nothing either.
func TestHALeaderChange(t *testing.T) {
	e, leader := haLeader(t, 0)
	peerBag := peerAppBag(leader)
	b, in := haBackup(t, leader)
	in.Relations = append(in.Relations, relation("slurmd:1", "slurmd", compute(t, "slurmd", ""), "slurmd/0"))
	out := b.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
	writeHeartbeat(t, b, 0)
	conf := b.read(confPath)
	untouched := b.slurmctldUntouched(t, "the new leader")

	// The leadership moves to slurmctld/1.
	out.Leader = true
	out = b.run(out, jujutest.Hook(juju.LeaderElected))
	untouched()
	if got := b.read(confPath); got != conf {
		t.Errorf("the new leader's slurm.conf differs from the one it ran with:\n%s", cmp.Diff(conf, got))
	}
	var newBag map[string]string
	for _, r := range out.Relations {
		switch r.ID {
		case "slurmctld-peers:0":
			newBag = r.LocalAppData
		case "slurmd:1":
			bag, err := slurmd.DecodeControllerBag(r.LocalAppData)
			if d := cmp.Diff([]string{"10.0.0.1:6817", "10.0.0.2:6817"}, bag.Controllers); err != nil || d != "" {
				t.Errorf("slurmd controllers from the new leader (-want +got, %v):\n%s", err, d)
			}
		}
	}
	if d := cmp.Diff(peerBag[peerKeyControllers], newBag[peerKeyControllers]); d != "" {
		t.Errorf("controllers in the peer bag changed with the leader (-old +new):\n%s", d)
	}
	if !strings.Contains(out.UnitStatus.Message, "backup 1 controller standing by (active: slurmctld/0)") {
		t.Errorf("the new leader's status %+v", out.UnitStatus)
	}

	// The former leader runs as a backup with the new leader's bag: nothing changes in Slurm.
	leader.Leader = false
	for i, r := range leader.Relations {
		if r.ID == "slurmctld-peers:0" {
			leader.Relations[i].LocalAppData = newBag
		}
	}
	untouched = e.slurmctldUntouched(t, "the former leader")
	out = e.run(leader, jujutest.Hook(juju.LeaderSettingsChanged))
	untouched()
	if !strings.Contains(out.UnitStatus.Message, "active controller (primary of 2)") {
		t.Errorf("the former leader's status %+v", out.UnitStatus)
	}
}

// haLeader is the leader slurmctld/0 with the backup slurmctld/1 listed (withHA), and the
// heartbeat of the controller at index active in the shared StateSaveLocation.
func haLeader(t *testing.T, active uint64) (*env, jujutest.State) {
	t.Helper()
	e := newEnv(t)
	if err := os.MkdirAll(e.c.Path(stateSaveDir), 0o755); err != nil {
		t.Fatal(err)
	}
	out := e.run(withHA(e.joined()), jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/1"))
	writeHeartbeat(t, e, active)
	return e, out
}

// writeHeartbeat writes slurmctld's heartbeat file (now, the index of the controller in
// control) in e's shared StateSaveLocation.
func writeHeartbeat(t *testing.T, e *env, active uint64) {
	t.Helper()
	hb := make([]byte, 16)
	binary.BigEndian.PutUint64(hb[:8], uint64(time.Now().Unix()))
	binary.BigEndian.PutUint64(hb[8:], active)
	if err := os.MkdirAll(e.c.Path(sharedStateDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.c.Path(sharedStateDir+"/heartbeat"), hb, 0o600); err != nil {
		t.Fatal(err)
	}
}

// peerAppBag is the peer relation's application bag in st.
func peerAppBag(st jujutest.State) map[string]string {
	for _, r := range st.Relations {
		if r.ID == "slurmctld-peers:0" {
			return r.LocalAppData
		}
	}
	return nil
}

// haBackup is slurmctld/1 (host ctl1, 10.0.0.2) with its storage mounted and the peer bag
// and secrets of leader (slurmctld/0), before its first hook.
func haBackup(t *testing.T, leader jujutest.State) (*env, jujutest.State) {
	t.Helper()
	b := newEnv(t)
	b.c.Hostname = func() (string, error) { return "ctl1", nil }
	in := baseState()
	in.Unit, in.Leader, in.PrivateAddress = "slurmctld/1", false, "10.0.0.2"
	in.Secrets = leader.Secrets
	in.Relations = []jujutest.Relation{
		{ID: "mount:5", RemoteApp: "filesystem-client", RemoteUnits: map[string]map[string]string{"filesystem-client/1": {"mounted": "true"}}},
		{ID: "slurmctld-peers:0", RemoteApp: "slurmctld", LocalAppData: peerAppBag(leader),
			RemoteUnits: map[string]map[string]string{"slurmctld/0": {"hostname": "ctl", "address": "10.0.0.1", "storage": "mounted"}}},
	}
	return b, in
}

// TestHARestartsDoNotWait: the restarts high availability needs go through the one restart
// record (restartUnderWay), as TestRestartHookDoesNotWait's: the leader's for a new
// SlurmctldHost list (a backup added, its state moved to the shared storage) and a backup's
// for the leader's new configuration. The hook returns at once while the restarted
// slurmctld answers nothing, pinging it not once; a pass while only the other controller
// answers finishes nothing (scontrol ping lists both: this unit's must answer); the first
// pass once it answers finishes the restart.
func TestHARestartsDoNotWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the unit's env, its state and the hook that restarts slurmctld.
		setup func(t *testing.T) (*env, jujutest.State, juju.Event)
		host  string // this unit's host; the other controller's is other
		other string
		what  string
		role  string // in the status once finished
	}{
		{name: "leader: a backup added", setup: func(t *testing.T) (*env, jujutest.State, juju.Event) {
			e := newEnv(t)
			if err := os.MkdirAll(e.c.Path(stateSaveDir), 0o755); err != nil {
				t.Fatal(err)
			}
			return e, withHA(e.joined()), jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/1")
		}, host: "ctl", other: "ctl1", what: "run from the shared storage with the controllers ctl(10.0.0.1),ctl1(10.0.0.2)", role: "primary of 2"},
		{name: "backup: the leader's configuration changed", setup: func(t *testing.T) (*env, jujutest.State, juju.Event) {
			_, leader := haLeader(t, 0)
			b, in := haBackup(t, leader)
			out := b.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
			writeHeartbeat(t, b, 0)
			bag := maps.Clone(peerAppBag(out))
			var files map[string]string
			if err := json.Unmarshal([]byte(bag["conf"]), &files); err != nil {
				t.Fatal(err)
			}
			files["partition-gpu.conf"] = "NodeSet=gpu Feature=gpu\nPartitionName=gpu Nodes=gpu\n"
			raw, _ := json.Marshal(files)
			bag["conf"] = string(raw)
			for i, r := range out.Relations {
				if r.ID == "slurmctld-peers:0" {
					out.Relations[i].LocalAppData = bag
				}
			}
			return b, out, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0")
		}, host: "ctl1", other: "ctl", what: "run the leader's configuration", role: "backup 1 controller standing by (active: slurmctld/0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, in, ev := tc.setup(t)
			e.slurm.SetControllers([]string{"ctl", "ctl1"}, tc.host) // this unit's slurmctld restarts
			respawns := e.svc.count("respawn slurmctld")
			out := e.runRestartHook(in, ev)
			if n := e.svc.count("respawn slurmctld") - respawns; n != 1 {
				t.Errorf("%d restarts, want 1", n)
			}
			e.restartUnderWay(out, tc.what)

			out = e.run(out, jujutest.Hook(juju.UpdateStatus)) // only the other one answers
			e.restartUnderWay(out, tc.what)
			if n := e.svc.count("respawn slurmctld") - respawns; n != 1 {
				t.Errorf("%d restarts after a pass while it restarts, want still 1", n)
			}

			e.slurm.SetControllers([]string{"ctl", "ctl1"})
			out = e.run(out, jujutest.Hook(juju.UpdateStatus))
			e.restartFinished(out, tc.what)
			if out.UnitStatus.Code != juju.StatusActive || !strings.Contains(out.UnitStatus.Message, tc.role) {
				t.Errorf("status %+v once slurmctld answers, want active naming %q", out.UnitStatus, tc.role)
			}
		})
	}
}

// TestHARestartDeadline: a backup whose restart has not answered by its deadline is blocked,
// naming the log, the waiter stops watching it, and a later pass that finds it answering
// finishes it.
func TestHARestartDeadline(t *testing.T) {
	_, leader := haLeader(t, 0)
	b, in := haBackup(t, leader)
	clock := b.withClock()
	out := b.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
	writeHeartbeat(t, b, 0)
	b.slurm.SetControllers([]string{"ctl", "ctl1"}, "ctl1")
	// A changed file of the leader's (the shared configuration, as TestHARestartsDoNotWait).
	bag := maps.Clone(peerAppBag(out))
	bag[peerKeyConf] = strings.Replace(bag[peerKeyConf], "ClusterName=", "#\\nClusterName=", 1)
	for i, r := range out.Relations {
		if r.ID == "slurmctld-peers:0" {
			out.Relations[i].LocalAppData = bag
		}
	}
	out = b.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
	what := "run the leader's configuration"
	b.restartUnderWay(out, what)
	clock.advance(startWait)
	out = b.run(out, jujutest.Hook(juju.UpdateStatus))
	want := jujuStatus(juju.StatusBlocked, "slurmctld did not answer within 30s of its restart to "+what+" (see /var/log/slurm/slurmctld.log): cannot ping slurmctld on ctl1 (backup): slurm controller unreachable")
	if d := cmp.Diff(want, out.UnitStatus); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	if w := b.waiter.last(); !w.empty() {
		t.Errorf("the waiter still watches %+v after the restart failed", w)
	}
	b.slurm.SetControllers([]string{"ctl", "ctl1"})
	out = b.run(out, jujutest.Hook(juju.UpdateStatus))
	b.restartFinished(out, what)
}

// TestHAAccountingNewCluster: accounting turned on for a cluster slurmdbd does not know yet
// removes the ClusterID file where slurmctld keeps it, StateSaveLocation on the shared storage
// (restartForAccounting), not the local directory it left.
func TestHAAccountingNewCluster(t *testing.T) {
	e, out := haLeader(t, 0)
	e.slurm.dbdClusters = []string{}
	for _, dir := range []string{stateSaveDir, sharedStateDir} {
		if err := writeTestFile(e.c.Path(dir+"/clustername"), "charmed-slurm|42"); err != nil {
			t.Fatal(err)
		}
	}
	e.run(withDbd(out, dbdBag(out.Version)), jujutest.RelationHook(juju.RelationChanged, dbdRel, "slurmdbd/0"))
	if e.exists(sharedStateDir + "/clustername") {
		t.Error("the shared StateSaveLocation keeps its ClusterID file: slurmctld would refuse slurmdbd's")
	}
	if !e.exists(stateSaveDir + "/clustername") {
		t.Error("the local state directory's ClusterID file removed instead")
	}
}

// TestReadRetrying: the heartbeat's read is tried again while it finds no file (the
// controller in control replaces it by unlink, then link), at most heartbeatTries times in
// all; any other error, or a read that finds it, ends the tries.
func TestReadRetrying(t *testing.T) {
	errOther := errors.New("input/output error")
	for _, tt := range []struct {
		name      string
		results   []error // each read's error, in order (nil: found)
		wantReads int
		wantErr   error
	}{
		{"found at once", []error{nil}, 1, nil},
		{"absent for a moment", []error{fs.ErrNotExist, nil}, 2, nil},
		{"absent twice", []error{fs.ErrNotExist, fs.ErrNotExist, nil}, 3, nil},
		{"absent for good", []error{fs.ErrNotExist, fs.ErrNotExist, fs.ErrNotExist, nil}, 3, fs.ErrNotExist},
		{"another error", []error{errOther, nil}, 1, errOther},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reads, pauses := 0, 0
			data, err := readRetrying(func() ([]byte, error) {
				err := tt.results[reads]
				reads++
				if err != nil {
					return nil, err
				}
				return []byte("heartbeat"), nil
			}, heartbeatTries, func() { pauses++ })
			if reads != tt.wantReads || pauses != reads-1 {
				t.Errorf("%d reads, %d pauses; want %d reads, a pause between each", reads, pauses, tt.wantReads)
			}
			if !errors.Is(err, tt.wantErr) || (err == nil) != (string(data) == "heartbeat") {
				t.Errorf("got %q, %v; want the data or %v", data, err, tt.wantErr)
			}
		})
	}
}

// TestLastingTakeover: the takeover action on the backup records, in its peer bag, that the
// primary gave up control; the primary, reading it in its next hook, stands down: its
// slurmctld (ended by Slurm's takeover) is not started again by any hook, it is disabled (no
// start at boot), its status says so, and a configuration change still reaches its files.
// takeover on the primary starts it again (it takes control back) and takes the record back;
// a later takeover on the backup stands it down again.
func TestLastingTakeover(t *testing.T) {
	e, leader := haLeader(t, 0)
	e.c.ControlWait = 20 * time.Millisecond
	b, in := haBackup(t, leader)
	b.c.ControlWait = 20 * time.Millisecond
	in = b.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
	if !b.svc.isActive("slurmctld") {
		t.Fatalf("backup runs no slurmctld; status %+v", in.UnitStatus)
	}
	writeHeartbeat(t, b, 0)
	// Slurm's takeover: the primary saves, exits 0 and stays down (StayStopped); the backup
	// writes the heartbeat.
	b.slurm.before = func(argv []string) {
		if slices.Equal(argv, []string{"scontrol", "takeover", "1"}) {
			e.svc.Exit("slurmctld")
			writeHeartbeat(t, e, 1)
			writeHeartbeat(t, b, 1)
		}
	}
	takeover := func() map[string]string {
		t.Helper()
		in = b.run(in, jujutest.ActionEvent("takeover"))
		if in.Action.Failed || in.Action.Results["in-control"] != "slurmctld/1" {
			t.Fatalf("takeover on the backup: %s %v", in.Action.Message, in.Action.Results)
		}
		return in.Relations[1].LocalUnitData
	}
	bag := takeover()
	// The primary's peer hook brings the backup's bag, record included.
	peer := func(bag map[string]string) {
		t.Helper()
		for i, r := range leader.Relations {
			if r.ID == "slurmctld-peers:0" {
				leader.Relations[i].RemoteUnits = map[string]map[string]string{"slurmctld/1": maps.Clone(bag)}
			}
		}
		leader = e.run(leader, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/1"))
	}
	starts := e.svc.count("start slurmctld") + e.svc.restarts("slurmctld")
	peer(bag)
	const standing = "standing by, slurmctld stopped: control handed to slurmctld/1 by its takeover action (run takeover on this unit to take it back)"
	if leader.UnitStatus.Code != juju.StatusActive || leader.UnitStatus.Message != standing {
		t.Errorf("primary's status %+v, want active %q", leader.UnitStatus, standing)
	}
	if e.svc.count("disable slurmctld") != 1 {
		t.Errorf("slurmctld not disabled: %v", e.svc.Calls())
	}
	// Standing down is no restart to wait for: no restart turn is handed to it (one would run
	// out after 45 s and be named in the leader's status), and it reports the controllers its
	// files hold, those it starts with.
	if raw := peerAppBag(leader)[peerKeyTurn]; raw != "" {
		t.Errorf("a restart turn was handed out while the primary stands down: %s", raw)
	}
	if got, want := peerUnitBag(leader)[peerKeyRunsWith], peerUnitBag(in)[peerKeyRunsWith]; got != want {
		t.Errorf("the primary standing down reports runs-with %q, the backup %q", got, want)
	}
	// Quiet hooks and a configuration change: files written, slurmctld left stopped.
	conf := e.read(confPath)
	leader.Config["slurm-conf-parameters"] = "MinJobAge=10"
	for _, ev := range []juju.Event{jujutest.Hook(juju.UpdateStatus), jujutest.Hook(juju.ConfigChanged), jujutest.Hook(juju.Start)} {
		leader = e.run(leader, ev)
	}
	if got := e.read(confPath); got == conf || !strings.Contains(got, "MinJobAge=10") {
		t.Errorf("the configuration change did not reach slurm.conf:\n%s", cmp.Diff(conf, got))
	}
	if n := e.svc.count("start slurmctld") + e.svc.restarts("slurmctld") - starts; n != 0 || e.svc.isActive("slurmctld") {
		t.Errorf("slurmctld started %d times while standing down (active %v)", n, e.svc.isActive("slurmctld"))
	}
	if leader.UnitStatus.Message != standing {
		t.Errorf("primary's status %+v after the quiet hooks", leader.UnitStatus)
	}

	// takeover on the primary: started again, in control (its heartbeat), the record taken back.
	// It waits for the heartbeat only, not for slurmctld to answer a ping: a primary taking
	// control back answers nothing until the controller in control gave it up, which after a
	// takeover Slurm answers after 29 s (REQUEST_CONTROL), near start's 30 s for an answer.
	e.svc.OnStart(func(service.Spec) (bool, error) { writeHeartbeat(t, e, 0); return true, nil })
	pings := e.slurm.count("scontrol", "ping")
	leader = e.run(leader, jujutest.ActionEvent("takeover"))
	if leader.Action.Failed || leader.Action.Results["in-control"] != "slurmctld/0" || !e.svc.isActive("slurmctld") {
		t.Fatalf("takeover on the primary: %s %v (active %v)", leader.Action.Message, leader.Action.Results, e.svc.isActive("slurmctld"))
	}
	if n := e.slurm.count("scontrol", "ping") - pings; n != 0 {
		t.Errorf("takeover on the primary waited for slurmctld to answer (%d pings): only the heartbeat is waited for", n)
	}
	if n := e.slurm.count("scontrol", "takeover"); n != 0 {
		t.Errorf("the primary asked %d takeovers, want none (it takes control as it starts)", n)
	}
	peer(bag)
	if !e.svc.isActive("slurmctld") || strings.HasPrefix(leader.UnitStatus.Message, "standing by") {
		t.Errorf("the primary stood down again for a record it took back: %+v", leader.UnitStatus)
	}

	// A new takeover on the backup stands it down again.
	b.slurm.before = func(argv []string) {
		if slices.Equal(argv, []string{"scontrol", "takeover", "1"}) {
			e.svc.Exit("slurmctld")
			writeHeartbeat(t, e, 1)
			writeHeartbeat(t, b, 1)
		}
	}
	writeHeartbeat(t, b, 0)
	peer(takeover())
	if e.svc.isActive("slurmctld") || leader.UnitStatus.Message != standing {
		t.Errorf("after a second takeover on the backup: active %v, status %+v", e.svc.isActive("slurmctld"), leader.UnitStatus)
	}
}

// TestPrimaryStartsBesideBackupInControl: the primary's slurmctld started by a hook while a
// backup is in control (stopped by an operator, or not yet started at boot: the start hook)
// is not waited for: Slurm's primary answers only once the backup gave control up, which it
// may answer after 29 s, as long as start's wait for an answer. The status names the backup
// in control.
func TestPrimaryStartsBesideBackupInControl(t *testing.T) {
	e, leader := haLeader(t, 1)
	leader = e.run(leader, jujutest.Hook(juju.UpdateStatus)) // the restart to move the state finished
	e.svc.Exit("slurmctld")
	writeHeartbeat(t, e, 1)
	pings := e.slurm.count("scontrol", "ping")
	leader = e.run(leader, jujutest.Hook(juju.Start))
	if !e.svc.isActive("slurmctld") {
		t.Fatalf("slurmctld not started; status %+v", leader.UnitStatus)
	}
	if n := e.slurm.count("scontrol", "ping") - pings; n != 0 {
		t.Errorf("the start hook waited for slurmctld to answer (%d pings) while slurmctld/1 is in control", n)
	}
	if want := "standing by (active: slurmctld/1)"; !strings.Contains(leader.UnitStatus.Message, want) {
		t.Errorf("status %+v, want it to contain %q", leader.UnitStatus, want)
	}
}
