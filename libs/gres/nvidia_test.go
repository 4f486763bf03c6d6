package gres_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/command/commandtest"
	"github.com/charmed-slurm/operators/libs/gres"
)

// smiT4x2 is nvidia-smi's answer to NvidiaSMIQuery on a machine with two
// Tesla T4s.
const smiT4x2 = "0, Tesla T4, GPU-9f6c3f4e-1c1b-4a7e-a8b4-2d8e0a6b1c01\n1, Tesla T4, GPU-0b0f6a7d-5e2c-4a0a-9a55-8f1d7c3e2b02\n"

func TestParseNvidiaSMI(t *testing.T) {
	t.Parallel()
	tests := []parseCase[[]gres.Device]{
		{name: "no GPU", in: ""},
		{name: "two GPUs", in: smiT4x2, want: []gres.Device{
			{Minor: 0, Model: "Tesla T4", UUID: "GPU-9f6c3f4e-1c1b-4a7e-a8b4-2d8e0a6b1c01"},
			{Minor: 1, Model: "Tesla T4", UUID: "GPU-0b0f6a7d-5e2c-4a0a-9a55-8f1d7c3e2b02"},
		}},
		{name: "header kept (csv without noheader)", in: "minor_number, name, uuid\n3, NVIDIA A100-SXM4-40GB, GPU-a\n",
			want: []gres.Device{{Minor: 3, Model: "NVIDIA A100-SXM4-40GB", UUID: "GPU-a"}}},
		{name: "quoted name with a comma", in: `2, "Odd, Name", GPU-b` + "\n", want: []gres.Device{{Minor: 2, Model: "Odd, Name", UUID: "GPU-b"}}},
		{name: "CRLF", in: "0, Tesla T4, GPU-a\r\n", want: []gres.Device{{Minor: 0, Model: "Tesla T4", UUID: "GPU-a"}}},
		{name: "minor not available", in: "[N/A], Tesla T4, GPU-a\n", err: `minor number "[N/A]" is not a number`},
		{name: "name not available", in: "0, [N/A], GPU-a\n", err: "GPU name"},
		{name: "empty name", in: "0, , GPU-a\n", err: "GPU name"},
		{name: "repeated minor", in: "0, A, GPU-a\n0, B, GPU-b\n", err: "repeated"},
		{name: "wrong field count", in: "0, Tesla T4\n", err: "wrong number of fields"},
		{name: "error text instead", in: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", err: "wrong number of fields"},
		{name: "leading zero", in: "01, A, GPU-a\n", err: "is not a number"},
		{name: "negative", in: "-1, A, GPU-a\n", err: "is not a number"},
	}
	runParseCases(t, "ParseNvidiaSMI", func(s string) ([]gres.Device, error) { return gres.ParseNvidiaSMI([]byte(s)) }, tests)
}

func TestTypeName(t *testing.T) {
	t.Parallel()
	for model, want := range map[string]string{
		"Tesla T4":                  "tesla_t4",
		"NVIDIA A100-SXM4-40GB":     "nvidia_a100-sxm4-40gb",
		"NVIDIA GeForce RTX 4090":   "nvidia_geforce_rtx_4090",
		"Odd, Name:x=y":             "odd__name_x_y",
		"":                          "",
		"4090":                      "",
		"  Quadro RTX 8000  ":       "quadro_rtx_8000",
		strings.Repeat("a", 100):    strings.Repeat("a", 64),
		"NVIDIA H100 80GB HBM3 (x)": "nvidia_h100_80gb_hbm3__x_",
	} {
		if got := gres.TypeName(model); got != want {
			t.Errorf("TypeName(%q) = %q, want %q", model, got, want)
		}
	}
}

// devTree makes root/dev with the given entries: "c" a character device (a
// link to /dev/null), "f" a regular file, "d" a directory.
func devTree(t *testing.T, entries map[string]string) string {
	t.Helper()
	root := t.TempDir()
	dev := filepath.Join(root, "dev")
	if err := os.Mkdir(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, kind := range entries {
		p := filepath.Join(dev, name)
		var err error
		switch kind {
		case "c":
			err = os.Symlink("/dev/null", p)
		case "f":
			err = os.WriteFile(p, nil, 0o644)
		case "d":
			err = os.Mkdir(p, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestDetect(t *testing.T) {
	t.Parallel()
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("this machine's /dev/null is not a character device: %v", err)
	}
	two := map[string]string{"nvidia0": "c", "nvidia1": "c", "nvidiactl": "c", "nvidia-uvm": "c", "nvidia7": "f", "nvidia8": "d", "null": "c"}
	smi := func(stdout string, code int) *commandtest.Runner {
		r := &commandtest.Runner{}
		r.Expect(commandtest.Case{Argv: gres.NvidiaSMIQuery(), Output: command.Output{Stdout: []byte(stdout), ExitCode: code}})
		return r
	}
	failing := func(code int, stderr string) *commandtest.Runner {
		r := &commandtest.Runner{}
		r.Expect(commandtest.Case{Argv: gres.NvidiaSMIQuery(), Output: command.Output{Stderr: []byte(stderr), ExitCode: code}})
		return r
	}
	t4 := func(minor int, uuid string) gres.Device {
		return gres.Device{Minor: minor, File: "/dev/nvidia" + string(rune('0'+minor)), Model: "Tesla T4", UUID: uuid}
	}
	tests := []struct {
		name    string
		entries map[string]string
		runner  command.Runner // nil: no nvidia-smi asked
		want    gres.Detection
		err     string
	}{
		{name: "nothing there", entries: map[string]string{"null": "c"}, runner: &commandtest.Runner{}},
		{name: "no dev at all", runner: &commandtest.Runner{}},
		{name: "files and nvidia-smi", entries: two, runner: smi(smiT4x2, 0), want: gres.Detection{GPUs: []gres.Device{
			t4(0, "GPU-9f6c3f4e-1c1b-4a7e-a8b4-2d8e0a6b1c01"), t4(1, "GPU-0b0f6a7d-5e2c-4a0a-9a55-8f1d7c3e2b02")}}},
		{name: "nvidia-smi missing: untyped from files", entries: two, runner: &commandtest.Runner{}, want: gres.Detection{
			GPUs:  []gres.Device{{Minor: 0, File: "/dev/nvidia0"}, {Minor: 1, File: "/dev/nvidia1"}},
			Notes: []string{`nvidia-smi not available (commandtest: unexpected command ["nvidia-smi" "--query-gpu=minor_number,name,uuid" "--format=csv,noheader"]): GPU model unknown, GPUs untyped`}}},
		{name: "nvidia-smi not asked", entries: two, want: gres.Detection{
			GPUs:  []gres.Device{{Minor: 0, File: "/dev/nvidia0"}, {Minor: 1, File: "/dev/nvidia1"}},
			Notes: []string{"nvidia-smi not asked: GPU model unknown, GPUs untyped"}}},
		{name: "nvidia-smi fails (no driver)", entries: two, runner: failing(9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\nMore text\n"), want: gres.Detection{
			GPUs:  []gres.Device{{Minor: 0, File: "/dev/nvidia0"}, {Minor: 1, File: "/dev/nvidia1"}},
			Notes: []string{"nvidia-smi failed (exit status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.): GPU model unknown, GPUs untyped"}}},
		{name: "nvidia-smi without files: nothing", entries: map[string]string{}, runner: smi(smiT4x2, 0), want: gres.Detection{
			Notes: []string{
				"nvidia-smi reports GPU GPU-9f6c3f4e-1c1b-4a7e-a8b4-2d8e0a6b1c01 (Tesla T4) but /dev/nvidia0 is missing: not used",
				"nvidia-smi reports GPU GPU-0b0f6a7d-5e2c-4a0a-9a55-8f1d7c3e2b02 (Tesla T4) but /dev/nvidia1 is missing: not used",
			}}},
		{name: "failing nvidia-smi and no files: nothing", entries: map[string]string{}, runner: failing(9, "no driver")},
		{name: "one file gone", entries: map[string]string{"nvidia1": "c"}, runner: smi(smiT4x2, 0), want: gres.Detection{
			GPUs:  []gres.Device{t4(1, "GPU-0b0f6a7d-5e2c-4a0a-9a55-8f1d7c3e2b02")},
			Notes: []string{"nvidia-smi reports GPU GPU-9f6c3f4e-1c1b-4a7e-a8b4-2d8e0a6b1c01 (Tesla T4) but /dev/nvidia0 is missing: not used"}}},
		{name: "file nvidia-smi does not report", entries: map[string]string{"nvidia0": "c", "nvidia1": "c", "nvidia2": "c"}, runner: smi(smiT4x2, 0), want: gres.Detection{
			GPUs:  []gres.Device{t4(0, "GPU-9f6c3f4e-1c1b-4a7e-a8b4-2d8e0a6b1c01"), t4(1, "GPU-0b0f6a7d-5e2c-4a0a-9a55-8f1d7c3e2b02")},
			Notes: []string{"/dev/nvidia2 is not reported by nvidia-smi: not used"}}},
		{name: "garbled nvidia-smi", entries: two, runner: smi("0, Tesla T4\n", 0), err: "cannot parse nvidia-smi output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if tt.entries != nil {
				root = devTree(t, tt.entries)
			}
			got, err := gres.Detector{Runner: tt.runner, Root: root}.Detect(context.Background())
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Detect = %+v, %v; want error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Detect (-want +got):\n%s", d)
			}
		})
	}
}

func TestDetectCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &commandtest.Runner{}
	r.Expect(commandtest.Case{Argv: gres.NvidiaSMIQuery(), Err: context.Canceled})
	root := devTree(t, map[string]string{"nvidia0": "c"})
	if _, err := (gres.Detector{Runner: r, Root: root}).Detect(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Detect with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestDetectionResources(t *testing.T) {
	t.Parallel()
	det := gres.Detection{GPUs: []gres.Device{
		{Minor: 0, File: "/dev/nvidia0", Model: "Tesla T4"},
		{Minor: 1, File: "/dev/nvidia1", Model: "NVIDIA A100-SXM4-40GB"},
		{Minor: 2, File: "/dev/nvidia2", Model: "Tesla T4"},
	}}
	want := gres.Set{
		{Name: "gpu", Type: "tesla_t4", Count: 2, Files: []string{"/dev/nvidia0", "/dev/nvidia2"}},
		{Name: "gpu", Type: "nvidia_a100-sxm4-40gb", Count: 1, Files: []string{"/dev/nvidia1"}},
	}
	got := det.Resources()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Resources (-want +got):\n%s", d)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}
	untyped := gres.Detection{GPUs: []gres.Device{{Minor: 0, File: "/dev/nvidia0"}, {Minor: 1, File: "/dev/nvidia1"}}}
	if got := untyped.Resources().String(); got != "gpu:2" {
		t.Errorf("untyped Resources = %q, want gpu:2", got)
	}
	mixed := gres.Detection{GPUs: []gres.Device{{Minor: 0, File: "/dev/nvidia0", Model: "Tesla T4"}, {Minor: 1, File: "/dev/nvidia1", Model: "4090"}}}
	if got := mixed.Resources().String(); got != "gpu:2" {
		t.Errorf("Resources of a typed and an untyped GPU = %q, want gpu:2", got)
	}
	if got := (gres.Detection{}).Resources(); got != nil {
		t.Errorf("no GPU: Resources = %v, want nil", got)
	}
}

// hungRunner is an nvidia-smi that never answers (a wedged driver): it returns only when its
// context ends.
type hungRunner struct{}

func (hungRunner) Run(ctx context.Context, argv []string, env []string) (command.Output, error) {
	<-ctx.Done()
	return command.Output{}, ctx.Err()
}

// TestDetectHungNvidiaSMI: a hung nvidia-smi is cut at Timeout and counts as not answering
// (untyped GPUs from the device files, a note), not as a failed detection.
func TestDetectHungNvidiaSMI(t *testing.T) {
	t.Parallel()
	root := devTree(t, map[string]string{"nvidia0": "c"})
	got, err := gres.Detector{Runner: hungRunner{}, Root: root, Timeout: 50 * time.Millisecond}.Detect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.GPUs) != 1 || got.GPUs[0].Model != "" || len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "deadline exceeded") {
		t.Errorf("Detect with a hung nvidia-smi = %+v, want one untyped GPU and a note naming the deadline", got)
	}
}
