// Package hostlist expands and compresses Slurm hostlist expressions.
//
// A hostlist expression is a list of host names separated by commas (or
// white space), where a name may hold bracketed numeric ranges:
//
//	node[01-03,7],gpu[1-2]  →  node01 node02 node03 node7 gpu1 gpu2
//
// Rules, as Slurm 22.05 applies them:
//
//   - A range "lo-hi" counts from lo to hi; a single number stands for
//     itself. Ranges inside one bracket are separated by commas.
//   - Zero padding is kept: each range is printed with at least as many
//     digits as its lower bound has ("[08-10]" gives 08 09 10, "[8-10]"
//     gives 8 9 10).
//   - Several brackets in one name form a cartesian product, the leftmost
//     bracket varying slowest: "rack[1-2]-node[01-02]" gives rack1-node01
//     rack1-node02 rack2-node01 rack2-node02.
//   - A name must end with its last bracket: Slurm 22.05 refuses
//     "n[1-2]-ib", and so does Expand.
//   - Order and duplicates are kept as written. Steps ("[1-9:2]") are not
//     supported.
//
// [Expand] refuses expressions that would produce more than [MaxHosts]
// names. [Compress] is the inverse: it turns a list of names back into an
// expression such that Expand(Compress(names)) returns names unchanged,
// merging runs of consecutive numbers that share a prefix, as
// `scontrol show hostlist` does. [CompressSorted] sorts and de-duplicates
// first (`scontrol show hostlistsorted` sorts but keeps duplicates).
package hostlist

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MaxHosts is the most names [Expand] produces (Slurm's own limit on one
// range is 64k).
const MaxHosts = 65536

// maxDigits keeps numbers well inside uint64.
const maxDigits = 18

// Expand returns the host names of a hostlist expression, in order. An empty
// expression gives no names. Errors name the offending part of the
// expression.
func Expand(expr string) ([]string, error) {
	items, err := split(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, it := range items {
		names, err := expandItem(it, MaxHosts-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, names...)
	}
	return out, nil
}

// split cuts expr at commas and white space outside brackets; empty items
// ("a,,b") are skipped, as Slurm does.
func split(expr string) ([]string, error) {
	var items []string
	depth, start := 0, 0
	sep := func(c byte) bool { return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch {
		case c == '[':
			if depth > 0 {
				return nil, fmt.Errorf("invalid hostlist %q: nested '[' at offset %d", expr, i)
			}
			depth++
		case c == ']':
			if depth == 0 {
				return nil, fmt.Errorf("invalid hostlist %q: unmatched ']' at offset %d", expr, i)
			}
			depth--
		case depth == 0 && sep(c):
			if i > start {
				items = append(items, expr[start:i])
			}
			start = i + 1
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("invalid hostlist %q: unclosed '['", expr)
	}
	if start < len(expr) {
		items = append(items, expr[start:])
	}
	return items, nil
}

// span is one range of a bracket.
type span struct {
	lo, hi uint64
	width  int
}

// expandItem expands one name with zero or more brackets.
func expandItem(item string, limit int) ([]string, error) {
	// Cut into literal parts and brackets: parts[0] br[0] parts[1] br[1] ...
	var parts []string
	var brackets [][]span
	rest := item
	total := 1
	for {
		i := strings.IndexByte(rest, '[')
		if i < 0 {
			if len(brackets) > 0 && rest != "" {
				return nil, fmt.Errorf("invalid hostlist name %q: text after the last bracket (Slurm 22.05 refuses it)", item)
			}
			parts = append(parts, rest)
			break
		}
		j := strings.IndexByte(rest, ']')
		parts = append(parts, rest[:i])
		spans, n, err := parseBracket(rest[i+1 : j])
		if err != nil {
			return nil, fmt.Errorf("invalid hostlist name %q: %w", item, err)
		}
		if n > limit || total > limit/n {
			return nil, fmt.Errorf("hostlist name %q expands to more than %d names", item, MaxHosts)
		}
		total *= n
		brackets = append(brackets, spans)
		rest = rest[j+1:]
	}
	if total > limit {
		return nil, fmt.Errorf("hostlist name %q expands to more than %d names", item, MaxHosts)
	}
	out := make([]string, 0, total)
	var walk func(k int, prefix string)
	walk = func(k int, prefix string) {
		prefix += parts[k]
		if k == len(brackets) {
			out = append(out, prefix)
			return
		}
		for _, s := range brackets[k] {
			for v := s.lo; ; v++ {
				walk(k+1, prefix+pad(v, s.width))
				if v == s.hi {
					break
				}
			}
		}
	}
	walk(0, "")
	return out, nil
}

func pad(v uint64, width int) string {
	s := strconv.FormatUint(v, 10)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

// parseBracket parses "01-03,7" and returns its spans and name count.
func parseBracket(body string) ([]span, int, error) {
	if body == "" {
		return nil, 0, fmt.Errorf("empty brackets")
	}
	var spans []span
	n := 0
	for _, r := range strings.Split(body, ",") {
		loS, hiS, isRange := strings.Cut(r, "-")
		lo, err := parseNum(loS, r)
		if err != nil {
			return nil, 0, err
		}
		hi := lo
		if isRange {
			if hi, err = parseNum(hiS, r); err != nil {
				return nil, 0, err
			}
			if hi < lo {
				return nil, 0, fmt.Errorf("range %q goes down", r)
			}
		}
		if hi-lo >= MaxHosts {
			return nil, 0, fmt.Errorf("range %q has more than %d names", r, MaxHosts)
		}
		n += int(hi-lo) + 1
		if n > MaxHosts {
			return nil, 0, fmt.Errorf("brackets [%s] hold more than %d names", body, MaxHosts)
		}
		spans = append(spans, span{lo: lo, hi: hi, width: len(loS)})
	}
	return spans, n, nil
}

func parseNum(s, r string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("range %q is missing a number", r)
	}
	if len(s) > maxDigits {
		return 0, fmt.Errorf("number %q in range %q is too long", s, r)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("range %q is not numeric", r)
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("range %q: %w", r, err)
	}
	return v, nil
}

// host is a name cut before the digits it ends with.
type host struct {
	prefix, digits string
	num            uint64
}

// cut splits a name that ends with digits (Slurm 22.05 cannot read text
// after a bracket, so only a final number is ever bracketed).
func cut(name string) (host, bool) {
	end := len(name)
	start := end
	for start > 0 && name[start-1] >= '0' && name[start-1] <= '9' {
		start--
	}
	if start == end || end-start > maxDigits {
		return host{}, false
	}
	v, _ := strconv.ParseUint(name[start:end], 10, 64)
	return host{prefix: name[:start], digits: name[start:end], num: v}, true
}

// Compress returns a hostlist expression for names, keeping their order:
// Expand(Compress(names)) equals names. Consecutive names that differ only in
// the number they end with are merged into brackets ("n1 n2 n3 n5" gives
// "n[1-3,5]"), with zero padding kept; names that do not end with a digit are
// written as they are. The result is what `scontrol show hostlist` prints.
// Names that hold '[', ']', ',' or white space cannot be expressed and are
// written as they are.
func Compress(names []string) string {
	var groups []string
	for i := 0; i < len(names); {
		h, ok := cut(names[i])
		if !ok {
			groups = append(groups, names[i])
			i++
			continue
		}
		// Collect the following names with the same prefix.
		var ranges []string
		j := i
		for j < len(names) {
			hj, ok := cut(names[j])
			if !ok || hj.prefix != h.prefix {
				break
			}
			// One range: hj and the names that continue it.
			lo, hi := hj, hj
			k := j + 1
			for k < len(names) {
				hk, ok := cut(names[k])
				if !ok || hk.prefix != h.prefix || hk.num != hi.num+1 || pad(hk.num, len(lo.digits)) != hk.digits {
					break
				}
				hi = hk
				k++
			}
			if lo.num == hi.num {
				ranges = append(ranges, lo.digits)
			} else {
				ranges = append(ranges, lo.digits+"-"+hi.digits)
			}
			j = k
		}
		if j == i+1 { // a lone name needs no brackets
			groups = append(groups, names[i])
		} else {
			groups = append(groups, h.prefix+"["+strings.Join(ranges, ",")+"]")
		}
		i = j
	}
	return strings.Join(groups, ",")
}

// CompressSorted sorts names (numbers compared by value, so n2 comes before
// n10), removes duplicates and compresses them.
func CompressSorted(names []string) string {
	s := append([]string(nil), names...)
	sort.SliceStable(s, func(a, b int) bool { return less(s[a], s[b]) })
	out := s[:0]
	for i, n := range s {
		if i == 0 || n != s[i-1] {
			out = append(out, n)
		}
	}
	return Compress(out)
}

// less orders names by prefix, then number, then width.
func less(a, b string) bool {
	ha, oka := cut(a)
	hb, okb := cut(b)
	if !oka || !okb {
		return a < b
	}
	if ha.prefix != hb.prefix {
		return ha.prefix < hb.prefix
	}
	if ha.num != hb.num {
		return ha.num < hb.num
	}
	return ha.digits < hb.digits
}
