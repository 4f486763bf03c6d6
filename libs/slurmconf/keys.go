package slurmconf

import (
	"maps"
	"slices"
)

// Keys is the key set of one Slurm release: the keys its parser accepts on each kind of
// line, and the type of each partition key's value. [KeysOf] picks the set of a running
// Slurm version; the package-level functions ([ValidatePartitionParams], [GlobalKey], ...)
// use Slurm 22.05's, as [KeysOf] does for any release before 23.02.
type Keys struct {
	release                 string
	partition, node, global *keySpec
	nodeSet, downNodes      *keySpec
	values                  map[string]valueKind
}

// keys2205 is the key set of Slurm 22.05 (Debian 12's 22.05.8), proven against its parser by
// the oracle tests.
var keys2205 = &Keys{
	release: "22.05", partition: partitionSpec, node: nodeSpec, global: globalSpec,
	nodeSet: nodeSetSpec, downNodes: downNodesSpec, values: partitionValues,
}

// keys2411 is the key set of Slurm 24.11 (Debian 13's 24.11.5), proven against its parser by
// the oracle tests run inside a Debian 13 machine (tests/machines). Against 22.05: partitions
// gain ExclusiveTopo, MaxCPUsPerSocket and PowerDownOnIdle, nodes RestrictedCoresPerGPU; the
// global SlurmctldPlugstack is gone, and DataParserParameters, HashPlugin, MaxBatchRequeue,
// PreemptParameters and SuspendExcStates are new. Every key of 24.11's slurm.conf(5) that its
// parser accepts is in the set (swept once by hand against the manual).
var keys2411 = &Keys{
	release: "24.11",
	partition: newSpec("partition", "PartitionName",
		append(slices.Clone(partitionKeys2205), "ExclusiveTopo", "MaxCPUsPerSocket", "PowerDownOnIdle"),
		map[string]string{"Shared": "OverSubscribe"}),
	node: newSpec("node", "NodeName", append(slices.Clone(nodeKeys2205), "RestrictedCoresPerGPU"),
		map[string]string{"Feature": "Features", "Procs": "CPUs"}),
	global: newSpec("global", "", append(slices.DeleteFunc(slices.Clone(globalKeys2205),
		func(k string) bool { return k == "SlurmctldPlugstack" }),
		"DataParserParameters", "HashPlugin", "MaxBatchRequeue", "PreemptParameters", "SuspendExcStates"), nil),
	nodeSet:   nodeSetSpec,
	downNodes: downNodesSpec,
	values: func() map[string]valueKind {
		v := maps.Clone(partitionValues)
		v["maxcpuspersocket"] = kindUint32
		v["powerdownonidle"] = kindBool
		v["exclusivetopo"] = kindBool
		return v
	}(),
}

// KeysOf returns the key set for Slurm major.minor: 24.11's from 23.02 on (the release that
// brought the first of its changes), 22.05's before. Only 22.05 and 24.11 are proven against
// a real parser; other releases get the nearest set by that rule.
func KeysOf(major, minor int) *Keys {
	if major > 23 || major == 23 && minor >= 2 {
		return keys2411
	}
	return keys2205
}

// Release is the Slurm release whose parser the set was proven against, e.g. "24.11".
func (k *Keys) Release() string { return k.release }

// PartitionKeys returns the partition keys of the release besides PartitionName, sorted.
func (k *Keys) PartitionKeys() []string { return k.partition.list() }

// NodeKeys returns the node keys of the release besides NodeName, sorted.
func (k *Keys) NodeKeys() []string { return k.node.list() }

// GlobalKeys returns the global slurm.conf keys of the release (entry keys and Include
// excluded), sorted.
func (k *Keys) GlobalKeys() []string { return k.global.list() }

// GlobalKey looks key up among the release's global keys, ignoring case, as the package's
// [GlobalKey] does for 22.05.
func (k *Keys) GlobalKey(key string) (string, bool) { return k.global.lookup(key) }

// ValidatePartitionParams checks p as the package's [ValidatePartitionParams] does, against
// the release's partition keys.
func (k *Keys) ValidatePartitionParams(p Params) error {
	return k.partition.validate(paramsToTokens(p))
}

// ValidateNodeParams checks p as the package's [ValidateNodeParams] does, against the
// release's node keys.
func (k *Keys) ValidateNodeParams(p Params) error { return k.node.validate(paramsToTokens(p)) }

// ValidatePartitionValues checks p as the package's [ValidatePartitionValues] does, with the
// release's partition keys and value types.
func (k *Keys) ValidatePartitionValues(p Params) error { return validateValues(k.values, p) }

// ParsePartition parses and validates one full partition line as the package's
// [ParsePartition] does, against the release's partition keys.
func (k *Keys) ParsePartition(line string) (Partition, error) {
	return parseAs(line, k.partition, func(name string, p Params) Partition { return Partition{name, p} })
}

// ParseNode parses and validates one full node line as the package's [ParseNode] does,
// against the release's node keys.
func (k *Keys) ParseNode(line string) (Node, error) {
	return parseAs(line, k.node, func(name string, p Params) Node { return Node{name, p} })
}

// ParseNodeSet parses and validates one full nodeset line as the package's [ParseNodeSet]
// does (the nodeset keys are the same in every release).
func (k *Keys) ParseNodeSet(line string) (NodeSet, error) {
	return parseAs(line, k.nodeSet, func(name string, p Params) NodeSet { return NodeSet{name, p} })
}

// ParseDownNodes parses and validates one full DownNodes line as the package's
// [ParseDownNodes] does (the DownNodes keys are the same in every release).
func (k *Keys) ParseDownNodes(line string) (DownNodes, error) {
	return parseAs(line, k.downNodes, func(name string, p Params) DownNodes { return DownNodes{name, p} })
}

// parseAs parses one full entry line with spec and makes the entry of its name and params.
func parseAs[E any](line string, spec *keySpec, entry func(name string, p Params) E) (E, error) {
	name, p, err := parseEntry(line, spec)
	if err != nil {
		var zero E
		return zero, err
	}
	return entry(name, p), nil
}

func (k *Keys) specFor(kd kind) *keySpec {
	switch kd {
	case kindPartition:
		return k.partition
	case kindNode:
		return k.node
	case kindNodeSet:
		return k.nodeSet
	case kindDownNodes:
		return k.downNodes
	}
	return nil
}
