package main

import (
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service/auto"
)

func main() {
	charm.Main(func(ev juju.Event) (juju.Handler, func(), error) {
		mgr := auto.Detect(os.LookupEnv) // connects on first use
		stateFilePath := ""
		if ev.CharmDir != "" {
			// Per unit, also when several units share a file system.
			stateFilePath = filepath.Join(ev.CharmDir, stateFileName)
		}
		c := &Charm{
			Settings:     charm.Settings{Root: "/", PollInterval: time.Second},
			StateFile:    stateFilePath,
			Slurm:        command.Exec{},
			Services:     mgr,
			MungeService: munge.ServiceName(mgr.Backend),
			Hostname:     os.Hostname,
			LookPath:     defaultLookPath(exec.LookPath),
			Rand:         rand.Reader,
			DepartWait:   10 * time.Second,
			RemoveWait:   3 * time.Minute,
			DeleteWait:   time.Minute,
		}
		return c.Router().Dispatch, mgr.Close, nil
	})
}
