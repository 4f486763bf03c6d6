package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/sackd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/slurm"
)

const loginRel = juju.RelationID("sackd:3")

// withLogin adds login application "login" (one unit) to in.
func withLogin(in jujutest.State) jujutest.State {
	in.Relations = append(in.Relations, relation(loginRel, "login", nil, "login/0"))
	return in
}

// loginJoined is a started controller with one slurmd application and the login application
// related (relation-created, then joined).
func (e *env) loginJoined() jujutest.State {
	e.t.Helper()
	out := e.run(withLogin(e.joined()), jujutest.RelationHook(juju.RelationCreated, loginRel, ""))
	return e.run(out, jujutest.RelationHook(juju.RelationJoined, loginRel, "login/0"))
}

// loginBag decodes what the controller published to the login application.
func loginBag(t *testing.T, s jujutest.State) sackd.ControllerBag {
	t.Helper()
	for _, r := range s.Relations {
		if r.ID == loginRel {
			b, err := sackd.DecodeControllerBag(r.LocalAppData)
			if err != nil {
				t.Fatalf("controller data on %s: %v", loginRel, err)
			}
			return b
		}
	}
	t.Fatalf("no relation %s", loginRel)
	return sackd.ControllerBag{}
}

// served is the digest of the configuration files the controller's host holds now.
func (e *env) served() string {
	e.t.Helper()
	files := map[string][]byte{}
	for _, p := range []string{confPath, "/etc/slurm/gres.conf", "/etc/slurm/partition-slurmd.conf"} {
		if e.exists(p) {
			files[p] = []byte(e.read(p))
		}
	}
	return sackd.DigestFiles(files)
}

func TestLoginRelation(t *testing.T) {
	e := newEnv(t)
	out := e.loginJoined()
	got := loginBag(t, out)
	want := sackd.ControllerBag{Controllers: []string{"10.0.0.1:6817"}, AuthSecretID: string(out.Secrets[0].ID), ClusterName: "charmed-slurm", ConfDigest: e.served(),
		// The controller's own release (slurmctld -V), which login units check theirs against.
		SlurmVersion: slurm.Version{Major: 22, Minor: 5, Micro: 8}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("published (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]jujutest.Grant{{Relation: "slurmd:1"}, {Relation: loginRel}}, out.Secrets[0].Grants); d != "" {
		t.Errorf("auth secret grants (-want +got):\n%s", d)
	}
	if out.UnitStatus.Code != juju.StatusActive {
		t.Errorf("status %+v", out.UnitStatus)
	}
}

// TestLoginUnchangedWritesNothing: once the login application has the data, hooks that
// change none of it write nothing and list no relation.
func TestLoginUnchangedWritesNothing(t *testing.T) {
	for _, ev := range []juju.Event{
		jujutest.Hook(juju.UpdateStatus),
		jujutest.Hook(juju.ConfigChanged),
		jujutest.RelationHook(juju.RelationChanged, loginRel, "login/0"),
		jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"),
	} {
		t.Run(ev.Name, func(t *testing.T) {
			e := newEnv(t)
			in := e.loginJoined()
			_, calls, err := e.runTools(in, ev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := only(calls, writeTools[:len(writeTools)-1:len(writeTools)-1]); len(got) != 0 {
				t.Errorf("writes of an unchanged hook: %q", got)
			}
			// A configure hook lists the mount and peer relations once each (high
			// availability), the login relations not.
			lists := 0
			if ev.Kind == juju.ConfigChanged {
				lists = 2
			}
			if got := only(calls, []string{"relation-ids"}); len(got) != lists {
				t.Errorf("relation lists of an unchanged hook: %q, want %d", got, lists)
			}
		})
	}
}

// TestLoginFollowsTheConfiguration: a change of the configuration slurmctld serves (here a
// partition, applied with a reconfigure; a GresTypes change is applied with a restart, after
// which sackd keeps its old copy) reaches the login application in the same hook.
func TestLoginFollowsTheConfiguration(t *testing.T) {
	e := newEnv(t)
	in := e.loginJoined()
	before := loginBag(t, in).ConfDigest
	in.Relations[0].RemoteAppData = compute(t, "slurmd", "MaxTime=1:00:00")
	out := e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
	after := loginBag(t, out).ConfDigest
	if after == before || after != e.served() {
		t.Errorf("digest %s → %s, want the new configuration's %s", before, after, e.served())
	}
	if !strings.Contains(e.read("/etc/slurm/partition-slurmd.conf"), "MaxTime=1:00:00") {
		t.Fatal("the partition did not change")
	}
}

// TestLoginRelationBeforeTheKey: a login application related before the controller has its
// key gets nothing, then everything from the first configure hook.
func TestLoginRelationBeforeTheKey(t *testing.T) {
	e := newEnv(t)
	in := withLogin(baseState())
	out, calls, err := e.runTools(in, jujutest.RelationHook(juju.RelationCreated, loginRel, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := only(calls, []string{"relation-set", "secret-grant", "secret-add"}); len(got) != 0 {
		t.Errorf("writes before the controller is configured: %q", got)
	}
	out = e.run(out, jujutest.Hook(juju.ConfigChanged))
	if b := loginBag(t, out); b.AuthSecretID == "" || b.ConfDigest == "" {
		t.Errorf("published %+v", b)
	}
	if len(out.Secrets[0].Grants) != 1 || out.Secrets[0].Grants[0].Relation != loginRel {
		t.Errorf("grants %+v", out.Secrets[0].Grants)
	}
}

// TestLoginFailedHookRedone: Juju discards the writes of a failed hook; the next hook writes
// them again.
func TestLoginFailedHookRedone(t *testing.T) {
	e := newEnv(t)
	in := withLogin(e.joined())
	failSet := func(args []string) bool {
		return args[0] == "relation-set" && strings.Contains(strings.Join(args, " "), string(loginRel))
	}
	out, _, err := e.runTools(in, jujutest.RelationHook(juju.RelationCreated, loginRel, ""), failSet)
	if err == nil {
		t.Fatal("hook did not fail")
	}
	if len(out.Relations[1].LocalAppData) != 0 || len(out.Secrets[0].Grants) != 1 {
		t.Fatalf("failed hook kept data %v, grants %v", out.Relations[1].LocalAppData, out.Secrets[0].Grants)
	}
	out, calls, err := e.runTools(out, jujutest.RelationHook(juju.RelationCreated, loginRel, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"secret-grant", "relation-set"}, only(calls, []string{"relation-set", "secret-grant"})); d != "" {
		t.Errorf("writes of the retry (-want +got):\n%s", d)
	}
	loginBag(t, out)
}

// TestLoginNewLeader: a new leader trusts no record of an earlier term and publishes again;
// a unit that does not lead publishes nothing.
func TestLoginNewLeader(t *testing.T) {
	e := newEnv(t)
	in := e.loginJoined()
	in.Relations[1].LocalAppData = nil // as another leader might have left it
	out := e.run(in, jujutest.Hook(juju.LeaderElected))
	loginBag(t, out)

	e = newEnv(t)
	in = e.loginJoined()
	in.Leader = false
	in.Relations[1].LocalAppData = nil
	out, calls, err := e.runTools(in, jujutest.Hook(juju.UpdateStatus), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := only(calls, []string{"relation-set", "secret-grant", "relation-ids"}); len(got) != 0 {
		t.Errorf("a standby unit ran %q", got)
	}
	if len(out.Relations[1].LocalAppData) != 0 {
		t.Errorf("a standby unit published %v", out.Relations[1].LocalAppData)
	}
}

// TestLoginRelationBroken: the record forgets a login application whose relation is broken,
// and nothing is written to it.
func TestLoginRelationBroken(t *testing.T) {
	e := newEnv(t)
	in := e.loginJoined()
	out, calls, err := e.runTools(in, jujutest.RelationHook(juju.RelationBroken, loginRel, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := only(calls, []string{"relation-set", "secret-grant"}); len(got) != 0 {
		t.Errorf("writes to a broken relation: %q", got)
	}
	// The next configuration change writes to no login relation.
	out.Relations = out.Relations[:1]
	out.Config["slurm-conf-parameters"] = "MaxJobCount=5000"
	_, calls, err = e.runTools(out, jujutest.Hook(juju.ConfigChanged), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The mount and peer relations are listed (high availability), the login ones not.
	if got := only(calls, []string{"relation-set", "relation-ids"}); len(got) != 2 || got[0] != "relation-ids" || got[1] != "relation-ids" {
		t.Errorf("after the login application left: %q", got)
	}
}

// TestLoginRefusedConfiguration: while the configuration is refused the login application
// keeps what it had.
func TestLoginRefusedConfiguration(t *testing.T) {
	e := newEnv(t)
	in := e.loginJoined()
	before := loginBag(t, in)
	in.Config["cluster-name"] = "other"
	out := e.run(in, jujutest.Hook(juju.ConfigChanged))
	if out.UnitStatus.Code != juju.StatusBlocked {
		t.Fatalf("status %+v, want blocked", out.UnitStatus)
	}
	if d := cmp.Diff(before, loginBag(t, out)); d != "" {
		t.Errorf("published while blocked (-before +after):\n%s", d)
	}
}

// TestLoginHosts: every controller unit, leader or not, lists the login units in its
// /etc/hosts from their unit data, follows them as they come, change and go, and puts the
// list back when something else rewrote the file (cloud-init does at boot).
func TestLoginHosts(t *testing.T) {
	for _, leader := range []bool{true, false} {
		t.Run(map[bool]string{true: "leader", false: "standby"}[leader], func(t *testing.T) {
			e := newEnv(t)
			in := e.loginJoined()
			in.Leader = leader
			base := "127.0.0.1 localhost\n10.0.0.1 ctl\n"
			if err := os.MkdirAll(e.c.Path("/etc"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(e.c.Path(hostsPath), []byte(base), 0o644); err != nil {
				t.Fatal(err)
			}
			block := func(lines ...string) string {
				if len(lines) == 0 {
					return base
				}
				return base + "# BEGIN " + hostsOwner + " (managed, edits are overwritten)\n" + strings.Join(lines, "\n") + "\n# END " + hostsOwner + "\n"
			}
			check := func(when string, want string) {
				t.Helper()
				if got := e.read(hostsPath); got != want {
					t.Errorf("%s: /etc/hosts:\n%s\nwant:\n%s", when, got, want)
				}
			}
			login := &in.Relations[1]
			login.RemoteUnits["login/0"] = map[string]string{"hostname": "juju-3", "address": "10.0.0.14"}
			out := e.run(in, jujutest.RelationHook(juju.RelationChanged, loginRel, "login/0"))
			check("login/0 published", block("10.0.0.14 juju-3"))

			out.Relations[1].RemoteUnits["login/1"] = map[string]string{"hostname": "juju-4", "address": "fd00::4"}
			out = e.run(out, jujutest.RelationHook(juju.RelationJoined, loginRel, "login/1"))
			out = e.run(out, jujutest.RelationHook(juju.RelationChanged, loginRel, "login/1"))
			check("login/1 joined", block("10.0.0.14 juju-3", "fd00::4 juju-4"))

			// Bad data changes nothing.
			out.Relations[1].RemoteUnits["login/1"] = map[string]string{"hostname": "juju-4\n1.2.3.4 localhost", "address": "fd00::4"}
			out = e.run(out, jujutest.RelationHook(juju.RelationChanged, loginRel, "login/1"))
			check("bad data", block("10.0.0.14 juju-3", "fd00::4 juju-4"))

			// Rewritten by someone else: the next hook puts the block back.
			os.WriteFile(e.c.Path(hostsPath), []byte(base), 0o644)
			out = e.run(out, jujutest.Hook(juju.UpdateStatus))
			check("after a rewrite", block("10.0.0.14 juju-3", "fd00::4 juju-4"))

			departs := jujutest.RelationHook(juju.RelationDeparted, loginRel, "login/0")
			departs.DepartingUnit = "login/0"
			delete(out.Relations[1].RemoteUnits, "login/0")
			out = e.run(out, departs)
			check("login/0 departed", block("fd00::4 juju-4"))

			out = e.run(out, jujutest.RelationHook(juju.RelationBroken, loginRel, ""))
			check("relation broken", block())
		})
	}
}
