package slurmconf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/libs/hostlist"
)

// MaxValueLen bounds one value checked by [ValidatePartitionValues]; Slurm
// itself has no limit, but no partition value is ever this long on purpose.
const MaxValueLen = 1024

// valueKind is the type of a partition key's value, as Slurm 22.05's
// _parse_partitionname (src/common/read_config.c) reads it.
type valueKind int

const (
	kindBool          valueKind = iota // S_P_BOOLEAN: YES/NO, UP/DOWN, TRUE/FALSE, 1/0
	kindUint16                         // S_P_UINT16: 0..65535, UNLIMITED, INFINITE
	kindUint32                         // S_P_UINT32: 0..4294967295 (k = ×1024), UNLIMITED, INFINITE
	kindUint64                         // S_P_UINT64 (megabytes, counts): digits (k = ×1024), UNLIMITED, INFINITE
	kindTime                           // time_str2mins: minutes, M:S, H:M:S, D-H, D-H:M, D-H:M:S, UNLIMITED
	kindOverTime                       // OverTimeLimit: minutes, UNLIMITED, INFINITE
	kindSuspendTime                    // SuspendTime: seconds, INFINITE, -1
	kindPreempt                        // PreemptMode: one of OFF, CANCEL, REQUEUE, SUSPEND, optionally with GANG or WITHIN
	kindOverSubscribe                  // EXCLUSIVE, NO, YES[:n>1], FORCE[:n>0]
	kindSelectType                     // CR_Core, CR_Core_Memory, CR_Socket, CR_Socket_Memory
	kindCPUBind                        // one binding type, optionally with verbose
	kindNames                          // comma-separated account, group or QOS names, or ALL
	kindName                           // one name (QOS, Alternate partition)
	kindHostlist                       // a host list expression, or ALL
	kindTRESWeights                    // TRES=weight[,...]
	kindExclusive                      // Exclusive (26.05): NO, NONE, NODE, USER or TOPO
	kindManaged                        // set by the charms, never by an operator
)

// partitionValues maps every lower-case partition key to the kind of its value.
var partitionValues = map[string]valueKind{
	"allocnodes":           kindHostlist,
	"allowaccounts":        kindNames,
	"allowgroups":          kindNames,
	"allowqos":             kindNames,
	"alternate":            kindName,
	"cpubind":              kindCPUBind,
	"default":              kindBool,
	"defaulttime":          kindTime,
	"defcpupergpu":         kindUint64,
	"defmempercpu":         kindUint64,
	"defmempergpu":         kindUint64,
	"defmempernode":        kindUint64,
	"denyaccounts":         kindNames,
	"denyqos":              kindNames,
	"disablerootjobs":      kindBool,
	"exclusiveuser":        kindBool,
	"gracetime":            kindUint32,
	"hidden":               kindBool,
	"lln":                  kindBool,
	"maxcpuspernode":       kindUint32,
	"maxmempercpu":         kindUint64,
	"maxmempernode":        kindUint64,
	"maxnodes":             kindUint32,
	"maxtime":              kindTime,
	"minnodes":             kindUint32,
	"nodes":                kindManaged,
	"oversubscribe":        kindOverSubscribe,
	"overtimelimit":        kindOverTime,
	"preemptmode":          kindPreempt,
	"priority":             kindUint16,
	"priorityjobfactor":    kindUint16,
	"prioritytier":         kindUint16,
	"qos":                  kindName,
	"reqresv":              kindBool,
	"resumetimeout":        kindUint16,
	"rootonly":             kindBool,
	"selecttypeparameters": kindSelectType,
	"shared":               kindOverSubscribe,
	"state":                kindManaged,
	"suspendtime":          kindSuspendTime,
	"suspendtimeout":       kindUint16,
	"tresbillingweights":   kindTRESWeights,
}

// ValidatePartitionValues checks the value of every pair against the type
// Slurm 22.05 gives its partition key, and refuses the keys the charms
// manage (Nodes, State). It is stricter than Slurm where Slurm reads
// garbage silently (a number that is not decimal, OverTimeLimit=abc read as
// 0) or logs and ignores a value (CpuBind=bogus, OverSubscribe=YES:1): such
// values are refused. Keys are expected to be valid partition keys (see
// [ValidatePartitionParams]); an unknown key is refused too. Errors are
// *[ParseError] naming the key.
func ValidatePartitionValues(p Params) error { return validateValues(partitionValues, p) }

func validateValues(values map[string]valueKind, p Params) error {
	for _, kv := range p {
		kind, ok := values[strings.ToLower(kv.Key)]
		if !ok {
			return &ParseError{Key: kv.Key, Msg: fmt.Sprintf("unknown partition key %q", kv.Key)}
		}
		if kind == kindManaged {
			return &ParseError{Key: kv.Key, Msg: fmt.Sprintf("%s is managed by the charms and cannot be set", kv.Key)}
		}
		if len(kv.Value) > MaxValueLen {
			return &ParseError{Key: kv.Key, Msg: fmt.Sprintf("value of %s is %d characters long (at most %d)", kv.Key, len(kv.Value), MaxValueLen)}
		}
		if err := checkValue(kind, kv.Value); err != nil {
			return &ParseError{Key: kv.Key, Msg: fmt.Sprintf("bad value %q for %s: %v", short(kv.Value), kv.Key, err)}
		}
	}
	return nil
}

func checkValue(kind valueKind, v string) error {
	switch kind {
	case kindBool:
		switch strings.ToLower(v) {
		case "yes", "no", "up", "down", "true", "false", "1", "0":
			return nil
		}
		return errors.New("want YES or NO")
	case kindUint16:
		return checkUint(v, 0xffff, false)
	case kindUint32:
		return checkUint(v, 0xffffffff, true)
	case kindUint64:
		return checkUint(v, 1<<63-1, true)
	case kindTime:
		return checkTime(v)
	case kindOverTime:
		if isUnlimited(v) {
			return nil
		}
		return checkDigits(v, 1<<31-1)
	case kindSuspendTime:
		if strings.EqualFold(v, "INFINITE") || v == "-1" {
			return nil
		}
		return checkDigits(v, 0xffffffff)
	case kindPreempt:
		return checkPreempt(v)
	case kindOverSubscribe:
		return checkOverSubscribe(v)
	case kindSelectType:
		switch strings.ToLower(v) {
		case "cr_core", "cr_core_memory", "cr_socket", "cr_socket_memory":
			return nil
		}
		return errors.New("want CR_Core, CR_Core_Memory, CR_Socket or CR_Socket_Memory")
	case kindCPUBind:
		return checkCPUBind(v)
	case kindNames:
		if strings.EqualFold(v, "ALL") {
			return nil
		}
		for _, n := range strings.Split(v, ",") {
			if err := checkWord(n); err != nil {
				return err
			}
		}
		return nil
	case kindName:
		return checkWord(v)
	case kindHostlist:
		if strings.EqualFold(v, "ALL") {
			return nil
		}
		if strings.ContainsFunc(v, func(r rune) bool { return !isHostRune(r) }) {
			return errors.New("want a host list such as node[1-4],login1")
		}
		if _, err := hostlist.Expand(v); err != nil {
			return err
		}
		return nil
	case kindTRESWeights:
		return checkTRESWeights(v)
	case kindExclusive:
		switch strings.ToLower(v) {
		case "no", "none", "node", "user", "topo":
			return nil
		}
		return errors.New("want NO, NODE, USER or TOPO")
	}
	return errors.New("no rule for this key")
}

func isUnlimited(v string) bool {
	return strings.EqualFold(v, "UNLIMITED") || strings.EqualFold(v, "INFINITE")
}

// checkUint accepts decimal digits up to max (with a k/K suffix multiplying
// by 1024 where kSuffix is set), or UNLIMITED/INFINITE.
func checkUint(v string, max uint64, kSuffix bool) error {
	if isUnlimited(v) {
		return nil
	}
	digits, mult := v, uint64(1)
	if kSuffix && (strings.HasSuffix(v, "k") || strings.HasSuffix(v, "K")) {
		digits, mult = v[:len(v)-1], 1024
	}
	if err := checkDigits(digits, max); err != nil {
		return err
	}
	n, _ := strconv.ParseUint(digits, 10, 64)
	if n > max/mult {
		return fmt.Errorf("more than %d", max)
	}
	return nil
}

// checkDigits accepts a non-negative decimal number up to max.
func checkDigits(v string, max uint64) error {
	if v == "" || strings.ContainsFunc(v, func(r rune) bool { return r < '0' || r > '9' }) {
		return errors.New("want a non-negative whole number")
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > max {
		return fmt.Errorf("more than %d", max)
	}
	return nil
}

// checkTime follows time_str2secs: UNLIMITED, INFINITE, -1, or minutes,
// minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes,
// days-hours:minutes:seconds.
func checkTime(v string) error {
	if isUnlimited(v) || v == "-1" {
		return nil
	}
	const want = "want minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED"
	days, rest, dash := strings.Cut(v, "-")
	if !dash {
		days, rest = "", v
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 3 || (dash && days == "") {
		return errors.New(want)
	}
	fields := parts
	if dash {
		fields = append([]string{days}, parts...)
	}
	for _, f := range fields {
		if checkDigits(f, 1<<31-1) != nil {
			return errors.New(want)
		}
	}
	secs, err := timeSeconds(days, parts)
	if err != nil || secs > 1<<31-1 {
		return errors.New("too long")
	}
	return nil
}

func timeSeconds(days string, parts []string) (uint64, error) {
	n := make([]uint64, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return 0, err
		}
		n[i] = v
	}
	if days != "" {
		d, err := strconv.ParseUint(days, 10, 64)
		if err != nil {
			return 0, err
		}
		var h, m, s uint64
		h = n[0]
		if len(n) > 1 {
			m = n[1]
		}
		if len(n) > 2 {
			s = n[2]
		}
		return d*86400 + h*3600 + m*60 + s, nil
	}
	switch len(n) {
	case 3:
		return n[0]*3600 + n[1]*60 + n[2], nil
	case 2:
		return n[0]*60 + n[1], nil
	}
	return n[0] * 60, nil
}

// checkPreempt follows preempt_mode_num: exactly one of OFF (CLUSTER),
// CANCEL, REQUEUE, SUSPEND (ON), optionally with GANG or WITHIN (not both);
// GANG or WITHIN alone are accepted too.
func checkPreempt(v string) error {
	modes := 0
	gang, within := false, false
	for _, tok := range strings.Split(v, ",") {
		switch strings.ToLower(tok) {
		case "gang":
			gang = true
		case "within":
			within = true
		case "off", "cluster", "cancel", "requeue", "on", "suspend":
			modes++
		default:
			return errors.New("want OFF, CANCEL, REQUEUE or SUSPEND, optionally with GANG or WITHIN")
		}
	}
	if modes > 1 {
		return errors.New("only one of OFF, CANCEL, REQUEUE and SUSPEND may be given")
	}
	if gang && within {
		return errors.New("GANG and WITHIN cannot be combined")
	}
	return nil
}

// checkOverSubscribe accepts EXCLUSIVE, NO, YES, YES:n (n ≥ 2), FORCE and
// FORCE:n (n ≥ 1); Slurm ignores YES:1 and FORCE:0 with an error.
func checkOverSubscribe(v string) error {
	const want = "want EXCLUSIVE, NO, YES[:n] (n ≥ 2) or FORCE[:n] (n ≥ 1)"
	word, count, hasCount := strings.Cut(v, ":")
	switch strings.ToLower(word) {
	case "exclusive", "no":
		if hasCount {
			return errors.New(want)
		}
		return nil
	case "yes", "force":
		if !hasCount {
			return nil
		}
		least := uint64(2)
		if strings.EqualFold(word, "force") {
			least = 1
		}
		if checkDigits(count, 0xffff) != nil {
			return errors.New(want)
		}
		if n, _ := strconv.ParseUint(count, 10, 64); n < least {
			return errors.New(want)
		}
		return nil
	}
	return errors.New(want)
}

// checkCPUBind follows xlate_cpu_bind_str: one binding type, optionally
// with verbose; Slurm ignores any other value with an error.
func checkCPUBind(v string) error {
	types := 0
	for _, tok := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' }) {
		switch strings.ToLower(tok) {
		case "no", "none", "socket", "sockets", "ldom", "ldoms", "core", "cores", "thread", "threads", "off":
			types++
		case "verbose", "v":
		default:
			return errors.New("want one of none, socket, ldom, core, thread, off (optionally with verbose)")
		}
	}
	if types != 1 {
		return errors.New("want exactly one binding type")
	}
	return nil
}

// checkWord accepts one account, group, QOS or partition name.
func checkWord(n string) error {
	if n == "" {
		return errors.New("empty name")
	}
	if strings.ContainsFunc(n, func(r rune) bool { return !isNameRune(r) }) {
		return fmt.Errorf("name %q: want letters, digits, '_', '-' and '.'", short(n))
	}
	return nil
}

func isHostRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.,[]", r)
}

// checkTRESWeights accepts TRES=weight pairs separated by commas, a weight
// being a decimal number optionally followed by K, M, G, T or P.
func checkTRESWeights(v string) error {
	const want = "want TRES=weight pairs such as CPU=1.0,Mem=0.25G,GRES/gpu=2.0"
	for _, pair := range strings.Split(v, ",") {
		tres, w, ok := strings.Cut(pair, "=")
		if !ok || tres == "" || strings.ContainsFunc(tres, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:", r))
		}) {
			return errors.New(want)
		}
		w = strings.TrimRight(w, "KMGTPkmgtp")
		if _, err := strconv.ParseFloat(w, 64); err != nil || strings.ContainsAny(w, "eEinfINFxX+-") {
			return errors.New(want)
		}
	}
	return nil
}

// short cuts a value for an error message.
func short(v string) string {
	if len(v) <= 40 {
		return v
	}
	return v[:37] + "..."
}
