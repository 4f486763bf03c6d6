package slurmconf

import (
	"fmt"
	"strings"
)

// Param is one key=value pair. Value is the logical value: quotes and
// backslash escapes are already removed.
type Param struct {
	Key   string
	Value string
}

// Params is an ordered list of key=value pairs. Keys are matched
// case-insensitively, as Slurm does; the spelling of a key as first written
// is kept when its value changes.
type Params []Param

// Get returns the value of key and whether it is present.
func (p Params) Get(key string) (string, bool) {
	for _, kv := range p {
		if strings.EqualFold(kv.Key, key) {
			return kv.Value, true
		}
	}
	return "", false
}

// Has reports whether key is present.
func (p Params) Has(key string) bool {
	_, ok := p.Get(key)
	return ok
}

// Set gives key the value. An existing pair keeps its position and the
// spelling of its key, and any later pair with the same key is removed; a
// new key is appended.
func (p *Params) Set(key, value string) {
	found := false
	out := (*p)[:0]
	for _, kv := range *p {
		if strings.EqualFold(kv.Key, key) {
			if found {
				continue
			}
			found = true
			kv.Value = value
		}
		out = append(out, kv)
	}
	if !found {
		out = append(out, Param{Key: key, Value: value})
	}
	*p = out
}

// Delete removes every pair with key and reports whether there was one.
func (p *Params) Delete(key string) bool {
	found := false
	out := (*p)[:0]
	for _, kv := range *p {
		if strings.EqualFold(kv.Key, key) {
			found = true
			continue
		}
		out = append(out, kv)
	}
	*p = out
	return found
}

// Clone returns a copy that shares nothing with p.
func (p Params) Clone() Params {
	if p == nil {
		return nil
	}
	return append(Params(nil), p...)
}

// Keys returns the keys in order, as written.
func (p Params) Keys() []string {
	keys := make([]string, len(p))
	for i, kv := range p {
		keys[i] = kv.Key
	}
	return keys
}

// String renders the pairs as slurm.conf text, `K=V K2="v w"`: values with
// white space are quoted, '#' and '\' are escaped with a backslash (Slurm
// treats an unescaped '#' as a comment even inside quotes), and an empty
// value is written "". A value that slurm.conf cannot express (a line break,
// or a double quote together with white space or at its start) is written
// with those characters replaced by spaces and single quotes; use
// [Params.Check] to refuse such values instead.
func (p Params) String() string {
	var b strings.Builder
	for i, kv := range p {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv.Key)
		b.WriteByte('=')
		v, err := renderValue(kv.Value)
		if err != nil {
			v, _ = renderValue(strings.NewReplacer("\n", " ", "\r", " ", `"`, "'").Replace(kv.Value))
		}
		b.WriteString(v)
	}
	return b.String()
}

// Check reports the first pair that cannot be written to slurm.conf: a key
// that is not letters, digits, '_' and '.', or a value slurm.conf cannot
// express.
func (p Params) Check() error {
	for _, kv := range p {
		if err := checkPair(kv.Key, kv.Value); err != nil {
			return err
		}
	}
	return nil
}

func checkKey(key string) error {
	if key == "" {
		return &ParseError{Msg: "empty key"}
	}
	if !validKey(key) {
		return &ParseError{Key: key, Msg: fmt.Sprintf("malformed key %q: keys are letters, digits, '_' and '.'", key)}
	}
	return nil
}

func checkPair(key, value string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if _, err := renderValue(value); err != nil {
		return &ParseError{Key: key, Msg: fmt.Sprintf("value of %q: %v", key, err)}
	}
	return nil
}

// renderValue writes one value so that both this package and Slurm read it
// back unchanged.
func renderValue(v string) (string, error) {
	if v == "" {
		return `""`, nil
	}
	quote := false
	hasQuote := false
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\n' || c == '\r':
			return "", fmt.Errorf("slurm.conf values cannot contain line breaks")
		case c == '\\' || c == '#':
			b.WriteByte('\\')
		case c == '"':
			hasQuote = true
		case isSpace(c):
			quote = true
		}
		b.WriteByte(c)
	}
	if hasQuote && (quote || v[0] == '"') {
		return "", fmt.Errorf("slurm.conf cannot express a value with a double quote at its start or next to white space: %q", v)
	}
	if quote {
		return `"` + b.String() + `"`, nil
	}
	return b.String(), nil
}

// ParseParams parses one line of key=value words, such as
// "DefaultTime=45:00 MaxTime=1:00:00" or `Weight=10 Features=a,b Reason="x y"`.
// Quotes and backslash escapes are honoured; comments, line breaks and
// continuations are refused. A key given twice (in any case) is an error.
// Keys are not checked against any list: see [ValidatePartitionParams] and
// [ValidateNodeParams]. Errors are *[ParseError] with Line 1 and the column.
func ParseParams(line string) (Params, error) {
	toks, err := scanSingle(line)
	if err != nil {
		return nil, err
	}
	if err := checkDuplicates(toks, nil); err != nil {
		return nil, err
	}
	return tokensToParams(toks), nil
}

func scanSingle(line string) ([]token, error) {
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		return nil, errorf(1, i+1, "", "line breaks are not allowed here")
	}
	if strings.TrimSpace(line) == "" {
		return nil, nil
	}
	lg, perr := scanLogical([]physLine{{content: []byte(line), num: 1}}, 0, true)
	if perr != nil {
		return nil, perr
	}
	return lg.tokens, nil
}

func tokensToParams(toks []token) Params {
	if len(toks) == 0 {
		return nil
	}
	p := make(Params, len(toks))
	for i, t := range toks {
		p[i] = Param{Key: t.key, Value: t.value}
	}
	return p
}

// checkDuplicates refuses a key that appears twice; aliases maps a lower-case
// key to the lower-case key it stands for (Feature → features).
func checkDuplicates(toks []token, aliases map[string]string) error {
	seen := map[string]token{}
	for _, t := range toks {
		k := strings.ToLower(t.key)
		if a, ok := aliases[k]; ok {
			k = a
		}
		if prev, ok := seen[k]; ok {
			where := ""
			if prev.col > 0 {
				where = fmt.Sprintf(" at column %d", prev.col)
			}
			if strings.EqualFold(prev.key, t.key) {
				return errorf(t.line, t.col, t.key, "duplicate key %q (first given%s)", t.key, where)
			}
			return errorf(t.line, t.col, t.key, "duplicate key %q: it means the same as %q given%s", t.key, prev.key, where)
		}
		seen[k] = t
	}
	return nil
}
