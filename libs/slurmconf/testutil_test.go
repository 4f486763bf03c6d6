package slurmconf_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/libs/slurmconf"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// golden compares got with the golden file, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("cannot read golden file (run with -update to create it): %v", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, d)
	}
}

// describe prints what the public API reads from a document.
func describe(d *slurmconf.Doc) string {
	var b strings.Builder
	for _, p := range d.Params() {
		fmt.Fprintf(&b, "global %q=%q\n", p.Key, p.Value)
	}
	for _, inc := range d.Includes() {
		fmt.Fprintf(&b, "include %q\n", inc)
	}
	params := func(p slurmconf.Params) string {
		var parts []string
		for _, kv := range p {
			parts = append(parts, fmt.Sprintf("%q=%q", kv.Key, kv.Value))
		}
		return strings.Join(parts, " ")
	}
	for _, n := range d.Nodes() {
		fmt.Fprintf(&b, "node %q %s\n", n.Name, params(n.Params))
	}
	for _, n := range d.DownNodesEntries() {
		fmt.Fprintf(&b, "downnodes %q %s\n", n.Name, params(n.Params))
	}
	for _, n := range d.NodeSets() {
		fmt.Fprintf(&b, "nodeset %q %s\n", n.Name, params(n.Params))
	}
	for _, p := range d.Partitions() {
		fmt.Fprintf(&b, "partition %q %s\n", p.Name, params(p.Params))
	}
	for _, f := range d.FrontendNames() {
		fmt.Fprintf(&b, "frontend %q\n", f)
	}
	if err := d.Validate(); err != nil {
		fmt.Fprintf(&b, "validate: %v\n", err)
	} else {
		b.WriteString("validate: ok\n")
	}
	return b.String()
}

func corpus(t testing.TB) []string {
	files, err := filepath.Glob("testdata/corpus/*.conf")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	return files
}

func mustParse(t testing.TB, data []byte) *slurmconf.Doc {
	t.Helper()
	d, err := slurmconf.Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return d
}
