package main

import (
	"os"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service/auto"
)

func main() {
	charm.Main(charm.WithServices(os.LookupEnv, func(_ juju.Event, services *auto.Manager) juju.Handler {
		c := &Charm{
			Settings:     charm.Settings{Root: "/"},
			Slurm:        command.Exec{},
			Services:     services,
			MungeService: munge.ServiceName(services.Backend),
		}
		c.RelationRecord = RelationRecordName
		return c.Router().Dispatch
	}))
}
