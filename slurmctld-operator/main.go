package main

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service/auto"
)

// pollInterval is the pause between checks of the charm's bounded waits and of its waiter.
const pollInterval = time.Second

func main() {
	if len(os.Args) > 1 && os.Args[1] == waiterCommand {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		c := &Charm{Settings: charm.Settings{PollInterval: pollInterval}, Slurm: command.Exec{}}
		code := c.runWaiter(ctx, os.Getenv, exec.LookPath, os.Stderr)
		stop()
		os.Exit(code)
	}
	charm.Main(func(ev juju.Event) (juju.Handler, func(), error) {
		mgr := auto.Detect(os.LookupEnv) // connects on first use
		c := &Charm{
			Settings:     charm.Settings{Root: "/", PollInterval: pollInterval},
			Slurm:        command.Exec{},
			Services:     mgr,
			MungeService: munge.ServiceName(mgr.Backend),
			Hostname:     os.Hostname,
			LookPath:     defaultLookPath(exec.LookPath),
			Rand:         rand.Reader,
			DeleteWait:   time.Minute,
		}
		if ev.CharmDir != "" {
			c.Waiter = &procWaiter{Dir: ev.CharmDir, Exe: filepath.Join(ev.CharmDir, "dispatch"), Env: waiterEnv(os.Environ()), LookPath: exec.LookPath}
		}
		return c.Router().Dispatch, mgr.Close, nil
	})
}
