package slurmconf

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Doc is a parsed slurm.conf (or a file it includes). It keeps every line
// as written; lines changed through its methods are rendered again, all
// others are returned byte for byte by [Doc.Bytes]. The zero value is not
// usable: use [Parse] or [New]. A Doc is not safe for concurrent use.
type Doc struct {
	lines []*docLine
}

// docLine is one logical line.
type docLine struct {
	raw      []byte // exact input, all physical lines; nil once changed
	kind     kind
	pairs    Params // all pairs; for entries the name key comes first
	include  string
	inclKey  string
	comments []string
	indent   string
	eol      string // terminator of the last physical line
}

// New returns an empty document.
func New() *Doc { return &Doc{} }

// Parse reads slurm.conf text. It fails with a *[ParseError] on malformed
// syntax: a word without '=', an empty value (write Key="" instead), an
// unbalanced quote, a key of other characters than letters, digits, '_' and
// '.', or an entry key (NodeName, PartitionName, ...) that does not start
// its line. It does not check key names: see [Doc.Validate].
//
// The syntax is Slurm's: '#' starts a comment; a backslash at the end of a
// line (white space may follow) continues it on the next; any other
// backslash makes the next character literal ("\#" is a '#'); a value may be
// double-quoted to hold white space; "Include <file>" includes a file. One
// deliberate difference: a '#' inside a double-quoted value is read as part
// of the value, where Slurm 22.05 would start a comment there. Values written
// by this package always escape '#', so Slurm and this package agree on them.
// Lines may end in "\n" or "\r\n".
func Parse(data []byte) (*Doc, error) {
	phys := splitLines(data)
	d := &Doc{}
	offset := 0
	for i := 0; i < len(phys); {
		lg, perr := scanLogical(phys, i, false)
		if perr != nil {
			return nil, perr
		}
		n := 0
		for j := i; j <= lg.last; j++ {
			n += len(phys[j].content) + len(phys[j].eol)
		}
		dl := &docLine{
			raw:      data[offset : offset+n : offset+n],
			comments: lg.comments,
			indent:   lg.indent,
			eol:      phys[lg.last].eol,
		}
		offset += n
		switch {
		case lg.isInclude:
			dl.kind, dl.include, dl.inclKey = kindInclude, lg.include, lg.inclKey
		case len(lg.tokens) == 0:
			dl.kind = kindTrivia
		default:
			dl.kind = kindGlobal
			if k, ok := entryKinds[strings.ToLower(lg.tokens[0].key)]; ok {
				dl.kind = k
				if err := checkName(lg.tokens[0]); err != nil {
					return nil, err
				}
			}
			for _, t := range lg.tokens[1:] {
				if _, ok := entryKinds[strings.ToLower(t.key)]; ok {
					return nil, errorf(t.line, t.col, t.key, "%q must start its own line", t.key)
				}
			}
			dl.pairs = tokensToParams(lg.tokens)
		}
		d.lines = append(d.lines, dl)
		i = lg.last + 1
	}
	return d, nil
}

// eol is the line terminator for new lines: "\r\n" when the document uses
// it, else "\n".
func (d *Doc) eol() string {
	for _, l := range d.lines {
		if l.eol != "" {
			return l.eol
		}
	}
	return "\n"
}

// Bytes renders the document. An unedited document renders byte-identical to
// the input of [Parse].
func (d *Doc) Bytes() []byte {
	var b bytes.Buffer
	eol := d.eol()
	for i, l := range d.lines {
		if l.raw != nil {
			b.Write(l.raw)
		} else {
			l.render(&b, eol)
		}
		if i < len(d.lines)-1 && !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
			b.WriteString(eol)
		}
	}
	return b.Bytes()
}

// String is Bytes as a string.
func (d *Doc) String() string { return string(d.Bytes()) }

func (l *docLine) render(b *bytes.Buffer, eol string) {
	end := l.eol
	if end == "" {
		end = eol
	}
	comments := l.comments
	for len(comments) > 1 {
		b.WriteString(l.indent + strings.TrimLeft(comments[0], " \t\v\f\r") + end)
		comments = comments[1:]
	}
	b.WriteString(l.indent)
	switch l.kind {
	case kindInclude:
		b.WriteString(l.inclKey + " " + l.include)
	default:
		b.WriteString(l.pairs.String())
	}
	if len(comments) == 1 {
		if strings.HasPrefix(comments[0], "#") {
			b.WriteByte(' ')
		}
		b.WriteString(comments[0])
	}
	b.WriteString(end)
}

// insertAt inserts l before index i.
func (d *Doc) insertAt(i int, l *docLine) {
	d.lines = slices.Insert(d.lines, i, l)
}

// insertPos returns where a new line of kind k goes: after the last line of
// the first kind in after that exists, else before the first line of the
// first kind in before that exists, else at the end.
func (d *Doc) insertPos(after []kind, before []kind) int {
	for _, k := range after {
		for i := len(d.lines) - 1; i >= 0; i-- {
			if d.lines[i].kind == k {
				return i + 1
			}
		}
	}
	for _, k := range before {
		for i, l := range d.lines {
			if l.kind == k {
				return i
			}
		}
	}
	return len(d.lines)
}

// ---- Global parameters ----

// Get returns the value of the global parameter key (matched
// case-insensitively). When the key is given more than once, the last value
// is returned, as Slurm uses the last one.
func (d *Doc) Get(key string) (string, bool) {
	all := d.GetAll(key)
	if len(all) == 0 {
		return "", false
	}
	return all[len(all)-1], true
}

// GetAll returns every value of the global parameter key in order, for keys
// Slurm accepts more than once such as SlurmctldHost.
func (d *Doc) GetAll(key string) []string {
	var out []string
	for _, l := range d.lines {
		if l.kind != kindGlobal {
			continue
		}
		for _, kv := range l.pairs {
			if strings.EqualFold(kv.Key, key) {
				out = append(out, kv.Value)
			}
		}
	}
	return out
}

// Params returns every global parameter in order.
func (d *Doc) Params() Params {
	var out Params
	for _, l := range d.lines {
		if l.kind == kindGlobal {
			out = append(out, l.pairs...)
		}
	}
	return out
}

func checkGlobal(key, value string) error {
	if err := checkPair(key, value); err != nil {
		return err
	}
	if _, ok := entryKinds[strings.ToLower(key)]; ok || strings.EqualFold(key, "include") {
		return &ParseError{Key: key, Msg: fmt.Sprintf("%q is not a global parameter: use the entry or include methods", key)}
	}
	return nil
}

// Set gives the global parameter key exactly one value. The first occurrence
// keeps its line, position and key spelling (only that line is rendered
// again, keeping its comment); later occurrences are removed. A new key goes
// after the last line of global parameters. Setting the value a key already
// has changes nothing.
func (d *Doc) Set(key, value string) error {
	if err := checkGlobal(key, value); err != nil {
		return err
	}
	found := false
	for i := 0; i < len(d.lines); i++ {
		l := d.lines[i]
		if l.kind != kindGlobal {
			continue
		}
		for j := 0; j < len(l.pairs); j++ {
			if !strings.EqualFold(l.pairs[j].Key, key) {
				continue
			}
			if !found {
				found = true
				if l.pairs[j].Value != value {
					l.pairs[j].Value = value
					l.raw = nil
				}
				continue
			}
			l.pairs = slices.Delete(l.pairs, j, j+1)
			l.raw = nil
			j--
		}
		if len(l.pairs) == 0 {
			d.lines = slices.Delete(d.lines, i, i+1)
			i--
		}
	}
	if !found {
		return d.Add(key, value)
	}
	return nil
}

// Add appends one more value for a global key on a line of its own, after
// the last line of global parameters (for keys given several times, such as
// SlurmctldHost).
func (d *Doc) Add(key, value string) error {
	if err := checkGlobal(key, value); err != nil {
		return err
	}
	at := d.insertPos([]kind{kindGlobal}, []kind{kindInclude, kindNode, kindNodeSet, kindPartition, kindDownNodes, kindFrontend})
	d.insertAt(at, &docLine{kind: kindGlobal, pairs: Params{{Key: key, Value: value}}})
	return nil
}

// Delete removes every occurrence of the global parameter key and reports
// whether there was one. A line left without parameters is removed with its
// comment.
func (d *Doc) Delete(key string) bool {
	found := false
	for i := 0; i < len(d.lines); i++ {
		l := d.lines[i]
		if l.kind != kindGlobal {
			continue
		}
		if !l.pairs.Delete(key) {
			continue
		}
		found = true
		l.raw = nil
		if len(l.pairs) == 0 {
			d.lines = slices.Delete(d.lines, i, i+1)
			i--
		}
	}
	return found
}

// ---- Include ----

// Includes returns the file names of the Include lines, as written (Slurm
// resolves relative names against the directory of slurm.conf and expands
// %c to the cluster name).
func (d *Doc) Includes() []string {
	var out []string
	for _, l := range d.lines {
		if l.kind == kindInclude {
			out = append(out, l.include)
		}
	}
	return out
}

// AddInclude appends "Include <path>" at the end of the document unless an
// Include of the same path is already there.
func (d *Doc) AddInclude(path string) error {
	if path == "" || strings.ContainsAny(path, " \t\r\n\v\f#\\\"") {
		return &ParseError{Key: "Include", Msg: fmt.Sprintf("invalid Include file name %q: it must be non-empty without white space, quotes, '#' or '\\'", path)}
	}
	if slices.Contains(d.Includes(), path) {
		return nil
	}
	d.lines = append(d.lines, &docLine{kind: kindInclude, include: path, inclKey: "Include"})
	return nil
}

// DeleteInclude removes every Include line for path and reports whether
// there was one.
func (d *Doc) DeleteInclude(path string) bool {
	n := len(d.lines)
	d.lines = slices.DeleteFunc(d.lines, func(l *docLine) bool {
		return l.kind == kindInclude && l.include == path
	})
	return len(d.lines) != n
}

// ---- Entries ----

// entryType is the shape shared by Partition, Node, NodeSet and DownNodes.
type entryType interface {
	~struct {
		Name   string
		Params Params
	}
}

// entries returns every line of kind k in order, as entries of type T.
func entries[T entryType](d *Doc, k kind) []T {
	var out []T
	for _, l := range d.lines {
		if l.kind == k {
			out = append(out, T{Name: l.pairs[0].Value, Params: l.pairs[1:].Clone()})
		}
	}
	return out
}

func (d *Doc) find(k kind, name string) *docLine {
	for _, l := range d.lines {
		if l.kind == k && l.pairs[0].Value == name {
			return l
		}
	}
	return nil
}

func (d *Doc) get(k kind, name string) (Params, bool) {
	l := d.find(k, name)
	if l == nil {
		return nil, false
	}
	return l.pairs[1:].Clone(), true
}

// set replaces the first line named name or inserts a new one.
func (d *Doc) set(k kind, spec *keySpec, name string, params Params, after, before []kind) error {
	if err := checkName(token{key: spec.nameKey, value: name}); err != nil {
		return err
	}
	if err := params.Check(); err != nil {
		return err
	}
	for _, kv := range params {
		if _, ok := entryKinds[strings.ToLower(kv.Key)]; ok || strings.EqualFold(kv.Key, "include") {
			return &ParseError{Key: kv.Key, Msg: fmt.Sprintf("key %q is not allowed in a %s entry", kv.Key, spec.what)}
		}
	}
	_, aliases := spec.tables()
	if err := checkDuplicates(paramsToTokens(params), aliases); err != nil {
		return err
	}
	if l := d.find(k, name); l != nil {
		pairs := append(Params{l.pairs[0]}, params...)
		if !slices.Equal(pairs, l.pairs) {
			l.pairs = pairs
			l.raw = nil
		}
		return nil
	}
	pairs := append(Params{{Key: spec.nameKey, Value: name}}, params...)
	d.insertAt(d.insertPos(after, before), &docLine{kind: k, pairs: pairs})
	return nil
}

func (d *Doc) del(k kind, name string) bool {
	n := len(d.lines)
	d.lines = slices.DeleteFunc(d.lines, func(l *docLine) bool {
		return l.kind == k && l.pairs[0].Value == name
	})
	return len(d.lines) != n
}

// Partition returns the first partition named name (names are
// case-sensitive, as in Slurm).
func (d *Doc) Partition(name string) (Partition, bool) {
	p, ok := d.get(kindPartition, name)
	return Partition{Name: name, Params: p}, ok
}

// Partitions returns every partition line in order, "DEFAULT" lines included.
func (d *Doc) Partitions() []Partition { return entries[Partition](d, kindPartition) }

// SetPartition replaces the first partition line with the same name (its
// position, name key spelling and comment are kept, and it is rendered again
// only if it changed) or adds the partition after the last partition line.
// Keys are checked for syntax and duplicates, not against Slurm's list: use
// [ValidatePartitionParams] or [ParsePartition] for that.
func (d *Doc) SetPartition(p Partition) error {
	return d.set(kindPartition, partitionSpec, p.Name, p.Params, []kind{kindPartition}, nil)
}

// DeletePartition removes every partition line named name and reports
// whether there was one.
func (d *Doc) DeletePartition(name string) bool { return d.del(kindPartition, name) }

// NodeSet returns the first nodeset named name.
func (d *Doc) NodeSet(name string) (NodeSet, bool) {
	p, ok := d.get(kindNodeSet, name)
	return NodeSet{Name: name, Params: p}, ok
}

// NodeSets returns every NodeSet line in order.
func (d *Doc) NodeSets() []NodeSet { return entries[NodeSet](d, kindNodeSet) }

// SetNodeSet replaces the first nodeset with the same name or adds it after
// the last NodeSet line (else before the first partition line, else at the
// end).
func (d *Doc) SetNodeSet(s NodeSet) error {
	return d.set(kindNodeSet, nodeSetSpec, s.Name, s.Params, []kind{kindNodeSet}, []kind{kindPartition})
}

// DeleteNodeSet removes every NodeSet line named name.
func (d *Doc) DeleteNodeSet(name string) bool { return d.del(kindNodeSet, name) }

// Nodes returns every NodeName line in order, "DEFAULT" lines included.
func (d *Doc) Nodes() []Node { return entries[Node](d, kindNode) }

// DownNodesEntries returns every DownNodes line in order.
func (d *Doc) DownNodesEntries() []DownNodes { return entries[DownNodes](d, kindDownNodes) }

// FrontendNames returns the names of the FrontendName lines, which are kept
// as written and cannot be edited through Doc.
func (d *Doc) FrontendNames() []string {
	var out []string
	for _, l := range d.lines {
		if l.kind == kindFrontend {
			out = append(out, l.pairs[0].Value)
		}
	}
	return out
}

// Validate checks the document the way slurmctld 22.05 would refuse it:
// unknown or duplicate keys on NodeName, NodeSet, PartitionName and DownNodes
// lines, a partition or nodeset defined twice, and a line holding more than
// one global parameter (Parse reads such lines, Slurm does not). Names of
// global keys and all values are not checked (see [GlobalKey]). It returns
// every problem found, each a *[ParseError] with the line and column in the
// current rendering, joined with errors.Join.
func (d *Doc) Validate() error { return d.ValidateFor(keys2205) }

// ValidateFor checks the document as [Doc.Validate] does, with the entry keys of the Slurm
// release of keys (see [KeysOf]).
func (d *Doc) ValidateFor(keys *Keys) error {
	phys := splitLines(d.Bytes())
	var errs []error
	seen := map[kind]map[string]int{kindPartition: {}, kindNodeSet: {}}
	for i := 0; i < len(phys); {
		lg, perr := scanLogical(phys, i, false)
		if perr != nil {
			return perr // cannot happen for a rendered document
		}
		i = lg.last + 1
		if lg.isInclude || len(lg.tokens) == 0 {
			continue
		}
		k, ok := entryKinds[strings.ToLower(lg.tokens[0].key)]
		if !ok {
			if len(lg.tokens) > 1 {
				t := lg.tokens[1]
				errs = append(errs, errorf(t.line, t.col, t.key, "only one global parameter per line: slurmctld refuses %q after %q", t.key, lg.tokens[0].key))
			}
			continue
		}
		spec := keys.specFor(k)
		if spec == nil {
			continue
		}
		first := lg.tokens[0]
		if err := spec.validate(lg.tokens[1:]); err != nil {
			errs = append(errs, err)
		}
		if names, ok := seen[k]; ok && !strings.EqualFold(first.value, "DEFAULT") {
			if prev, dup := names[first.value]; dup {
				errs = append(errs, errorf(first.line, first.vcol, first.key, "%s %q is already defined on line %d", spec.what, first.value, prev))
			} else {
				names[first.value] = first.line
			}
		}
	}
	return errors.Join(errs...)
}
