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
	release:   "24.11",
	partition: newSpec("partition", "PartitionName", partitionKeys2411, map[string]string{"Shared": "OverSubscribe"}),
	node:      newSpec("node", "NodeName", nodeKeys2411, map[string]string{"Feature": "Features", "Procs": "CPUs"}),
	global:    newSpec("global", "", globalKeys2411, nil),
	nodeSet:   nodeSetSpec,
	downNodes: downNodesSpec,
	values:    partitionValues2411,
}

var (
	partitionKeys2411 = append(slices.Clone(partitionKeys2205), "ExclusiveTopo", "MaxCPUsPerSocket", "PowerDownOnIdle")
	nodeKeys2411      = append(slices.Clone(nodeKeys2205), "RestrictedCoresPerGPU")
	globalKeys2411    = append(slices.DeleteFunc(slices.Clone(globalKeys2205),
		func(k string) bool { return k == "SlurmctldPlugstack" }),
		"DataParserParameters", "HashPlugin", "MaxBatchRequeue", "PreemptParameters", "SuspendExcStates")
	partitionValues2411 = func() map[string]valueKind {
		v := maps.Clone(partitionValues)
		v["maxcpuspersocket"] = kindUint32
		v["powerdownonidle"] = kindBool
		v["exclusivetopo"] = kindBool
		return v
	}()
)

// keys2605 is the key set of Slurm 26.05 (Debian 14's 26.05.5), proven against its parser by
// the oracle tests run inside a Debian 14 machine (tests/machines). Against 24.11, read from
// the parser's own tables (src/common/read_config.c, 24.11.5 against 26.05) and the release
// notes of 25.05, 25.11 and 26.05: partitions gain Exclusive (NO, NODE, USER or TOPO, which
// replaces ExclusiveUser and ExclusiveTopo; both are still read) and Topology (25.05's
// multiple topologies); nodes gain Parameters (25.11), Topology (25.11), SuspendTime (26.05)
// and GresConf (26.05: gres.conf lines of a dynamic node); 25.05 to 26.05 bring the global
// keys below (OpenMetrics: MetricsType, MetricsParameters, MetricsAuthUsers; NamespaceType,
// which replaces JobContainerType, still read; TLS certificates: CertgenType,
// CertgenParameters; HTTP on the daemons' ports; script timeouts). 26.05's parser no longer
// reads AccountingStorageLoc and FrontendName (neither is in any set here: FrontendName lines
// are kept opaque by [Doc]); 26.05's new PowerAction lines are not supported.
var keys2605 = &Keys{
	release: "26.05",
	partition: newSpec("partition", "PartitionName", append(slices.Clone(partitionKeys2411), "Exclusive", "Topology"),
		map[string]string{"Shared": "OverSubscribe"}),
	node: newSpec("node", "NodeName", append(slices.Clone(nodeKeys2411), "GresConf", "Parameters", "SuspendTime", "Topology"),
		map[string]string{"Feature": "Features", "Procs": "CPUs"}),
	global: newSpec("global", "", append(slices.Clone(globalKeys2411),
		"CertgenParameters", "CertgenType", "CliFilterParameters", "EpilogTimeout", "HealthCheckTimeout",
		"HttpParserType", "JobCompPassScript", "LicenseParameters", "MetricsAuthUsers",
		"MetricsParameters", "MetricsType", "NamespaceType", "PrologTimeout",
		"SlurmctldHttpAuthParameters", "SlurmdHttpAuthParameters", "UrlParserType"), nil),
	nodeSet:   nodeSetSpec,
	downNodes: downNodesSpec,
	values: func() map[string]valueKind {
		v := maps.Clone(partitionValues2411)
		v["exclusive"] = kindExclusive
		v["topology"] = kindName
		return v
	}(),
}

// KeysOf returns the key set for Slurm major.minor: 26.05's from 26.05 on, 24.11's from 23.02
// (the release that brought the first of its changes), 22.05's before. Only 22.05, 24.11 and
// 26.05 are proven against a real parser; a release between two proven ones gets the older
// set, which its parser also reads (no key of it was removed up to 26.05): the keys it added
// since are refused by name, never accepted for Slurm to refuse.
func KeysOf(major, minor int) *Keys {
	switch {
	case major > 26 || major == 26 && minor >= 5:
		return keys2605
	case major > 23 || major == 23 && minor >= 2:
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
