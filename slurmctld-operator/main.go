package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service/auto"
	"github.com/charmed-slurm/operators/libs/slurm"
)

func main() {
	ev, err := juju.ReadEvent(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hc := juju.NewHookContext(ev, juju.ExecRunner{})
	mgr := auto.Detect(os.LookupEnv) // connects on first use
	stateFilePath := ""
	if ev.CharmDir != "" {
		// Per unit, also when several units share a file system.
		stateFilePath = filepath.Join(ev.CharmDir, stateFileName)
	}
	c := &Charm{
		Root:         "/",
		StateFile:    stateFilePath,
		Slurm:        slurm.ExecRunner{},
		Services:     mgr,
		MungeService: munge.ServiceName(mgr.Backend),
		Hostname:     os.Hostname,
		LookPath:     defaultLookPath(exec.LookPath),
		Rand:         rand.Reader,
		PollInterval: time.Second,
		DepartWait:   10 * time.Second,
		RemoveWait:   3 * time.Minute,
		DeleteWait:   time.Minute,
	}
	code := juju.Main(context.Background(), hc, c.Router().Dispatch, os.Stderr)
	mgr.Close()
	os.Exit(code)
}
