package slurmconf

import "fmt"

// ParseError reports bad slurm.conf text or a bad parameter. Line and Col are
// 1-based (Col counts bytes); both are zero when the error concerns a value
// that has no position, such as a [Params] checked by [ValidateNodeParams].
// Key names the offending key when there is one.
//
// Callers inspect it with errors.As:
//
//	var pe *slurmconf.ParseError
//	if errors.As(err, &pe) {
//		fmt.Println(pe.Line, pe.Col, pe.Key)
//	}
type ParseError struct {
	Line int
	Col  int
	Key  string
	Msg  string
}

// Error formats the error as "line 3, column 15: unknown partition key "MaxTme"".
func (e *ParseError) Error() string {
	switch {
	case e.Line > 0 && e.Col > 0:
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	case e.Col > 0:
		return fmt.Sprintf("column %d: %s", e.Col, e.Msg)
	}
	return e.Msg
}

func errorf(line, col int, key, format string, args ...any) *ParseError {
	return &ParseError{Line: line, Col: col, Key: key, Msg: fmt.Sprintf(format, args...)}
}
