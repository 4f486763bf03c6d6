package hostlist_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/libs/hostlist"
	"github.com/google/go-cmp/cmp"
)

func TestExpand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"issue example", "node[01-03,7],gpu[1-2]", []string{"node01", "node02", "node03", "node7", "gpu1", "gpu2"}},
		{"plain", "a,b", []string{"a", "b"}},
		{"white space separates", "a b\tc\nd", []string{"a", "b", "c", "d"}},
		{"empty items skipped", ",a,,b,", []string{"a", "b"}},
		{"empty", "", nil},
		{"padding from lower bound", "n[8-10]", []string{"n8", "n9", "n10"}},
		{"padding kept", "n[008-010]", []string{"n008", "n009", "n010"}},
		{"single number", "n[5]", []string{"n5"}},
		{"digits before", "r1n[1-2]", []string{"r1n1", "r1n2"}},
		{"brackets side by side", "a[1-2][3-4]", []string{"a13", "a14", "a23", "a24"}},
		{"padding from lower bound only", "n[1-02]", []string{"n1", "n2"}},
		{"cartesian product", "rack[1-2]-node[01-02]", []string{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"}},
		{"no prefix", "[1-3]", []string{"1", "2", "3"}},
		{"order and duplicates kept", "b,a,b", []string{"b", "a", "b"}},
		{"zero", "n[0-1]", []string{"n0", "n1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := hostlist.Expand(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Expand(%q) (-want +got):\n%s", tt.in, d)
			}
		})
	}
}

func TestExpandErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"text after bracket", "n[1-2]-ib", `invalid hostlist name "n[1-2]-ib": text after the last bracket (Slurm 22.05 refuses it)`},
		{"unclosed", "n[1-2", `invalid hostlist "n[1-2": unclosed '['`},
		{"unmatched", "n1-2]", `invalid hostlist "n1-2]": unmatched ']' at offset 4`},
		{"nested", "n[1[2]]", `invalid hostlist "n[1[2]]": nested '[' at offset 3`},
		{"empty brackets", "n[]", `invalid hostlist name "n[]": empty brackets`},
		{"down", "n[3-1]", `invalid hostlist name "n[3-1]": range "3-1" goes down`},
		{"not numeric", "n[a-b]", `invalid hostlist name "n[a-b]": range "a-b" is not numeric`},
		{"three parts", "n[1-2-3]", `invalid hostlist name "n[1-2-3]": range "1-2-3" is not numeric`},
		{"missing bound", "n[1-]", `invalid hostlist name "n[1-]": range "1-" is missing a number`},
		{"empty range", "n[1,,2]", `invalid hostlist name "n[1,,2]": range "" is missing a number`},
		{"step", "n[1-9:2]", `invalid hostlist name "n[1-9:2]": range "1-9:2" is not numeric`},
		{"too long number", "n[1-1234567890123456789]", `invalid hostlist name "n[1-1234567890123456789]": number "1234567890123456789" in range "1-1234567890123456789" is too long`},
		{"huge range", "n[1-70000]", `invalid hostlist name "n[1-70000]": range "1-70000" has more than 65536 names`},
		{"huge product", "a[1-1000]b[1-1000]", `hostlist name "a[1-1000]b[1-1000]" expands to more than 65536 names`},
		{"huge total", "a[1-40000],b[1-40000]", `hostlist name "b[1-40000]" expands to more than 65536 names`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := hostlist.Expand(tt.in)
			if err == nil {
				t.Fatalf("Expand(%q) = %v, want an error", tt.in, got)
			}
			if err.Error() != tt.want {
				t.Errorf("error %q, want %q", err, tt.want)
			}
		})
	}
}

func TestExpandLimit(t *testing.T) {
	t.Parallel()
	got, err := hostlist.Expand(fmt.Sprintf("n[1-%d]", hostlist.MaxHosts))
	if err != nil || len(got) != hostlist.MaxHosts {
		t.Fatalf("Expand of exactly MaxHosts: %d names, %v", len(got), err)
	}
	if _, err := hostlist.Expand(fmt.Sprintf("n[1-%d],x", hostlist.MaxHosts)); err == nil {
		t.Error("Expand of MaxHosts+1 names succeeded")
	}
}

func TestCompress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"issue example", []string{"node01", "node02", "node03", "node7", "gpu1", "gpu2"}, "node[01-03,7],gpu[1-2]"},
		{"single", []string{"n1"}, "n1"},
		{"no digits", []string{"login", "ctl"}, "login,ctl"},
		{"width grows naturally", []string{"n8", "n9", "n10", "n11"}, "n[8-11]"},
		{"padding mismatch splits", []string{"n8", "n09", "n10"}, "n[8,09-10]"},
		{"order kept", []string{"n3", "n1", "n2"}, "n[3,1-2]"},
		{"duplicates kept", []string{"n1", "n1"}, "n[1,1]"},
		{"no bracket before a suffix", []string{"n1-ib", "n2-ib", "n3"}, "n1-ib,n2-ib,n3"},
		{"interleaved prefixes", []string{"a1", "b1", "a2"}, "a1,b1,a2"},
		{"empty", nil, ""},
		{"all digits", []string{"1", "2"}, "[1-2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := hostlist.Compress(tt.in)
			if got != tt.want {
				t.Errorf("Compress(%q) = %q, want %q", tt.in, got, tt.want)
			}
			back, err := hostlist.Expand(got)
			if err != nil {
				t.Fatal(err)
			}
			if len(tt.in) == 0 {
				tt.in = nil
			}
			if d := cmp.Diff(tt.in, back); d != "" {
				t.Errorf("Expand(Compress) (-want +got):\n%s", d)
			}
		})
	}
}

func TestCompressSorted(t *testing.T) {
	t.Parallel()
	got := hostlist.CompressSorted([]string{"n10", "n2", "n1", "n2", "m1", "n09"})
	if want := "m1,n[1-2,09-10]"; got != want {
		t.Errorf("CompressSorted = %q, want %q", got, want)
	}
}

// FuzzExpand checks that Expand never panics and that Compress∘Expand is
// stable: expanding the compressed form gives the same names.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"node[01-03,7],gpu[1-2]", "rack[1-2]-node[01-02]", "n[8-10]", "r[1-2]n[1-2]", "a,b c", "[0-1]", "n[1-2", "a1,a01,a1", "n[99999-100001]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		names, err := hostlist.Expand(expr)
		if err != nil {
			return
		}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, "[], \t\r\n") {
				t.Fatalf("Expand(%q) gave unexpressible name %q", expr, n)
			}
		}
		c := hostlist.Compress(names)
		back, err := hostlist.Expand(c)
		if err != nil {
			t.Fatalf("Expand(Compress(Expand(%q))) = %v (compressed %q)", expr, err, c)
		}
		if !slices.Equal(names, back) { // cmp.Diff only on failure: it is slow on 64k names
			t.Fatalf("Compress(%q) = %q expands differently:\n%s", names, c, cmp.Diff(names, back))
		}
		if c2 := hostlist.Compress(back); c2 != c {
			t.Fatalf("Compress not stable: %q then %q", c, c2)
		}
	})
}
