package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service/auto"
	"github.com/charmed-slurm/operators/libs/slurm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ev, err := juju.ReadEvent(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hc := juju.NewHookContext(ev, juju.ExecRunner{})
	services := auto.Detect(os.LookupEnv) // connects on first use
	c := &Charm{
		Runner:       slurm.ExecRunner{},
		Services:     services,
		MungeService: munge.ServiceName(services.Backend),
		Root:         "/",
	}
	code := juju.Main(ctx, hc, c.Router().Dispatch, os.Stderr)
	services.Close()
	stop()
	os.Exit(code)
}
