package slurm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/libs/slurm"
)

// failingMunge answers `munge -n` with munge's own error until it has been asked `fails` times.
type failingMunge struct {
	fails, calls int
}

func (f *failingMunge) Run(ctx context.Context, argv, env []string) (slurm.Output, error) {
	f.calls++
	if len(argv) != 2 || argv[0] != slurm.MungePath || argv[1] != "-n" {
		return slurm.Output{}, errors.New("unexpected command " + strings.Join(argv, " "))
	}
	if f.calls <= f.fails {
		return slurm.Output{ExitCode: 1, Stderr: []byte("munge: Error: Failed to access \"/run/munge/munge.socket.2\": No such file or directory\n")}, nil
	}
	return slurm.Output{Stdout: []byte("MUNGE:AwQFAAB...:\n")}, nil
}

func TestWaitMunge(t *testing.T) {
	f := &failingMunge{fails: 3}
	if err := slurm.WaitMunge(context.Background(), f, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if f.calls != 4 {
		t.Errorf("munge -n ran %d times, want 4 (three failures, then an answer)", f.calls)
	}
}

func TestWaitMungeGivesUpWithCtx(t *testing.T) {
	f := &failingMunge{fails: 1 << 30}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := slurm.WaitMunge(ctx, f, time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "Failed to access") {
		t.Errorf("got %v, want the deadline and munge's last error", err)
	}
}
