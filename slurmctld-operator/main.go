package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
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

// pollInterval is the pause between checks of the charm's bounded waits and of its waiter.
const pollInterval = time.Second

func main() {
	if len(os.Args) > 1 && os.Args[1] == waiterCommand {
		c := &Charm{Settings: charm.Settings{PollInterval: pollInterval}, Slurm: command.Exec{}}
		charm.Exit(func(ctx context.Context) int { return c.runWaiter(ctx, os.Getenv, exec.LookPath, os.Stderr) })
	}
	charm.Main(charm.WithServices(os.LookupEnv, func(ev juju.Event, mgr *auto.Manager) juju.Handler {
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
		c.RelationRecord = RelationRecordName
		c.AskLeaderEarly, c.ReadAhead = true, true
		if ev.CharmDir != "" {
			c.Waiter = &procWaiter{Dir: ev.CharmDir, Exe: filepath.Join(ev.CharmDir, "dispatch"), Env: waiterEnv(os.Environ()), LookPath: exec.LookPath}
		}
		return c.Router().Dispatch
	}))
}

// runWaiter is dispatch run as the waiter (dispatch slurmctld-removal-waiter, started by
// procWaiter from a hook, with the hook's unit and charm directory in its environment): it
// asks Slurm through c's client, every c.poll().
func (c *Charm) runWaiter(ctx context.Context, getenv func(string) string, lookPath func(string) (string, error), stderr io.Writer) int {
	dir, unit := getenv("JUJU_CHARM_DIR"), getenv("JUJU_UNIT_NAME")
	if dir == "" || unit == "" {
		fmt.Fprintln(stderr, "cannot run the removal waiter: JUJU_CHARM_DIR and JUJU_UNIT_NAME must be set")
		return 2
	}
	if fi, err := os.Stat(filepath.Join(dir, waiterLogName)); err == nil && fi.Size() > maxWaiterLog {
		os.Truncate(filepath.Join(dir, waiterLogName), 0)
	}
	jujuExec, err := lookPath("juju-exec")
	if err != nil {
		fmt.Fprintf(stderr, "cannot run the removal waiter: %v\n", err)
		return 1
	}
	w := &removalWaiter{
		Dir: dir, Unit: unit, Client: c.client(), Runner: c.Slurm, JujuExec: jujuExec,
		Interval: c.poll(), Log: stderr,
	}
	if err := w.Run(ctx); err != nil {
		w.logf("%v", err)
		return 1
	}
	return 0
}

// defaultLookPath finds a program on PATH or in the sbin directories hooks may not have on PATH.
func defaultLookPath(look func(string) (string, error)) func(string) (string, error) {
	return func(name string) (string, error) {
		if p, err := look(name); err == nil {
			return p, nil
		}
		for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
			p := dir + "/" + name
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", fmt.Errorf("cannot find %s", name)
	}
}
