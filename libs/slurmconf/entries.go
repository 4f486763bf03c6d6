package slurmconf

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Partition is one PartitionName line. The PartitionName key itself is not in
// Params.
type Partition struct {
	Name   string
	Params Params
}

// String renders the full slurm.conf line, e.g. "PartitionName=batch Nodes=batch MaxTime=1:00:00".
func (p Partition) String() string { return entryString("PartitionName", p.Name, p.Params) }

// Node is one NodeName line. The NodeName key itself is not in Params; Name
// may be a hostlist expression such as "node[01-10]" or "DEFAULT".
type Node struct {
	Name   string
	Params Params
}

// String renders the full slurm.conf line, e.g. "NodeName=n1 CPUs=4".
func (n Node) String() string { return entryString("NodeName", n.Name, n.Params) }

// NodeSet is one NodeSet line. The NodeSet key itself is not in Params.
type NodeSet struct {
	Name   string
	Params Params
}

// String renders the full slurm.conf line, e.g. "NodeSet=gpu Feature=gpu".
func (s NodeSet) String() string { return entryString("NodeSet", s.Name, s.Params) }

// DownNodes is one DownNodes line. Name is the node list (a hostlist
// expression); the DownNodes key itself is not in Params.
type DownNodes struct {
	Name   string
	Params Params
}

// String renders the full slurm.conf line, e.g. `DownNodes=n[1-2] State=DOWN Reason="bad fan"`.
func (d DownNodes) String() string { return entryString("DownNodes", d.Name, d.Params) }

func entryString(nameKey, name string, params Params) string {
	all := append(Params{{Key: nameKey, Value: name}}, params...)
	return all.String()
}

// kind is the type of a logical line.
type kind int

const (
	kindTrivia    kind = iota // blank or comment-only
	kindGlobal                // global parameters
	kindInclude               // Include directive
	kindNode                  // NodeName=
	kindNodeSet               // NodeSet=
	kindPartition             // PartitionName=
	kindDownNodes             // DownNodes=
	kindFrontend              // FrontendName= (kept opaque)
)

// entryKinds maps the lower-case first key of a line to its kind.
var entryKinds = map[string]kind{
	"nodename":      kindNode,
	"nodeset":       kindNodeSet,
	"partitionname": kindPartition,
	"downnodes":     kindDownNodes,
	"frontendname":  kindFrontend,
}

// keySpec lists the keys Slurm 22.05 accepts on one kind of line (from the
// slurm.conf(5) manual of 22.05.8 and the parser tables of libslurm).
type keySpec struct {
	what    string // "partition", "node", ...
	nameKey string // the key that names the entry
	// names and aliasNames are the spec as written; the lower-case tables are built from
	// them on first use (tables), not at every hook's start for each release's key set.
	names      []string
	aliasNames map[string]string
	once       sync.Once
	keys       map[string]string // lower case → canonical spelling
	aliases    map[string]string // lower case alias → lower case key it duplicates
}

func newSpec(what, nameKey string, keys []string, aliases map[string]string) *keySpec {
	return &keySpec{what: what, nameKey: nameKey, names: keys, aliasNames: aliases}
}

// tables returns the spec's lower-case key and alias tables, building them once.
func (s *keySpec) tables() (keys, aliases map[string]string) {
	s.once.Do(func() {
		s.keys = make(map[string]string, len(s.names))
		for _, k := range s.names {
			s.keys[strings.ToLower(k)] = k
		}
		s.aliases = make(map[string]string, len(s.aliasNames))
		for a, k := range s.aliasNames {
			s.aliases[strings.ToLower(a)] = strings.ToLower(k)
		}
	})
	return s.keys, s.aliases
}

// Slurm 22.05 keys. PowerDownOnIdle and MaxCPUsPerSocket only exist from
// 23.02 and are refused. Shared (for OverSubscribe), Procs (for CPUs) and
// Feature (for Features) are the aliases 22.05 still reads.
var (
	partitionSpec = newSpec("partition", "PartitionName", partitionKeys2205, map[string]string{"Shared": "OverSubscribe"})

	nodeSpec = newSpec("node", "NodeName", nodeKeys2205, map[string]string{"Feature": "Features", "Procs": "CPUs"})

	nodeSetSpec = newSpec("nodeset", "NodeSet", []string{"Feature", "Nodes"}, nil)

	downNodesSpec = newSpec("downnodes", "DownNodes", []string{"Reason", "State"}, nil)
)

var (
	partitionKeys2205 = []string{
		"AllocNodes", "AllowAccounts", "AllowGroups", "AllowQos", "Alternate", "CpuBind",
		"Default", "DefaultTime", "DefCpuPerGPU", "DefMemPerCPU", "DefMemPerGPU", "DefMemPerNode",
		"DenyAccounts", "DenyQos", "DisableRootJobs", "ExclusiveUser", "GraceTime", "Hidden", "LLN",
		"MaxCPUsPerNode", "MaxMemPerCPU", "MaxMemPerNode", "MaxNodes", "MaxTime", "MinNodes", "Nodes",
		"OverSubscribe", "OverTimeLimit", "PreemptMode", "Priority", "PriorityJobFactor", "PriorityTier",
		"QOS", "ReqResv", "ResumeTimeout", "RootOnly", "SelectTypeParameters", "Shared", "State",
		"SuspendTime", "SuspendTimeout", "TRESBillingWeights",
	}

	nodeKeys2205 = []string{
		"NodeHostname", "NodeAddr", "BcastAddr", "Boards", "CoreSpecCount", "CoresPerSocket",
		"CpuBind", "CPUs", "CPUSpecList", "Features", "Feature", "Gres", "MemSpecLimit", "Port",
		"Procs", "RealMemory", "Reason", "Sockets", "SocketsPerBoard", "State", "ThreadsPerCore",
		"TmpDisk", "TRESWeights", "Weight",
	}
)

// PartitionKeys returns the partition keys Slurm 22.05 accepts besides
// PartitionName, sorted.
func PartitionKeys() []string { return partitionSpec.list() }

// NodeKeys returns the node keys Slurm 22.05 accepts besides NodeName, sorted.
func NodeKeys() []string { return nodeSpec.list() }

func (s *keySpec) list() []string {
	keys, _ := s.tables()
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// validate checks tokens (the name key excluded) against the spec.
func (s *keySpec) validate(toks []token) error {
	keys, aliases := s.tables()
	for _, t := range toks {
		lk := strings.ToLower(t.key)
		if strings.EqualFold(t.key, s.nameKey) {
			return errorf(t.line, t.col, t.key, "key %q is not allowed here: it names the %s", t.key, s.what)
		}
		if _, ok := keys[lk]; !ok {
			msg := fmt.Sprintf("unknown %s key %q", s.what, t.key)
			if sug := s.suggest(lk); sug != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", sug)
			}
			return &ParseError{Line: t.line, Col: t.col, Key: t.key, Msg: msg}
		}
	}
	return checkDuplicates(toks, aliases)
}

// suggest returns the known key closest to k, if it is close.
func (s *keySpec) suggest(k string) string {
	best, bestD := "", 3
	keys, _ := s.tables()
	for lk, canon := range keys {
		if d := distance(k, lk); d < bestD || (d == bestD && best != "" && canon < best) {
			best, bestD = canon, d
		}
	}
	if bestD > 2 {
		return ""
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func paramsToTokens(p Params) []token {
	toks := make([]token, len(p))
	for i, kv := range p {
		toks[i] = token{key: kv.Key, value: kv.Value}
	}
	return toks
}

// ValidatePartitionParams checks that every key is a Slurm 22.05 partition
// key (PartitionName excluded: it is the entry's name) and that none is
// given twice. Errors are *[ParseError] without a position.
func ValidatePartitionParams(p Params) error { return partitionSpec.validate(paramsToTokens(p)) }

// ValidateNodeParams checks that every key is a Slurm 22.05 node key
// (NodeName excluded: it is the entry's name) and that none is given twice,
// counting Feature/Features and Procs/CPUs as the same key.
func ValidateNodeParams(p Params) error { return nodeSpec.validate(paramsToTokens(p)) }

// ValidateNodeSetParams checks that only Feature and Nodes are used, once each.
func ValidateNodeSetParams(p Params) error { return nodeSetSpec.validate(paramsToTokens(p)) }

// ValidateDownNodesParams checks that only Reason and State are used, once each.
func ValidateDownNodesParams(p Params) error { return downNodesSpec.validate(paramsToTokens(p)) }

// parseEntry parses a single full line whose first key must be spec.nameKey.
func parseEntry(line string, spec *keySpec) (string, Params, error) {
	toks, err := scanSingle(line)
	if err != nil {
		return "", nil, err
	}
	if len(toks) == 0 {
		return "", nil, errorf(1, 0, spec.nameKey, "empty %s line: it must start with %s=", spec.what, spec.nameKey)
	}
	first := toks[0]
	if !strings.EqualFold(first.key, spec.nameKey) {
		return "", nil, errorf(first.line, first.col, first.key, "a %s line must start with %s=, not %q", spec.what, spec.nameKey, first.key)
	}
	if err := checkName(first); err != nil {
		return "", nil, err
	}
	if err := spec.validate(toks[1:]); err != nil {
		return "", nil, err
	}
	return first.value, tokensToParams(toks[1:]), nil
}

// checkName refuses entry names that are empty or cannot be written bare.
func checkName(t token) error {
	if t.value == "" {
		return errorf(t.vline, t.vcol, t.key, "empty value for %q: it needs a name", t.key)
	}
	if i := strings.IndexFunc(t.value, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '"' || r == '#' || r == '\\' || r < 0x20
	}); i >= 0 {
		return errorf(t.vline, t.vcol+i, t.key, "invalid name %q for %q: names cannot contain white space, quotes, '#' or '\\'", t.value, t.key)
	}
	return nil
}

// ParsePartition parses and validates one full partition line, such as
// "PartitionName=batch Nodes=batch MaxTime=1:00:00".
func ParsePartition(line string) (Partition, error) { return keys2205.ParsePartition(line) }

// ParseNode parses and validates one full node line, such as
// "NodeName=n[1-4] CPUs=4 RealMemory=1000".
func ParseNode(line string) (Node, error) { return keys2205.ParseNode(line) }

// ParseNodeSet parses and validates one full nodeset line, such as
// "NodeSet=gpu Feature=gpu".
func ParseNodeSet(line string) (NodeSet, error) { return keys2205.ParseNodeSet(line) }

// ParseDownNodes parses and validates one full DownNodes line, such as
// `DownNodes=n[1-2] State=DOWN Reason="bad fan"`.
func ParseDownNodes(line string) (DownNodes, error) { return keys2205.ParseDownNodes(line) }
