package charm

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service/auto"
)

// Setup builds a charm for one event: its handler (usually a Router's Dispatch) and a
// function releasing what it holds (a service manager's connection), or nil.
type Setup func(ev juju.Event) (h juju.Handler, release func(), err error)

// WithServices is the Setup of a charm that runs services on its host: build gets the host's
// service manager, chosen by auto.Detect over lookupEnv (os.LookupEnv): Pebble where its
// socket is, else systemd. The manager connects on first use and is closed when the hook
// ends.
func WithServices(lookupEnv func(string) (string, bool), build func(ev juju.Event, services *auto.Manager) juju.Handler) Setup {
	return func(ev juju.Event) (juju.Handler, func(), error) {
		services := auto.Detect(lookupEnv)
		return build(ev, services), services.Close, nil
	}
}

// Main runs a charm binary's dispatch and exits the process with the hook's exit code. The
// hook's context ends on SIGTERM or an interrupt.
func Main(setup Setup) {
	Exit(func(ctx context.Context) int {
		return Run(ctx, os.LookupEnv, juju.ExecRunner{}, os.Stderr, setup)
	})
}

// Exit runs fn, whose context ends on SIGTERM or an interrupt, and exits the process with
// the code fn returns: Main's process, for what a charm binary runs besides hooks
// (slurmctld's removal waiter).
func Exit(fn func(ctx context.Context) int) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := fn(ctx)
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
