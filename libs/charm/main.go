package charm

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/charmed-slurm/operators/libs/juju"
)

// Setup builds a charm for one event: its handler (usually a Router's Dispatch) and a
// function releasing what it holds (a service manager's connection), or nil.
type Setup func(ev juju.Event) (h juju.Handler, release func(), err error)

// Main runs a charm binary's dispatch and exits the process with the hook's exit code. The
// hook's context ends on SIGTERM or an interrupt.
func Main(setup Setup) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := Run(ctx, os.LookupEnv, juju.ExecRunner{}, os.Stderr, setup)
	stop()
	os.Exit(code)
}

// Run is Main without the process: it reads the event from lookupEnv, builds the hook
// context over r, runs setup's handler through juju.Main and returns the exit code.
func Run(ctx context.Context, lookupEnv func(string) (string, bool), r juju.Runner, stderr io.Writer, setup Setup) int {
	ev, err := juju.ReadEvent(lookupEnv)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	h, release, err := setup(ev)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if release != nil {
		defer release()
	}
	return juju.Main(ctx, juju.NewHookContext(ev, r), h, stderr)
}
