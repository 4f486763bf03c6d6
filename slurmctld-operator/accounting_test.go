package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

const dbdRel = juju.RelationID("slurmdbd:9")

// dbdBag is slurmdbd's data at Slurm version ver.
func dbdBag(ver string) map[string]string {
	return map[string]string{"version": "1", "hostname": "10.0.0.9", "port": "6819", "slurm_version": ver}
}

// withDbd is in with the slurmdbd relation carrying bag (nil: slurmdbd has not published).
func withDbd(in jujutest.State, bag map[string]string) jujutest.State {
	in.Relations = append(in.Relations, relation(dbdRel, "slurmdbd", bag, "slurmdbd/0"))
	return in
}

func (e *env) confLines(want ...string) {
	e.t.Helper()
	conf := e.read(confPath)
	for _, w := range want {
		neg := strings.HasPrefix(w, "!")
		w = strings.TrimPrefix(w, "!")
		if strings.Contains(conf, "\n"+w+"\n") == neg {
			e.t.Errorf("slurm.conf: %q present = %v:\n%s", w, !neg, conf)
		}
	}
}

// TestAccountingOnAndOff: the relation publishes the controller's data and grants the key;
// slurmdbd's data turns accounting on with one restart, which the hook does not wait for: its
// status says the restart is under way, the waiter watches it, and the next pass (here
// update-status) finishes it; a hook that changes nothing restarts nothing; the relation's
// end turns it off with one restart, finished the same way.
func TestAccountingOnAndOff(t *testing.T) {
	e := newEnv(t)
	out := e.started()
	ver := out.Version // the application version: slurmctld -V's
	if ver == "" {
		t.Fatal("no Slurm version shown")
	}
	out = e.run(withDbd(out, nil), jujutest.RelationHook(juju.RelationCreated, dbdRel, ""))
	secret := out.Secrets[0]
	if !strings.Contains(strings.Join(grantsOf(secret), " "), string(dbdRel)) {
		t.Errorf("auth key secret not granted to %s: %v", dbdRel, secret.Grants)
	}
	want := map[string]string{"version": "1", "auth_secret_id": string(secret.ID), "cluster_name": "charmed-slurm", "slurm_version": ver}
	if d := cmp.Diff(want, out.Relations[0].LocalAppData); d != "" {
		t.Errorf("published (-want +got):\n%s", d)
	}
	e.confLines("AccountingStorageType=accounting_storage/none", "!AccountingStorageHost=10.0.0.9")

	e.svc.ResetCalls()
	out.Relations[0].RemoteAppData = dbdBag(ver)
	out = e.run(out, jujutest.RelationHook(juju.RelationChanged, dbdRel, "slurmdbd/0"))
	e.confLines("AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=10.0.0.9",
		"AccountingStoragePort=6819", "AccountingStorageTRES=gres/gpu")
	if n := e.svc.count("respawn slurmctld"); n != 1 {
		t.Errorf("%d restarts of slurmctld turning accounting on, want 1", n)
	}
	e.restartUnderWay(out, "turn accounting on (slurmdbd at 10.0.0.9:6819)")
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if !strings.Contains(out.UnitStatus.Message, "; accounting via slurmdbd") || out.UnitStatus.Code != juju.StatusActive {
		t.Errorf("status %+v", out.UnitStatus)
	}
	e.restartFinished(out, "turn accounting on (slurmdbd at 10.0.0.9:6819)")

	e.svc.ResetCalls()
	out = e.run(out, jujutest.Hook(juju.ConfigChanged))
	if n := e.svc.count("respawn slurmctld"); n != 0 {
		t.Errorf("config-changed restarted slurmctld %d times", n)
	}

	out = e.run(out, jujutest.RelationHook(juju.RelationBroken, dbdRel, ""))
	e.confLines("AccountingStorageType=accounting_storage/none", "!AccountingStorageHost=10.0.0.9", "!AccountingStorageTRES=gres/gpu")
	if n := e.svc.count("respawn slurmctld"); n != 1 {
		t.Errorf("%d restarts of slurmctld turning accounting off, want 1", n)
	}
	e.restartUnderWay(out, "turn accounting off")
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if strings.Contains(out.UnitStatus.Message, "accounting") || out.UnitStatus.Code != juju.StatusActive {
		t.Errorf("status still speaks of accounting: %+v", out.UnitStatus)
	}
	e.restartFinished(out, "turn accounting off")
}

func grantsOf(s jujutest.Secret) []string {
	var out []string
	for _, g := range s.Grants {
		out = append(out, string(g.Relation))
	}
	return out
}

// TestAccountingOlderSlurmdbd: a slurmdbd older than the controller keeps accounting off,
// with no restart, and the status says why.
func TestAccountingOlderSlurmdbd(t *testing.T) {
	e := newEnv(t)
	out := e.started()
	e.svc.ResetCalls()
	out = e.run(withDbd(out, dbdBag("21.08.8")), jujutest.RelationHook(juju.RelationChanged, dbdRel, "slurmdbd/0"))
	e.confLines("AccountingStorageType=accounting_storage/none")
	if n := e.svc.count("respawn slurmctld"); n != 0 {
		t.Errorf("%d restarts", n)
	}
	if want := "; accounting off: slurmdbd 21.08.8 is older than the controller's Slurm " + out.Version + ": slurmdbd must be the controller's release or newer"; !strings.HasSuffix(out.UnitStatus.Message, want) || out.UnitStatus.Code != juju.StatusActive {
		t.Errorf("status %s %q, want active ending %q", out.UnitStatus.Code, out.UnitStatus.Message, want)
	}
}

// TestAccountingKeysAreManaged: slurm-conf-parameters may not set the keys the relation owns.
func TestAccountingKeysAreManaged(t *testing.T) {
	e := newEnv(t)
	in := baseState()
	in.Config["slurm-conf-parameters"] = "AccountingStorageHost=elsewhere"
	out := e.run(in, jujutest.Hook(juju.ConfigChanged))
	if want := "slurm-conf-parameters: AccountingStorageHost is managed by the charm and cannot be set"; out.UnitStatus.Message != want {
		t.Errorf("status %q, want %q", out.UnitStatus.Message, want)
	}
}
