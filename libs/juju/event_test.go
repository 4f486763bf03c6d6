package juju_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
)

func baseEnv(extra map[string]string) map[string]string {
	env := map[string]string{
		"JUJU_UNIT_NAME":  "slurmd/3",
		"JUJU_MODEL_NAME": "hpc",
		"JUJU_MODEL_UUID": "0ad4e4b6-1111-2222-3333-444455556666",
		"JUJU_CHARM_DIR":  "/var/lib/juju/agents/unit-slurmd-3/charm",
		"JUJU_CONTEXT_ID": "slurmd/3-install-123",
		"JUJU_MACHINE_ID": "4",
		"JUJU_VERSION":    "3.6.1",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func baseEvent(ev juju.Event) juju.Event {
	ev.Unit, ev.App, ev.Model = "slurmd/3", "slurmd", "hpc"
	ev.ModelUUID = "0ad4e4b6-1111-2222-3333-444455556666"
	ev.CharmDir = "/var/lib/juju/agents/unit-slurmd-3/charm"
	ev.ContextID, ev.MachineID, ev.JujuVersion = "slurmd/3-install-123", "4", "3.6.1"
	return ev
}

func TestReadEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want juju.Event
	}{{
		name: "install",
		env:  map[string]string{"JUJU_DISPATCH_PATH": "hooks/install", "JUJU_HOOK_NAME": "install"},
		want: juju.Event{Kind: juju.Install, Name: "install", DispatchPath: "hooks/install"},
	}, {
		name: "leader-settings-changed",
		env:  map[string]string{"JUJU_DISPATCH_PATH": "hooks/leader-settings-changed"},
		want: juju.Event{Kind: juju.LeaderSettingsChanged, Name: "leader-settings-changed", DispatchPath: "hooks/leader-settings-changed"},
	}, {
		name: "relation-joined",
		env: map[string]string{"JUJU_DISPATCH_PATH": "hooks/slurmctld-relation-joined", "JUJU_RELATION": "slurmctld",
			"JUJU_RELATION_ID": "slurmctld:5", "JUJU_REMOTE_UNIT": "slurmctld/0", "JUJU_REMOTE_APP": "slurmctld"},
		want: juju.Event{Kind: juju.RelationJoined, Name: "slurmctld-relation-joined", DispatchPath: "hooks/slurmctld-relation-joined",
			Endpoint: "slurmctld", Relation: "slurmctld:5", RemoteUnit: "slurmctld/0", RemoteApp: "slurmctld"},
	}, {
		name: "relation-departed on the leaving unit",
		env: map[string]string{"JUJU_DISPATCH_PATH": "hooks/slurmctld-relation-departed", "JUJU_RELATION": "slurmctld",
			"JUJU_RELATION_ID": "slurmctld:5", "JUJU_REMOTE_UNIT": "slurmctld/0", "JUJU_DEPARTING_UNIT": "slurmd/3"},
		want: juju.Event{Kind: juju.RelationDeparted, Name: "slurmctld-relation-departed", DispatchPath: "hooks/slurmctld-relation-departed",
			Endpoint: "slurmctld", Relation: "slurmctld:5", RemoteUnit: "slurmctld/0", RemoteApp: "slurmctld", DepartingUnit: "slurmd/3"},
	}, {
		name: "relation-broken",
		env: map[string]string{"JUJU_DISPATCH_PATH": "hooks/my-peers-relation-broken", "JUJU_RELATION": "my-peers",
			"JUJU_RELATION_ID": "my-peers:0", "JUJU_REMOTE_APP": "slurmd"},
		want: juju.Event{Kind: juju.RelationBroken, Name: "my-peers-relation-broken", DispatchPath: "hooks/my-peers-relation-broken",
			Endpoint: "my-peers", Relation: "my-peers:0", RemoteApp: "slurmd"},
	}, {
		name: "action",
		env: map[string]string{"JUJU_DISPATCH_PATH": "actions/node-config", "JUJU_ACTION_NAME": "node-config",
			"JUJU_ACTION_UUID": "42"},
		want: juju.Event{Kind: juju.Action, Name: "node-config", DispatchPath: "actions/node-config", ActionUUID: "42"},
	}, {
		name: "secret-changed",
		env: map[string]string{"JUJU_DISPATCH_PATH": "hooks/secret-changed", "JUJU_SECRET_ID": "secret:cpq5s8ppt4ou0a6ckhpg",
			"JUJU_SECRET_LABEL": "auth"},
		want: juju.Event{Kind: juju.SecretChanged, Name: "secret-changed", DispatchPath: "hooks/secret-changed",
			SecretID: "secret:cpq5s8ppt4ou0a6ckhpg", SecretLabel: "auth"},
	}, {
		name: "secret-remove",
		env: map[string]string{"JUJU_DISPATCH_PATH": "hooks/secret-remove", "JUJU_SECRET_ID": "secret:x",
			"JUJU_SECRET_REVISION": "2"},
		want: juju.Event{Kind: juju.SecretRemove, Name: "secret-remove", DispatchPath: "hooks/secret-remove",
			SecretID: "secret:x", SecretRevision: 2},
	}, {
		name: "unknown hook",
		env:  map[string]string{"JUJU_DISPATCH_PATH": "hooks/data-storage-attached"},
		want: juju.Event{Kind: juju.OtherHook, Name: "data-storage-attached", DispatchPath: "hooks/data-storage-attached"},
	}, {
		name: "legacy hook without dispatch path",
		env:  map[string]string{"JUJU_HOOK_NAME": "start"},
		want: juju.Event{Kind: juju.Start, Name: "start"},
	}, {
		name: "legacy action without dispatch path",
		env:  map[string]string{"JUJU_ACTION_NAME": "rotate-auth-key"},
		want: juju.Event{Kind: juju.Action, Name: "rotate-auth-key"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := juju.ReadEvent(juju.EnvMap(baseEnv(tc.env)))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(baseEvent(tc.want), got); d != "" {
				t.Errorf("event (-want +got):\n%s", d)
			}
		})
	}
}

func TestReadEventErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"no unit", map[string]string{"JUJU_UNIT_NAME": "", "JUJU_DISPATCH_PATH": "hooks/install"}, "JUJU_UNIT_NAME is not set"},
		{"bad unit", map[string]string{"JUJU_UNIT_NAME": "slurmd", "JUJU_DISPATCH_PATH": "hooks/install"}, `JUJU_UNIT_NAME: invalid unit name "slurmd"`},
		{"bad unit number", map[string]string{"JUJU_UNIT_NAME": "slurmd/01", "JUJU_DISPATCH_PATH": "hooks/install"}, `invalid unit name "slurmd/01"`},
		{"no dispatch path", map[string]string{}, "JUJU_DISPATCH_PATH is not set"},
		{"bad dispatch path", map[string]string{"JUJU_DISPATCH_PATH": "bin/install"}, `JUJU_DISPATCH_PATH "bin/install"`},
		{"nested dispatch path", map[string]string{"JUJU_DISPATCH_PATH": "hooks/a/b"}, `JUJU_DISPATCH_PATH "hooks/a/b"`},
		{"action name mismatch", map[string]string{"JUJU_DISPATCH_PATH": "actions/a", "JUJU_ACTION_NAME": "b"}, `JUJU_ACTION_NAME "b"`},
		{"relation without id", map[string]string{"JUJU_DISPATCH_PATH": "hooks/db-relation-changed"}, "JUJU_RELATION_ID is not set"},
		{"bad relation id", map[string]string{"JUJU_DISPATCH_PATH": "hooks/db-relation-changed", "JUJU_RELATION_ID": "db:x"}, `invalid relation id "db:x"`},
		{"relation id on other endpoint", map[string]string{"JUJU_DISPATCH_PATH": "hooks/db-relation-changed", "JUJU_RELATION_ID": "web:1"}, `not on endpoint "db"`},
		{"relation name mismatch", map[string]string{"JUJU_DISPATCH_PATH": "hooks/db-relation-changed", "JUJU_RELATION_ID": "db:1", "JUJU_RELATION": "web"}, `JUJU_RELATION "web"`},
		{"departed without departing unit", map[string]string{"JUJU_DISPATCH_PATH": "hooks/db-relation-departed", "JUJU_RELATION_ID": "db:1"}, "JUJU_DEPARTING_UNIT is not set"},
		{"secret hook without id", map[string]string{"JUJU_DISPATCH_PATH": "hooks/secret-changed"}, "JUJU_SECRET_ID is not set"},
		{"bad secret revision", map[string]string{"JUJU_DISPATCH_PATH": "hooks/secret-remove", "JUJU_SECRET_ID": "secret:x", "JUJU_SECRET_REVISION": "two"}, `JUJU_SECRET_REVISION "two"`},
		{"secret-expired without revision", map[string]string{"JUJU_DISPATCH_PATH": "hooks/secret-expired", "JUJU_SECRET_ID": "secret:x"}, "JUJU_SECRET_REVISION is not set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := juju.ReadEvent(juju.EnvMap(baseEnv(tc.env)))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func FuzzReadEvent(f *testing.F) {
	f.Add("hooks/slurmd-relation-departed", "slurmd/0", "slurmd:1", "2")
	f.Add("actions/x", "a/1", "", "")
	f.Add("hooks/secret-remove", "a/1", "", "x")
	f.Add("hooks/-relation-joined", "/", ":", "-1")
	f.Fuzz(func(t *testing.T, dispatch, unit, rel, rev string) {
		ev, err := juju.ReadEvent(juju.EnvMap(map[string]string{
			"JUJU_DISPATCH_PATH": dispatch, "JUJU_UNIT_NAME": unit, "JUJU_RELATION_ID": rel,
			"JUJU_SECRET_REVISION": rev, "JUJU_SECRET_ID": "secret:x", "JUJU_DEPARTING_UNIT": "a/0",
		}))
		if err != nil {
			return
		}
		if ev.Name == "" || ev.App == "" {
			t.Fatalf("accepted event without name or app: %+v", ev)
		}
		if ev.Kind.IsRelation() {
			if _, _, err := ev.Relation.Parse(); err != nil || ev.Relation.Endpoint() != ev.Endpoint {
				t.Fatalf("accepted relation event with bad id: %+v", ev)
			}
		}
	})
}

func TestRelationIDAndPorts(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "x", ":1", "a:", "a:-1", "a:01", "a:1x"} {
		if _, _, err := juju.RelationID(bad).Parse(); err == nil {
			t.Errorf("RelationID(%q).Parse: got no error", bad)
		}
	}
	if ep, n, err := juju.RelationID("slurmd:12").Parse(); err != nil || ep != "slurmd" || n != 12 {
		t.Errorf("Parse(slurmd:12) = %q, %d, %v", ep, n, err)
	}
	for _, bad := range []string{"", "0/tcp", "65536/tcp", "80/sctp", "1000-2000/tcp", "x"} {
		if _, err := juju.ParsePort(bad); err == nil {
			t.Errorf("ParsePort(%q): got no error", bad)
		}
	}
	if p, err := juju.ParsePort("6817"); err != nil || p != (juju.Port{Number: 6817, Protocol: "tcp"}) {
		t.Errorf("ParsePort(6817) = %v, %v", p, err)
	}
	if got := juju.NormalizeSecretID("abc"); got != "secret:abc" {
		t.Errorf("NormalizeSecretID(abc) = %q", got)
	}
	if got := juju.NormalizeSecretID("secret://model/abc"); got != "secret://model/abc" {
		t.Errorf("NormalizeSecretID(secret://model/abc) = %q", got)
	}
}

func TestEventEnvRoundTrip(t *testing.T) {
	t.Parallel()
	events := []juju.Event{
		{Kind: juju.Install, Name: "install", DispatchPath: "hooks/install"},
		{Kind: juju.RelationDeparted, Name: "slurmctld-relation-departed", DispatchPath: "hooks/slurmctld-relation-departed",
			Endpoint: "slurmctld", Relation: "slurmctld:5", RemoteUnit: "slurmctld/0", RemoteApp: "slurmctld", DepartingUnit: "slurmd/3"},
		{Kind: juju.Action, Name: "node-config", DispatchPath: "actions/node-config", ActionUUID: "42"},
		{Kind: juju.SecretExpired, Name: "secret-expired", DispatchPath: "hooks/secret-expired", SecretID: "secret:x", SecretLabel: "l", SecretRevision: 3},
	}
	for _, ev := range events {
		ev = baseEvent(ev)
		got, err := juju.ReadEvent(juju.EnvMap(ev.Env()))
		if err != nil {
			t.Fatalf("%s: %v", ev.Name, err)
		}
		if d := cmp.Diff(ev, got); d != "" {
			t.Errorf("%s: round trip (-want +got):\n%s", ev.Name, d)
		}
	}
}
