package slurmd_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

const secretID = juju.SecretID("secret:authkey0001")

// slurmdState is a slurmd unit related to slurmctld, whose data and secret are in place.
func slurmdState() jujutest.State {
	return jujutest.State{
		Unit:   "slurmd/1",
		Leader: true,
		Relations: []jujutest.Relation{{
			ID:        "slurmctld:4",
			RemoteApp: "slurmctld",
			RemoteAppData: map[string]string{
				"version": "1", "controllers": `["10.1.0.2:6817"]`,
				"auth_secret_id": string(secretID), "cluster_name": "hpc",
			},
			RemoteUnits: map[string]map[string]string{"slurmctld/0": {}},
		}},
		Secrets: []jujutest.Secret{{
			ID: secretID, Owner: "slurmctld",
			Revisions: []map[string]string{slurmd.EncodeAuthSecret(key, "1"), slurmd.EncodeAuthSecret(bytes.Repeat([]byte{0xcd}, 64), "2")},
			Grants:    []jujutest.Grant{{Relation: "slurmctld:4"}},
		}},
	}
}

// providerEvent runs ev on a slurmd unit and returns the interface's translation.
func providerEvent(t *testing.T, in jujutest.State, ev juju.Event) (slurmd.Event, jujutest.State, error) {
	t.Helper()
	var got slurmd.Event
	var gotErr error
	out, err := jujutest.Run(t, in, ev, func(ctx context.Context, hc *juju.HookContext) error {
		got, gotErr = slurmd.Provider{HookContext: hc}.Event(ctx)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, out, gotErr
}

func TestProviderReady(t *testing.T) {
	ev, out, err := providerEvent(t, slurmdState(), jujutest.RelationHook(juju.RelationChanged, "slurmctld:4", "slurmctld/0"))
	if err != nil {
		t.Fatal(err)
	}
	want := slurmd.SlurmctldReady{Relation: "slurmctld:4", Data: slurmd.ControllerData{
		AuthKey: bytes.Repeat([]byte{0xcd}, 64), AuthKeyID: "2", Controllers: []string{"10.1.0.2:6817"}, ClusterName: "hpc",
		AuthSecretID: string(secretID),
	}}
	if d := cmp.Diff(slurmd.Event(want), ev); d != "" {
		t.Errorf("event (-want +got):\n%s", d)
	}
	// Reading with --refresh makes the unit track the newest revision, so rotations are seen.
	if got := out.Secrets[0].Tracked; got != 2 {
		t.Errorf("tracked revision = %d, want 2", got)
	}
}

func TestProviderSecretChangedIsReady(t *testing.T) {
	ev, _, err := providerEvent(t, slurmdState(), jujutest.SecretHook(juju.SecretChanged, secretID, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ev.(slurmd.SlurmctldReady); !ok {
		t.Errorf("secret-changed gave %#v, want SlurmctldReady", ev)
	}
}

func TestProviderNotReady(t *testing.T) {
	in := slurmdState()
	in.Relations[0].RemoteAppData = nil
	ev, _, err := providerEvent(t, in, jujutest.RelationHook(juju.RelationChanged, "slurmctld:4", "slurmctld/0"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(slurmd.Event(slurmd.SlurmctldConnected{Relation: "slurmctld:4"}), ev); d != "" {
		t.Errorf("event (-want +got):\n%s", d)
	}
}

func TestProviderSecretNotGranted(t *testing.T) {
	in := slurmdState()
	in.Secrets[0].Grants = nil
	ev, _, err := providerEvent(t, in, jujutest.RelationHook(juju.RelationChanged, "slurmctld:4", "slurmctld/0"))
	var de *slurmd.DataError
	if !errors.As(err, &de) || de.Field != "auth_secret_id" {
		t.Fatalf("got %v, want a DataError on auth_secret_id", err)
	}
	if _, ok := ev.(slurmd.SlurmctldConnected); !ok {
		t.Errorf("event %#v, want SlurmctldConnected with the error", ev)
	}
}

func TestProviderCorruptBag(t *testing.T) {
	in := slurmdState()
	in.Relations[0].RemoteAppData["controllers"] = "not json"
	_, _, err := providerEvent(t, in, jujutest.RelationHook(juju.RelationChanged, "slurmctld:4", "slurmctld/0"))
	var de *slurmd.DataError
	if !errors.As(err, &de) || de.Field != "controllers" {
		t.Fatalf("got %v, want a DataError on controllers", err)
	}
}

func TestProviderDepartedAndBroken(t *testing.T) {
	self := jujutest.RelationHook(juju.RelationDeparted, "slurmctld:4", "slurmctld/0")
	self.DepartingUnit = "slurmd/1"
	ev, _, err := providerEvent(t, slurmdState(), self)
	if err != nil || ev != (slurmd.SlurmctldDeparted{Relation: "slurmctld:4"}) {
		t.Errorf("own departure: got %#v, %v", ev, err)
	}
	other := jujutest.RelationHook(juju.RelationDeparted, "slurmctld:4", "slurmctld/0")
	if ev, _, err := providerEvent(t, slurmdState(), other); err != nil || ev != nil {
		t.Errorf("controller unit leaving: got %#v, %v; want no event", ev, err)
	}
	if ev, _, err := providerEvent(t, slurmdState(), jujutest.RelationHook(juju.RelationBroken, "slurmctld:4", "")); err != nil || ev != (slurmd.SlurmctldDisconnected{Relation: "slurmctld:4"}) {
		t.Errorf("broken: got %#v, %v", ev, err)
	}
	if ev, _, err := providerEvent(t, slurmdState(), jujutest.Hook(juju.UpdateStatus)); err != nil || ev != nil {
		t.Errorf("update-status: got %#v, %v; want no event", ev, err)
	}
}

func TestProviderPublishCompute(t *testing.T) {
	d, err := slurmd.NewComputeData("slurmd", nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jujutest.Run(t, slurmdState(), jujutest.Hook(juju.ConfigChanged), func(ctx context.Context, hc *juju.HookContext) error {
		return slurmd.Provider{HookContext: hc}.PublishCompute(ctx, "slurmctld:4", d)
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(d.Encode(), out.Relations[0].LocalAppData); d != "" {
		t.Errorf("local app data (-want +got):\n%s", d)
	}
}

// slurmctldState is the controller related to one slurmd application.
func slurmctldState(slurmdBag map[string]string) jujutest.State {
	return jujutest.State{
		Unit:   "slurmctld/0",
		Leader: true,
		Relations: []jujutest.Relation{{
			ID: "slurmd:4", RemoteApp: "gpu", RemoteAppData: slurmdBag,
			RemoteUnits: map[string]map[string]string{"gpu/0": {}, "gpu/1": {}},
		}},
	}
}

func requirerEvent(t *testing.T, in jujutest.State, ev juju.Event) (slurmd.Event, error) {
	t.Helper()
	var got slurmd.Event
	var gotErr error
	if _, err := jujutest.Run(t, in, ev, func(ctx context.Context, hc *juju.HookContext) error {
		got, gotErr = slurmd.Requirer{HookContext: hc}.Event(ctx)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got, gotErr
}

func TestRequirerEvents(t *testing.T) {
	d, err := slurmd.NewComputeData("gpu", nil)
	if err != nil {
		t.Fatal(err)
	}
	departed := jujutest.RelationHook(juju.RelationDeparted, "slurmd:4", "gpu/1")
	selfDeparted := jujutest.RelationHook(juju.RelationDeparted, "slurmd:4", "gpu/1")
	selfDeparted.DepartingUnit = "slurmctld/0"
	tests := []struct {
		name string
		bag  map[string]string
		ev   juju.Event
		want slurmd.Event
	}{
		{"created", nil, jujutest.RelationHook(juju.RelationCreated, "slurmd:4", ""), slurmd.SlurmdJoined{Relation: "slurmd:4", App: "gpu"}},
		{"joined", nil, jujutest.RelationHook(juju.RelationJoined, "slurmd:4", "gpu/0"), slurmd.SlurmdJoined{Relation: "slurmd:4", App: "gpu"}},
		{"changed without data", nil, jujutest.RelationHook(juju.RelationChanged, "slurmd:4", "gpu/0"), slurmd.SlurmdJoined{Relation: "slurmd:4", App: "gpu"}},
		{"changed with data", d.Encode(), jujutest.RelationHook(juju.RelationChanged, "slurmd:4", "gpu/0"), slurmd.SlurmdReady{Relation: "slurmd:4", App: "gpu", Data: d}},
		{"departed", d.Encode(), departed, slurmd.SlurmdDeparted{Relation: "slurmd:4", App: "gpu", Unit: "gpu/1", Node: "gpu-1"}},
		{"controller itself departing", d.Encode(), selfDeparted, nil},
		{"broken", d.Encode(), jujutest.RelationHook(juju.RelationBroken, "slurmd:4", ""), slurmd.SlurmdDisconnected{Relation: "slurmd:4", App: "gpu"}},
		{"other hook", d.Encode(), jujutest.Hook(juju.UpdateStatus), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := requirerEvent(t, slurmctldState(tt.bag), tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("event (-want +got):\n%s", d)
			}
		})
	}
}

func TestRequirerBadData(t *testing.T) {
	bag := map[string]string{"version": "1", "nodeset": "NodeSet=gpu Feature=gpu", "partition": "PartitionName=gpu Nodes=gpu MaxTme=5"}
	ev, err := requirerEvent(t, slurmctldState(bag), jujutest.RelationHook(juju.RelationChanged, "slurmd:4", "gpu/0"))
	var de *slurmd.DataError
	if !errors.As(err, &de) || de.Field != "partition" {
		t.Fatalf("got %v, want a DataError on partition", err)
	}
	if ev != (slurmd.SlurmdJoined{Relation: "slurmd:4", App: "gpu"}) {
		t.Errorf("event %#v, want SlurmdJoined", ev)
	}
}

func TestRequirerPublishController(t *testing.T) {
	bag := slurmd.ControllerBag{Controllers: []string{"10.0.0.1:6817"}, AuthSecretID: string(secretID), ClusterName: "hpc"}
	out, err := jujutest.Run(t, slurmctldState(nil), jujutest.RelationHook(juju.RelationJoined, "slurmd:4", "gpu/0"), func(ctx context.Context, hc *juju.HookContext) error {
		return slurmd.Requirer{HookContext: hc}.PublishController(ctx, "slurmd:4", bag)
	})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := bag.Encode()
	if d := cmp.Diff(want, out.Relations[0].LocalAppData); d != "" {
		t.Errorf("local app data (-want +got):\n%s", d)
	}
	// A bad bag is refused before anything is written.
	_, err = jujutest.Run(t, slurmctldState(nil), jujutest.RelationHook(juju.RelationJoined, "slurmd:4", "gpu/0"), func(ctx context.Context, hc *juju.HookContext) error {
		return slurmd.Requirer{HookContext: hc}.PublishController(ctx, "slurmd:4", slurmd.ControllerBag{AuthSecretID: "secret:x"})
	})
	var de *slurmd.DataError
	if !errors.As(err, &de) || de.Field != "controllers" {
		t.Errorf("got %v, want a DataError on controllers", err)
	}
}

// cache is a ProviderCache with one installed key and one last controller read.
type cache struct {
	keySecret string
	rel       juju.RelationID
	bag       *slurmd.ControllerBag
}

func (c cache) InstalledKey(id string) ([]byte, string, bool) {
	if id != c.keySecret {
		return nil, "", false
	}
	return key, "1", true
}

func (c cache) LastController() (juju.RelationID, slurmd.ControllerBag, bool) {
	if c.bag == nil {
		return "", slurmd.ControllerBag{}, false
	}
	return c.rel, *c.bag, true
}

// TestProviderCache: a relation hook names the remote application from its environment (no
// relation-list) and reads no secret whose key is installed; secret-changed reads only the
// secret with the last controller data; without what they need, both read as before.
func TestProviderCache(t *testing.T) {
	bag := slurmd.ControllerBag{Controllers: []string{"10.1.0.2:6817"}, AuthSecretID: string(secretID), ClusterName: "hpc"}
	changed := jujutest.RelationHook(juju.RelationChanged, "slurmctld:4", "slurmctld/0")
	secret := jujutest.SecretHook(juju.SecretChanged, secretID, 0)
	for _, tt := range []struct {
		name    string
		ev      juju.Event
		cache   slurmd.ProviderCache
		tools   []string
		wantKey []byte
	}{
		{"relation hook, key installed", changed, cache{keySecret: string(secretID)}, []string{"relation-get"}, key},
		{"relation hook, other secret", changed, cache{keySecret: "secret:other"}, []string{"relation-get", "secret-get"}, bytes.Repeat([]byte{0xcd}, 64)},
		{"relation hook, no cache", changed, nil, []string{"relation-get", "secret-get"}, bytes.Repeat([]byte{0xcd}, 64)},
		{"secret-changed, last data", secret, cache{keySecret: string(secretID), rel: "slurmctld:4", bag: &bag}, []string{"secret-get"}, bytes.Repeat([]byte{0xcd}, 64)},
		{"secret-changed, none kept", secret, cache{keySecret: string(secretID)}, []string{"relation-ids", "relation-list", "relation-get", "secret-get"}, bytes.Repeat([]byte{0xcd}, 64)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got slurmd.Event
			var gotErr error
			_, tools, err := jujutest.Tools(t, slurmdState(), tt.ev, func(ctx context.Context, hc *juju.HookContext) error {
				got, gotErr = slurmd.Provider{HookContext: hc, Cache: tt.cache}.Event(ctx)
				return nil
			})
			if err != nil || gotErr != nil {
				t.Fatal(err, gotErr)
			}
			ready, ok := got.(slurmd.SlurmctldReady)
			if !ok || ready.Relation != "slurmctld:4" || !bytes.Equal(ready.Data.AuthKey, tt.wantKey) || !cmp.Equal(ready.Data.Bag(), bag) {
				t.Errorf("event %#v, want SlurmctldReady on slurmctld:4 with the key and %+v", got, bag)
			}
			if d := cmp.Diff(tt.tools, tools); d != "" {
				t.Errorf("hook tools (-want +got):\n%s", d)
			}
		})
	}
}
