package slurm_test

import (
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

var realNodeCases = []string{"show-node-idle", "show-node-allocated", "show-node-draining", "show-node-completing",
	"show-node-drained", "show-node-down", "show-node-notresponding", "show-node-all", "show-node-none"}

func FuzzShowNode(f *testing.F) {
	for _, name := range realNodeCases {
		f.Add(slurmtest.Real(name).Output.Stdout)
	}
	f.Add([]byte("NodeName=a State=IDLE Reason=x Comment=y [u@2024-01-01T00:00:00] Extra=z"))
	f.Fuzz(func(t *testing.T, data []byte) {
		nodes, err := slurm.ParseShowNode(data)
		if err != nil {
			return
		}
		for _, n := range nodes {
			if n.Name == "" || n.State.Base == "" {
				t.Fatalf("parsed node without name or state: %+v", n)
			}
			// The state round-trips through its string form.
			st, err := slurm.ParseNodeState(n.State.String())
			if err != nil || st.String() != n.State.String() {
				t.Fatalf("state %q does not round-trip: %v", n.State, err)
			}
			if n.State.Draining() && n.State.Drained() {
				t.Fatalf("state %q both draining and drained", n.State)
			}
		}
	})
}

func FuzzMachineInfo(f *testing.F) {
	f.Add(slurmtest.Real("slurmd-C").Output.Stdout)
	f.Add([]byte("NodeName=g CPUs=8 Gres=gpu:2 RealMemory=1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := slurm.ParseMachineInfo(data)
		if err != nil {
			return
		}
		// Rendering and re-parsing gives the same parameters.
		again, err := slurm.ParseMachineInfo([]byte("NodeName=" + m.Hostname + " " + m.String()))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", m.String(), err)
		}
		if again.String() != m.String() || m.CPUs <= 0 {
			t.Fatalf("round trip %q → %q", m.String(), again.String())
		}
	})
}

func FuzzSqueue(f *testing.F) {
	for _, name := range []string{"squeue-node-running", "squeue-node-completing", "squeue-partition"} {
		f.Add(slurmtest.Real(name).Output.Stdout)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, err := slurm.ParseSqueue(data)
		if err != nil {
			return
		}
		for _, j := range jobs {
			if j.ID == "" || j.State == "" || strings.Contains(j.Partition, "|") {
				t.Fatalf("bad job %+v", j)
			}
		}
	})
}

func FuzzVersion(f *testing.F) {
	f.Add(string(slurmtest.Real("slurmd-V").Output.Stdout))
	f.Add("slurm 23.11.0-0rc1")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := slurm.ParseVersion(s)
		if err != nil {
			return
		}
		again, err := slurm.ParseVersion(v.String())
		if err != nil || again != v {
			t.Fatalf("%q → %v does not round-trip: %v", s, v, err)
		}
	})
}

func FuzzPing(f *testing.F) {
	f.Add(slurmtest.Real("ping-up").Output.Stdout)
	f.Add(slurmtest.Real("ping-down").Output.Stdout)
	f.Fuzz(func(t *testing.T, data []byte) {
		ctls, err := slurm.ParsePing(data)
		if err == nil && len(ctls) == 0 {
			t.Fatal("no error and no controllers")
		}
	})
}
