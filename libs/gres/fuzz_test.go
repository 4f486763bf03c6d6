package gres_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/gres"
)

// FuzzParseGres: a parsed Gres= value is valid, renders back to a value
// that parses to the same set, and never carries files.
func FuzzParseGres(f *testing.F) {
	for _, s := range []string{"", "(null)", "gpu:tesla_t4:2", "gpu:2", "gpu:a100", "fpga", "bandwidth:20G",
		"gpu:v100:2,gpu:t4:1,nic:1", "gpu:0", "gpu:a:1:2", "gpu:t4:1,gpu:2", "gpu:99999999999P", "gpu:1k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := gres.ParseGres(s)
		if err != nil {
			return
		}
		for _, r := range set {
			if len(r.Files) != 0 || r.Count == 0 {
				t.Fatalf("ParseGres(%q): %+v", s, r)
			}
		}
		again, err := gres.ParseGres(set.String())
		if err != nil {
			t.Fatalf("ParseGres(%q) rendered %q, which does not parse: %v", s, set.String(), err)
		}
		if d := cmp.Diff(set, again); d != "" {
			t.Fatalf("ParseGres(%q) round trip through %q (-first +second):\n%s", s, set.String(), d)
		}
	})
}

// FuzzParseCount: a parsed count formats back to itself.
func FuzzParseCount(f *testing.F) {
	for _, s := range []string{"1", "1024", "1k", "20G", "0", "18446744073709551615", "16383P", "16384P"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := gres.ParseCount(s)
		if err != nil {
			return
		}
		if m, err := gres.ParseCount(gres.FormatCount(n)); err != nil || m != n {
			t.Fatalf("ParseCount(%q) = %d, formatted %q parses to %d, %v", s, n, gres.FormatCount(n), m, err)
		}
	})
}

// FuzzParseDeclaration: a parsed declaration is a valid set whose Gres=
// value parses, with one gres.conf line per device file.
func FuzzParseDeclaration(f *testing.F) {
	for _, s := range []string{"", "Name=fpga Type=u250 File=/dev/xclmgmt[0-1]", "Name=bandwidth Count=20G",
		"name=nic file=/dev/a,/dev/b;\nNAME=gpu TYPE=mi100 FILE=/dev/dri/renderD128 COUNT=1", "NodeName=x Name=nic Count=1",
		"Name=nic Count=1; Name=nic Count=2", "Name=fpga File=/dev/f[1-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := gres.ParseDeclaration(s)
		if err != nil {
			return
		}
		if err := set.Validate(); err != nil {
			t.Fatalf("ParseDeclaration(%q) gave an invalid set: %v", s, err)
		}
		if _, err := gres.ParseGres(set.String()); err != nil {
			t.Fatalf("ParseDeclaration(%q): Gres %q does not parse: %v", s, set.String(), err)
		}
		files := 0
		for _, r := range set {
			files += len(r.Files)
		}
		if n := len(set.ConfLines("node-0")); n != files {
			t.Fatalf("ParseDeclaration(%q): %d gres.conf lines for %d files", s, n, files)
		}
	})
}

// FuzzParseNvidiaSMI: parsed devices have distinct minor numbers, names,
// and a GRES type that is valid or empty; a set built from them validates.
func FuzzParseNvidiaSMI(f *testing.F) {
	for _, s := range []string{"", smiT4x2, "minor_number, name, uuid\n3, NVIDIA A100-SXM4-40GB, GPU-a\n",
		`2, "Odd, Name", GPU-b` + "\n", "[N/A], Tesla T4, GPU-a\n", "0, A, GPU-a\n0, B, GPU-b\n", "0, \"unterminated\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		devs, err := gres.ParseNvidiaSMI(data)
		if err != nil {
			return
		}
		var minors []int
		det := gres.Detection{}
		for _, d := range devs {
			if d.Model == "" || d.Minor < 0 || slices.Contains(minors, d.Minor) {
				t.Fatalf("ParseNvidiaSMI(%q): bad device %+v", data, d)
			}
			minors = append(minors, d.Minor)
			d.File = "/dev/nvidia" + strconv.Itoa(d.Minor)
			det.GPUs = append(det.GPUs, d)
		}
		if err := det.Resources().Validate(); err != nil {
			t.Fatalf("ParseNvidiaSMI(%q): resources invalid: %v", data, err)
		}
	})
}

// FuzzTypeName: a type name is empty or valid in a Gres= value.
func FuzzTypeName(f *testing.F) {
	for _, s := range []string{"Tesla T4", "4090", "", "NVIDIA H100 80GB HBM3", "é:x,y=z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, model string) {
		typ := gres.TypeName(model)
		if typ == "" {
			return
		}
		if _, err := gres.ParseGres("gpu:" + typ + ":1"); err != nil {
			t.Fatalf("TypeName(%q) = %q, not a valid type: %v", model, typ, err)
		}
	})
}
