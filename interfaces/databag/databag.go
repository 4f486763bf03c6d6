// Package databag holds what the relation interfaces share about their relation data: the
// error that names a value that cannot be decoded (or encoded). Each interface package
// names this type as its own DataError, so a charm matches *slurmd.DataError or
// *mysqlclient.DataError as before; Relation says which relation's data it is.
package databag

import (
	"errors"
	"fmt"
)

// Error reports relation data that cannot be decoded (or encoded). Field names the databag
// key (or a secret's content key, or a field inside a JSON value); Relation names the
// relation ("slurmd", "database") in the message.
type Error struct {
	Relation string
	Field    string
	Msg      string
	Err      error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("invalid %q in %s relation data: %s", e.Field, e.Relation, e.Msg)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Renamed is err with its *Error, when it holds one, naming relation instead: an interface
// that decodes with another's code (sackd with slurmd's) names itself. The *Error is
// returned alone, as the interface's own decoding returns it; other errors come back as
// they are.
func Renamed(err error, relation string) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	r := *e
	r.Relation = relation
	return &r
}
