package slurmconf

import (
	"errors"
	"fmt"
	"strings"
)

// nodeValueKind is the type of a node key's value, as Slurm's _parse_nodename
// (src/common/read_config.c) reads it, made stricter where Slurm reads garbage or
// where a value would make the node unusable.
type nodeValueKind int

const (
	nodeCount16     nodeValueKind = iota // S_P_UINT16 read as a count: decimal digits only
	nodeCount32                          // S_P_UINT32 count
	nodeCount64                          // S_P_UINT64 count (megabytes)
	nodeFeatures                         // comma-separated feature names a job can ask for
	nodeCPUList                          // CPUSpecList: CPU ids and ranges, "0,2-3"
	nodeCPUBind                          // CpuBind: one binding type
	nodeGres                             // Gres: checked in full by the caller (libs/gres); one word here
	nodeTRESWeights                      // TRESWeights: TRES=weight[,...]
	nodeAddress                          // BcastAddr: a host name or address
	nodeSuspendTime                      // SuspendTime (26.05): seconds, INFINITE or -1
	nodeOptions                          // Parameters (25.11): comma-separated SlurmdParameters options
	nodeTopology                         // Topology (25.11): topology:switch, comma-separated
	nodeManaged                          // set by the charm: NodeName, NodeAddr, NodeHostname, Port, State, Reason, GresConf
)

// nodeValues maps every lower-case node key of every supported release to the kind of its
// value ([ValidateNodeValues]; which keys a release accepts is [Keys.ValidateNodeParams]).
var nodeValues = map[string]nodeValueKind{
	"nodename":     nodeManaged,
	"nodeaddr":     nodeManaged,
	"nodehostname": nodeManaged,
	"port":         nodeManaged,
	"state":        nodeManaged,
	"reason":       nodeManaged,
	// gres.conf lines of a dynamic node (26.05): the slurmd charm owns the node's gres.conf
	// (its detection, generic-resources, node-config's Gres=).
	"gresconf":              nodeManaged,
	"bcastaddr":             nodeAddress,
	"boards":                nodeCount16,
	"corespeccount":         nodeCount16,
	"corespersocket":        nodeCount16,
	"cpubind":               nodeCPUBind,
	"cpus":                  nodeCount16,
	"procs":                 nodeCount16,
	"cpuspeclist":           nodeCPUList,
	"features":              nodeFeatures,
	"feature":               nodeFeatures,
	"gres":                  nodeGres,
	"memspeclimit":          nodeCount64,
	"realmemory":            nodeCount64,
	"restrictedcorespergpu": nodeCount16,
	"sockets":               nodeCount16,
	"socketsperboard":       nodeCount16,
	"threadspercore":        nodeCount16,
	"tmpdisk":               nodeCount32,
	"tresweights":           nodeTRESWeights,
	"weight":                nodeCount32,
	"suspendtime":           nodeSuspendTime,
	"parameters":            nodeOptions,
	"topology":              nodeTopology,
}

// FeatureRule says which feature names a node may carry: the names a job can select with
// --constraint, whose operators and separators (& | , * ( ) [ ] ! and spaces) cannot be part
// of a name.
const FeatureRule = "feature names are letters, digits, '_', '-' and '.', separated by commas"

// ValidateNodeValues checks the value of every pair of a node line given by an operator
// (the slurmd charm's node-config): the keys the charm manages are refused, every value is
// at most [MaxValueLen] characters, counts are plain decimal numbers that fit the field
// Slurm reads them into (slurmd exits on a value that does not), and feature names are ones
// a job can select ([FeatureRule]). Whether a release knows the key is
// [Keys.ValidateNodeParams]'s to say: a key of no release is only bounded in size here.
// Errors are *[ParseError] naming the key and the rule.
func ValidateNodeValues(p Params) error {
	for _, kv := range p {
		kind, known := nodeValues[strings.ToLower(kv.Key)]
		if known && kind == nodeManaged {
			return &ParseError{Key: kv.Key, Msg: fmt.Sprintf("key %q is managed by the charm and cannot be set", kv.Key)}
		}
		if len(kv.Value) > MaxValueLen {
			return &ParseError{Key: kv.Key, Msg: fmt.Sprintf("key %q: value is %d characters long (at most %d)", kv.Key, len(kv.Value), MaxValueLen)}
		}
		if !known {
			continue // no node key of any release: Keys.ValidateNodeParams names it
		}
		if err := checkNodeValue(kind, kv.Value); err != nil {
			return &ParseError{Key: kv.Key, Msg: fmt.Sprintf("key %q: %v", kv.Key, err)}
		}
	}
	return nil
}

func checkNodeValue(kind nodeValueKind, v string) error {
	switch kind {
	case nodeCount16:
		return checkCount(v, 16)
	case nodeCount32:
		return checkCount(v, 32)
	case nodeCount64:
		return checkCount(v, 64)
	case nodeFeatures:
		return checkFeatures(v)
	case nodeCPUList:
		return checkCPUList(v)
	case nodeCPUBind:
		return checkCPUBind(v)
	case nodeGres:
		if v != "" && strings.ContainsFunc(v, isSpaceOrControl) {
			return fmt.Errorf("value %q: want a generic resource list such as gpu:tesla_t4:2", short(v))
		}
		return nil
	case nodeTRESWeights:
		return checkTRESWeights(v)
	case nodeAddress:
		if v == "" || strings.ContainsFunc(v, func(r rune) bool { return !isHostRune(r) && r != ':' }) {
			return fmt.Errorf("value %q: want a host name or address", short(v))
		}
		return nil
	case nodeSuspendTime:
		if err := checkValue(kindSuspendTime, v); err != nil {
			return fmt.Errorf("value %q: want seconds, INFINITE or -1", short(v))
		}
		return nil
	case nodeOptions:
		return checkWords(v, "=", "want options such as l3cache_as_socket, separated by commas")
	case nodeTopology:
		return checkWords(v, ":", "want topology:switch names such as default:s1, separated by commas")
	}
	return errors.New("no rule for this key")
}

// checkCount accepts decimal digits whose number fits in bits bits.
func checkCount(v string, bits int) error {
	if v == "" || strings.ContainsFunc(v, func(r rune) bool { return r < '0' || r > '9' }) {
		return fmt.Errorf("value %q is not a whole number", short(v))
	}
	max := uint64(1)<<bits - 1
	if bits == 64 {
		max = 1<<63 - 1 // Slurm's S_P_UINT64 goes through strtoull, but counts above this are no machine's
	}
	if checkDigits(v, max) != nil {
		return fmt.Errorf("value %s is out of range (at most %d)", short(v), max)
	}
	return nil
}

// checkFeatures accepts a comma-separated list of feature names ([FeatureRule]).
func checkFeatures(v string) error {
	for _, f := range strings.Split(v, ",") {
		if f == "" {
			return fmt.Errorf("value %q has an empty feature name (%s)", short(v), FeatureRule)
		}
		if strings.ContainsFunc(f, func(r rune) bool { return !isNameRune(r) }) {
			return fmt.Errorf("%q is not a feature name a job can select with --constraint (%s)", short(f), FeatureRule)
		}
	}
	return nil
}

// checkWords accepts a comma-separated list of non-empty words of name runes and the runes
// of extra.
func checkWords(v, extra, want string) error {
	for _, w := range strings.Split(v, ",") {
		if w == "" || strings.ContainsFunc(w, func(r rune) bool { return !isNameRune(r) && !strings.ContainsRune(extra, r) }) {
			return fmt.Errorf("value %q: %s", short(v), want)
		}
	}
	return nil
}

// checkCPUList accepts CPU ids and ranges separated by commas ("0,2-3").
func checkCPUList(v string) error {
	const want = "want CPU ids and ranges such as 0,2-3"
	for _, part := range strings.Split(v, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if checkDigits(lo, 0xffff) != nil || isRange && checkDigits(hi, 0xffff) != nil {
			return fmt.Errorf("value %q: %s", short(v), want)
		}
	}
	return nil
}

// isNameRune reports whether r may be part of an account, group, QOS, partition or
// feature name.
func isNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }
