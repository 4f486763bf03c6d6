package slurmconf_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/libs/slurmconf"
	"github.com/google/go-cmp/cmp"
)

// TestRoundTrip parses every corpus file, renders it unedited, and checks
// the bytes are identical; what the API reads is compared with a golden
// description.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, path := range corpus(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			in, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			d := mustParse(t, in)
			if got := d.Bytes(); !bytes.Equal(got, in) {
				t.Errorf("round trip differs:\n%s", cmp.Diff(string(in), string(got)))
			}
			golden(t, strings.TrimSuffix(path, ".conf")+".golden", []byte(describe(d)))
		})
	}
}

// TestEdit applies edits to corpus files and compares the output with golden
// files; the output must parse again and keep its meaning.
func TestEdit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		edit func(*testing.T, *slurmconf.Doc)
	}{{
		name: "change-partition",
		in:   "full-cluster.conf",
		edit: func(t *testing.T, d *slurmconf.Doc) {
			p, ok := d.Partition("batch")
			if !ok {
				t.Fatal("no partition batch")
			}
			p.Params.Set("maxtime", "3-00:00:00")
			p.Params.Delete("OverSubscribe")
			p.Params.Set("State", "DRAIN")
			noErr(t, d.SetPartition(p))
		},
	}, {
		name: "add-nodeset-partition-global",
		in:   "full-cluster.conf",
		edit: func(t *testing.T, d *slurmconf.Doc) {
			noErr(t, d.SetNodeSet(slurmconf.NodeSet{Name: "compute", Params: slurmconf.Params{{Key: "Feature", Value: "compute"}}}))
			noErr(t, d.SetPartition(slurmconf.Partition{Name: "compute", Params: slurmconf.Params{
				{Key: "Nodes", Value: "compute"}, {Key: "MaxTime", Value: "1:00:00"}, {Key: "State", Value: "UP"}}}))
			noErr(t, d.Set("SlurmctldParameters", "enable_configless"))
			noErr(t, d.Set("MaxNodeCount", "100"))
			noErr(t, d.Set("slurmctlddebug", "debug"))
		},
	}, {
		name: "delete-entries",
		in:   "full-cluster.conf",
		edit: func(t *testing.T, d *slurmconf.Doc) {
			mustTrue(t, d.DeletePartition("bigmem"))
			mustTrue(t, d.DeletePartition("gpu"))
			mustTrue(t, d.Delete("JobAcctGatherFrequency"))
			if d.DeletePartition("nope") {
				t.Error("DeletePartition(nope) = true")
			}
		},
	}, {
		name: "set-slurmctldhost-collapses",
		in:   "full-cluster.conf",
		edit: func(t *testing.T, d *slurmconf.Doc) {
			noErr(t, d.Set("SlurmctldHost", "ctl9"))
		},
	}, {
		name: "add-second-controller",
		in:   "include.conf",
		edit: func(t *testing.T, d *slurmconf.Doc) {
			noErr(t, d.Add("SlurmctldHost", "lab-ctl2"))
			noErr(t, d.AddInclude("/etc/slurm/partitions/new.conf"))
			noErr(t, d.AddInclude("/etc/slurm/nodes.conf")) // already there: no-op
			mustTrue(t, d.DeleteInclude("partitions/gpu.conf"))
		},
	}, {
		name: "edit-continued-line",
		in:   "continuations.conf",
		edit: func(t *testing.T, d *slurmconf.Doc) {
			p, _ := d.Partition("long")
			p.Params.Set("State", "DOWN")
			noErr(t, d.SetPartition(p))
		},
	}, {
		name: "crlf-kept",
		in:   "crlf.conf",
		edit: func(t *testing.T, d *slurmconf.Doc) {
			p, _ := d.Partition("p")
			p.Params.Set("MaxTime", "10")
			noErr(t, d.SetPartition(p))
			noErr(t, d.Set("MinJobAge", "10"))
		},
	}, {
		name: "append-after-missing-newline",
		in:   "no-trailing-newline.conf",
		edit: func(t *testing.T, d *slurmconf.Doc) {
			noErr(t, d.SetPartition(slurmconf.Partition{Name: "new", Params: slurmconf.Params{{Key: "Nodes", Value: "ALL"}}}))
		},
	}, {
		name: "quoting-on-render",
		in:   "quoted.conf",
		edit: func(t *testing.T, d *slurmconf.Doc) {
			p, _ := d.Partition("q")
			p.Params.Set("AllowAccounts", `rack #4 \ row "B"`) // '#' and '\' escaped; quote mid-value kept
			err := d.SetPartition(p)
			var pe *slurmconf.ParseError
			if !errors.As(err, &pe) || pe.Key != "AllowAccounts" {
				t.Fatalf("SetPartition with a quote next to spaces: got %v, want a ParseError for AllowAccounts", err)
			}
			p.Params.Set("AllowAccounts", `rack #4 \ row B`)
			noErr(t, d.SetPartition(p))
			noErr(t, d.SetPartition(slurmconf.Partition{Name: "n4", Params: slurmconf.Params{{Key: "State", Value: "DOWN"}, {Key: "AllowGroups", Value: ""}}}))
			noErr(t, d.Set("PrologSlurmctld", "/usr/bin/true"))
		},
	}, {
		name: "mixed-case-keys",
		in:   "odd-spacing.conf",
		edit: func(t *testing.T, d *slurmconf.Doc) {
			p, ok := d.Partition("Upper")
			if !ok {
				t.Fatal("no partition Upper")
			}
			p.Params.Set("MaxTime", "20") // keeps MAXTIME as written
			noErr(t, d.SetPartition(p))
			noErr(t, d.Set("SLURMDPORT", "7000")) // a line holding three keys
			noErr(t, d.SetNodeSet(slurmconf.NodeSet{Name: "n4", Params: slurmconf.Params{{Key: "Feature", Value: "n4"}}}))
		},
	}, {
		name: "unchanged-set-is-noop",
		in:   "odd-spacing.conf",
		edit: func(t *testing.T, d *slurmconf.Doc) {
			p, _ := d.Partition("Upper")
			noErr(t, d.SetPartition(p))
			noErr(t, d.Set("clustername", "odd"))
		},
	}, {
		name: "new-document",
		in:   "empty.conf",
		edit: func(t *testing.T, d *slurmconf.Doc) {
			noErr(t, d.SetPartition(slurmconf.Partition{Name: "p", Params: slurmconf.Params{{Key: "Nodes", Value: "p"}}}))
			noErr(t, d.SetNodeSet(slurmconf.NodeSet{Name: "p", Params: slurmconf.Params{{Key: "Feature", Value: "p"}}}))
			noErr(t, d.Set("ClusterName", "new"))
			noErr(t, d.Add("SlurmctldHost", "ctl"))
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in, err := os.ReadFile(filepath.Join("testdata/corpus", tt.in))
			if err != nil {
				t.Fatal(err)
			}
			d := mustParse(t, in)
			tt.edit(t, d)
			got := d.Bytes()
			golden(t, filepath.Join("testdata/edit", tt.name+".conf"), got)
			again := mustParse(t, got)
			if d1, d2 := describe(d), describe(again); d1 != d2 {
				t.Errorf("meaning changed on re-parse:\n%s", cmp.Diff(d1, d2))
			}
			// The golden file shows which lines an edit rewrote; an edit that
			// changes nothing must give back the input byte for byte.
			if strings.HasPrefix(tt.name, "unchanged") && !bytes.Equal(got, in) {
				t.Errorf("no-op edit changed the document:\n%s", cmp.Diff(string(in), string(got)))
			}
		})
	}
}

// TestEditTouchesOnlyItsLine checks that changing one partition changes
// exactly one line of a large document.
func TestEditTouchesOnlyItsLine(t *testing.T) {
	t.Parallel()
	in, err := os.ReadFile("testdata/corpus/full-cluster.conf")
	if err != nil {
		t.Fatal(err)
	}
	d := mustParse(t, in)
	p, _ := d.Partition("gpu")
	p.Params.Set("MaxTime", "2-00:00:00")
	noErr(t, d.SetPartition(p))
	inLines := strings.Split(string(in), "\n")
	outLines := strings.Split(string(d.Bytes()), "\n")
	if len(inLines) != len(outLines) {
		t.Fatalf("line count %d → %d", len(inLines), len(outLines))
	}
	var changed []string
	for i := range inLines {
		if inLines[i] != outLines[i] {
			changed = append(changed, outLines[i])
		}
	}
	want := []string{`PartitionName=gpu Nodes=gpu[01-08] MaxTime=2-00:00:00 AllowGroups=gpuusers,admin TRESBillingWeights=CPU=1.0,Mem=0.25G,GRES/gpu=2.0`}
	if d := cmp.Diff(want, changed); d != "" {
		t.Errorf("changed lines (-want +got):\n%s", d)
	}
}

func TestGlobals(t *testing.T) {
	t.Parallel()
	d := mustParse(t, []byte("SlurmctldHost=a\nslurmctldhost=b\nClusterName=x ClusterName=y\n"))
	if got, _ := d.Get("SLURMCTLDHOST"); got != "b" {
		t.Errorf("Get = %q, want the last value b", got)
	}
	if d := cmp.Diff([]string{"a", "b"}, d.GetAll("SlurmctldHost")); d != "" {
		t.Errorf("GetAll (-want +got):\n%s", d)
	}
	if got, _ := d.Get("clustername"); got != "y" {
		t.Errorf("Get(clustername) = %q, want y", got)
	}
	if _, ok := d.Get("Missing"); ok {
		t.Error("Get(Missing) found a value")
	}
	for _, tt := range []struct {
		name, key, value string
	}{
		{"entry key", "PartitionName", "x"},
		{"include", "Include", "x"},
		{"bad key", "Bad Key", "x"},
		{"line break", "Reason", "a\nb"},
	} {
		var pe *slurmconf.ParseError
		if err := d.Set(tt.key, tt.value); !errors.As(err, &pe) {
			t.Errorf("%s: Set(%q, %q) = %v, want a *ParseError", tt.name, tt.key, tt.value, err)
		}
	}
	if d.Delete("nope") {
		t.Error("Delete(nope) = true")
	}
	mustTrue(t, d.Delete("clusterNAME"))
	if got := d.String(); got != "SlurmctldHost=a\nslurmctldhost=b\n" {
		t.Errorf("after Delete: %q", got)
	}
}

func TestEntryErrors(t *testing.T) {
	t.Parallel()
	d := slurmconf.New()
	tests := []struct {
		name string
		err  error
		key  string
	}{
		{"empty name", d.SetPartition(slurmconf.Partition{}), "PartitionName"},
		{"name with space", d.SetNodeSet(slurmconf.NodeSet{Name: "a b"}), "NodeSet"},
		{"duplicate key", d.SetPartition(slurmconf.Partition{Name: "p", Params: slurmconf.Params{{Key: "Nodes", Value: "a"}, {Key: "nodes", Value: "b"}}}), "nodes"},
		{"alias duplicate", d.SetPartition(slurmconf.Partition{Name: "p", Params: slurmconf.Params{{Key: "OverSubscribe", Value: "NO"}, {Key: "Shared", Value: "NO"}}}), "Shared"},
		{"name key in params", d.SetPartition(slurmconf.Partition{Name: "p", Params: slurmconf.Params{{Key: "PartitionName", Value: "m"}}}), "PartitionName"},
		{"bad key", d.SetNodeSet(slurmconf.NodeSet{Name: "n", Params: slurmconf.Params{{Key: "a=b", Value: "m"}}}), "a=b"},
		{"include path", d.AddInclude("a b"), "Include"},
	}
	for _, tt := range tests {
		var pe *slurmconf.ParseError
		if !errors.As(tt.err, &pe) {
			t.Errorf("%s: got %v, want a *ParseError", tt.name, tt.err)
			continue
		}
		if pe.Key != tt.key {
			t.Errorf("%s: Key = %q, want %q (%v)", tt.name, pe.Key, tt.key, pe)
		}
	}
	if got := d.String(); got != "" {
		t.Errorf("failed edits changed the document: %q", got)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	in := "ClusterName=x SlurmctldHost=y\n" +
		"PartitionName=p Nodes=n MaxTme=1\n" +
		"PartitionName=p Nodes=n\n" +
		"PartitionName=DEFAULT State=UP\n" +
		"PartitionName=DEFAULT MaxTime=1\n" +
		"NodeName=n Feature=a Features=b\n" +
		"NodeSet=s Weight=1\n" +
		"DownNodes=n State=DOWN CPUs=1\n" +
		"FrontendName=f Whatever=1\n"
	err := mustParse(t, []byte(in)).Validate()
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var pe *slurmconf.ParseError
		if !errors.As(e, &pe) {
			t.Fatalf("%v is not a *ParseError", e)
		}
		got = append(got, pe.Error())
	}
	want := []string{
		`line 1, column 15: only one global parameter per line: slurmctld refuses "SlurmctldHost" after "ClusterName"`,
		`line 2, column 25: unknown partition key "MaxTme" (did you mean "MaxTime"?)`,
		`line 3, column 15: partition "p" is already defined on line 2`,
		`line 6, column 22: duplicate key "Features": it means the same as "Feature" given at column 12`,
		`line 7, column 11: unknown nodeset key "Weight"`,
		`line 8, column 24: unknown downnodes key "CPUs"`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Validate (-want +got):\n%s", d)
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustTrue(t *testing.T, ok bool) {
	t.Helper()
	if !ok {
		t.Fatal("got false, want true")
	}
}
