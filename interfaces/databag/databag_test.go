package databag_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/charmed-slurm/operators/interfaces/databag"
)

func TestError(t *testing.T) {
	cause := errors.New("boom")
	for _, tt := range []struct {
		name string
		err  *databag.Error
		want string
	}{
		{"message", &databag.Error{Relation: "slurmd", Field: "controllers", Msg: "empty list"},
			`invalid "controllers" in slurmd relation data: empty list`},
		{"cause", &databag.Error{Relation: "database", Field: "secret-user", Msg: "cannot read secret x", Err: cause},
			`invalid "secret-user" in database relation data: cannot read secret x: boom`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if (tt.err.Err != nil) != errors.Is(tt.err, cause) {
				t.Errorf("errors.Is(%v, cause) = %v", tt.err, errors.Is(tt.err, cause))
			}
		})
	}
}

func TestRenamed(t *testing.T) {
	orig := &databag.Error{Relation: "slurmd", Field: "version", Msg: "missing"}
	got := databag.Renamed(fmt.Errorf("cannot decode: %w", orig), "sackd")
	var de *databag.Error
	if !errors.As(got, &de) || de.Relation != "sackd" || de.Field != "version" || de.Msg != "missing" {
		t.Errorf("Renamed = %#v, want the error on relation sackd", got)
	}
	if orig.Relation != "slurmd" {
		t.Errorf("Renamed changed the original: %+v", orig)
	}
	other := errors.New("not a data error")
	if got := databag.Renamed(other, "sackd"); got != other {
		t.Errorf("Renamed(other) = %v, want it unchanged", got)
	}
	if got := databag.Renamed(nil, "sackd"); got != nil {
		t.Errorf("Renamed(nil) = %v, want nil", got)
	}
}
