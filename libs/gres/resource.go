package gres

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// GPU is the name of the generic resource Slurm's gres/gpu plugin manages.
const GPU = "gpu"

// Resource is one generic resource of a node: Count units of Name (of one
// Type, or untyped), each backed by one device file when Files is set.
type Resource struct {
	// Name is the GRES name, as GresTypes lists it ("gpu", "fpga").
	Name string
	// Type tells resources of one Name apart ("tesla_t4"); empty means
	// untyped.
	Type string
	// Count is how many units the node has. With Files it equals
	// len(Files).
	Count uint64
	// Files are the device files, one per unit, as paths on the node.
	// Empty for a count-only resource.
	Files []string
}

// String renders the resource as one element of a Gres= value:
// "gpu:tesla_t4:2", "gpu:2", "bandwidth:20G".
func (r Resource) String() string {
	s := r.Name
	if r.Type != "" {
		s += ":" + r.Type
	}
	return s + ":" + FormatCount(r.Count)
}

// ConfLines returns the gres.conf lines of the resource for node: one line
// per device file ("NodeName=gpu-0 Name=gpu Type=tesla_t4 File=/dev/nvidia0"),
// none for a count-only resource, whose Gres= value says all Slurm needs.
// An empty node omits NodeName (the line then applies to any node reading
// the file).
func (r Resource) ConfLines(node string) []string {
	lines := make([]string, 0, len(r.Files))
	for _, f := range r.Files {
		var b strings.Builder
		if node != "" {
			b.WriteString("NodeName=" + node + " ")
		}
		b.WriteString("Name=" + r.Name)
		if r.Type != "" {
			b.WriteString(" Type=" + r.Type)
		}
		b.WriteString(" File=" + f)
		lines = append(lines, b.String())
	}
	return lines
}

// Validate checks names, type, count and files.
func (r Resource) Validate() error { return r.check(true) }

// check validates r; withFiles says whether r must carry its device files
// (a gres.conf view) or may not (a Gres= value, which has no files).
func (r Resource) check(withFiles bool) error {
	if err := checkName(r.Name); err != nil {
		return err
	}
	if err := checkType(r.Type); err != nil {
		return err
	}
	if r.Count == 0 {
		return fmt.Errorf("invalid count of %s: must be at least 1", r.Name)
	}
	if !withFiles {
		if len(r.Files) > 0 {
			return fmt.Errorf("invalid %s: a Gres= value has no files", r.Name)
		}
		return nil
	}
	if len(r.Files) > 0 && uint64(len(r.Files)) != r.Count {
		return fmt.Errorf("invalid %s: count %d but %d files", r.Name, r.Count, len(r.Files))
	}
	if r.Name == GPU && len(r.Files) == 0 {
		// Slurm 22.05 drops every file-less GPU from a node's
		// configuration (gres.c, _find_fileless_gres): the node would
		// register with fewer GPUs than its Gres= says.
		return fmt.Errorf("invalid %s: a GPU needs a device file (File=)", r.Name)
	}
	for _, f := range r.Files {
		if err := checkFile(f); err != nil {
			return err
		}
	}
	return nil
}

// Set is a node's generic resources, in order.
type Set []Resource

// String renders the set as a Gres= value for slurmd's --conf:
// "gpu:tesla_t4:2,fpga:1". An empty set renders as "".
func (s Set) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// ConfLines returns the gres.conf lines of every resource for node, in
// order (see Resource.ConfLines).
func (s Set) ConfLines(node string) []string {
	var lines []string
	for _, r := range s {
		lines = append(lines, r.ConfLines(node)...)
	}
	return lines
}

// Conf returns a gres.conf file for node: a comment line, then ConfLines.
// A set without device files gives a file with the comment only (a node
// must still have the file when the controller's gres.conf includes it).
func (s Set) Conf(node string) []byte { return s.ConfWith(node, ConfOptions{}) }

// ConfOptions are the settings of a node's gres.conf besides its resources.
type ConfOptions struct {
	// AutoDetectOff adds "AutoDetect=off" (before the resources' lines): slurmd
	// detects no GPU by itself. Slurm 26.05's dynamic nodes (slurmd -Z) detect
	// GPUs unless their --conf names one, gres.conf has a gpu line for the
	// node or says AutoDetect=off.
	AutoDetectOff bool
}

// ConfWith is Conf with the settings of o.
func (s Set) ConfWith(node string, o ConfOptions) []byte {
	var b strings.Builder
	b.WriteString("# Generic resources of this node, written by the slurmd charm.\n")
	if o.AutoDetectOff {
		b.WriteString("# slurmd detects no GPU itself: the charm's detection and node-config say what the node has.\n")
		b.WriteString("AutoDetect=off\n")
	}
	for _, l := range s.ConfLines(node) {
		b.WriteString(l + "\n")
	}
	return []byte(b.String())
}

// Names returns the distinct resource names in first-seen order: what
// slurm.conf's GresTypes must list for this node.
func (s Set) Names() []string {
	var names []string
	for _, r := range s {
		if !slices.Contains(names, r.Name) {
			names = append(names, r.Name)
		}
	}
	return names
}

// Count returns how many units of name (any type) the set holds.
func (s Set) Count(name string) uint64 {
	var n uint64
	for _, r := range s {
		if r.Name == name {
			n += r.Count
		}
	}
	return n
}

// Validate checks every resource (Resource.Validate), that no name and type
// appears twice, that a name is not both typed and untyped (Slurm cannot
// tell them apart on a node) and that no file backs two units.
func (s Set) Validate() error { return s.check(true) }

func (s Set) check(withFiles bool) error {
	typed := map[string]bool{}
	untyped := map[string]bool{}
	seen := map[string]bool{}
	files := map[string]bool{}
	for _, r := range s {
		if err := r.check(withFiles); err != nil {
			return err
		}
		key := r.Name + ":" + r.Type
		if seen[key] {
			return fmt.Errorf("invalid generic resources: %s listed twice", strings.TrimSuffix(key, ":"))
		}
		seen[key] = true
		if r.Type == "" {
			untyped[r.Name] = true
		} else {
			typed[r.Name] = true
		}
		if typed[r.Name] && untyped[r.Name] {
			return fmt.Errorf("invalid generic resources: %s is both typed and untyped", r.Name)
		}
		for _, f := range r.Files {
			if files[f] {
				return fmt.Errorf("invalid generic resources: file %s used twice", f)
			}
			files[f] = true
		}
	}
	return nil
}

// Merge returns detected with every resource whose name declared holds
// replaced by declared's resources of that name, then declared's other
// resources: a declared "gpu" overrides the detected GPUs, a declared "fpga"
// adds to them.
func Merge(detected, declared Set) Set {
	names := declared.Names()
	var out Set
	for _, r := range detected {
		if !slices.Contains(names, r.Name) {
			out = append(out, r)
		}
	}
	return append(out, declared...)
}

// ParseGres parses a Gres= value as slurm.conf and --conf take it:
// comma-separated "name[:type][:count]" elements ("gpu:tesla_t4:2,fpga:1").
// A missing count is 1; counts take Slurm's K, M, G, T and P suffixes
// (powers of 1024). "" and "(null)" give an empty set. The result has no
// Files: those come from gres.conf.
func ParseGres(s string) (Set, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "(null)" {
		return nil, nil
	}
	var set Set
	for _, elem := range strings.Split(s, ",") {
		r, err := parseElem(elem)
		if err != nil {
			return nil, fmt.Errorf("invalid Gres %q: %w", s, err)
		}
		set = append(set, r)
	}
	// GPUs named in Gres= get their files from gres.conf.
	if err := set.check(false); err != nil {
		return nil, fmt.Errorf("invalid Gres %q: %w", s, err)
	}
	return set, nil
}

func parseElem(elem string) (Resource, error) {
	parts := strings.Split(elem, ":")
	var r Resource
	switch len(parts) {
	case 1:
		r = Resource{Name: parts[0], Count: 1}
	case 2:
		// "gpu:2" is a count; "gpu:tesla" a type with count 1.
		if n, err := ParseCount(parts[1]); err == nil {
			r = Resource{Name: parts[0], Count: n}
		} else if startsWithDigit(parts[1]) {
			return Resource{}, err
		} else {
			r = Resource{Name: parts[0], Type: parts[1], Count: 1}
		}
	case 3:
		n, err := ParseCount(parts[2])
		if err != nil {
			return Resource{}, err
		}
		r = Resource{Name: parts[0], Type: parts[1], Count: n}
	default:
		return Resource{}, fmt.Errorf("%q: want name[:type][:count]", elem)
	}
	return r, nil
}

// The checks below are written out rather than regular expressions: a bounded repetition
// such as {1,254} compiles to hundreds of instructions, and every hook of both charms would
// pay for compiling them at start (about 1 ms, 4,000 allocations).

func isLower(c byte) bool  { return c >= 'a' && c <= 'z' }
func isLetter(c byte) bool { return isLower(c) || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// shaped reports whether s has 1 to max bytes, its first accepted by first and the rest by rest.
func shaped(s string, max int, first, rest func(byte) bool) bool {
	if len(s) == 0 || len(s) > max || !first(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !rest(s[i]) {
			return false
		}
	}
	return true
}

// CheckName checks a generic resource name as GresTypes lists it: a
// lower-case letter, then up to 31 lower-case letters, digits or _.
func CheckName(name string) error { return checkName(name) }

func checkName(name string) error {
	if !shaped(name, 32, isLower, func(c byte) bool { return isLower(c) || isDigit(c) || c == '_' }) {
		return fmt.Errorf("invalid name %q: want a lower-case letter, then up to 31 lower-case letters, digits or _", name)
	}
	return nil
}

func checkType(t string) error {
	if t == "" {
		return nil
	}
	if !shaped(t, 64, isLetter, func(c byte) bool { return isLetter(c) || isDigit(c) || strings.IndexByte("_.-", c) >= 0 }) {
		// A type starting with a digit would read as a count ("gpu:2").
		return fmt.Errorf("invalid type %q: want a letter, then up to 63 letters, digits, _, . or -", t)
	}
	return nil
}

func startsWithDigit(s string) bool { return s != "" && isDigit(s[0]) }

func checkFile(f string) error {
	pathByte := func(c byte) bool { return isLetter(c) || isDigit(c) || strings.IndexByte("_./-", c) >= 0 }
	absolute := len(f) >= 2 && shaped(f, 255, func(c byte) bool { return c == '/' }, pathByte)
	if !absolute || strings.Contains(f, "/../") || strings.HasSuffix(f, "/..") || strings.HasSuffix(f, "/") {
		return fmt.Errorf("invalid file %q: want an absolute path of letters, digits, _, ., / and -", f)
	}
	return nil
}

var suffixes = []struct {
	s string
	m uint64
}{{"P", 1 << 50}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}}

// ParseCount parses a GRES count: a positive decimal number with an
// optional K, M, G, T or P suffix (×1024 each, as Slurm reads them).
func ParseCount(s string) (uint64, error) {
	num, mult := s, uint64(1)
	for _, sf := range suffixes {
		if rest, ok := strings.CutSuffix(s, sf.s); ok {
			num, mult = rest, sf.m
			break
		}
		if rest, ok := strings.CutSuffix(s, strings.ToLower(sf.s)); ok {
			num, mult = rest, sf.m
			break
		}
	}
	if num == "" || num[0] < '0' || num[0] > '9' {
		return 0, fmt.Errorf("invalid count %q: want a number with an optional K, M, G, T or P suffix", s)
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid count %q: want a number with an optional K, M, G, T or P suffix", s)
	}
	if n == 0 {
		return 0, fmt.Errorf("invalid count %q: must be at least 1", s)
	}
	if n > math.MaxUint64/mult {
		return 0, fmt.Errorf("invalid count %q: too large", s)
	}
	return n * mult, nil
}

// FormatCount renders n with the largest suffix that divides it exactly
// (2 → "2", 20<<30 → "20G"), so that ParseCount(FormatCount(n)) == n.
func FormatCount(n uint64) string {
	for _, sf := range suffixes {
		if n >= sf.m && n%sf.m == 0 {
			return strconv.FormatUint(n/sf.m, 10) + sf.s
		}
	}
	return strconv.FormatUint(n, 10)
}
