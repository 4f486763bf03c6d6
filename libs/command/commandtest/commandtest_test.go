package commandtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/command/commandtest"
)

// TestRunner: cases for one argv answer in order, the last one keeps answering; an argv
// without a case fails naming it; every call is recorded, env included.
func TestRunner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	boom := errors.New("cannot run")
	r := &commandtest.Runner{}
	r.Expect(
		commandtest.Case{Argv: []string{"a", "1"}, Output: command.Output{Stdout: []byte("first")}},
		commandtest.Case{Argv: []string{"a", "1"}, Output: command.Output{Stdout: []byte("then"), ExitCode: 2}},
		commandtest.Case{Argv: []string{"b"}, Err: boom},
	)
	for _, tt := range []struct {
		argv    []string
		want    command.Output
		wantErr bool
	}{
		{argv: []string{"a", "1"}, want: command.Output{Stdout: []byte("first")}},
		{argv: []string{"a", "1"}, want: command.Output{Stdout: []byte("then"), ExitCode: 2}},
		{argv: []string{"a", "1"}, want: command.Output{Stdout: []byte("then"), ExitCode: 2}},
		{argv: []string{"b"}, wantErr: true},
		{argv: []string{"a 1"}, wantErr: true}, // no case: argv are not joined by spaces
	} {
		out, err := r.Run(ctx, tt.argv, []string{"X=1"})
		if (err != nil) != tt.wantErr {
			t.Fatalf("Run(%q): %v", tt.argv, err)
		}
		if d := cmp.Diff(tt.want, out); d != "" && !tt.wantErr {
			t.Errorf("Run(%q) (-want +got):\n%s", tt.argv, d)
		}
	}
	if got := len(r.Calls()); got != 5 {
		t.Errorf("%d calls recorded, want 5", got)
	}
	if d := cmp.Diff(commandtest.Call{Argv: []string{"b"}, Env: []string{"X=1"}}, r.Calls()[3]); d != "" {
		t.Errorf("call (-want +got):\n%s", d)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Run(cctx, []string{"a", "1"}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context: %v", err)
	}
}
