package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/gres"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// Tests of the pure node-configuration unit (nodeconf.go): no charm, no host.

// TestBuildNode: the machine's facts, the application, node-config and the detected and
// declared resources in; --conf, its Gres= and the node's gres.conf lines out.
func TestBuildNode(t *testing.T) {
	mi, err := slurm.ParseMachineInfo([]byte("NodeName=h CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=8000\n"))
	if err != nil {
		t.Fatal(err)
	}
	const facts = "CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=8000"
	fpga := gres.Set{{Name: "fpga", Type: "u250", Count: 1}}
	tests := []struct {
		name       string
		nodeConfig string
		detected   gres.Set
		declared   gres.Set
		wantConf   string
		wantGres   string
		wantLines  []string // GresConf's lines without its comment
		err        string
	}{
		{name: "machine only", wantConf: facts + " Feature=app"},
		{name: "node-config wins", nodeConfig: "RealMemory=4000 Weight=3 Feature=big",
			wantConf: "CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=4000 Weight=3 Feature=app,big"},
		{name: "detected GPUs", detected: t4, wantConf: facts + " Gres=gpu:tesla_t4:2 Feature=app", wantGres: "gpu:tesla_t4:2",
			wantLines: []string{"NodeName=slurmd-3 Name=gpu Type=tesla_t4 File=/dev/nvidia0", "NodeName=slurmd-3 Name=gpu Type=tesla_t4 File=/dev/nvidia1"}},
		{name: "declared count-only", declared: fpga, wantConf: facts + " Gres=fpga:u250:1 Feature=app", wantGres: "fpga:u250:1"},
		{name: "node-config lowers the count", detected: t4, nodeConfig: "Gres=gpu:tesla_t4:1",
			wantConf: facts + " Gres=gpu:tesla_t4:1 Feature=app", wantGres: "gpu:tesla_t4:1",
			wantLines: []string{"NodeName=slurmd-3 Name=gpu Type=tesla_t4 File=/dev/nvidia0", "NodeName=slurmd-3 Name=gpu Type=tesla_t4 File=/dev/nvidia1"}},
		{name: "bad saved node-config", nodeConfig: `Weight="1`, err: "cannot read the saved node-config"},
		{name: "bad node-config Gres", nodeConfig: "Gres=gpu:0", err: "node-config: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := nodeInputs{Machine: mi, App: "app", Node: node, NodeConfig: tt.nodeConfig, Detected: tt.detected, Declared: tt.declared}
			got, err := buildNode(in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Conf != tt.wantConf {
				t.Errorf("--conf %q, want %q", got.Conf, tt.wantConf)
			}
			if got.Gres.String() != tt.wantGres {
				t.Errorf("Gres=%q, want %q", got.Gres, tt.wantGres)
			}
			var lines []string
			for _, l := range strings.Split(got.GresConf, "\n") {
				if l != "" && !strings.HasPrefix(l, "#") {
					lines = append(lines, l)
				}
			}
			if d := cmp.Diff(tt.wantLines, lines); d != "" {
				t.Errorf("gres.conf lines (-want +got):\n%s", d)
			}
			if got.GresConf != string(got.Lines.Conf(node)) {
				t.Errorf("GresConf %q is not the lines' gres.conf", got.GresConf)
			}
		})
	}
	if len(mi.Params) != 6 {
		t.Errorf("buildNode changed the machine's facts: %v", mi.Params)
	}
}

func TestMergeNodeConfig(t *testing.T) {
	tests := []struct {
		name, base, set string
		reset           bool
		want, err       string
	}{
		{name: "added", base: "Weight=2", set: "TmpDisk=100", want: "Weight=2 TmpDisk=100"},
		{name: "replaced", base: "Weight=2 TmpDisk=100", set: "Weight=5", want: "Weight=5 TmpDisk=100"},
		{name: "reset", base: "Weight=2", set: "TmpDisk=100", reset: true, want: "TmpDisk=100"},
		{name: "Features replaces Feature", base: "Feature=a Weight=2", set: "Features=b", want: "Weight=2 Features=b"},
		{name: "Feature replaces Features", base: "Features=a", set: "Feature=b", want: "Feature=b"},
		{name: "bad saved", base: `Weight="2`, set: "TmpDisk=1", err: "cannot read the saved node-config"},
		{name: "bad saved, reset", base: `Weight="2`, set: "TmpDisk=1", reset: true, want: "TmpDisk=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := slurmconf.ParseParams(tt.set)
			if err != nil {
				t.Fatal(err)
			}
			got, err := mergeNodeConfig(tt.base, set, tt.reset)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.want {
				t.Errorf("merged %q, want %q", got.String(), tt.want)
			}
		})
	}
}

func TestCheckMachine(t *testing.T) {
	mi, err := slurm.ParseMachineInfo([]byte("NodeName=h CPUs=4 Boards=1 SocketsPerBoard=2 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=8000\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ params, err string }{
		{params: "CPUs=4 RealMemory=8000 Sockets=2 Weight=9"},
		{params: "CPUs=5", err: `key "CPUs": 5 is more than this machine has (4`},
		{params: "RealMemory=9000", err: `key "RealMemory"`},
		{params: "Sockets=3", err: `key "Sockets"`},
		{params: "CoresPerSocket=x", err: "not a whole number"},
	} {
		p, err := slurmconf.ParseParams(tt.params)
		if err != nil {
			t.Fatal(err)
		}
		err = checkMachine(p, mi)
		if (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("checkMachine(%q) = %v, want %q", tt.params, err, tt.err)
		}
	}
}

// TestGresChangedFrom: a node's gres.conf content against what slurmd runs with; a node
// started by a charm that wrote no file (empty) changed only if it now has lines.
func TestGresChangedFrom(t *testing.T) {
	build := func(detected gres.Set, o gres.ConfOptions) nodeConf {
		t.Helper()
		nc, err := buildNode(nodeInputs{App: "app", Node: node, Detected: detected, GresOptions: o})
		if err != nil {
			t.Fatal(err)
		}
		return nc
	}
	off := gres.ConfOptions{AutoDetectOff: true}
	none, lines, noneOff := build(nil, gres.ConfOptions{}), build(t4, gres.ConfOptions{}), build(nil, off)
	for _, tt := range []struct {
		name string
		nc   nodeConf
		prev string
		want bool
	}{
		{"started without the file, none now", none, "", false},
		{"started without the file, none now, AutoDetect=off", noneOff, "", false},
		{"started without the file, lines now", lines, "", true},
		{"same", lines, lines.GresConf, false},
		{"changed", lines, none.GresConf, true},
		{"AutoDetect=off added", noneOff, none.GresConf, true},
	} {
		if got := tt.nc.gresChangedFrom(tt.prev); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if !strings.Contains(noneOff.GresConf, "AutoDetect=off") || strings.Contains(none.GresConf, "AutoDetect") {
		t.Errorf("gres.conf with AutoDetectOff %q, without %q", noneOff.GresConf, none.GresConf)
	}
}

func TestResolveGres(t *testing.T) {
	fpga := gres.Set{{Name: "fpga", Type: "u250", Count: 1, Files: []string{"/dev/xclmgmt0"}}}
	mi100 := gres.Set{{Name: "gpu", Type: "mi100", Count: 1, Files: []string{"/dev/dri/renderD128"}}}
	tests := []struct {
		name               string
		detected, declared gres.Set
		nodeConfig         string
		wantLines          gres.Set
		wantGres           string
		err                string
	}{
		{name: "nothing"},
		{name: "detected", detected: t4, wantLines: t4, wantGres: "gpu:tesla_t4:2"},
		{name: "declared adds", detected: t4, declared: fpga, wantLines: append(slices.Clone(t4), fpga...), wantGres: "gpu:tesla_t4:2,fpga:u250:1"},
		{name: "declared gpu replaces detection", detected: t4, declared: mi100, wantLines: mi100, wantGres: "gpu:mi100:1"},
		{name: "node-config lowers", detected: t4, nodeConfig: "Gres=gpu:tesla_t4:1", wantLines: t4, wantGres: "gpu:tesla_t4:1"},
		{name: "node-config key case", detected: t4, nodeConfig: "gres=gpu:tesla_t4:1 Weight=2", wantLines: t4, wantGres: "gpu:tesla_t4:1"},
		{name: "node-config removes", detected: t4, nodeConfig: `Gres=""`, wantLines: t4},
		{name: "node-config null", detected: t4, nodeConfig: "Gres=(null)", wantLines: t4},
		{name: "node-config bad", detected: t4, nodeConfig: "Gres=gpu:tesla_t4:0", err: "node-config: invalid Gres"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := slurmconf.ParseParams(tt.nodeConfig)
			if err != nil {
				t.Fatal(err)
			}
			got, err := resolveGres(tt.detected, tt.declared, nc)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.wantLines, got.Lines); d != "" {
				t.Errorf("lines (-want +got):\n%s", d)
			}
			if got.Gres.String() != tt.wantGres {
				t.Errorf("Gres=%q, want %q", got.Gres, tt.wantGres)
			}
			for _, r := range got.Gres {
				if len(r.Files) > 0 {
					t.Errorf("Gres value carries files: %+v", r)
				}
			}
		})
	}
}

func TestBuildConfGres(t *testing.T) {
	mi := slurm.MachineInfo{Params: slurmconf.Params{{Key: "CPUs", Value: "4"}, {Key: "RealMemory", Value: "8000"}}}
	tests := []struct {
		name, nodeConfig, gres, want string
	}{
		{"none", "", "", "CPUs=4 RealMemory=8000 Feature=app"},
		{"gpus", "", "gpu:tesla_t4:2", "CPUs=4 RealMemory=8000 Gres=gpu:tesla_t4:2 Feature=app"},
		{"node-config Gres is not applied twice", `Gres="gpu:tesla_t4:1" Weight=5`, "gpu:tesla_t4:1", "CPUs=4 RealMemory=8000 Gres=gpu:tesla_t4:1 Weight=5 Feature=app"},
		{"removed", `Gres=""`, "", "CPUs=4 RealMemory=8000 Feature=app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := slurmconf.ParseParams(tt.nodeConfig)
			if err != nil {
				t.Fatal(err)
			}
			g, err := gres.ParseGres(tt.gres)
			if err != nil {
				t.Fatal(err)
			}
			if got := buildConfGres(mi, "app", nc, g); got != tt.want {
				t.Errorf("buildConfGres = %q, want %q", got, tt.want)
			}
		})
	}
	if len(mi.Params) != 2 {
		t.Errorf("buildConfGres changed the machine's facts: %v", mi.Params)
	}
}

func TestBuildConf(t *testing.T) {
	mi, err := slurm.ParseMachineInfo([]byte("NodeName=h CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=8000\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, nodeConfig, want string
	}{
		{"baseline", "", "CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=8000 Feature=app"},
		{"override and add", "RealMemory=4000 Weight=3", "CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=4000 Weight=3 Feature=app"},
		{"features merged", "Feature=gpu,app,,x", "CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=8000 Feature=app,gpu,x"},
		{"quoted", `Gres="gpu:1"`, "CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=8000 Gres=gpu:1 Feature=app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := slurmconf.ParseParams(tt.nodeConfig)
			if err != nil {
				t.Fatal(err)
			}
			if got := buildConf(mi, "app", p); got != tt.want {
				t.Errorf("buildConf = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGresSummaryAndUnmanaged(t *testing.T) {
	tests := []struct {
		gres, summary string
		managed       []string
		missing       []string
	}{
		{gres: "", summary: "", managed: nil},
		{gres: "gpu:tesla_t4:2", summary: "2× gpu:tesla_t4", managed: []string{"gpu"}},
		{gres: "gpu:2", summary: "2× gpu", managed: nil, missing: []string{"gpu"}},
		{gres: "gpu:a100:1,gpu:t4:3,bandwidth:20G", summary: "1× gpu:a100, 3× gpu:t4, 20G× bandwidth", managed: []string{"gpu", "fpga"}, missing: []string{"bandwidth"}},
	}
	for _, tt := range tests {
		g, err := gres.ParseGres(tt.gres)
		if err != nil {
			t.Fatal(err)
		}
		if got := gresSummary(g); got != tt.summary {
			t.Errorf("gresSummary(%q) = %q, want %q", tt.gres, got, tt.summary)
		}
		if d := cmp.Diff(tt.missing, unmanagedGres(g, tt.managed)); d != "" {
			t.Errorf("unmanagedGres(%q, %q) (-want +got):\n%s", tt.gres, tt.managed, d)
		}
	}
}

func TestParseNodeConfigGres(t *testing.T) {
	keys := slurmconf.KeysOf(22, 5)
	for _, s := range []string{"Gres=gpu:tesla_t4:1", `Gres=""`, "Gres=(null)", "Gres=gpu:1,fpga:2"} {
		if _, err := ParseNodeConfig(keys, s); err != nil {
			t.Errorf("ParseNodeConfig(%q): %v", s, err)
		}
	}
	for _, s := range []string{"Gres=gpu:0", "Gres=GPU:1", "Gres=gpu:t4:x", "Gres=gpu:t4:1:2"} {
		if _, err := ParseNodeConfig(keys, s); err == nil || !strings.Contains(err.Error(), `"Gres"`) {
			t.Errorf("ParseNodeConfig(%q) = %v, want an error naming Gres", s, err)
		}
	}
}

func FuzzParseNodeConfig(f *testing.F) {
	for _, s := range []string{"", "Weight=10", "Features=a,b RealMemory=100", "Features=a|b", `Features="a b"`, "NodeName=x", `Reason="a b"`, "Port=1", "Wieght=1", "CPUs=-1", `Gres="gpu:2" TmpDisk=5`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseNodeConfig(slurmconf.KeysOf(22, 5), s)
		if err != nil {
			return
		}
		for _, k := range []string{"NodeName", "NodeAddr", "NodeHostname", "State", "Reason", "Port"} {
			if p.Has(k) {
				t.Fatalf("ParseNodeConfig(%q) accepted %s", s, k)
			}
		}
		for _, kv := range p {
			if len(kv.Value) > slurmconf.MaxValueLen {
				t.Fatalf("ParseNodeConfig(%q) accepted a %d-character value for %s", s, len(kv.Value), kv.Key)
			}
			if strings.EqualFold(kv.Key, "Feature") || strings.EqualFold(kv.Key, "Features") {
				if strings.ContainsAny(kv.Value, "|&()[]*! \t\"$`;=") {
					t.Fatalf("ParseNodeConfig(%q) accepted features %q, which --constraint cannot select", s, kv.Value)
				}
			}
		}
		// What is accepted renders to a line that parses back to the same parameters.
		again, err := ParseNodeConfig(slurmconf.KeysOf(22, 5), p.String())
		if err != nil {
			t.Fatalf("ParseNodeConfig(%q) = %q, which does not parse again: %v", s, p.String(), err)
		}
		if again.String() != p.String() {
			t.Fatalf("round trip %q → %q", p.String(), again.String())
		}
	})
}
