package command_test

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/command"
)

func TestExec(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var wrapped []string
	for _, tt := range []struct {
		name  string
		r     command.Exec
		stdin []byte
		want  command.Output
	}{
		{"direct", command.Exec{}, nil, command.Output{Stdout: []byte("out a b\n/x/slurm.conf"), Stderr: []byte("err\n"), ExitCode: 3}},
		{"wrapped", command.Exec{Command: func(ctx context.Context, argv []string) *exec.Cmd {
			wrapped = argv
			return exec.CommandContext(ctx, "env", argv...)
		}}, nil, command.Output{Stdout: []byte("out a b\n/x/slurm.conf"), Stderr: []byte("err\n"), ExitCode: 3}},
		{"stdin", command.Exec{Timeout: time.Minute}, []byte("in"), command.Output{Stdout: []byte("out a b\nin/x/slurm.conf"), Stderr: []byte("err\n"), ExitCode: 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.r.RunInput(ctx, []string{"/bin/sh", "-c", `echo "out $0"; echo err >&2; cat; printf %s "$SLURM_CONF"; exit 3`, "a b"}, []string{"SLURM_CONF=/x/slurm.conf"}, tt.stdin)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, out); d != "" {
				t.Errorf("output (-want +got):\n%s", d)
			}
		})
	}
	if len(wrapped) != 4 {
		t.Errorf("Command got argv %q", wrapped)
	}
}

func TestExecErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tt := range []struct {
		name    string
		ctx     context.Context
		r       command.Exec
		argv    []string
		is      []error
		timeout bool
	}{
		{name: "missing program", ctx: ctx, argv: []string{"/nonexistent/scontrol"}},
		{name: "empty argv", ctx: ctx},
		{name: "cancelled", ctx: cancelled, argv: []string{"/bin/true"}, is: []error{context.Canceled}},
		{name: "timeout", ctx: ctx, r: command.Exec{Timeout: 10 * time.Millisecond}, argv: []string{"/bin/sleep", "60"},
			is: []error{command.ErrTimeout, context.DeadlineExceeded}, timeout: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.r.Run(tt.ctx, tt.argv, nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tt.is {
				if !errors.Is(err, want) {
					t.Errorf("got %v, want errors.Is %v", err, want)
				}
			}
			if !tt.timeout && errors.Is(err, command.ErrTimeout) {
				t.Errorf("got %v, a timeout", err)
			}
		})
	}
}
