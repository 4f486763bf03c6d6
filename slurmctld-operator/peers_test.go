package main

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNextControllers(t *testing.T) {
	a := controller{Unit: "slurmctld/0", Host: "juju-0", Addr: "10.0.0.2"}
	b := controller{Unit: "slurmctld/1", Host: "juju-1", Addr: "10.0.0.3"}
	c := controller{Unit: "slurmctld/2", Host: "juju-2", Addr: "10.0.0.4"}
	bMoved := controller{Unit: "slurmctld/1", Host: "juju-1", Addr: "10.0.0.9"}
	for _, tc := range []struct {
		name        string
		prev, cands []controller
		want        []controller
	}{
		{"first", nil, []controller{a}, []controller{a}},
		{"appended", []controller{a}, []controller{a, b}, []controller{a, b}},
		// A new leader lists itself first among the candidates: the order stays the recorded one.
		{"leader changed", []controller{a, b}, []controller{b, a}, []controller{a, b}},
		{"new unit at the end", []controller{b, a}, []controller{a, b, c}, []controller{b, a, c}},
		{"departed dropped", []controller{a, b, c}, []controller{a, c}, []controller{a, c}},
		{"address changed keeps the place", []controller{a, b}, []controller{a, bMoved}, []controller{a, bMoved}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, nextControllers(tc.prev, tc.cands), cmp.AllowUnexported(controller{})); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestDecodeControllers(t *testing.T) {
	for _, tc := range []struct {
		raw string
		ok  bool
	}{
		{`[{"unit":"slurmctld/0","host":"juju-0","addr":"10.0.0.2"}]`, true},
		{``, true},
		{`[{"unit":"slurmctld/0","host":"juju-0","addr":"10.0.0.2"},{"unit":"slurmctld/1","host":"juju-1","addr":"10.0.0.3","gone":true}]`, true},
		{`[{"unit":"slurmctld/0","host":"juju-0","addr":"10.0.0.2","gone":true},{"unit":"slurmctld/1","host":"juju-1","addr":"10.0.0.3"}]`, false}, // left before a live one
		{`[{"unit":"slurmctld/0","host":"juju-0","addr":"10.0.0.2"},{"unit":"slurmctld/1","host":"juju-0","addr":"10.0.0.3"}]`, false},             // same host
		{`[{"unit":"slurmctld/0","host":"Juju_0","addr":"10.0.0.2"}]`, false},
		{`[{"unit":"slurmctld/0","host":"juju-0","addr":"10.0.0.256"}]`, false},
		{`[{"unit":"slurmctld","host":"juju-0","addr":"10.0.0.2"}]`, false},
		{`[{"unit":"slurmctld/0","host":"juju-0","addr":"10.0.0.2","x":1}]`, false},
		{`[] []`, false},
		{`{}`, false},
	} {
		_, err := decodeControllers(tc.raw)
		if (err == nil) != tc.ok {
			t.Errorf("decodeControllers(%s): %v, want ok %v", tc.raw, err, tc.ok)
		}
	}
}

func TestDecodeConf(t *testing.T) {
	for _, tc := range []struct {
		raw string
		ok  bool
	}{
		{`{"slurm.conf":"ClusterName=x\n","partition-a.conf":"NodeSet=a Feature=a\n"}`, true},
		{`{"partition-a.conf":"x"}`, false},                     // no slurm.conf
		{`{"slurm.conf":"x","../etc/passwd":"x"}`, false},       // not a managed file
		{`{"slurm.conf":"x","partition-../x.conf":"x"}`, false}, // a path
		{`{"slurm.conf":"a\u0000b"}`, false},                    // NUL
		{`["slurm.conf"]`, false},
	} {
		_, err := decodeConf(tc.raw)
		if (err == nil) != tc.ok {
			t.Errorf("decodeConf(%s): %v, want ok %v", tc.raw, err, tc.ok)
		}
	}
}

func FuzzPeerData(f *testing.F) {
	f.Add(`[{"unit":"slurmctld/0","host":"juju-0","addr":"10.0.0.2"}]`, `{"slurm.conf":"x"}`)
	f.Add(`[{"unit":"a/1","host":"h","addr":"::1"},{"unit":"a/2","host":"i","addr":"fe80::1%eth0"}]`, `{"slurm.conf":"","partition-x.conf":"y"}`)
	f.Fuzz(func(t *testing.T, ctls, conf string) {
		got, err := decodeControllers(ctls)
		if err == nil && got != nil {
			raw, err := encodeControllers(got)
			if err != nil {
				t.Fatalf("accepted %v but cannot encode it: %v", got, err)
			}
			again, err := decodeControllers(raw)
			if err != nil || !cmp.Equal(got, again, cmp.AllowUnexported(controller{})) {
				t.Fatalf("re-decode of %s: %v, %v", raw, again, err)
			}
		}
		if files, err := decodeConf(conf); err == nil && files != nil {
			if _, ok := files["slurm.conf"]; !ok {
				t.Fatalf("accepted %s without slurm.conf", conf)
			}
		}
	})
}

// FuzzControlRecord: a takeover record read from a peer is accepted only with an id and unit
// names, within its bounds, and what is accepted encodes and decodes back the same.
func FuzzControlRecord(f *testing.F) {
	f.Add(`{"id":"slurmctld/1@2026-11-26T11:30:00.123Z","from":["slurmctld/0"]}`)
	f.Add(`{"id":"x","from":[]}`)
	f.Add(`{"id":"x","from":["../etc"]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := decodeControlRecord(raw)
		if err != nil {
			return
		}
		if r.ID == "" || len(raw) > maxRecordSize || len(r.From) > maxControllers {
			t.Fatalf("accepted %q: %+v", raw, r)
		}
		for _, u := range r.From {
			if !unitRE.MatchString(u) {
				t.Fatalf("accepted unit %q", u)
			}
		}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeControlRecord(string(data))
		if err != nil || !cmp.Equal(r, again) {
			t.Fatalf("re-decode of %s: %+v, %v", data, again, err)
		}
	})
}
