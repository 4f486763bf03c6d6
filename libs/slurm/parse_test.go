package slurm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

func TestShowNodeStates(t *testing.T) {
	type summary struct {
		State                                  string
		Busy, Drain, Draining, Drained, Down   bool
		NotResponding, Dynamic                 bool
		Reason, ReasonBy, Comment, Extra, Addr string
		CPUs, CPUAlloc                         int
		RealMemory                             int64
		Features, Partitions                   []string
	}
	base := summary{Dynamic: true, CPUs: 1, RealMemory: 1000, Features: []string{"ns1"}, Partitions: []string{"ns1"}, Addr: "10.203.0.11"}
	with := func(f func(*summary)) summary { s := base; f(&s); return s }
	tests := []struct {
		name, real, node string
		want             summary
	}{
		{"idle", "show-node-idle", "node1", with(func(s *summary) { s.State = "IDLE+DYNAMIC_NORM" })},
		{"allocated", "show-node-allocated", "node1", with(func(s *summary) {
			s.State, s.Busy, s.CPUAlloc = "ALLOCATED+DYNAMIC_NORM", true, 1
		})},
		{"draining", "show-node-draining", "node1", with(func(s *summary) {
			s.State, s.Busy, s.CPUAlloc, s.Drain, s.Draining = "ALLOCATED+DRAIN+DYNAMIC_NORM", true, 1, true, true
			s.Reason, s.ReasonBy = "unit slurmd/1 removed", "root"
		})},
		{"completing", "show-node-completing", "node1", with(func(s *summary) { s.State, s.Busy = "IDLE+COMPLETING+DYNAMIC_NORM", true })},
		{"drained", "show-node-drained", "node1", with(func(s *summary) {
			s.State, s.Drain, s.Drained = "IDLE+DRAIN+DYNAMIC_NORM", true, true
			s.Reason, s.ReasonBy = "unit slurmd/1 removed", "root"
		})},
		{"down with comment", "show-node-down", "node2", with(func(s *summary) {
			s.State, s.Down, s.Addr = "DOWN+DYNAMIC_NORM", true, "10.203.0.12"
			s.Reason, s.ReasonBy = "down for test", "root"
			s.Comment, s.Extra = "a comment with=equals", "ex tra"
		})},
		{"not responding", "show-node-notresponding", "node2", with(func(s *summary) {
			s.State, s.NotResponding, s.Addr = "IDLE+DYNAMIC_NORM+NOT_RESPONDING", true, "10.203.0.12"
			s.Comment, s.Extra = "a comment with=equals", "ex tra"
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newClient(slurmtest.Real(tt.real))
			n, err := c.ShowNode(context.Background(), tt.node)
			if err != nil {
				t.Fatal(err)
			}
			got := summary{
				State: n.State.String(), Busy: n.State.Busy(), Drain: n.State.Drain(), Draining: n.State.Draining(),
				Drained: n.State.Drained(), Down: n.State.Down(), NotResponding: n.State.NotResponding(),
				Dynamic: n.State.Dynamic(), Reason: n.Reason, ReasonBy: n.ReasonBy, Comment: n.Comment, Extra: n.Extra,
				Addr: n.Addr, CPUs: n.CPUs, CPUAlloc: n.CPUAlloc, RealMemory: n.RealMemory,
				Features: n.Features, Partitions: n.Partitions,
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("node (-want +got):\n%s", d)
			}
			if n.Name != tt.node || n.Version != "22.05.8" || n.Hostname != tt.node {
				t.Errorf("name %q version %q hostname %q", n.Name, n.Version, n.Hostname)
			}
			if os, _ := n.Get("OS"); !strings.HasPrefix(os, "Linux ") || !strings.Contains(os, " SMP ") {
				t.Errorf("OS=%q, want the whole value with spaces", os)
			}
		})
	}
}

func TestNodesAllAndNone(t *testing.T) {
	c, _ := newClient(slurmtest.Real("show-node-all"))
	nodes, err := c.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name+" "+n.State.String())
	}
	if d := cmp.Diff([]string{"node2 IDLE+DYNAMIC_NORM", "node1 IDLE+DRAIN+DYNAMIC_NORM"}, names); d != "" {
		t.Errorf("nodes (-want +got):\n%s", d)
	}
	if nodes[0].Comment != "a comment with=equals" || nodes[0].Extra != "ex tra" {
		t.Errorf("comment %q extra %q", nodes[0].Comment, nodes[0].Extra)
	}
	c, _ = newClient(slurmtest.Real("show-node-none"))
	nodes, err = c.Nodes(context.Background())
	if err != nil || len(nodes) != 0 {
		t.Errorf("no nodes: got %v, %v", nodes, err)
	}
}

func TestParseShowNodeErrors(t *testing.T) {
	for _, tt := range []struct{ name, in, wantErr string }{
		{"not key value", "hello world\n", "line 1"},
		{"no nodename", "State=IDLE\n", "does not start with NodeName="},
		{"no state", "NodeName=a CPUTot=1\n", "no State="},
		{"bad state", "NodeName=a State=idle\n", "bad part"},
		{"bad cpus", "NodeName=a State=IDLE CPUTot=x\n", `CPUTot="x"`},
		{"second line", "NodeName=a State=IDLE\nNodeName=b RealMemory=1M State=IDLE\n", "line 2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := slurm.ParseShowNode([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseNodeFields(t *testing.T) {
	line := "NodeName=n1 State=MIXED+DRAIN Reason=has [brackets] State=x [slurm@2024-01-01T00:00:00] Comment=c Partitions=p1,p2 AvailableFeatures=(null)"
	nodes, err := slurm.ParseShowNode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	n := nodes[0]
	if n.Reason != "has [brackets] State=x" || n.ReasonBy != "slurm" || n.ReasonTime != "2024-01-01T00:00:00" {
		t.Errorf("reason %q by %q at %q", n.Reason, n.ReasonBy, n.ReasonTime)
	}
	if d := cmp.Diff([]string{"p1", "p2"}, n.Partitions); d != "" {
		t.Errorf("partitions (-want +got):\n%s", d)
	}
	if n.Features != nil || !n.State.Draining() || n.Comment != "c" {
		t.Errorf("node %+v", n)
	}
}

func TestParseMachineInfo(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     slurmconf.Params
		wantErr  string
	}{
		{"gres", "NodeName=gpu1 CPUs=8 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=64000 Gres=gpu:2\nUpTime=1-00:00:00\n",
			slurmconf.Params{{Key: "CPUs", Value: "8"}, {Key: "Boards", Value: "1"}, {Key: "SocketsPerBoard", Value: "1"}, {Key: "CoresPerSocket", Value: "4"}, {Key: "ThreadsPerCore", Value: "2"}, {Key: "RealMemory", Value: "64000"}, {Key: "Gres", Value: "gpu:2"}}, ""},
		{"empty", "", nil, "no NodeName= line"},
		{"garbage", "hello\n", nil, `line 1 "hello"`},
		{"bad cpus", "NodeName=a CPUs=0\n", nil, `CPUs="0"`},
		{"no cpus", "NodeName=a RealMemory=1\n", nil, "no CPUs="},
		{"bad memory", "NodeName=a CPUs=1 RealMemory=1G\n", nil, `RealMemory="1G"`},
		{"two lines", "NodeName=a CPUs=1\nNodeName=b CPUs=1\n", nil, "second NodeName="},
		{"word", "NodeName=a CPUs=1 x\n", nil, `"x" is not key=value`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := slurm.ParseMachineInfo([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, m.Params); d != "" {
				t.Errorf("params (-want +got):\n%s", d)
			}
		})
	}
}

func TestVersionFeatures(t *testing.T) {
	munge := slurm.Features{AuthType: "auth/munge", CredType: "cred/munge", Munge: true, AuthKeyFile: "/etc/munge/munge.key"}
	authSlurm := slurm.Features{AuthType: "auth/slurm", CredType: "cred/slurm", AuthKeyFile: "/etc/slurm/slurm.key", Sackd: true}
	with := func(f slurm.Features, set func(*slurm.Features)) slurm.Features { set(&f); return f }
	from2405 := func(f *slurm.Features) {
		f.FutureNodes, f.ListJobs, f.CgroupDisabled, f.ReconfigureReexecs = true, true, true, true
	}
	for _, tt := range []struct {
		in      string
		want    slurm.Version
		feat    slurm.Features
		wantErr bool
	}{
		{in: "slurm-wlm 22.05.8\n", want: slurm.Version{22, 5, 8}, feat: munge},
		{in: "slurm 23.02.7", want: slurm.Version{23, 2, 7}, feat: with(munge, func(f *slurm.Features) { f.FutureNodes = true })},
		{in: "slurm 23.11.0-0rc1", want: slurm.Version{23, 11, 0}, feat: with(authSlurm, func(f *slurm.Features) { f.FutureNodes, f.ReconfigureReexecs = true, true })},
		{in: "24.05.1", want: slurm.Version{24, 5, 1}, feat: with(authSlurm, from2405)},
		{in: "slurm-wlm 24.11.5", want: slurm.Version{24, 11, 5}, feat: with(authSlurm, from2405)},
		// Slurm holds jobs sent to an empty partition again from 24.11.6 and 25.05.1.
		{in: "slurm 24.11.6", want: slurm.Version{24, 11, 6}, feat: with(authSlurm, func(f *slurm.Features) { from2405(f); f.FutureNodes = false })},
		{in: "slurm 25.05.0", want: slurm.Version{25, 5, 0}, feat: with(authSlurm, from2405)},
		{in: "slurm 25.05.1", want: slurm.Version{25, 5, 1}, feat: with(authSlurm, func(f *slurm.Features) { from2405(f); f.FutureNodes = false })},
		{in: "slurm 25.11", want: slurm.Version{25, 11, 0}, feat: with(authSlurm, func(f *slurm.Features) { from2405(f); f.FutureNodes = false; f.OpenMetrics = true })},
		{in: "slurm-wlm 26.05.5", want: slurm.Version{26, 5, 5}, feat: with(authSlurm, func(f *slurm.Features) {
			from2405(f)
			f.FutureNodes = false
			f.GPUAutoDetect = true
			f.OpenMetrics = true
		})},
		{in: "", wantErr: true},
		{in: "munge 0.5.15", wantErr: true},
		{in: "slurm x.y.z", wantErr: true},
		{in: "slurm 22", wantErr: true},
	} {
		t.Run(tt.in, func(t *testing.T) {
			v, err := slurm.ParseVersion(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if v != tt.want {
				t.Errorf("version %v, want %v", v, tt.want)
			}
			if d := cmp.Diff(tt.feat, slurm.FeaturesOf(v)); d != "" {
				t.Errorf("features (-want +got):\n%s", d)
			}
		})
	}
	if s := (slurm.Version{22, 5, 8}).String(); s != "22.05.8" {
		t.Errorf("String() = %q", s)
	}
}
