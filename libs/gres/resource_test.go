package gres_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/gres"
)

func TestParseGres(t *testing.T) {
	t.Parallel()
	tests := []parseCase[gres.Set]{
		{name: "empty", in: ""},
		{name: "null as scontrol prints it", in: "(null)"},
		{name: "typed", in: "gpu:tesla_t4:2", want: gres.Set{{Name: "gpu", Type: "tesla_t4", Count: 2}}},
		{name: "untyped count", in: "gpu:2", want: gres.Set{{Name: "gpu", Count: 2}}},
		{name: "type without count is one", in: "gpu:a100", want: gres.Set{{Name: "gpu", Type: "a100", Count: 1}}},
		{name: "name only is one", in: "fpga", want: gres.Set{{Name: "fpga", Count: 1}}},
		{name: "suffix", in: "bandwidth:20G", want: gres.Set{{Name: "bandwidth", Count: 20 << 30}}},
		{name: "several", in: "gpu:v100:2,gpu:t4:1,nic:1", want: gres.Set{
			{Name: "gpu", Type: "v100", Count: 2}, {Name: "gpu", Type: "t4", Count: 1}, {Name: "nic", Count: 1}}},
		{name: "zero count", in: "gpu:0", err: "must be at least 1"},
		{name: "type starting with a digit", in: "gpu:2x:1", err: "invalid type"},
		{name: "typed digit", in: "gpu:4090:1", err: "invalid type"},
		{name: "too many parts", in: "gpu:a:1:2", err: "want name[:type][:count]"},
		{name: "empty element", in: "gpu:1,", err: "invalid name"},
		{name: "upper-case name", in: "GPU:1", err: "invalid name"},
		{name: "bad type", in: "gpu:t=4:1", err: "invalid type"},
		{name: "duplicate", in: "gpu:t4:1,gpu:t4:2", err: "gpu:t4 listed twice"},
		{name: "typed and untyped", in: "gpu:t4:1,gpu:2", err: "both typed and untyped"},
		{name: "negative", in: "gpu:-1", err: "invalid type"},
		{name: "overflow", in: "gpu:99999999999P", err: "too large"},
	}
	runParseCases(t, "gres.ParseGres", gres.ParseGres, tests)
}

func TestCount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want uint64
		out  string
	}{
		{"1", 1, "1"},
		{"1023", 1023, "1023"},
		{"1024", 1024, "1K"},
		{"1k", 1024, "1K"},
		{"3M", 3 << 20, "3M"},
		{"20G", 20 << 30, "20G"},
		{"2048G", 2 << 40, "2T"},
		{"1P", 1 << 50, "1P"},
		{"1536", 1536, "1536"},
	}
	for _, tt := range tests {
		got, err := gres.ParseCount(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseCount(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
		if s := gres.FormatCount(got); s != tt.out {
			t.Errorf("FormatCount(%d) = %q, want %q", got, s, tt.out)
		}
	}
	for _, bad := range []string{"", "0", "K", "1.5G", "+1", " 1", "1KB", "-3", "0x10", "18446744073709551616"} {
		if n, err := gres.ParseCount(bad); err == nil {
			t.Errorf("ParseCount(%q) = %d, want an error", bad, n)
		}
	}
}

func TestSetRendering(t *testing.T) {
	t.Parallel()
	set := gres.Set{
		{Name: "gpu", Type: "tesla_t4", Count: 2, Files: []string{"/dev/nvidia0", "/dev/nvidia1"}},
		{Name: "fpga", Count: 1, Files: []string{"/dev/xclmgmt0"}},
		{Name: "bandwidth", Count: 20 << 30},
	}
	if err := set.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := set.String(), "gpu:tesla_t4:2,fpga:1,bandwidth:20G"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	wantLines := []string{
		"NodeName=gpu-0 Name=gpu Type=tesla_t4 File=/dev/nvidia0",
		"NodeName=gpu-0 Name=gpu Type=tesla_t4 File=/dev/nvidia1",
		"NodeName=gpu-0 Name=fpga File=/dev/xclmgmt0",
	}
	if d := cmp.Diff(wantLines, set.ConfLines("gpu-0")); d != "" {
		t.Errorf("ConfLines (-want +got):\n%s", d)
	}
	if got := set[:1].ConfLines("")[0]; got != "Name=gpu Type=tesla_t4 File=/dev/nvidia0" {
		t.Errorf("ConfLines without a node: %q", got)
	}
	wantConf := "# Generic resources of this node, written by the slurmd charm.\n" + strings.Join(wantLines, "\n") + "\n"
	if d := cmp.Diff(wantConf, string(set.Conf("gpu-0"))); d != "" {
		t.Errorf("Conf (-want +got):\n%s", d)
	}
	if got := string(gres.Set(nil).Conf("cpu-0")); got != "# Generic resources of this node, written by the slurmd charm.\n" {
		t.Errorf("empty Conf = %q", got)
	}
	// AutoDetectOff (Slurm 26.05's dynamic nodes): the setting before the lines, also with none.
	off := gres.ConfOptions{AutoDetectOff: true}
	const head = "# Generic resources of this node, written by the slurmd charm.\n" +
		"# slurmd detects no GPU itself: the charm's detection and node-config say what the node has.\nAutoDetect=off\n"
	if d := cmp.Diff(head+strings.Join(wantLines, "\n")+"\n", string(set.ConfWith("gpu-0", off))); d != "" {
		t.Errorf("ConfWith AutoDetectOff (-want +got):\n%s", d)
	}
	if d := cmp.Diff(head, string(gres.Set(nil).ConfWith("cpu-0", off))); d != "" {
		t.Errorf("empty ConfWith AutoDetectOff (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"gpu", "fpga", "bandwidth"}, set.Names()); d != "" {
		t.Errorf("Names (-want +got):\n%s", d)
	}
	if set.Count("gpu") != 2 || set.Count("nic") != 0 {
		t.Errorf("Count: gpu %d nic %d", set.Count("gpu"), set.Count("nic"))
	}
	if got := gres.Set(nil).String(); got != "" {
		t.Errorf("empty String() = %q", got)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		set  gres.Set
		err  string
	}{
		{"gpu without files", gres.Set{{Name: "gpu", Count: 1}}, "needs a device file"},
		{"count and files disagree", gres.Set{{Name: "fpga", Count: 2, Files: []string{"/dev/a"}}}, "count 2 but 1 files"},
		{"relative file", gres.Set{{Name: "fpga", Count: 1, Files: []string{"dev/a"}}}, "invalid file"},
		{"dot-dot file", gres.Set{{Name: "fpga", Count: 1, Files: []string{"/dev/../etc/passwd"}}}, "invalid file"},
		{"file twice", gres.Set{{Name: "fpga", Type: "a", Count: 1, Files: []string{"/dev/a"}}, {Name: "fpga", Type: "b", Count: 1, Files: []string{"/dev/a"}}}, "used twice"},
		{"zero", gres.Set{{Name: "nic"}}, "at least 1"},
	}
	for _, tt := range tests {
		if err := tt.set.Validate(); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: Validate() = %v, want error containing %q", tt.name, err, tt.err)
		}
	}
}

func TestMerge(t *testing.T) {
	t.Parallel()
	detected := gres.Set{{Name: "gpu", Type: "tesla_t4", Count: 2, Files: []string{"/dev/nvidia0", "/dev/nvidia1"}}}
	fpga := gres.Set{{Name: "fpga", Count: 1, Files: []string{"/dev/xclmgmt0"}}}
	gpu := gres.Set{{Name: "gpu", Type: "a100", Count: 1, Files: []string{"/dev/nvidia1"}}}
	tests := []struct {
		name               string
		detected, declared gres.Set
		want               gres.Set
	}{
		{"nothing declared", detected, nil, detected},
		{"declared adds", detected, fpga, append(append(gres.Set{}, detected...), fpga...)},
		{"declared gpu replaces detected", detected, gpu, gpu},
		{"nothing detected", nil, fpga, fpga},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, gres.Merge(tt.detected, tt.declared)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}
