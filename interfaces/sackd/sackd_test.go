package sackd_test

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/sackd"
	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/slurm"
)

const (
	secretID = juju.SecretID("secret:authkey0001")
	relID    = juju.RelationID("slurmctld:7")
)

var (
	key1   = bytes.Repeat([]byte{0xab}, 64)
	key2   = bytes.Repeat([]byte{0xcd}, 64)
	digest = sackd.DigestFiles(map[string][]byte{"slurm.conf": []byte("ClusterName=hpc\n")})
)

func TestControllerBagRoundTrip(t *testing.T) {
	in := sackd.ControllerBag{
		Controllers:  []string{"10.0.0.1:6817", "[fd00::2]:6817"},
		AuthSecretID: string(secretID),
		ClusterName:  "hpc",
		ConfDigest:   digest,
		SlurmVersion: slurm.Version{Major: 26, Minor: 5, Micro: 5},
	}
	bag, err := in.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"version":        "1",
		"controllers":    `["10.0.0.1:6817","[fd00::2]:6817"]`,
		"auth_secret_id": string(secretID),
		"cluster_name":   "hpc",
		"conf_digest":    digest,
		"slurm_version":  "26.05.5",
	}
	if d := cmp.Diff(want, bag); d != "" {
		t.Errorf("encoded bag (-want +got):\n%s", d)
	}
	out, err := sackd.DecodeControllerBag(bag)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, out); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	// The shared part is the slurmd relation's controller data, read by the same code.
	sb, err := slurmd.DecodeControllerBag(bag)
	if err != nil || sb.AuthSecretID != in.AuthSecretID || sb.SlurmVersion != in.SlurmVersion {
		t.Errorf("the slurmd decoder reads %+v, %v", sb, err)
	}
	// No digest yet: the key is left out.
	in.ConfDigest = ""
	bag, err = in.Encode()
	if _, ok := bag["conf_digest"]; err != nil || ok {
		t.Errorf("no digest: bag %v, err %v", bag, err)
	}
}

func TestDecodeControllerBagErrors(t *testing.T) {
	good := func() map[string]string {
		return map[string]string{"version": "1", "controllers": `["a:6817"]`, "auth_secret_id": "secret:x", "conf_digest": digest}
	}
	with := func(k, v string) map[string]string {
		b := good()
		if v == "<delete>" {
			delete(b, k)
		} else {
			b[k] = v
		}
		return b
	}
	tests := []struct {
		name  string
		bag   map[string]string
		field string
		msg   string
	}{
		{"unknown version", with("version", "2"), "version", "unsupported version"},
		{"no controllers", with("controllers", "<delete>"), "controllers", "missing"},
		{"controllers not json", with("controllers", "a:1"), "controllers", "not a JSON list"},
		{"controller without port", with("controllers", `["a"]`), "controllers", "not host:port"},
		{"no secret", with("auth_secret_id", "<delete>"), "auth_secret_id", "missing"},
		{"digest not hex", with("conf_digest", "xyz"), "conf_digest", "not a hex SHA-256"},
		{"digest short", with("conf_digest", digest[:10]), "conf_digest", "not a hex SHA-256"},
		{"digest upper case", with("conf_digest", strings.ToUpper(digest)), "conf_digest", "not a hex SHA-256"},
		{"digest empty", with("conf_digest", ""), "conf_digest", "not a hex SHA-256"},
		{"gres types", with("gres_types", `["gpu"]`), "gres_types", "not part of the sackd relation"},
		{"slurm version not canonical", with("slurm_version", "24.11"), "slurm_version", "not a Slurm version"},
		{"slurm version garbage", with("slurm_version", "latest"), "slurm_version", "not a Slurm version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sackd.DecodeControllerBag(tt.bag)
			var de *sackd.DataError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want a *sackd.DataError", err)
			}
			if de.Field != tt.field || !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), "in sackd relation data") {
				t.Errorf("err = %v (field %q), want field %q and %q", err, de.Field, tt.field, tt.msg)
			}
		})
	}
	if _, err := sackd.DecodeControllerBag(nil); !errors.Is(err, sackd.ErrNotReady) {
		t.Errorf("empty bag: %v, want ErrNotReady", err)
	}
	if _, err := sackd.DecodeControllerBag(with("conf_digest", "<delete>")); err != nil {
		t.Errorf("no digest: %v, want none (a controller with no configuration yet)", err)
	}
	if cb, err := sackd.DecodeControllerBag(good()); err != nil || !cb.SlurmVersion.IsZero() {
		t.Errorf("no slurm_version: %+v, %v, want the zero Version (a controller that does not say)", cb, err)
	}
}

func TestDigestFiles(t *testing.T) {
	a := sackd.DigestFiles(map[string][]byte{"slurm.conf": []byte("x"), "gres.conf": []byte("y")})
	for name, files := range map[string]map[string][]byte{
		"content":       {"slurm.conf": []byte("x"), "gres.conf": []byte("z")},
		"name":          {"slurm.conf": []byte("x"), "cgroup.conf": []byte("y")},
		"boundary":      {"slurm.conf": []byte("xgres.conf"), "": []byte("y")},
		"one file less": {"slurm.conf": []byte("x")},
	} {
		if sackd.DigestFiles(files) == a {
			t.Errorf("a change of %s keeps the digest", name)
		}
	}
	if b := sackd.DigestFiles(map[string][]byte{"gres.conf": []byte("y"), "slurm.conf": []byte("x")}); b != a {
		t.Errorf("the same files give %s and %s", a, b)
	}
	if _, err := sackd.DecodeControllerBag(map[string]string{"version": "1", "controllers": `["a:1"]`, "auth_secret_id": "s", "conf_digest": a}); err != nil {
		t.Errorf("a digest of DigestFiles is refused: %v", err)
	}
}

// loginState is a login unit related to slurmctld, whose data and secret are in place.
func loginState() jujutest.State {
	bag, err := sackd.ControllerBag{Controllers: []string{"10.1.0.2:6817"}, AuthSecretID: string(secretID), ClusterName: "hpc", ConfDigest: digest}.Encode()
	if err != nil {
		panic(err)
	}
	return jujutest.State{
		Unit: "login/1",
		Relations: []jujutest.Relation{{
			ID: relID, RemoteApp: "slurmctld", RemoteAppData: bag,
			RemoteUnits: map[string]map[string]string{"slurmctld/0": {}},
		}},
		Secrets: []jujutest.Secret{{
			ID: secretID, Owner: "slurmctld",
			Revisions: []map[string]string{slurmd.EncodeAuthSecret(key1, "1"), slurmd.EncodeAuthSecret(key2, "2")},
			Grants:    []jujutest.Grant{{Relation: relID}},
		}},
	}
}

// providerEvent runs ev on a login unit and returns the interface's translation.
func providerEvent(t *testing.T, in jujutest.State, ev juju.Event) (sackd.Event, jujutest.State, error) {
	t.Helper()
	var got sackd.Event
	var gotErr error
	out, err := jujutest.Run(t, in, ev, func(ctx context.Context, hc *juju.HookContext) error {
		got, gotErr = sackd.Provider{HookContext: hc}.Event(ctx)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, out, gotErr
}

func TestProviderEvents(t *testing.T) {
	ready := sackd.SlurmctldReady{Relation: relID, Data: sackd.ControllerData{
		ControllerBag: sackd.ControllerBag{Controllers: []string{"10.1.0.2:6817"}, AuthSecretID: string(secretID), ClusterName: "hpc", ConfDigest: digest},
		AuthKey:       key2, AuthKeyID: "2",
	}}
	selfDeparts := jujutest.RelationHook(juju.RelationDeparted, relID, "slurmctld/0")
	selfDeparts.DepartingUnit = "login/1"
	otherDeparts := jujutest.RelationHook(juju.RelationDeparted, relID, "slurmctld/0")
	otherDeparts.DepartingUnit = "slurmctld/0"
	tests := []struct {
		name   string
		modify func(*jujutest.State)
		ev     juju.Event
		want   sackd.Event
		field  string // the DataError's field, if any
	}{
		{name: "changed", ev: jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"), want: ready},
		{name: "joined", ev: jujutest.RelationHook(juju.RelationJoined, relID, "slurmctld/0"), want: ready},
		{name: "secret changed (rotation)", ev: jujutest.SecretHook(juju.SecretChanged, secretID, 0), want: ready},
		{name: "not published yet", modify: func(s *jujutest.State) { s.Relations[0].RemoteAppData = nil },
			ev: jujutest.RelationHook(juju.RelationCreated, relID, ""), want: sackd.SlurmctldConnected{Relation: relID}},
		{name: "secret not granted", modify: func(s *jujutest.State) { s.Secrets[0].Grants = nil },
			ev: jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"), want: sackd.SlurmctldConnected{Relation: relID}, field: "auth_secret_id"},
		{name: "corrupt databag", modify: func(s *jujutest.State) { s.Relations[0].RemoteAppData["conf_digest"] = "x" },
			ev: jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"), want: sackd.SlurmctldConnected{Relation: relID}, field: "conf_digest"},
		{name: "own departure", ev: selfDeparts, want: sackd.SlurmctldDeparted{Relation: relID}},
		{name: "a controller unit leaves", ev: otherDeparts, want: nil},
		{name: "broken", ev: jujutest.RelationHook(juju.RelationBroken, relID, ""), want: sackd.SlurmctldDisconnected{Relation: relID}},
		{name: "secret changed with no relation", modify: func(s *jujutest.State) { s.Relations = nil },
			ev: jujutest.SecretHook(juju.SecretChanged, secretID, 0), want: nil},
		{name: "another hook", ev: jujutest.Hook(juju.UpdateStatus), want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := loginState()
			if tt.modify != nil {
				tt.modify(&in)
			}
			got, out, err := providerEvent(t, in, tt.ev)
			var de *sackd.DataError
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tt.field != "" && (!errors.As(err, &de) || de.Field != tt.field):
				t.Fatalf("err = %v, want a *sackd.DataError on %s", err, tt.field)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("event (-want +got):\n%s", d)
			}
			// Reading with --refresh makes the unit track the newest revision: rotations are seen.
			if _, ok := got.(sackd.SlurmctldReady); ok && out.Secrets[0].Tracked != 2 {
				t.Errorf("tracked revision = %d, want 2", out.Secrets[0].Tracked)
			}
		})
	}
}

func TestRequirer(t *testing.T) {
	in := jujutest.State{
		Unit: "slurmctld/0", Leader: true,
		Relations: []jujutest.Relation{{ID: "sackd:9", RemoteApp: "login", RemoteUnits: map[string]map[string]string{"login/0": {}}}},
	}
	bag := sackd.ControllerBag{Controllers: []string{"10.1.0.2:6817"}, AuthSecretID: string(secretID), ClusterName: "hpc", ConfDigest: digest}
	departs := jujutest.RelationHook(juju.RelationDeparted, "sackd:9", "login/0")
	departs.DepartingUnit = "login/0"
	for _, tt := range []struct {
		ev   juju.Event
		want sackd.Event
	}{
		{jujutest.RelationHook(juju.RelationCreated, "sackd:9", ""), sackd.SackdJoined{Relation: "sackd:9", App: "login"}},
		{jujutest.RelationHook(juju.RelationJoined, "sackd:9", "login/0"), sackd.SackdJoined{Relation: "sackd:9", App: "login"}},
		{jujutest.RelationHook(juju.RelationChanged, "sackd:9", "login/0"), nil}, // not published yet
		{departs, sackd.SackdDeparted{Relation: "sackd:9", App: "login", Unit: "login/0"}},
		{jujutest.RelationHook(juju.RelationBroken, "sackd:9", ""), sackd.SackdDisconnected{Relation: "sackd:9", App: "login"}},
		{jujutest.Hook(juju.ConfigChanged), nil},
	} {
		t.Run(tt.ev.Name, func(t *testing.T) {
			var got sackd.Event
			out, err := jujutest.Run(t, in, tt.ev, func(ctx context.Context, hc *juju.HookContext) error {
				r := sackd.Requirer{HookContext: hc}
				var err error
				if got, err = r.Event(ctx); err != nil {
					return err
				}
				if _, ok := got.(sackd.SackdJoined); ok {
					return r.PublishController(ctx, "sackd:9", bag)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("event (-want +got):\n%s", d)
			}
			if _, ok := got.(sackd.SackdJoined); ok {
				back, err := sackd.DecodeControllerBag(out.Relations[0].LocalAppData)
				if err != nil || !cmp.Equal(back, bag) {
					t.Errorf("published %v, decodes to %+v, %v", out.Relations[0].LocalAppData, back, err)
				}
			}
		})
	}
}

// FuzzDecode feeds arbitrary databags to the decoder: no panic, and what it accepts encodes
// back to a bag that decodes to the same value.
func FuzzDecode(f *testing.F) {
	f.Add("1", `["a:6817"]`, "secret:x", digest, "", "24.11.5")
	f.Add("1", `["a:6817"]`, "secret:x", "", `["gpu"]`, "")
	f.Add("2", `{}`, "", "zz", "", "26.5")
	f.Fuzz(func(t *testing.T, version, controllers, secret, digest, gres, slurmVersion string) {
		bag := map[string]string{"version": version, "controllers": controllers, "auth_secret_id": secret, "conf_digest": digest}
		if gres != "" {
			bag["gres_types"] = gres
		}
		if slurmVersion != "" {
			bag["slurm_version"] = slurmVersion
		}
		cb, err := sackd.DecodeControllerBag(bag)
		if err != nil {
			return
		}
		enc, err := cb.Encode()
		if err != nil {
			t.Fatalf("accepted %v but cannot encode %+v: %v", bag, cb, err)
		}
		back, err := sackd.DecodeControllerBag(enc)
		if err != nil || !cmp.Equal(back, cb) {
			t.Fatalf("%+v encodes to %v, which decodes to %+v, %v", cb, enc, back, err)
		}
	})
}

func TestLoginHost(t *testing.T) {
	h := sackd.LoginHost{Hostname: "juju-3", Address: netip.MustParseAddr("10.201.0.14")}
	bag, err := h.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{"hostname": "juju-3", "address": "10.201.0.14"}, bag); d != "" {
		t.Errorf("bag (-want +got):\n%s", d)
	}
	back, err := sackd.DecodeLoginHost(bag)
	if err != nil || back != h {
		t.Errorf("round trip %+v, %v", back, err)
	}
	// With the release sackd runs (absent from an older charm's unit).
	h.SlurmVersion = slurm.Version{Major: 24, Minor: 11, Micro: 5}
	if bag, err = h.Encode(); err != nil || bag["slurm_version"] != "24.11.5" {
		t.Errorf("bag with the release %v, %v", bag, err)
	}
	if back, err = sackd.DecodeLoginHost(bag); err != nil || back != h {
		t.Errorf("round trip with the release %+v, %v", back, err)
	}
	// Juju's own keys alone: not published yet.
	if _, err := sackd.DecodeLoginHost(map[string]string{"ingress-address": "10.0.0.1"}); !errors.Is(err, sackd.ErrNotReady) {
		t.Errorf("Juju's keys only: %v, want ErrNotReady", err)
	}
	for _, bad := range []struct {
		bag   map[string]string
		field string
	}{
		{map[string]string{"hostname": "juju-3.lxd", "address": "10.0.0.1"}, "hostname"},
		{map[string]string{"hostname": "juju 3", "address": "10.0.0.1"}, "hostname"},
		{map[string]string{"hostname": "x\n10.0.0.9 localhost", "address": "10.0.0.1"}, "hostname"},
		{map[string]string{"address": "10.0.0.1"}, "hostname"},
		{map[string]string{"hostname": "juju-3", "address": "juju-3"}, "address"},
		{map[string]string{"hostname": "juju-3"}, "address"},
		{map[string]string{"hostname": "juju-3", "address": "fe80::1%eth0"}, "address"},
		{map[string]string{"hostname": "juju-3", "address": "10.0.0.1", "slurm_version": "24.11"}, "slurm_version"},
	} {
		_, err := sackd.DecodeLoginHost(bad.bag)
		var de *sackd.DataError
		if !errors.As(err, &de) || de.Field != bad.field {
			t.Errorf("DecodeLoginHost(%v) = %v, want a DataError on %s", bad.bag, err, bad.field)
		}
	}
}

// TestRequirerHosts: a login unit's host data arrives with its relation-changed; bad data
// comes with the error.
func TestRequirerHosts(t *testing.T) {
	in := jujutest.State{
		Unit: "slurmctld/0", Leader: true,
		Relations: []jujutest.Relation{{ID: "sackd:9", RemoteApp: "login", RemoteUnits: map[string]map[string]string{
			"login/0": {"hostname": "juju-3", "address": "10.201.0.14", "ingress-address": "10.201.0.14"},
			"login/1": {"hostname": "bad name", "address": "10.201.0.15"},
		}}},
	}
	for _, tt := range []struct {
		unit  string
		want  sackd.Event
		field string
	}{
		{"login/0", sackd.SackdHost{Relation: "sackd:9", App: "login", Unit: "login/0", Host: sackd.LoginHost{Hostname: "juju-3", Address: netip.MustParseAddr("10.201.0.14")}}, ""},
		{"login/1", sackd.SackdHost{Relation: "sackd:9", App: "login", Unit: "login/1"}, "hostname"},
	} {
		var got sackd.Event
		var gotErr error
		_, err := jujutest.Run(t, in, jujutest.RelationHook(juju.RelationChanged, "sackd:9", tt.unit), func(ctx context.Context, hc *juju.HookContext) error {
			got, gotErr = sackd.Requirer{HookContext: hc}.Event(ctx)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var de *sackd.DataError
		if (tt.field == "") != (gotErr == nil) || (tt.field != "" && (!errors.As(gotErr, &de) || de.Field != tt.field)) {
			t.Errorf("%s: err = %v, want field %q", tt.unit, gotErr, tt.field)
		}
		if d := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
			t.Errorf("%s: event (-want +got):\n%s", tt.unit, d)
		}
	}
}

// TestPublishHost: a login unit writes its unit databag, which the controller side reads.
func TestPublishHost(t *testing.T) {
	h := sackd.LoginHost{Hostname: "juju-3", Address: netip.MustParseAddr("fd00::3")}
	out, err := jujutest.Run(t, loginState(), jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"), func(ctx context.Context, hc *juju.HookContext) error {
		return sackd.Provider{HookContext: hc}.PublishHost(ctx, relID, h)
	})
	if err != nil {
		t.Fatal(err)
	}
	back, err := sackd.DecodeLoginHost(out.Relations[0].LocalUnitData)
	if err != nil || back != h {
		t.Errorf("published %v: %+v, %v", out.Relations[0].LocalUnitData, back, err)
	}
}

func FuzzDecodeLoginHost(f *testing.F) {
	f.Add("juju-3", "10.0.0.1")
	f.Add("a.b", "fd00::1")
	f.Add("x\ny", "1.2.3.4 5")
	f.Fuzz(func(t *testing.T, name, addr string) {
		h, err := sackd.DecodeLoginHost(map[string]string{"hostname": name, "address": addr})
		if err != nil {
			return
		}
		if strings.ContainsAny(h.Hostname, " \t\r\n.") || !h.Address.IsValid() {
			t.Fatalf("accepted %+v", h)
		}
		bag, err := h.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if back, err := sackd.DecodeLoginHost(bag); err != nil || back != h {
			t.Fatalf("%+v does not round-trip: %+v, %v", h, back, err)
		}
	})
}
