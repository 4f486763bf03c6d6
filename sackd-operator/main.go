package main

import (
	"os"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service/auto"
)

func main() {
	charm.Main(charm.WithServices(os.LookupEnv, func(_ juju.Event, services *auto.Manager) juju.Handler {
		c := &Charm{
			Settings: charm.Settings{Root: "/"},
			Slurm:    command.Exec{},
			Services: services,
		}
		return c.Router().Dispatch
	}))
}
