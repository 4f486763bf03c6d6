package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// Scale from zero (docs/autoscaling.md). A NodeSet partition whose application has no unit has
// no node. Slurm 22.05 accepts a job for it and holds it (Reason=PartitionConfig); 24.11.5
// rejects it ("Requested node configuration is not available"): it checks a job against the
// partition's configured nodes; Slurm fixed that in 24.11.6 and 25.05.1, and 26.05 holds it
// again. FUTURE node records carrying the NodeSet's feature give it configured nodes that are
// never up and never scheduled: the job is accepted, waits, and runs on the first dynamic node
// of the application that registers. Which versions need them is slurm.Features.FutureNodes
// (23.02 to 24.11.5, and 25.05.0; proven on 22.05.8, 24.11.5 and 26.05.5): on the others
// nothing is written.

// defaultFutureNodes mirrors the future-nodes default in charmcraft.yaml.
const defaultFutureNodes = "nodes=8 cpus=1 memory=1"

// futureNodes is the parsed future-nodes option: how many FUTURE records each application's
// partition file gets, and their size. Nodes 0 writes none.
type futureNodes struct {
	Nodes, CPUs, Memory int
}

// parseFutureNodes parses "nodes=N cpus=C memory=M" (any order; a missing key keeps its
// default; "" or "none" is nodes=0).
func parseFutureNodes(s string) (futureNodes, error) {
	f := futureNodes{Nodes: 8, CPUs: 1, Memory: 1}
	if t := strings.TrimSpace(s); t == "" || t == "none" {
		return futureNodes{}, nil
	}
	seen := map[string]bool{}
	for _, field := range strings.Fields(s) {
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			return f, fmt.Errorf("%q is not key=value (keys: nodes, cpus, memory)", field)
		}
		k = strings.ToLower(k)
		if seen[k] {
			return f, fmt.Errorf("%s is given twice", k)
		}
		seen[k] = true
		n, err := strconv.Atoi(v)
		if err != nil {
			return f, fmt.Errorf("%s=%q is not a whole number", k, v)
		}
		switch k {
		case "nodes":
			if n < 0 || n > 1024 {
				return f, fmt.Errorf("nodes=%d is out of range (0 to 1024)", n)
			}
			f.Nodes = n
		case "cpus":
			if n < 1 || n > 65535 {
				return f, fmt.Errorf("cpus=%d is out of range (1 to 65535)", n)
			}
			f.CPUs = n
		case "memory":
			if n < 1 || n > 1<<40 {
				return f, fmt.Errorf("memory=%d is out of range (1 MB and up)", n)
			}
			f.Memory = n
		default:
			return f, fmt.Errorf("unknown key %q (keys: nodes, cpus, memory)", k)
		}
	}
	return f, nil
}

// futureRecord is the NodeName line of app's FUTURE records in its partition file, or "" when
// Slurm v needs none (slurm.Features.FutureNodes). The names (<app>-future[1-N]) cannot be a unit's node name, which always
// ends in "-<unit number>" (slurmd.NodeName), so they never count as one of the application's
// nodes; they carry the NodeSet's feature so that the NodeSet, hence the partition, has them.
func futureRecord(v slurm.Version, f futureNodes, ns slurmconf.NodeSet) string {
	if !slurm.FeaturesOf(v).FutureNodes || f.Nodes == 0 {
		return ""
	}
	feature, ok := ns.Params.Get("Feature")
	if !ok || feature == "" {
		return ""
	}
	names := ns.Name + "-future1"
	if f.Nodes > 1 {
		names = fmt.Sprintf("%s-future[1-%d]", ns.Name, f.Nodes)
	}
	return fmt.Sprintf("NodeName=%s State=FUTURE Feature=%s CPUs=%d RealMemory=%d", names, feature, f.CPUs, f.Memory)
}
