package slurmconf_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/libs/slurmconf"
)

func TestValidateNodeValues(t *testing.T) {
	long := strings.Repeat("a", 70000)
	tests := []struct {
		name, params string
		wantErr      string // "" accepted
	}{
		{name: "counts", params: "CPUs=4 RealMemory=8000 Weight=10 TmpDisk=100 Boards=1 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 MemSpecLimit=100 CoreSpecCount=1"},
		{name: "features", params: "Features=gpu,fast,ib-hdr,v1.2,avx_512"},
		{name: "feature alias", params: "Feature=a"},
		{name: "cpu list", params: "CPUSpecList=0,2-3"},
		{name: "gres none", params: `Gres=""`},
		{name: "gres", params: "Gres=gpu:tesla_t4:2"},
		{name: "tres weights", params: "TRESWeights=CPU=1.0,Mem=0.25G"},
		{name: "cpu bind", params: "CpuBind=core"},
		{name: "bcast", params: "BcastAddr=10.0.0.1"},
		{name: "suspend time (26.05)", params: "SuspendTime=600"},
		{name: "suspend time infinite", params: "SuspendTime=INFINITE"},
		{name: "parameters (25.11)", params: "Parameters=l3cache_as_socket,numa_node_as_socket"},
		{name: "topology (25.11)", params: "Topology=default:s1"},
		{name: "unknown key left to the key set", params: "Wieght=10"},

		{name: "managed NodeName", params: "NodeName=x", wantErr: `key "NodeName" is managed by the charm and cannot be set`},
		{name: "managed port", params: "port=1", wantErr: `key "port" is managed by the charm and cannot be set`},
		{name: "bar", params: "Features=a|b", wantErr: `key "Features": "a|b" is not a feature name a job can select with --constraint (` + slurmconf.FeatureRule + ")"},
		{name: "parentheses", params: "Features=(a)", wantErr: `key "Features": "(a)" is not a feature name`},
		{name: "brackets", params: "Features=[a]", wantErr: `"[a]" is not a feature name`},
		{name: "ampersand", params: "Feature=a&b", wantErr: `"a&b" is not a feature name`},
		{name: "count", params: "Features=a*2", wantErr: `"a*2" is not a feature name`},
		{name: "not", params: "Features=!a", wantErr: `"!a" is not a feature name`},
		{name: "space", params: `Features="a b"`, wantErr: `"a b" is not a feature name`},
		{name: "shell", params: "Features=$(touch${IFS}/tmp/x)", wantErr: `is not a feature name`},
		{name: "empty feature", params: "Features=a,,b", wantErr: `key "Features": value "a,,b" has an empty feature name`},
		{name: "empty features", params: `Features=""`, wantErr: `has an empty feature name`},
		{name: "too long", params: "Features=" + long, wantErr: `key "Features": value is 70000 characters long (at most 1024)`},
		{name: "too long unknown key", params: "Foo=" + long, wantErr: `key "Foo": value is 70000 characters long (at most 1024)`},
		{name: "not a number", params: "RealMemory=lots", wantErr: `key "RealMemory": value "lots" is not a whole number`},
		{name: "negative", params: "CPUs=-1", wantErr: `key "CPUs": value "-1" is not a whole number`},
		{name: "unlimited is no count", params: "Weight=UNLIMITED", wantErr: `is not a whole number`},
		{name: "uint16", params: "CPUs=65536", wantErr: `key "CPUs": value 65536 is out of range (at most 65535)`},
		{name: "uint32", params: "Weight=4294967296", wantErr: `key "Weight": value 4294967296 is out of range (at most 4294967295)`},
		{name: "cpu list", params: "CPUSpecList=0-", wantErr: `key "CPUSpecList": value "0-": want CPU ids and ranges`},
		{name: "gres with space", params: `Gres="gpu:1 x"`, wantErr: `key "Gres": value "gpu:1 x": want a generic resource list`},
		{name: "cpu bind", params: "CpuBind=sideways", wantErr: `key "CpuBind": want one of`},
		{name: "managed GresConf (26.05)", params: "GresConf=Name=gpu", wantErr: `key "GresConf" is managed by the charm and cannot be set`},
		{name: "suspend time", params: "SuspendTime=soon", wantErr: `key "SuspendTime": value "soon": want seconds, INFINITE or -1`},
		{name: "parameters", params: "Parameters=a;b", wantErr: `key "Parameters": value "a;b": want options`},
		{name: "topology", params: "Topology=a:b,,c", wantErr: `key "Topology": value "a:b,,c": want topology:switch names`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := slurmconf.ParseParams(tt.params)
			if err != nil {
				t.Fatal(err)
			}
			err = slurmconf.ValidateNodeValues(p)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("ValidateNodeValues(%q) = %v, want nil", short(tt.params), err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("ValidateNodeValues(%q) = %v, want an error containing %q", short(tt.params), err, tt.wantErr)
			}
			var pe *slurmconf.ParseError
			if err != nil && (!errors.As(err, &pe) || pe.Key == "") {
				t.Errorf("ValidateNodeValues(%q) = %#v, want a *ParseError naming the key", short(tt.params), err)
			}
		})
	}
}

func FuzzValidateNodeValues(f *testing.F) {
	for _, s := range []string{"Features=a,b", "Features=a|b", "CPUs=2 Weight=3", "Gres=gpu:2", "CPUSpecList=1-2", "NodeName=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := slurmconf.ParseParams(s)
		if err != nil || slurmconf.ValidateNodeValues(p) != nil {
			return
		}
		for _, kv := range p {
			if len(kv.Value) > slurmconf.MaxValueLen {
				t.Fatalf("accepted a %d-character value for %s", len(kv.Value), kv.Key)
			}
			switch strings.ToLower(kv.Key) {
			case "feature", "features":
				for _, f := range strings.Split(kv.Value, ",") {
					if f == "" || strings.ContainsAny(f, "|&()[]*!, \t\"'$`;=#") {
						t.Fatalf("accepted feature %q, which --constraint cannot select", f)
					}
				}
			case "nodename", "nodeaddr", "nodehostname", "port", "state", "reason":
				t.Fatalf("accepted managed key %s", kv.Key)
			}
		}
	})
}

func short(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
