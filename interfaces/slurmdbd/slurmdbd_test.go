package slurmdbd_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/interfaces/slurmdbd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/slurm"
)

const secretID = "secret:authkey0001"

var (
	v2205 = slurm.Version{Major: 22, Minor: 5, Micro: 8}
	v2411 = slurm.Version{Major: 24, Minor: 11, Micro: 5}
	key   = bytes.Repeat([]byte{0xab}, 64)
)

func TestControllerBagRoundTrip(t *testing.T) {
	t.Parallel()
	b := slurmdbd.ControllerBag{AuthSecretID: secretID, ClusterName: "hpc", SlurmVersion: v2411}
	bag, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"version": "1", "auth_secret_id": secretID, "cluster_name": "hpc", "slurm_version": "24.11.5"}
	if d := cmp.Diff(want, bag); d != "" {
		t.Errorf("bag (-want +got):\n%s", d)
	}
	got, err := slurmdbd.DecodeControllerBag(bag)
	if err != nil || got != b {
		t.Errorf("decoded %+v, %v", got, err)
	}
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	t.Parallel()
	ctl := func(k, v string) map[string]string {
		b := map[string]string{"version": "1", "auth_secret_id": secretID, "cluster_name": "hpc", "slurm_version": "24.11.5"}
		b[k] = v
		return b
	}
	dbd := func(k, v string) map[string]string {
		b := map[string]string{"version": "1", "hostname": "10.1.0.9", "port": "6819", "slurm_version": "24.11.5"}
		b[k] = v
		return b
	}
	for _, tt := range []struct {
		name   string
		decode func() error
		field  string
	}{
		{"controller version", func() error { _, err := slurmdbd.DecodeControllerBag(ctl("version", "2")); return err }, "version"},
		{"controller secret", func() error { _, err := slurmdbd.DecodeControllerBag(ctl("auth_secret_id", "")); return err }, "auth_secret_id"},
		{"controller secret not an id", func() error { _, err := slurmdbd.DecodeControllerBag(ctl("auth_secret_id", "x y")); return err }, "auth_secret_id"},
		{"controller cluster", func() error { _, err := slurmdbd.DecodeControllerBag(ctl("cluster_name", "A B")); return err }, "cluster_name"},
		{"controller slurm version", func() error { _, err := slurmdbd.DecodeControllerBag(ctl("slurm_version", "new")); return err }, "slurm_version"},
		{"dbd host", func() error { _, err := slurmdbd.DecodeDbdData(dbd("hostname", "a b")); return err }, "hostname"},
		{"dbd no host", func() error { _, err := slurmdbd.DecodeDbdData(dbd("hostname", "")); return err }, "hostname"},
		{"dbd port", func() error { _, err := slurmdbd.DecodeDbdData(dbd("port", "70000")); return err }, "port"},
		{"dbd slurm version", func() error { _, err := slurmdbd.DecodeDbdData(dbd("slurm_version", "")); return err }, "slurm_version"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var de *slurmdbd.DataError
			if err := tt.decode(); !errors.As(err, &de) || de.Field != tt.field {
				t.Errorf("error %v, want a DataError naming %q", err, tt.field)
			}
		})
	}
	if _, err := slurmdbd.DecodeDbdData(nil); !errors.Is(err, slurmdbd.ErrNotReady) {
		t.Errorf("empty bag: %v", err)
	}
}

func TestCheckVersions(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		dbd, ctl slurm.Version
		ok       bool
	}{
		{v2205, v2205, true},
		{slurm.Version{Major: 22, Minor: 5, Micro: 2}, v2205, true}, // micro releases do not count
		{v2411, v2205, true},
		{v2205, v2411, false},
		{slurm.Version{Major: 24, Minor: 5}, v2411, false},
	} {
		err := slurmdbd.CheckVersions(tt.dbd, tt.ctl)
		if (err == nil) != tt.ok {
			t.Errorf("CheckVersions(%s, %s) = %v", tt.dbd, tt.ctl, err)
		}
		if err != nil && err.Error() != "slurmdbd "+tt.dbd.String()+" is older than the controller's Slurm "+tt.ctl.String()+": slurmdbd must be the controller's release or newer" {
			t.Errorf("message %q", err)
		}
	}
}

func FuzzDecodeDbdData(f *testing.F) {
	f.Add("10.1.0.9", "6819", "24.11.5")
	f.Fuzz(func(t *testing.T, host, port, ver string) {
		d, err := slurmdbd.DecodeDbdData(map[string]string{"version": "1", "hostname": host, "port": port, "slurm_version": ver})
		if err != nil {
			return
		}
		bag, err := d.Encode()
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", d, err)
		}
		if d2, err := slurmdbd.DecodeDbdData(bag); err != nil || d2 != d {
			t.Errorf("round trip %+v → %+v, %v", d, d2, err)
		}
	})
}

func FuzzDecodeControllerBag(f *testing.F) {
	f.Add(secretID, "hpc", "22.05.8")
	f.Fuzz(func(t *testing.T, id, name, ver string) {
		b, err := slurmdbd.DecodeControllerBag(map[string]string{"version": "1", "auth_secret_id": id, "cluster_name": name, "slurm_version": ver})
		if err != nil {
			return
		}
		bag, err := b.Encode()
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", b, err)
		}
		if b2, err := slurmdbd.DecodeControllerBag(bag); err != nil || b2 != b {
			t.Errorf("round trip %+v → %+v, %v", b, b2, err)
		}
	})
}

func providerState() jujutest.State {
	return jujutest.State{
		Unit: "slurmdbd/0", Leader: true,
		Relations: []jujutest.Relation{{
			ID: "slurmctld:2", RemoteApp: "slurmctld",
			RemoteAppData: map[string]string{"version": "1", "auth_secret_id": secretID, "cluster_name": "hpc", "slurm_version": "22.05.8"},
			RemoteUnits:   map[string]map[string]string{"slurmctld/0": {}},
		}},
		Secrets: []jujutest.Secret{{
			ID: secretID, Owner: "slurmctld",
			Revisions: []map[string]string{slurmd.EncodeAuthSecret(key, "1")},
			Grants:    []jujutest.Grant{{Relation: "slurmctld:2"}},
		}},
	}
}

func TestProviderEvents(t *testing.T) {
	t.Parallel()
	ready := slurmdbd.ControllerReady{Relation: "slurmctld:2", Data: slurmdbd.ControllerData{
		ControllerBag: slurmdbd.ControllerBag{AuthSecretID: secretID, ClusterName: "hpc", SlurmVersion: v2205},
		AuthKey:       key, AuthKeyID: "1",
	}}
	notGranted := providerState()
	notGranted.Secrets[0].Grants = nil
	empty := providerState()
	empty.Relations[0].RemoteAppData = nil
	for _, tt := range []struct {
		name    string
		in      jujutest.State
		ev      juju.Event
		want    slurmdbd.Event
		wantErr bool
	}{
		{name: "ready", in: providerState(), ev: jujutest.RelationHook(juju.RelationChanged, "slurmctld:2", "slurmctld/0"), want: ready},
		{name: "not published yet", in: empty, ev: jujutest.RelationHook(juju.RelationChanged, "slurmctld:2", "slurmctld/0"), want: slurmdbd.ControllerConnected{Relation: "slurmctld:2"}},
		{name: "key rotated", in: providerState(), ev: jujutest.SecretHook(juju.SecretChanged, secretID, 1), want: ready},
		{name: "other secret", in: providerState(), ev: jujutest.SecretHook(juju.SecretChanged, "secret:other", 1), want: nil},
		{name: "secret not granted", in: notGranted, ev: jujutest.RelationHook(juju.RelationChanged, "slurmctld:2", "slurmctld/0"), want: slurmdbd.ControllerConnected{Relation: "slurmctld:2"}, wantErr: true},
		{name: "broken", in: providerState(), ev: jujutest.RelationHook(juju.RelationBroken, "slurmctld:2", ""), want: slurmdbd.ControllerDisconnected{Relation: "slurmctld:2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got slurmdbd.Event
			var gotErr error
			_, err := jujutest.Run(t, tt.in, tt.ev, func(ctx context.Context, hc *juju.HookContext) error {
				got, gotErr = slurmdbd.Provider{HookContext: hc}.Event(ctx)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if (gotErr != nil) != tt.wantErr {
				t.Errorf("error %v", gotErr)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("event (-want +got):\n%s", d)
			}
		})
	}
}

func TestRequirerEvents(t *testing.T) {
	t.Parallel()
	in := jujutest.State{
		Unit: "slurmctld/0", Leader: true,
		Relations: []jujutest.Relation{{
			ID: "slurmdbd:5", RemoteApp: "slurmdbd",
			RemoteAppData: map[string]string{"version": "1", "hostname": "10.1.0.9", "port": "6819", "slurm_version": "22.05.8"},
			RemoteUnits:   map[string]map[string]string{"slurmdbd/0": {}},
		}},
	}
	var got slurmdbd.Event
	_, err := jujutest.Run(t, in, jujutest.RelationHook(juju.RelationChanged, "slurmdbd:5", "slurmdbd/0"), func(ctx context.Context, hc *juju.HookContext) error {
		var err error
		got, err = slurmdbd.Requirer{HookContext: hc}.Event(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := slurmdbd.DbdReady{Relation: "slurmdbd:5", App: "slurmdbd", Data: slurmdbd.DbdData{Host: "10.1.0.9", Port: 6819, SlurmVersion: v2205}}
	if d := cmp.Diff(slurmdbd.Event(want), got); d != "" {
		t.Errorf("event (-want +got):\n%s", d)
	}
}
