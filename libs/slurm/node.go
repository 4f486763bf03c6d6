package slurm

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Base node states as scontrol prints them (the part before the first '+').
const (
	StateIdle      = "IDLE"
	StateAllocated = "ALLOCATED"
	StateMixed     = "MIXED"
	StateDown      = "DOWN"
	StateFuture    = "FUTURE"
	StateError     = "ERROR"
	StateUnknown   = "UNKNOWN"
)

// Node state flags as scontrol prints them (after the base state, joined by '+').
const (
	FlagDrain           = "DRAIN"
	FlagCompleting      = "COMPLETING"
	FlagDynamicNorm     = "DYNAMIC_NORM"
	FlagDynamicFuture   = "DYNAMIC_FUTURE"
	FlagNotResponding   = "NOT_RESPONDING"
	FlagRebootRequested = "REBOOT_REQUESTED"
	FlagRebootIssued    = "REBOOT_ISSUED"
	FlagFail            = "FAIL"
	FlagMaintenance     = "MAINTENANCE"
	FlagPlanned         = "PLANNED"
	FlagReserved        = "RESERVED"
	FlagPoweredDown     = "POWERED_DOWN"
	FlagPoweringUp      = "POWERING_UP"
	FlagPoweringDown    = "POWERING_DOWN"
	FlagInvalidReg      = "INVALID_REG"
)

// NodeState is a node's state as `scontrol show node` reports it, e.g.
// "IDLE+DRAIN+DYNAMIC_NORM": a base state and flags in Slurm's order.
type NodeState struct {
	Base  string
	Flags []string
}

// ParseNodeState parses scontrol's State= value ("ALLOCATED+DRAIN+DYNAMIC_NORM").
func ParseNodeState(s string) (NodeState, error) {
	if s == "" {
		return NodeState{}, fmt.Errorf("cannot parse node state %q: empty", s)
	}
	parts := strings.Split(s, "+")
	for _, p := range parts {
		if p == "" || strings.IndexFunc(p, func(r rune) bool {
			return (r < 'A' || r > 'Z') && r != '_' && (r < '0' || r > '9')
		}) >= 0 {
			return NodeState{}, fmt.Errorf("cannot parse node state %q: bad part %q", s, p)
		}
	}
	st := NodeState{Base: parts[0]}
	if len(parts) > 1 {
		st.Flags = parts[1:]
	}
	return st, nil
}

// String renders the state as scontrol does.
func (s NodeState) String() string {
	return strings.Join(append([]string{s.Base}, s.Flags...), "+")
}

// Has reports whether the state has flag (or base state) name, e.g. Has(FlagDrain).
func (s NodeState) Has(name string) bool {
	if s.Base == name {
		return true
	}
	for _, f := range s.Flags {
		if f == name {
			return true
		}
	}
	return false
}

// Busy reports whether jobs run or are completing on the node: base ALLOCATED or MIXED,
// or the COMPLETING flag.
func (s NodeState) Busy() bool {
	return s.Base == StateAllocated || s.Base == StateMixed || s.Has(FlagCompleting)
}

// Drain reports whether the node is marked for draining (DRAIN flag), busy or not.
func (s NodeState) Drain() bool { return s.Has(FlagDrain) }

// Draining is Slurm's DRAINING: drain requested while jobs still run or complete.
func (s NodeState) Draining() bool { return s.Drain() && s.Busy() }

// Drained is Slurm's DRAINED: drain requested and no job runs or completes.
func (s NodeState) Drained() bool { return s.Drain() && !s.Busy() }

// Down reports whether the base state is DOWN.
func (s NodeState) Down() bool { return s.Base == StateDown }

// NotResponding reports the NOT_RESPONDING flag (the '*' suffix in sinfo).
func (s NodeState) NotResponding() bool { return s.Has(FlagNotResponding) }

// Dynamic reports whether the node is a dynamic node (DYNAMIC_NORM or DYNAMIC_FUTURE).
func (s NodeState) Dynamic() bool { return s.Has(FlagDynamicNorm) || s.Has(FlagDynamicFuture) }

// Rebooting reports a requested or issued reboot.
func (s NodeState) Rebooting() bool { return s.Has(FlagRebootRequested) || s.Has(FlagRebootIssued) }

// Field is one key=value of a node record, in scontrol's order.
type Field struct {
	Key, Value string
}

// Node is one node record from `scontrol show node -o`.
type Node struct {
	Name     string
	State    NodeState
	Addr     string // NodeAddr
	Hostname string // NodeHostName
	Version  string // slurmd version; empty until the node registered
	// CPUs is CPUTot; CPUAlloc the CPUs allocated to jobs.
	CPUs, CPUAlloc int
	// RealMemory and AllocMem are in MiB.
	RealMemory, AllocMem int64
	// Features are AvailableFeatures; ActiveFeatures those currently active.
	Features, ActiveFeatures []string
	Partitions               []string
	// Reason is the reason text without scontrol's " [user@time]" suffix; ReasonBy and
	// ReasonTime hold that suffix's parts.
	Reason, ReasonBy, ReasonTime string
	Comment, Extra               string
	// Fields holds every key=value as printed, in order (values with "(null)" kept).
	Fields []Field
}

// Get returns the raw value of key (case-insensitive) from Fields.
func (n Node) Get(key string) (string, bool) {
	for _, f := range n.Fields {
		if strings.EqualFold(f.Key, key) {
			return f.Value, true
		}
	}
	return "", false
}

// freeText are fields whose values may contain spaces and '=': only a known key ends them.
var freeText = map[string]bool{"OS": true, "Reason": true, "Comment": true, "Extra": true}

// knownNodeKeys are the keys `scontrol show node -o` prints (22.05 to 24.11).
var knownNodeKeys = setOf(`NodeName Arch CoresPerSocket CPUAlloc CPUEfctv CPUTot
		CPULoad AvailableFeatures ActiveFeatures Gres GresDrain GresUsed NodeAddr NodeHostName
		Port Version OS RealMemory AllocMem FreeMem Sockets Boards State ThreadsPerCore TmpDisk
		Weight Owner MCS_label NextState Partitions BootTime SlurmdStartTime LastBusyTime
		ResumeAfterTime CfgTRES AllocTRES CapWatts CurrentWatts AveWatts ExtSensorsJoules
		ExtSensorsWatts ExtSensorsTemp Reason Comment Extra CoreSpecCount CPUSpecList
		MemSpecLimit Power ReservationName InstanceId InstanceType Topology TLSCertLastRenewal
		MaxNodes`)

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// ParseShowNode parses the output of `scontrol show node -o` (one node per line). The
// line "No nodes in the system" gives no nodes.
func ParseShowNode(data []byte) ([]Node, error) {
	var nodes []Node
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), " \t\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "No nodes in the system") {
			continue
		}
		n, err := parseNodeLine(line)
		if err != nil {
			return nil, fmt.Errorf("cannot parse scontrol show node line %d: %w", lineNo, err)
		}
		nodes = append(nodes, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot parse scontrol show node output: %w", err)
	}
	return nodes, nil
}

// splitFields splits one `-o` record into key=value fields.
func splitFields(line string) ([]Field, error) {
	var fields []Field
	cur := -1 // index into fields of the open field
	start := 0
	i := 0
	for i <= len(line) {
		// A key can start at the line start or after a space.
		if i < len(line) && (i == 0 || line[i-1] == ' ') {
			if key, ok := keyAt(line, i); ok && (cur < 0 || endsField(fields[cur].Key, line[start:i], key, line[i:])) {
				if cur >= 0 {
					fields[cur].Value = strings.TrimRight(line[start:i], " ")
				}
				fields = append(fields, Field{Key: key})
				cur = len(fields) - 1
				i += len(key) + 1
				start = i
				continue
			}
		}
		if cur < 0 && i < len(line) && line[i] != ' ' {
			return nil, fmt.Errorf("text %q is not key=value", firstWord(line[i:]))
		}
		i++
	}
	if cur >= 0 {
		fields[cur].Value = strings.TrimRight(line[start:], " ")
	}
	return fields, nil
}

func firstWord(s string) string {
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i]
	}
	return s
}

// keyAt reports a key "Name=" starting at line[i].
func keyAt(line string, i int) (string, bool) {
	j := i
	for j < len(line) {
		c := line[j]
		if c == '=' {
			break
		}
		isLetter := (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
		if !(isLetter || c == '_' || (j > i && c >= '0' && c <= '9')) {
			return "", false
		}
		j++
	}
	if j == i || j >= len(line) {
		return "", false
	}
	if c := line[i]; c < 'A' || c > 'Z' {
		return "", false // scontrol keys start with an upper-case letter
	}
	return line[i:j], true
}

// reasonSuffix is the " [user@time]" scontrol appends to a reason, compiled when a node
// list has a reason with a known key in it (not at every hook's start).
var reasonSuffix = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\[[^\[\]\s]*@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\]`)
})

// endsField decides whether key (found after valueSoFar, followed by rest) starts a new
// field.
func endsField(openKey, valueSoFar, key, rest string) bool {
	if !freeText[openKey] {
		return true
	}
	if !knownNodeKeys[key] {
		return false
	}
	if openKey == "Reason" {
		// scontrol ends a reason with " [user@time]": when that suffix is still ahead,
		// the key is part of the reason text.
		v := strings.TrimRight(valueSoFar, " ")
		if loc := reasonSuffix().FindStringIndex(v); loc != nil && loc[1] == len(v) {
			return true
		}
		return !reasonSuffix().MatchString(rest)
	}
	return true
}

func parseNodeLine(line string) (Node, error) {
	fields, err := splitFields(line)
	if err != nil {
		return Node{}, err
	}
	if len(fields) == 0 || fields[0].Key != "NodeName" {
		return Node{}, fmt.Errorf("record does not start with NodeName=")
	}
	n := Node{Name: fields[0].Value, Fields: fields}
	if n.Name == "" {
		return Node{}, fmt.Errorf("empty NodeName")
	}
	seenState := false
	for _, f := range fields[1:] {
		v := f.Value
		var err error
		switch f.Key {
		case "State":
			n.State, err = ParseNodeState(v)
			seenState = true
		case "NodeAddr":
			n.Addr = v
		case "NodeHostName":
			n.Hostname = v
		case "Version":
			n.Version = nullable(v)
		case "CPUTot":
			n.CPUs, err = atoi(f)
		case "CPUAlloc":
			n.CPUAlloc, err = atoi(f)
		case "RealMemory":
			n.RealMemory, err = atoi64(f)
		case "AllocMem":
			n.AllocMem, err = atoi64(f)
		case "AvailableFeatures":
			n.Features = list(v)
		case "ActiveFeatures":
			n.ActiveFeatures = list(v)
		case "Partitions":
			n.Partitions = list(v)
		case "Reason":
			n.Reason, n.ReasonBy, n.ReasonTime = splitReason(v)
		case "Comment":
			n.Comment = nullable(v)
		case "Extra":
			n.Extra = nullable(v)
		}
		if err != nil {
			return Node{}, fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	if !seenState {
		return Node{}, fmt.Errorf("node %s: no State=", n.Name)
	}
	return n, nil
}

func nullable(v string) string {
	if v == "(null)" || v == "N/A" {
		return ""
	}
	return v
}

func list(v string) []string {
	v = nullable(v)
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func atoi(f Field) (int, error) {
	n, err := strconv.Atoi(f.Value)
	if err != nil {
		return 0, fmt.Errorf("bad %s=%q: not an integer", f.Key, f.Value)
	}
	return n, nil
}

func atoi64(f Field) (int64, error) {
	n, err := strconv.ParseInt(f.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad %s=%q: not an integer", f.Key, f.Value)
	}
	return n, nil
}

// splitReason splits "text [user@time]" into its parts.
func splitReason(v string) (reason, by, at string) {
	if strings.HasSuffix(v, "]") {
		if i := strings.LastIndex(v, " ["); i >= 0 {
			inner := v[i+2 : len(v)-1]
			if j := strings.IndexByte(inner, '@'); j >= 0 {
				return v[:i], inner[:j], inner[j+1:]
			}
		}
	}
	return v, "", ""
}
