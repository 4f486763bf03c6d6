package main

import (
	"os"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service/auto"
)

func main() {
	charm.Main(func(ev juju.Event) (juju.Handler, func(), error) {
		services := auto.Detect(os.LookupEnv) // connects on first use
		c := &Charm{
			Settings: charm.Settings{Root: "/"},
			Slurm:    command.Exec{},
			Services: services,
		}
		return c.Router().Dispatch, services.Close, nil
	})
}
