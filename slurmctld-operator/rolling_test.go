package main

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// TestNextTurn: the controllers restart one at a time for a new SlurmctldHost list: those not
// in control in SlurmctldHost order, the one in control last (a backup in control handing
// control to a controller on the new list first; the primary in place); a turn is kept while
// its unit works within turnWait, moves on when the unit reports the new list or left, and
// after turnWait (the unit skipped for this list); a new list starts afresh.
func TestNextTurn(t *testing.T) {
	p := controller{Unit: "slurmctld/0", Host: "ctl", Addr: "10.0.0.1"}
	b1 := controller{Unit: "slurmctld/1", Host: "ctl1", Addr: "10.0.0.2"}
	b2 := controller{Unit: "slurmctld/2", Host: "ctl2", Addr: "10.0.0.3"}
	gone := b2
	gone.Gone = true
	three := []controller{p, b1, b2}
	newList := strings.Join(hostsOf(three), ",")
	oldList := strings.Join(hostsOf(three[:2]), ",")
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	turn := func(unit string, since time.Time, handTo int, skipped ...string) *restartTurn {
		return &restartTurn{Hosts: hostsOf(three), Unit: unit, Since: since, HandTo: handTo, Skipped: skipped}
	}
	for _, tc := range []struct {
		name   string
		prev   *restartTurn
		v      turnView
		want   *restartTurn
		ranOut string
	}{{
		name: "every controller runs with the list: no turn",
		v:    turnView{Ctls: three, Runs: map[string]string{p.Unit: newList, b1.Unit: newList, b2.Unit: newList}, Active: p.Unit, Now: now},
	}, {
		name: "a backup that left is not waited for",
		prev: &restartTurn{Hosts: hostsOf([]controller{p, b1, gone}), Unit: b2.Unit, Since: now},
		v: turnView{Ctls: []controller{p, b1, gone}, Runs: map[string]string{
			p.Unit: strings.Join(hostsOf([]controller{p, b1, gone}), ","), b1.Unit: strings.Join(hostsOf([]controller{p, b1, gone}), ",")}, Active: p.Unit, Now: now},
	}, {
		name: "controller added, primary in control: the backups first, in order",
		v:    turnView{Ctls: three, Runs: map[string]string{p.Unit: oldList, b1.Unit: oldList}, Active: p.Unit, Now: now},
		want: turn(b1.Unit, now, 0),
	}, {
		name: "the turn is kept while its unit restarts",
		prev: turn(b1.Unit, now.Add(-10*time.Second), 0),
		v:    turnView{Ctls: three, Runs: map[string]string{p.Unit: oldList, b1.Unit: ""}, Active: p.Unit, Now: now},
		want: turn(b1.Unit, now.Add(-10*time.Second), 0),
	}, {
		name: "its unit reports the new list: the next one",
		prev: turn(b1.Unit, now.Add(-10*time.Second), 0),
		v:    turnView{Ctls: three, Runs: map[string]string{p.Unit: oldList, b1.Unit: newList}, Active: p.Unit, Now: now},
		want: turn(b2.Unit, now, 0),
	}, {
		name: "the primary in control last, restarting in place",
		prev: turn(b2.Unit, now.Add(-10*time.Second), 0),
		v:    turnView{Ctls: three, Runs: map[string]string{p.Unit: oldList, b1.Unit: newList, b2.Unit: newList}, Active: p.Unit, Now: now},
		want: turn(p.Unit, now, 0),
	}, {
		name:   "a turn that ran out: the unit skipped, the next one's turn",
		prev:   turn(b1.Unit, now.Add(-turnWait), 0),
		v:      turnView{Ctls: three, Runs: map[string]string{p.Unit: oldList}, Active: p.Unit, Now: now},
		want:   turn(b2.Unit, now, 0, b1.Unit),
		ranOut: b1.Unit,
	}, {
		name: "a unit lost during its turn (left the relation): the turn moves on",
		prev: &restartTurn{Hosts: hostsOf(three), Unit: "slurmctld/7", Since: now.Add(-time.Second)},
		v:    turnView{Ctls: three, Runs: map[string]string{p.Unit: oldList, b1.Unit: newList, b2.Unit: newList}, Active: p.Unit, Now: now},
		want: turn(p.Unit, now, 0),
	}, {
		name:   "every unit left ran out: no one's turn, the record kept",
		prev:   turn(p.Unit, now.Add(-turnWait-time.Second), 0, b1.Unit),
		v:      turnView{Ctls: three, Runs: map[string]string{p.Unit: oldList, b2.Unit: newList}, Active: p.Unit, Now: now},
		want:   turn("", time.Time{}, 0, b1.Unit, p.Unit),
		ranOut: p.Unit,
	}, {
		name: "a new list starts afresh: the skipped units get a turn again",
		prev: &restartTurn{Hosts: hostsOf(three[:2]), Unit: "", Skipped: []string{b1.Unit}},
		v:    turnView{Ctls: three, Runs: map[string]string{p.Unit: oldList, b1.Unit: oldList}, Active: p.Unit, Now: now},
		want: turn(b1.Unit, now, 0),
	}, {
		name: "a backup in control (the primary away): the primary first, the backup in control last, handing control to one on the new list",
		prev: turn(p.Unit, now.Add(-turnWait), 0),
		v:    turnView{Ctls: three, Runs: map[string]string{b1.Unit: oldList, b2.Unit: newList}, Active: b1.Unit, Now: now},
		want: turn(b1.Unit, now, 2, p.Unit), ranOut: p.Unit,
	}, {
		name: "a primary not in control restarts before the backup in control (and takes control as it starts)",
		v:    turnView{Ctls: three, Runs: map[string]string{p.Unit: "", b1.Unit: oldList, b2.Unit: newList}, Active: b1.Unit, Now: now},
		want: turn(p.Unit, now, 0),
	}, {
		name: "a backup in control with no other controller on the new list restarts in place",
		prev: turn(p.Unit, now.Add(-turnWait), 0),
		v:    turnView{Ctls: three, Runs: map[string]string{b1.Unit: oldList}, Active: b1.Unit, Now: now},
		want: turn(b2.Unit, now, 0, p.Unit), ranOut: p.Unit,
	}, {
		name: "no fresh heartbeat (one controller growing to two): the controller running goes first",
		v:    turnView{Ctls: three[:2], Runs: map[string]string{p.Unit: strings.Join(hostsOf(three[:1]), ",")}, Now: now},
		want: &restartTurn{Hosts: hostsOf(three[:2]), Unit: p.Unit, Since: now},
	}, {
		name: "no fresh heartbeat, the controller running done: the new one",
		prev: &restartTurn{Hosts: hostsOf(three[:2]), Unit: p.Unit, Since: now.Add(-5 * time.Second)},
		v:    turnView{Ctls: three[:2], Runs: map[string]string{p.Unit: strings.Join(hostsOf(three[:2]), ",")}, Now: now},
		want: &restartTurn{Hosts: hostsOf(three[:2]), Unit: b1.Unit, Since: now},
	}, {
		name: "a single controller left restarts at once",
		v:    turnView{Ctls: three[1:2], Runs: map[string]string{b1.Unit: oldList}, Active: b1.Unit, Now: now},
		want: &restartTurn{Hosts: hostsOf(three[1:2]), Unit: b1.Unit, Since: now},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, ranOut := nextTurn(tc.prev, tc.v)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("turn (-want +got):\n%s", d)
			}
			if ranOut != tc.ranOut {
				t.Errorf("ran out: %q, want %q", ranOut, tc.ranOut)
			}
		})
	}
}

// TestDecodeTurn: the turn record round-trips; what is not one is refused.
func TestDecodeTurn(t *testing.T) {
	in := &restartTurn{Hosts: []string{"ctl(10.0.0.1)", "ctl1(10.0.0.2)"}, Unit: "slurmctld/1", Since: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), HandTo: 1, Skipped: []string{"slurmctld/0"}}
	raw, err := encodeTurn(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeTurn(raw)
	if err != nil || !cmp.Equal(in, got) {
		t.Errorf("round trip: %+v, %v", got, err)
	}
	if got, err := decodeTurn(""); got != nil || err != nil {
		t.Errorf(`"": %+v, %v`, got, err)
	}
	for _, bad := range []string{
		`{}`,
		`{"hosts":["a(10.0.0.1)"],"unit":"Not a unit"}`,
		`{"hosts":["a(10.0.0.1)"],"hand-to":1}`,
		`{"hosts":["a(10.0.0.1)"],"hand-to":-1}`,
		`{"hosts":["a(10.0.0.1)"],"other":1}`,
		`{"hosts":["a(10.0.0.1)"]} {}`,
		`[]`,
	} {
		if got, err := decodeTurn(bad); err == nil {
			t.Errorf("%s: %+v, want an error", bad, got)
		}
	}
}

func FuzzDecodeTurn(f *testing.F) {
	f.Add(`{"hosts":["ctl(10.0.0.1)","ctl1(10.0.0.2)"],"unit":"slurmctld/1","since":"2026-11-26T12:00:00Z","hand-to":1,"skipped":["slurmctld/0"]}`)
	f.Add(`{"hosts":[]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		turn, err := decodeTurn(raw)
		if err != nil || turn == nil {
			return
		}
		again, err := encodeTurn(turn)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", turn, err)
		}
		if back, err := decodeTurn(again); err != nil || !cmp.Equal(turn, back) {
			t.Fatalf("round trip of %q: %+v, %v", again, back, err)
		}
	})
}

// setPeer sets unit's peer unit bag key to value in st.
func setPeer(st *jujutest.State, unit, key, value string) {
	for i, r := range st.Relations {
		if r.ID == "slurmctld-peers:0" {
			bag := maps.Clone(r.RemoteUnits[unit])
			if bag == nil {
				bag = map[string]string{}
			}
			bag[key] = value
			st.Relations[i].RemoteUnits[unit] = bag
		}
	}
}

// TestHARollingRestartLeader: a controller added to two (the leader, primary, in control):
// the leader hands the turn to the backup, then to the new unit, restarts itself last once
// both report the new list, and the turn goes from the bag once its own restart answers; a
// turn that runs out moves on (the waiter is told to wake the leader at its deadline) and the
// status names the unit skipped.
func TestHARollingRestartLeader(t *testing.T) {
	e, out := haLeader(t, 0)
	clock := e.withClock()
	e.slurm.SetControllers([]string{"ctl", "ctl1", "ctl2"})
	restarts := e.svc.restarts("slurmctld")
	setPeer(&out, "slurmctld/2", "hostname", "ctl2")
	setPeer(&out, "slurmctld/2", "address", "10.0.0.3")
	setPeer(&out, "slurmctld/2", "storage", "mounted")
	out = e.run(out, jujutest.RelationHook(juju.RelationJoined, "slurmctld-peers:0", "slurmctld/2"))
	newList := "ctl(10.0.0.1),ctl1(10.0.0.2),ctl2(10.0.0.3)"
	if !strings.Contains(e.read(confPath), "SlurmctldHost=ctl2(10.0.0.3)\n") {
		t.Fatalf("slurm.conf does not list the new controller:\n%s", e.read(confPath))
	}
	turnOf := func(st jujutest.State) string {
		t.Helper()
		turn, err := decodeTurn(peerAppBag(st)[peerKeyTurn])
		if err != nil {
			t.Fatal(err)
		}
		if turn == nil {
			return ""
		}
		return turn.Unit
	}
	check := func(step, wantTurn string, wantRestarts int) {
		t.Helper()
		if got := turnOf(out); got != wantTurn {
			t.Errorf("%s: turn %q, want %q", step, got, wantTurn)
		}
		if n := e.svc.restarts("slurmctld") - restarts; n != wantRestarts {
			t.Errorf("%s: %d restarts of the leader's slurmctld, want %d", step, n, wantRestarts)
		}
	}
	check("controller added", "slurmctld/1", 0)
	if !strings.Contains(out.UnitStatus.Message, "controllers restarting one at a time for the new SlurmctldHost list (slurmctld/1's turn)") {
		t.Errorf("status %+v does not name the turn", out.UnitStatus)
	}
	if w := e.waiter.last(); !w.Turn.Equal(clock.now.Add(turnWait)) {
		t.Errorf("the waiter watches %+v, want the turn's deadline %s", w, clock.now.Add(turnWait))
	}

	// A new leadership term (this unit keeping it) carries the turn on from the bag, as a
	// new leader would: the same unit, the same start.
	before := peerAppBag(out)[peerKeyTurn]
	clock.advance(10 * time.Second)
	out = e.run(out, jujutest.Hook(juju.LeaderElected))
	if got := peerAppBag(out)[peerKeyTurn]; got != before {
		t.Errorf("turn after leader-elected %s, want %s kept", got, before)
	}

	setPeer(&out, "slurmctld/1", peerKeyRunsWith, newList)
	out = e.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/1"))
	check("slurmctld/1 restarted", "slurmctld/2", 0)

	// slurmctld/2 never reports: its turn runs out, and the leader's turn comes.
	clock.advance(turnWait)
	out = e.run(out, jujutest.Hook(juju.UpdateStatus)) // the waiter's wake at the deadline
	check("slurmctld/2's turn ran out", "slurmctld/0", 1)
	e.restartUnderWay(out, "run with the controllers "+strings.ReplaceAll(newList, "),", "),"))

	// The leader's restart answers: slurmctld/2 is still skipped, the status says so.
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if got := turnOf(out); got != "" {
		t.Errorf("turn %q once the leader restarted, want none", got)
	}
	if !strings.Contains(out.UnitStatus.Message, "slurmctld/2 did not finish its restart turn within 45s") {
		t.Errorf("status %+v does not name the unit skipped", out.UnitStatus)
	}
	// slurmctld/2 comes and reports the new list: the turns are over.
	setPeer(&out, "slurmctld/2", peerKeyRunsWith, newList)
	out = e.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/2"))
	if raw, ok := peerAppBag(out)[peerKeyTurn]; ok && raw != "" {
		t.Errorf("turn record %q left once every controller runs with the list", raw)
	}
	if strings.Contains(out.UnitStatus.Message, "turn") {
		t.Errorf("status %+v still speaks of turns", out.UnitStatus)
	}
	check("done", "", 1)
}

// TestHARollingRestartBackup: a backup sees a new controller list: it writes the files but
// its slurmctld keeps running until its turn, its status saying so; in its turn it restarts,
// and reports the new list once it answers. In control (the primary away), its turn hands
// control to the controller the leader named (`scontrol takeover`) before the restart.
func TestHARollingRestartBackup(t *testing.T) {
	for _, tc := range []struct {
		name     string
		active   uint64
		handTo   int
		takeover bool
	}{
		{"standing by", 0, 0, false},
		{"in control", 1, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, leader := haLeader(t, 0)
			b, in := haBackup(t, leader)
			out := b.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
			writeHeartbeat(t, b, tc.active)
			b.slurm.SetControllers([]string{"ctl", "ctl1", "ctl2"})
			respawns, takeovers := b.svc.count("respawn slurmctld"), b.slurm.count("scontrol", "takeover")

			// The leader lists slurmctld/2 and gives the turn to slurmctld/0.
			bag := maps.Clone(peerAppBag(out))
			ctls, err := decodeControllers(bag[peerKeyControllers])
			if err != nil {
				t.Fatal(err)
			}
			ctls = append(ctls, controller{Unit: "slurmctld/2", Host: "ctl2", Addr: "10.0.0.3"})
			bag[peerKeyControllers], _ = encodeControllers(ctls)
			bag[peerKeyConf] = strings.Replace(bag[peerKeyConf], `SlurmctldHost=ctl1(10.0.0.2)\n`, `SlurmctldHost=ctl1(10.0.0.2)\nSlurmctldHost=ctl2(10.0.0.3)\n`, 1)
			setTurn := func(unit string, handTo int) {
				raw, err := encodeTurn(&restartTurn{Hosts: hostsOf(ctls), Unit: unit, Since: time.Now(), HandTo: handTo})
				if err != nil {
					t.Fatal(err)
				}
				bag[peerKeyTurn] = raw
				for i, r := range out.Relations {
					if r.ID == "slurmctld-peers:0" {
						out.Relations[i].LocalAppData = maps.Clone(bag)
					}
				}
			}
			setTurn("slurmctld/0", 0)
			out = b.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
			if !strings.Contains(b.read(confPath), "SlurmctldHost=ctl2(10.0.0.3)") {
				t.Errorf("the new slurm.conf not written:\n%s", b.read(confPath))
			}
			if n := b.svc.count("respawn slurmctld") - respawns; n != 0 {
				t.Errorf("%d restarts before its turn, want none", n)
			}
			if !strings.Contains(out.UnitStatus.Message, "restart for the new SlurmctldHost list waits for this unit's turn (now: slurmctld/0)") {
				t.Errorf("status %+v while it waits for its turn", out.UnitStatus)
			}
			out = b.run(out, jujutest.Hook(juju.UpdateStatus)) // a quiet hook restarts nothing
			if n := b.svc.count("respawn slurmctld") - respawns; n != 0 {
				t.Errorf("%d restarts after a quiet hook, want none", n)
			}

			setTurn("slurmctld/1", tc.handTo)
			out = b.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmctld-peers:0", "slurmctld/0"))
			if n := b.svc.count("respawn slurmctld") - respawns; n != 1 {
				t.Errorf("%d restarts in its turn, want 1", n)
			}
			if took := b.slurm.count("scontrol", "takeover") - takeovers; took != map[bool]int{false: 0, true: 1}[tc.takeover] {
				t.Errorf("%d takeovers before the restart, want takeover %v", took, tc.takeover)
			}
			if peerUnitBag(out)[peerKeyRunsWith] != "none" {
				t.Errorf("report while it restarts: %q, want none", peerUnitBag(out)[peerKeyRunsWith])
			}
			out = b.run(out, jujutest.Hook(juju.UpdateStatus)) // it answers
			if got := peerUnitBag(out)[peerKeyRunsWith]; got != "ctl(10.0.0.1),ctl1(10.0.0.2),ctl2(10.0.0.3)" {
				t.Errorf("report once it answers: %q", got)
			}
		})
	}
}

// peerUnitBag is this unit's peer relation bag in st.
func peerUnitBag(st jujutest.State) map[string]string {
	for _, r := range st.Relations {
		if r.ID == "slurmctld-peers:0" {
			return r.LocalUnitData
		}
	}
	return nil
}
