package slurm_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/slurm"
)

func TestExecRunner(t *testing.T) {
	ctx := context.Background()
	var wrapped []string
	for _, tt := range []struct {
		name string
		r    command.Exec
	}{
		{"direct", command.Exec{}},
		{"wrapped", command.Exec{Command: func(ctx context.Context, argv []string) *exec.Cmd {
			wrapped = argv
			return exec.CommandContext(ctx, "env", argv...)
		}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.r.Run(ctx, []string{"/bin/sh", "-c", `echo "out $0"; echo err >&2; printf %s "$SLURM_CONF"; exit 3`, "a b"}, []string{"SLURM_CONF=/x/slurm.conf"})
			if err != nil {
				t.Fatal(err)
			}
			want := command.Output{Stdout: []byte("out a b\n/x/slurm.conf"), Stderr: []byte("err\n"), ExitCode: 3}
			if d := cmp.Diff(want, out); d != "" {
				t.Errorf("output (-want +got):\n%s", d)
			}
		})
	}
	if len(wrapped) != 4 {
		t.Errorf("Command got argv %q", wrapped)
	}
	if _, err := (command.Exec{}).Run(ctx, []string{"/nonexistent/scontrol"}, nil); err == nil {
		t.Error("running a missing program: no error")
	}
	if _, err := (command.Exec{}).Run(ctx, nil, nil); err == nil {
		t.Error("empty argv: no error")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := (command.Exec{}).Run(cctx, []string{"/bin/true"}, nil); err == nil {
		t.Error("cancelled context: no error")
	}
}

// TestRealSlurmd runs the installed slurmd for the commands that need no controller.
func TestRealSlurmd(t *testing.T) {
	if _, err := exec.LookPath("slurmd"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("slurmd not installed (scripts/deps.sh installs it): %v", err)
		}
		t.Skipf("SKIPPED: slurmd is not installed (scripts/deps.sh installs it): %v", err)
	}
	c := &slurm.Client{Runner: command.Exec{}}
	ctx := context.Background()
	v, err := c.SlurmdVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.Major < 22 {
		t.Errorf("slurmd version %v", v)
	}
	m, err := c.MachineInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.CPUs < 1 || m.RealMemory < 1 || m.Hostname == "" {
		t.Errorf("machine info %+v", m)
	}
	if _, ok := m.Params.Get("NodeName"); ok {
		t.Errorf("machine info params contain NodeName: %v", m.Params)
	}
	// MachineInfo keeps hwloc from loading its plugins: the facts are those of a plain
	// `slurmd -C` (the host's hwloc has plugins: Debian's libhwloc-plugins, with slurmd).
	plain, err := exec.CommandContext(ctx, "slurmd", "-C").Output()
	if err != nil {
		t.Fatal(err)
	}
	want, err := slurm.ParseMachineInfo(plain)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, m); d != "" {
		t.Errorf("facts without hwloc's plugins (-plain +MachineInfo):\n%s", d)
	}
}
