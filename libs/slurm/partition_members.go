package slurm

// Partition membership of dynamic nodes, and its repair on Slurm 22.05.
//
// A dynamic node lands in a partition through `NodeSet=<n> Feature=<f>` and
// `PartitionName=<p> Nodes=<n>`: slurmctld computes the partition's nodes from the nodes
// that carry the feature. Slurm 22.05 computes them wrongly during `scontrol reconfigure`
// when the node table has holes (a node was deleted before another that stays): the
// reconfigure compacts the dynamic nodes into new table slots (_preserve_dynamic_nodes →
// insert_node_record) and then builds every partition bitmap (_build_bitmaps_pre_select →
// build_part_bitmap → nodespec_to_hostlist → _add_nodes_with_feature) from the feature
// bitmaps of *before* the reconfigure, which are still indexed by the old slots. A moved
// node drops out of its partition, and a node of another NodeSet may take its place,
// until the next dynamic registration or node deletion rebuilds the partitions
// (_update_parts). Slurm 23.02.2 rebuilds the feature lists first (SchedMD bug 16295).
//
// `scontrol update partitionname=<p> nodes=<nodesets>` rebuilds one partition's bitmap
// from the current feature lists (update_part → build_part_bitmap): it needs no
// controller restart, deletes no node and leaves running jobs alone. That is what
// RepairPartitionMembership does.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/charmed-slurm/operators/libs/hostlist"
)

// Partition is one partition record from `scontrol show partition -o`.
type Partition struct {
	Name string
	// NodeSets are the NodeSets named in the partition's Nodes= (Slurm's NodeSets=).
	NodeSets []string
	// Nodes are the partition's nodes as slurmctld holds them now, expanded from the
	// hostlist Slurm prints.
	Nodes []string
	State string
	// Fields holds every key=value as printed, in order.
	Fields []Field
}

// ParseShowPartition parses the output of `scontrol show partition -o` (one partition per
// line). The line "No partitions in the system" gives no partitions.
func ParseShowPartition(data []byte) ([]Partition, error) {
	var parts []Partition
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, " \t\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "No partitions in the system") {
			continue
		}
		p, err := parsePartitionLine(line)
		if err != nil {
			return nil, fmt.Errorf("cannot parse scontrol show partition line %d: %w", i+1, err)
		}
		parts = append(parts, p)
	}
	return parts, nil
}

func parsePartitionLine(line string) (Partition, error) {
	fields, err := splitFields(line)
	if err != nil {
		return Partition{}, err
	}
	if len(fields) == 0 || fields[0].Key != "PartitionName" || fields[0].Value == "" {
		return Partition{}, fmt.Errorf("record does not start with PartitionName=")
	}
	p := Partition{Name: fields[0].Value, Fields: fields}
	for _, f := range fields[1:] {
		switch f.Key {
		case "NodeSets":
			p.NodeSets = list(f.Value)
		case "Nodes":
			if v := nullable(f.Value); v != "" {
				if p.Nodes, err = hostlist.Expand(v); err != nil {
					return Partition{}, fmt.Errorf("partition %s: bad Nodes=%q: %w", p.Name, f.Value, err)
				}
			}
		case "State":
			p.State = f.Value
		}
	}
	return p, nil
}

// ShowPartition runs `scontrol show partition -o NAME`. An unknown partition gives
// ErrUnknownPartition.
func (c *Client) ShowPartition(ctx context.Context, name string) (Partition, error) {
	if err := checkName("partition", name); err != nil {
		return Partition{}, err
	}
	out, err := c.run(ctx, true, "scontrol", "show", "partition", "-o", name)
	if err != nil {
		return Partition{}, err
	}
	parts, err := ParseShowPartition(out)
	if err != nil {
		return Partition{}, err
	}
	for _, p := range parts {
		if p.Name == name {
			return p, nil
		}
	}
	return Partition{}, fmt.Errorf("cannot show partition %q: %w", name, ErrUnknownPartition)
}

// PartitionNodes returns the nodes slurmctld holds in partition now (its Nodes=, expanded).
func (c *Client) PartitionNodes(ctx context.Context, partition string) ([]string, error) {
	p, err := c.ShowPartition(ctx, partition)
	if err != nil {
		return nil, err
	}
	return p.Nodes, nil
}

// NodesWithFeature returns the nodes whose AvailableFeatures include feature, in
// scontrol's order: the nodes a `NodeSet=... Feature=<feature>` stands for.
func (c *Client) NodesWithFeature(ctx context.Context, feature string) ([]string, error) {
	if err := checkName("feature", feature); err != nil {
		return nil, err
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	return withFeature(nodes, feature), nil
}

func withFeature(nodes []Node, feature string) []string {
	var names []string
	for _, n := range nodes {
		if slices.Contains(n.Features, feature) {
			names = append(names, n.Name)
		}
	}
	return names
}

// Membership compares a partition's nodes with the nodes carrying the feature of its
// NodeSet.
type Membership struct {
	Partition Partition
	// Missing are nodes with the feature that the partition lacks.
	Missing []string
	// Extra are partition nodes known to lack the feature (a node of another NodeSet).
	Extra []string
}

// OK reports whether the partition holds exactly the nodes with the feature.
func (m Membership) OK() bool { return len(m.Missing) == 0 && len(m.Extra) == 0 }

// CheckPartitionMembership compares partition's nodes with the nodes carrying feature. It
// reads the nodes before the partition, so a node registering meanwhile (which Slurm adds
// to its partitions as it registers) is never reported missing. It is meant for
// partitions whose Nodes= is their NodeSets, as the operators write them: any node
// without the feature is reported as Extra.
func (c *Client) CheckPartitionMembership(ctx context.Context, partition, feature string) (Membership, error) {
	if err := checkName("partition", partition); err != nil {
		return Membership{}, err
	}
	if err := checkName("feature", feature); err != nil {
		return Membership{}, err
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return Membership{}, err
	}
	p, err := c.ShowPartition(ctx, partition)
	if err != nil {
		return Membership{}, err
	}
	return MembershipOf(p, nodes, feature), nil
}

// MembershipOf compares partition p with the nodes carrying feature among nodes, which must
// have been read before p (see CheckPartitionMembership): one node list serves every
// partition.
func MembershipOf(p Partition, nodes []Node, feature string) Membership {
	m := Membership{Partition: p}
	in := map[string]bool{}
	for _, n := range p.Nodes {
		in[n] = true
	}
	for _, n := range nodes {
		has := slices.Contains(n.Features, feature)
		switch {
		case has && !in[n.Name]:
			m.Missing = append(m.Missing, n.Name)
		case !has && in[n.Name]:
			m.Extra = append(m.Extra, n.Name)
		}
	}
	return m
}

// RepairPartitionMembership makes partition hold exactly the nodes carrying feature when
// it does not: it re-applies the partition's NodeSets with `scontrol update
// partitionname=P nodes=<NodeSets>`, which makes slurmctld rebuild the partition from its
// current node table (no restart, no node deleted, jobs untouched), then checks again.
// It returns the nodes whose membership it corrected (missing ones added, foreign ones
// removed), sorted, or nothing when the partition was right. A partition without
// NodeSets cannot be repaired this way and gives an error when its membership is wrong.
// Call it after every `scontrol reconfigure` on Slurm before 23.02.2.
func (c *Client) RepairPartitionMembership(ctx context.Context, partition, feature string) (repaired []string, err error) {
	m, err := c.CheckPartitionMembership(ctx, partition, feature)
	if err != nil {
		return nil, err
	}
	if m.OK() {
		return nil, nil
	}
	if len(m.Partition.NodeSets) == 0 {
		return nil, fmt.Errorf("cannot repair partition %q (missing %v, extra %v): it has no NodeSets", partition, m.Missing, m.Extra)
	}
	spec := strings.Join(m.Partition.NodeSets, ",")
	if err := checkName("nodeset", spec); err != nil {
		return nil, err
	}
	if _, err := c.run(ctx, true, "scontrol", "update", "partitionname="+partition, "nodes="+spec); err != nil {
		return nil, fmt.Errorf("cannot repair partition %q: %w", partition, err)
	}
	after, err := c.CheckPartitionMembership(ctx, partition, feature)
	if err != nil {
		return nil, fmt.Errorf("cannot check repaired partition %q: %w", partition, err)
	}
	if !after.OK() {
		return nil, fmt.Errorf("cannot repair partition %q: still missing %v, extra %v after nodes=%s", partition, after.Missing, after.Extra, spec)
	}
	repaired = append(append(repaired, m.Missing...), m.Extra...)
	slices.Sort(repaired)
	return slices.Compact(repaired), nil
}
