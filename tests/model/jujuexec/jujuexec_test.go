package jujuexec

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJujuExec: each command line of Cases gives its answer (the referee checks the same
// answers against Juju's cmd/jujud/run).
func TestJujuExec(t *testing.T) {
	for _, c := range Cases {
		t.Run(c.Name, func(t *testing.T) {
			data, err := os.MkdirTemp("", "jx") // short: t.TempDir's path may not fit a socket address
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(data) })
			m, err := NewFakeMachine(data, c)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			got, err := m.Run(c)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.Want, got); d != "" {
				t.Errorf("juju-exec %q (-want +got):\n%s", c.Args, d)
			}
		})
	}
}

func TestJujuExecDataDir(t *testing.T) {
	look := func(name string) (string, error) {
		if name == "juju-exec" {
			return "/srv/m1/var/lib/juju/tools/unit-a-0/juju-exec", nil
		}
		return "", errors.New("not found")
	}
	for _, tt := range []struct{ argv0, want string }{
		{"/var/lib/juju/tools/unit-slurmctld-0/juju-exec", "/var/lib/juju"},
		{"juju-exec", "/srv/m1/var/lib/juju"},
		{"/usr/bin/juju-exec", "/var/lib/juju"},
		{"./juju-exec", "/var/lib/juju"},
	} {
		if got := DataDir(tt.argv0, look); got != tt.want {
			t.Errorf("DataDir(%q) = %q, want %q", tt.argv0, got, tt.want)
		}
	}
}

// FuzzUnitName: a unit name is its own name and its tag's; nothing else parses to a name
// with other than one slash or that is not a valid name (the referee fuzzes UnitName against
// Juju's github.com/juju/names).
func FuzzUnitName(f *testing.F) {
	for _, s := range []string{"slurmd/0", "unit-slurmd-3", "unit-a-b-c-10", "a/01", "unit-a-", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := UnitName(s)
		if err != nil {
			return
		}
		if !unitRE.MatchString(u) {
			t.Fatalf("UnitName(%q) = %q, not a unit name", s, u)
		}
		if back, err := UnitName(UnitTag(u)); err != nil || back != u {
			t.Fatalf("UnitName(UnitTag(%q)) = %q, %v", u, back, err)
		}
		if strings.HasPrefix(s, "unit-") && UnitTag(u) != s {
			t.Fatalf("tag %q gave %q, whose tag is %q", s, u, UnitTag(u))
		}
	})
}
