package slurmconf_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/charmed-slurm/operators/libs/slurmconf"
	"github.com/google/go-cmp/cmp"
)

// FuzzParse checks that Parse never panics, that Bytes∘Parse is the
// identity, and that a document edited through the API renders to text that
// parses back to the same entries.
func FuzzParse(f *testing.F) {
	for _, path := range corpus(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{"", "\\", "A=\"\\\n", "Include", "A=1 \\ #c\nB=2", "#\\\n", "A=\\\\\\\n1", "X=\"#\" # y", "a\r\rb=c\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := slurmconf.Parse(data)
		if err != nil {
			return
		}
		if got := d.Bytes(); !bytes.Equal(got, data) {
			t.Fatalf("round trip differs:\n%s", cmp.Diff(string(data), string(got)))
		}
		_ = d.Validate()
		// Re-render every entry and global line, then parse again.
		for _, p := range d.Partitions() {
			p.Params = append(p.Params, slurmconf.Param{Key: "FuzzKey", Value: "v"})
			if d.SetPartition(p) != nil {
				return
			}
			p.Params = p.Params[:len(p.Params)-1]
			if err := d.SetPartition(p); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range d.NodeSets() {
			n.Params = append(n.Params, slurmconf.Param{Key: "FuzzKey", Value: "v"})
			if d.SetNodeSet(n) != nil {
				return
			}
			n.Params = n.Params[:len(n.Params)-1]
			if err := d.SetNodeSet(n); err != nil {
				t.Fatal(err)
			}
		}
		for _, kv := range d.Params() {
			if d.Set(kv.Key, kv.Value+"x") != nil {
				return
			}
		}
		out := d.Bytes()
		again, err := slurmconf.Parse(out)
		if err != nil {
			t.Fatalf("rendered document does not parse: %v\n%q", err, out)
		}
		if !bytes.Equal(again.Bytes(), out) {
			t.Fatal("second round trip differs")
		}
		for _, p := range d.Partitions() {
			q, ok := again.Partition(p.Name)
			if !ok {
				t.Fatalf("partition %q lost", p.Name)
			}
			if first, _ := d.Partition(p.Name); !cmp.Equal(first, q) {
				t.Fatalf("partition %q changed on re-parse:\n%s", p.Name, cmp.Diff(first, q))
			}
		}
		for _, kv := range d.Params() {
			if v, _ := again.Get(kv.Key); v != kv.Value {
				// Only the last occurrence counts; Set left one.
				t.Fatalf("global %q = %q after re-parse, want %q", kv.Key, v, kv.Value)
			}
		}
	})
}

// FuzzParseParams checks that ParseParams never panics and that rendering
// what it parsed gives text that parses to the same pairs and renders the
// same again.
func FuzzParseParams(f *testing.F) {
	for _, s := range []string{
		"DefaultTime=45:00 MaxTime=1:00:00", "Weight=10 Features=a,b", `Reason="a b" X=""`,
		`Reason=a\#b\\c`, `X=a"b`, `A="`, `A=1 a=2`, "A=", `\`, `A=\"b`, "A=\x00", `A="x"y`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		p, err := slurmconf.ParseParams(line)
		if err != nil || p.Check() != nil {
			return
		}
		s := p.String()
		q, err := slurmconf.ParseParams(s)
		if err != nil {
			t.Fatalf("ParseParams(%q) = %v (rendered from %q)", s, err, line)
		}
		if d := cmp.Diff(p, q); d != "" {
			t.Fatalf("re-parse of %q (-first +second):\n%s", s, d)
		}
		if s2 := q.String(); s2 != s {
			t.Fatalf("render not stable: %q then %q", s, s2)
		}
		_ = slurmconf.ValidateNodeParams(p)
		_ = slurmconf.ValidatePartitionParams(p)
	})
}
