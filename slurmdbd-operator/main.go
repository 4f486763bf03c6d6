package main

import (
	"os"
	"os/exec"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service/auto"
)

func main() {
	charm.Main(func(ev juju.Event) (juju.Handler, func(), error) {
		services := auto.Detect(os.LookupEnv) // connects on first use
		c := &Charm{
			Settings:     charm.Settings{Root: "/"},
			Slurm:        command.Exec{},
			Services:     services,
			MungeService: munge.ServiceName(services.Backend),
			Database:     SQLProber{},
			Hostname:     os.Hostname,
			LookPath:     exec.LookPath,
		}
		return c.Router().Dispatch, services.Close, nil
	})
}
