package slurmconf

import (
	"bytes"
	"strings"
)

// physLine is one physical line of input.
type physLine struct {
	content []byte // without the terminator
	eol     string // "\n", "\r\n" or "" (last line without newline)
	num     int    // 1-based line number
}

// splitLines splits data into physical lines, keeping each terminator.
func splitLines(data []byte) []physLine {
	var lines []physLine
	num := 1
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			lines = append(lines, physLine{content: data, num: num})
			break
		}
		content, eol := data[:i], "\n"
		if i > 0 && data[i-1] == '\r' {
			content, eol = data[:i-1], "\r\n"
		}
		lines = append(lines, physLine{content: content, eol: eol, num: num})
		data = data[i+1:]
		num++
	}
	return lines
}

// token is one key=value pair with the position of its key and value.
type token struct {
	key, value string
	line, col  int // position of the key
	vline      int // position of the value
	vcol       int
}

// logical is one logical line: one or more physical lines joined by
// continuations.
type logical struct {
	tokens    []token
	comments  []string // comment texts, each starting with '#'
	include   string   // file name of an Include directive
	inclKey   string   // the word "Include" as written
	isInclude bool
	indent    string // leading white space of the first physical line
	last      int    // index of the last physical line of this logical line
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'
}

func isKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.'
}

// validKey reports whether every byte of k is a key character.
func validKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if !isKeyChar(k[i]) {
			return false
		}
	}
	return true
}

// reader yields the characters of one logical line, joining continuation
// lines and decoding backslash escapes. A backslash followed only by white
// space (and optionally a comment after white space) up to the end of its
// physical line continues the line, as Slurm does; any other backslash makes
// the next character literal.
type reader struct {
	lines    []physLine
	li       int
	p        int
	end      bool
	comments []string
	single   bool // continuations not allowed (single-line forms)
	err      *ParseError
}

// isCont reports whether the backslash at r.p continues the line.
func (r *reader) isCont() bool {
	rest := r.lines[r.li].content[r.p+1:]
	i := 0
	for i < len(rest) && isSpace(rest[i]) {
		i++
	}
	return i == len(rest) || (i > 0 && rest[i] == '#')
}

// settle moves past continuations and detects the end of the logical line.
func (r *reader) settle() {
	for !r.end {
		c := r.lines[r.li].content
		if r.p >= len(c) {
			r.end = true
			return
		}
		if c[r.p] != '\\' || !r.isCont() {
			return
		}
		if r.single {
			r.err = errorf(r.lines[r.li].num, r.p+1, "", "line continuation is not allowed here")
			r.end = true
			return
		}
		if rest := bytes.TrimLeft(c[r.p+1:], " \t\v\f\r"); len(rest) > 0 {
			r.comments = append(r.comments, string(rest))
		}
		if r.li+1 >= len(r.lines) {
			r.p = len(c)
			r.end = true
			return
		}
		r.li++
		r.p = 0
	}
}

// peek returns the next character; lit is true when it was escaped.
func (r *reader) peek() (c byte, lit, ok bool) {
	r.settle()
	if r.end {
		return 0, false, false
	}
	content := r.lines[r.li].content
	if content[r.p] == '\\' && r.p+1 < len(content) {
		return content[r.p+1], true, true
	}
	return content[r.p], false, true
}

// advance consumes the character returned by peek.
func (r *reader) advance() {
	content := r.lines[r.li].content
	if content[r.p] == '\\' && r.p+1 < len(content) {
		r.p += 2
		return
	}
	r.p++
}

// pos is the position of the next character.
func (r *reader) pos() (line, col int) {
	r.settle()
	return r.lines[r.li].num, r.p + 1
}

// takeComment records the rest of the physical line as a comment and ends
// the logical line.
func (r *reader) takeComment() {
	content := r.lines[r.li].content
	j := r.p // keep the white space before the comment, for rendering
	for j > 0 && isSpace(content[j-1]) {
		j--
	}
	if j < r.p && j > 0 && content[j-1] == '\\' {
		j++ // that white space may be escaped: leave it to the value
	}
	r.comments = append(r.comments, string(content[j:]))
	r.p = len(r.lines[r.li].content)
	r.end = true
}

func (r *reader) skipSpace() {
	for {
		c, lit, ok := r.peek()
		if !ok || lit || !isSpace(c) {
			return
		}
		r.advance()
	}
}

// atBoundary reports whether the next character ends a word: white space, a
// comment or the end of the line.
func (r *reader) atBoundary() bool {
	c, lit, ok := r.peek()
	return !ok || (!lit && (isSpace(c) || c == '#'))
}

// scanLogical tokenizes the logical line starting at physical line start.
// With single set, continuations and comments are refused (single-line
// forms such as "Weight=10 Features=a,b").
func scanLogical(lines []physLine, start int, single bool) (logical, *ParseError) {
	r := &reader{lines: lines, li: start, single: single}
	var lg logical
	first := lines[start].content
	lg.indent = string(first[:len(first)-len(bytes.TrimLeft(first, " \t\v\f\r"))])
	fail := func(e *ParseError) (logical, *ParseError) {
		if r.err != nil {
			return lg, r.err
		}
		return lg, e
	}
	for {
		r.skipSpace()
		c, lit, ok := r.peek()
		if !ok {
			break
		}
		if c == '#' && !lit {
			if single {
				line, col := r.pos()
				return fail(errorf(line, col, "", "comments are not allowed here"))
			}
			r.takeComment()
			break
		}
		// Key.
		kline, kcol := r.pos()
		var key strings.Builder
		for {
			c, lit, ok := r.peek()
			if !ok || (!lit && (isSpace(c) || c == '=' || c == '#')) {
				break
			}
			key.WriteByte(c)
			r.advance()
		}
		k := key.String()
		if len(lg.tokens) == 0 && !single && strings.EqualFold(k, "include") && !lg.isInclude {
			if c, lit, ok := r.peek(); ok && !lit && isSpace(c) {
				return scanInclude(r, lg, k, kline, kcol)
			}
		}
		c, lit, ok = r.peek()
		if !ok || lit || c != '=' {
			if r.err != nil {
				return fail(nil)
			}
			return fail(errorf(kline, kcol, k, "malformed key=value %q: missing '=' after the key", k))
		}
		if k == "" {
			return fail(errorf(kline, kcol, "", "malformed key=value: missing key before '='"))
		}
		if !validKey(k) {
			return fail(errorf(kline, kcol, k, "malformed key %q: keys are letters, digits, '_' and '.'", k))
		}
		r.advance() // '='
		vline, vcol := r.pos()
		var val strings.Builder
		c, lit, ok = r.peek()
		switch {
		case ok && !lit && c == '"':
			r.advance()
			closed := false
			for {
				c, lit, ok := r.peek()
				if !ok {
					break
				}
				r.advance()
				if c == '"' && !lit {
					closed = true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return fail(errorf(vline, vcol, k, "unbalanced quotes in the value of %q", k))
			}
			if !r.atBoundary() {
				l, cc := r.pos()
				return fail(errorf(l, cc, k, "unexpected text after the closing quote of %q", k))
			}
		case r.atBoundary():
			return fail(errorf(vline, vcol, k, "empty value for key %q (write %s=\"\" for an empty value)", k, k))
		default:
			for !r.atBoundary() {
				c, _, _ := r.peek()
				val.WriteByte(c)
				r.advance()
			}
		}
		lg.tokens = append(lg.tokens, token{key: k, value: val.String(), line: kline, col: kcol, vline: vline, vcol: vcol})
	}
	if r.err != nil {
		return lg, r.err
	}
	lg.comments = r.comments
	lg.last = r.li
	return lg, nil
}

func scanInclude(r *reader, lg logical, word string, line, col int) (logical, *ParseError) {
	lg.isInclude = true
	lg.inclKey = word
	r.skipSpace()
	var path strings.Builder
	for !r.atBoundary() {
		c, _, _ := r.peek()
		path.WriteByte(c)
		r.advance()
	}
	if path.Len() == 0 {
		return lg, errorf(line, col, word, "%s needs a file name", word)
	}
	lg.include = path.String()
	r.skipSpace()
	if c, lit, ok := r.peek(); ok {
		if c != '#' || lit {
			l, cc := r.pos()
			return lg, errorf(l, cc, word, "unexpected text after the %s file name", word)
		}
		r.takeComment()
	}
	if r.err != nil {
		return lg, r.err
	}
	lg.comments = r.comments
	lg.last = r.li
	return lg, nil
}
