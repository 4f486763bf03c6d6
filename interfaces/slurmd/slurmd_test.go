package slurmd_test

import (
	"bytes"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

var key = bytes.Repeat([]byte{0xab}, 64)

func TestControllerBagRoundTrip(t *testing.T) {
	in := slurmd.ControllerBag{
		Controllers:  []string{"10.0.0.1:6817", "[fd00::2]:6817"},
		AuthSecretID: "secret:cu0abc",
		ClusterName:  "hpc",
		SlurmVersion: slurm.Version{Major: 26, Minor: 5, Micro: 5},
		// The configuration carries 25.11's metrics keys.
		ConfMinVersion: slurm.Version{Major: 25, Minor: 11},
	}
	bag, err := in.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"version":          "1",
		"controllers":      `["10.0.0.1:6817","[fd00::2]:6817"]`,
		"auth_secret_id":   "secret:cu0abc",
		"cluster_name":     "hpc",
		"slurm_version":    "26.05.5",
		"conf_min_version": "25.11.0",
	}
	if d := cmp.Diff(want, bag); d != "" {
		t.Errorf("encoded bag (-want +got):\n%s", d)
	}
	out, err := slurmd.DecodeControllerBag(bag)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, out); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
}

func TestDecodeControllerBagErrors(t *testing.T) {
	good := map[string]string{"version": "1", "controllers": `["a:6817"]`, "auth_secret_id": "secret:x"}
	with := func(k, v string) map[string]string {
		m := maps.Clone(good)
		if v == "<delete>" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name  string
		bag   map[string]string
		field string
		msg   string
	}{
		{"no version", with("version", "<delete>"), "version", "missing"},
		{"future version", with("version", "2"), "version", `unsupported version "2"`},
		{"no controllers", with("controllers", "<delete>"), "controllers", "missing"},
		{"controllers not json", with("controllers", "a:6817"), "controllers", "not a JSON list"},
		{"controllers not strings", with("controllers", `[1]`), "controllers", "not a JSON list"},
		{"controllers empty", with("controllers", `[]`), "controllers", "empty list"},
		{"controller without port", with("controllers", `["a"]`), "controllers", `"a" is not host:port`},
		{"controller bad port", with("controllers", `["a:99999"]`), "controllers", "invalid port"},
		{"no secret", with("auth_secret_id", "<delete>"), "auth_secret_id", "missing"},
		{"secret with spaces", with("auth_secret_id", "secret: x"), "auth_secret_id", "not a secret id"},
		{"slurm version with a prefix", with("slurm_version", "slurm 26.05.5"), "slurm_version", "not a Slurm version"},
		{"slurm version not canonical", with("slurm_version", "26.5.5"), "slurm_version", "not a Slurm version"},
		{"slurm version garbage", with("slurm_version", "latest"), "slurm_version", "not a Slurm version"},
		{"slurm version empty", with("slurm_version", ""), "slurm_version", "not a Slurm version"},
		{"conf min version garbage", with("conf_min_version", "25.11"), "conf_min_version", "not a Slurm version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := slurmd.DecodeControllerBag(tt.bag)
			var de *slurmd.DataError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *DataError", err)
			}
			if de.Field != tt.field || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("got field %q, error %q; want field %q and %q in the message", de.Field, err, tt.field, tt.msg)
			}
		})
	}
	if _, err := slurmd.DecodeControllerBag(nil); !errors.Is(err, slurmd.ErrNotReady) {
		t.Errorf("empty bag: got %v, want ErrNotReady", err)
	}
}

func TestAuthSecret(t *testing.T) {
	content := slurmd.EncodeAuthSecret(key, "3")
	gotKey, gotID, err := slurmd.DecodeAuthSecret(content)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotKey, key) || gotID != "3" {
		t.Errorf("got %x %q, want %x %q", gotKey, gotID, key, "3")
	}
	for name, c := range map[string]map[string]string{
		"no key":     {"keyid": "1"},
		"not base64": {"key": "!!!", "keyid": "1"},
		"too short":  {"key": "YWJj", "keyid": "1"},
		"no keyid":   {"key": content["key"]},
	} {
		if _, _, err := slurmd.DecodeAuthSecret(c); err == nil {
			t.Errorf("%s: no error", name)
		} else if de := (*slurmd.DataError)(nil); !errors.As(err, &de) || de.Field != "auth_secret_id" {
			t.Errorf("%s: error %v does not name auth_secret_id", name, err)
		}
	}
}

func TestComputeData(t *testing.T) {
	extra, err := slurmconf.ParseParams("MaxTime=1:00:00 DefaultTime=10:00")
	if err != nil {
		t.Fatal(err)
	}
	d, err := slurmd.NewComputeData("gpu", extra)
	if err != nil {
		t.Fatal(err)
	}
	bag := d.Encode()
	want := map[string]string{
		"version":   "1",
		"nodeset":   "NodeSet=gpu Feature=gpu",
		"partition": "PartitionName=gpu Nodes=gpu MaxTime=1:00:00 DefaultTime=10:00",
	}
	if diff := cmp.Diff(want, bag); diff != "" {
		t.Errorf("bag (-want +got):\n%s", diff)
	}
	back, err := slurmd.DecodeComputeData("gpu", bag)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestNewComputeDataRefuses(t *testing.T) {
	for _, line := range []string{
		"Nodes=ALL", "PartitionName=x", "MaxTme=1", "MaxTime=1 MaxTime=2",
		"MaxTime=abc", "MaxNodes=abc", "Default=maybe", "Default=YES", "State=DOWN",
		"AllowGroups=" + strings.Repeat("g", 10000),
	} {
		p, err := slurmconf.ParseParams(line)
		if err != nil {
			continue // the parser already refused it: fine
		}
		_, err = slurmd.NewComputeData("gpu", p)
		var pe *slurmconf.ParseError
		if !errors.As(err, &pe) || pe.Key == "" {
			t.Errorf("%q: got %v, want a ParseError naming the key", line, err)
		}
	}
}

func TestDecodeComputeDataErrors(t *testing.T) {
	tests := []struct {
		name, field string
		bag         map[string]string
	}{
		{"other app nodeset", "nodeset", map[string]string{"version": "1", "nodeset": "NodeSet=cpu Feature=cpu", "partition": "PartitionName=gpu Nodes=gpu"}},
		{"other app partition", "partition", map[string]string{"version": "1", "nodeset": "NodeSet=gpu Feature=gpu", "partition": "PartitionName=cpu Nodes=gpu"}},
		{"partition nodes hijack", "partition", map[string]string{"version": "1", "nodeset": "NodeSet=gpu Feature=gpu", "partition": "PartitionName=gpu Nodes=ALL"}},
		{"bad partition key", "partition", map[string]string{"version": "1", "nodeset": "NodeSet=gpu Feature=gpu", "partition": "PartitionName=gpu Nodes=gpu Bogus=1"}},
		{"unbalanced quote", "partition", map[string]string{"version": "1", "nodeset": "NodeSet=gpu Feature=gpu", "partition": `PartitionName=gpu Nodes=gpu AllowGroups="a`}},
		{"untyped partition value", "partition", map[string]string{"version": "1", "nodeset": "NodeSet=gpu Feature=gpu", "partition": "PartitionName=gpu Nodes=gpu MaxTime=abc"}},
		{"partition state", "partition", map[string]string{"version": "1", "nodeset": "NodeSet=gpu Feature=gpu", "partition": "PartitionName=gpu Nodes=gpu State=DOWN"}},
		{"missing partition", "partition", map[string]string{"version": "1", "nodeset": "NodeSet=gpu Feature=gpu"}},
		{"missing nodeset", "nodeset", map[string]string{"version": "1", "partition": "PartitionName=gpu Nodes=gpu"}},
		{"bad version", "version", map[string]string{"version": "0", "nodeset": "NodeSet=gpu Feature=gpu", "partition": "PartitionName=gpu Nodes=gpu"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := slurmd.DecodeComputeData("gpu", tt.bag)
			var de *slurmd.DataError
			if !errors.As(err, &de) || de.Field != tt.field {
				t.Errorf("got %v, want a DataError on %q", err, tt.field)
			}
		})
	}
}

func TestNodeName(t *testing.T) {
	if got := slurmd.NodeName("slurmd-gpu/12"); got != "slurmd-gpu-12" {
		t.Errorf("NodeName = %q", got)
	}
	for node, want := range map[string]string{"slurmd-gpu-12": "slurmd-gpu", "gpu-0": "gpu", "gpu": "", "gpu-": "", "-1": "", "gpu-1a": "", "node[1-2]": ""} {
		app, ok := slurmd.NodeApp(node)
		if app != want || ok != (want != "") {
			t.Errorf("NodeApp(%q) = %q, %v; want %q", node, app, ok, want)
		}
	}
}

// FuzzDecode feeds arbitrary databags to both decoders: they must not panic, and whatever they
// accept must encode back to a bag that decodes to the same value.
func FuzzDecode(f *testing.F) {
	f.Add("1", `["a:6817"]`, "secret:x", "NodeSet=a Feature=a", "PartitionName=a Nodes=a MaxTime=1", "", "26.05.5")
	f.Add("1", `[""]`, "", "NodeSet=a", `PartitionName=a Nodes=a Reason="x`, "[]", "")
	f.Add("2", `{}`, "s", "", "", `["gpu"]`, "x")
	f.Add("1", `["a:6817"]`, "secret:x", "NodeSet=a Feature=a", "PartitionName=a Nodes=a", `["gpu","fpga"]`, "22.05.8")
	f.Add("1", `["a:6817"]`, "secret:x", "NodeSet=a Feature=a", "PartitionName=a Nodes=a", `["x",1]`, "26.5")
	f.Fuzz(func(t *testing.T, version, controllers, secret, nodeset, partition, gresTypes, slurmVersion string) {
		cb, err := slurmd.DecodeControllerBag(map[string]string{"version": version, "controllers": controllers, "auth_secret_id": secret, "gres_types": gresTypes, "slurm_version": slurmVersion, "conf_min_version": slurmVersion})
		if err == nil {
			bag, err := cb.Encode()
			if err != nil {
				t.Fatalf("accepted %+v but cannot encode it: %v", cb, err)
			}
			again, err := slurmd.DecodeControllerBag(bag)
			if err != nil {
				t.Fatalf("re-decode: %v", err)
			}
			if d := cmp.Diff(cb, again); d != "" {
				t.Fatalf("re-decode differs:\n%s", d)
			}
		}
		if u, err := slurmd.DecodeUnitData(map[string]string{"slurm_version": slurmVersion}); err == nil {
			bag, err := u.Encode()
			if err != nil {
				t.Fatalf("accepted %+v but cannot encode it: %v", u, err)
			}
			if again, err := slurmd.DecodeUnitData(bag); err != nil || again != u {
				t.Fatalf("unit data re-decode %+v, %v", again, err)
			}
		}
		cd, err := slurmd.DecodeComputeData("a", map[string]string{"version": version, "nodeset": nodeset, "partition": partition, "gres_types": gresTypes, "slurm_version": slurmVersion})
		if err == nil {
			again, err := slurmd.DecodeComputeData("a", cd.Encode())
			if err != nil {
				t.Fatalf("re-decode of %+v: %v", cd, err)
			}
			if d := cmp.Diff(cd.Encode(), again.Encode()); d != "" {
				t.Fatalf("re-decode differs:\n%s", d)
			}
		}
	})
}

// TestComputeDataPerRelease checks that NewComputeDataFor and DecodeComputeDataFor use the
// given release's key set, and that NewComputeData and DecodeComputeData keep 22.05's.
func TestComputeDataPerRelease(t *testing.T) {
	tests := []struct {
		name, extra string
		keys        *slurmconf.Keys // nil: NewComputeData and DecodeComputeData
		ok          bool
	}{
		{name: "24.11 key on 24.11", extra: "PowerDownOnIdle=YES MaxCPUsPerSocket=2", keys: slurmconf.KeysOf(24, 11), ok: true},
		{name: "24.11 key on 23.11", extra: "MaxCPUsPerSocket=2", keys: slurmconf.KeysOf(23, 11), ok: true},
		{name: "24.11 key on 22.05", extra: "PowerDownOnIdle=YES", keys: slurmconf.KeysOf(22, 5)},
		{name: "24.11 key by default", extra: "PowerDownOnIdle=YES"},
		{name: "bad value on 24.11", extra: "PowerDownOnIdle=maybe", keys: slurmconf.KeysOf(24, 11)},
		{name: "22.05 key on 24.11", extra: "MaxTime=1:00:00", keys: slurmconf.KeysOf(24, 11), ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra, err := slurmconf.ParseParams(tt.extra)
			if err != nil {
				t.Fatal(err)
			}
			newData := func(app string, p slurmconf.Params) (slurmd.ComputeData, error) {
				return slurmd.NewComputeDataFor(tt.keys, app, p)
			}
			decode := func(app string, bag map[string]string) (slurmd.ComputeData, error) {
				return slurmd.DecodeComputeDataFor(tt.keys, app, bag)
			}
			if tt.keys == nil {
				newData, decode = slurmd.NewComputeData, slurmd.DecodeComputeData
			}
			d, err := newData("gpu", extra)
			if (err == nil) != tt.ok {
				t.Fatalf("NewComputeData: %v, want ok=%v", err, tt.ok)
			}
			// The controller decodes what a slurmd charm of any release may have written.
			bag := map[string]string{"version": "1", "nodeset": "NodeSet=gpu Feature=gpu",
				"partition": "PartitionName=gpu Nodes=gpu " + tt.extra}
			back, err := decode("gpu", bag)
			if (err == nil) != tt.ok {
				t.Fatalf("DecodeComputeData: %v, want ok=%v", err, tt.ok)
			}
			if tt.ok {
				if diff := cmp.Diff(d, back); diff != "" {
					t.Errorf("round trip (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestGresTypes checks gres_types in both bags: written only when there are names, read back
// as written, absent read as none, and every malformed value refused naming the field.
func TestGresTypes(t *testing.T) {
	d, err := slurmd.NewComputeData("gpu", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Encode()["gres_types"]; ok {
		t.Errorf("ComputeData without names writes gres_types: %v", d.Encode())
	}
	d, err = d.WithGresTypes([]string{"fpga", "bandwidth"})
	if err != nil {
		t.Fatal(err)
	}
	bag := d.Encode()
	if got, want := bag["gres_types"], `["bandwidth","fpga"]`; got != want {
		t.Errorf("ComputeData gres_types = %q, want %q", got, want)
	}
	back, err := slurmd.DecodeComputeData("gpu", bag)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, back); diff != "" {
		t.Errorf("ComputeData round trip (-want +got):\n%s", diff)
	}
	if _, err := d.WithGresTypes([]string{"Bad"}); err == nil {
		t.Error("WithGresTypes accepted an invalid name")
	}

	cb := slurmd.ControllerBag{Controllers: []string{"a:6817"}, AuthSecretID: "secret:x", GresTypes: []string{"gpu", "fpga"}}
	cbag, err := cb.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cbag["gres_types"], `["gpu","fpga"]`; got != want {
		t.Errorf("ControllerBag gres_types = %q, want %q", got, want)
	}
	cback, err := slurmd.DecodeControllerBag(cbag)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cb, cback); diff != "" {
		t.Errorf("ControllerBag round trip (-want +got):\n%s", diff)
	}
	if _, err := (slurmd.ControllerBag{Controllers: []string{"a:6817"}, AuthSecretID: "s", GresTypes: []string{"gpu", "gpu"}}).Encode(); err == nil {
		t.Error("ControllerBag with a name twice encoded")
	}

	tests := []struct{ name, value, msg string }{
		{"not json", "gpu,fpga", "not a JSON list"},
		{"not strings", `[1]`, "not a JSON list"},
		{"empty list", `[]`, "empty list"},
		{"bad name", `["GPU"]`, `invalid name "GPU"`},
		{"name with colon", `["gpu:t4"]`, "invalid name"},
		{"twice", `["fpga","fpga"]`, "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cb := maps.Clone(cbag)
			cb["gres_types"] = tt.value
			cd := maps.Clone(bag)
			cd["gres_types"] = tt.value
			for side, err := range map[string]error{
				"controller": func() error { _, err := slurmd.DecodeControllerBag(cb); return err }(),
				"compute":    func() error { _, err := slurmd.DecodeComputeData("gpu", cd); return err }(),
			} {
				var de *slurmd.DataError
				if !errors.As(err, &de) || de.Field != "gres_types" || !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("%s: %q gave %v, want a gres_types *DataError with %q", side, tt.value, err, tt.msg)
				}
			}
		})
	}
}

// TestUnitData: a slurmd unit's release travels in its unit databag; a bag without it (Juju's
// own keys, an older charm's unit) is ErrNotReady; anything but a bare version is refused.
// The application's bag says the leader's release, absent from an older charm's.
func TestUnitData(t *testing.T) {
	u := slurmd.UnitData{SlurmVersion: slurm.Version{Major: 24, Minor: 11, Micro: 5}}
	bag, err := u.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{"slurm_version": "24.11.5"}, bag); d != "" {
		t.Errorf("bag (-want +got):\n%s", d)
	}
	if back, err := slurmd.DecodeUnitData(bag); err != nil || back != u {
		t.Errorf("round trip %+v, %v", back, err)
	}
	if _, err := (slurmd.UnitData{}).Encode(); err == nil {
		t.Error("a zero version encoded")
	}
	if _, err := slurmd.DecodeUnitData(map[string]string{"ingress-address": "10.0.0.1"}); !errors.Is(err, slurmd.ErrNotReady) {
		t.Errorf("Juju's keys only: %v, want ErrNotReady", err)
	}
	var de *slurmd.DataError
	if _, err := slurmd.DecodeUnitData(map[string]string{"slurm_version": "24.11"}); !errors.As(err, &de) || de.Field != "slurm_version" {
		t.Errorf("24.11: %v, want a DataError on slurm_version", err)
	}

	d, err := slurmd.NewComputeData("old", nil)
	if err != nil {
		t.Fatal(err)
	}
	d.SlurmVersion = u.SlurmVersion
	cb := d.Encode()
	if cb["slurm_version"] != "24.11.5" {
		t.Errorf("compute bag %v, want slurm_version 24.11.5", cb)
	}
	back, err := slurmd.DecodeComputeData("old", cb)
	if err != nil || back.SlurmVersion != u.SlurmVersion {
		t.Errorf("compute round trip %+v, %v", back, err)
	}
	delete(cb, "slurm_version")
	if back, err := slurmd.DecodeComputeData("old", cb); err != nil || !back.SlurmVersion.IsZero() {
		t.Errorf("an older charm's bag: %+v, %v", back, err)
	}
}

// TestForRelationSet: conf_min_version, when the bag leaves it out, is given empty
// (relation-set deletes it); the rest is the bag.
func TestForRelationSet(t *testing.T) {
	got := slurmd.ForRelationSet(map[string]string{"version": "1", "slurm_version": "26.05.5"})
	want := map[string]string{"version": "1", "slurm_version": "26.05.5", "conf_min_version": ""}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
