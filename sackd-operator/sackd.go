package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/poll"
	"github.com/charmed-slurm/operators/libs/service"
)

// sackdDaemon is this host's sackd: its service, its runtime directory and what it fetched.
type sackdDaemon struct{ c *Charm }

// spec is the sackd service for a.
func spec(a *Applied) service.Spec {
	return service.Spec{
		Name:    SackdService,
		Summary: "Slurm login node (sackd)",
		Command: []string{SackdPath, "-D", "--conf-server", strings.Join(a.Controllers, ",")},
		User:    SlurmUser,
		// A child sackd forks to fetch the configuration must not outlive a stop.
		KillAll: true,
	}
}

// start configures sackd for a, enables it at boot and starts it, or restarts it when it runs
// (a restart fetches the configuration again and reads the key again).
func (d sackdDaemon) start(ctx context.Context, a *Applied, running bool) error {
	m := d.c.Services
	if err := d.runDir(); err != nil {
		return err
	}
	if err := m.Configure(ctx, spec(a)); err != nil {
		return fmt.Errorf("cannot configure sackd: %w", err)
	}
	if err := m.Enable(ctx, SackdService); err != nil {
		return fmt.Errorf("cannot enable sackd: %w", err)
	}
	do, verb := m.Start, "start"
	if running {
		do, verb = m.Restart, "restart"
	}
	if err := do(ctx, SackdService); err != nil {
		return fmt.Errorf("cannot %s sackd: %w", verb, err)
	}
	return nil
}

// stop stops and disables sackd. A service the supervisor does not know (Pebble before the
// charm configured it) is stopped already.
func (d sackdDaemon) stop(ctx context.Context) error {
	m := d.c.Services
	err := m.Stop(ctx, SackdService)
	if err == nil {
		err = m.Disable(ctx, SackdService)
	}
	if err != nil && !errors.Is(err, service.ErrUnknownService) {
		return fmt.Errorf("cannot stop sackd: %w", err)
	}
	return nil
}

// runDir makes sure sackd's runtime directory exists, owned by the user sackd runs as (systemd
// makes it for Debian's unit, RuntimeDirectory=slurm; Pebble does not).
func (d sackdDaemon) runDir() error {
	uid, gid, err := d.c.UserIDs(SlurmUser)
	if err != nil {
		return fmt.Errorf("cannot find user %s: %w", SlurmUser, err)
	}
	dir := d.c.Path(RunDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", RunDir, err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("cannot give %s to %s: %w", RunDir, SlurmUser, err)
	}
	return nil
}

// running reports whether sackd's service is active.
func (d sackdDaemon) running(ctx context.Context) bool {
	st, err := d.c.Services.Status(ctx, SackdService)
	return err == nil && st.State == service.StateActive
}

// waitServing waits, at most ReadyTimeout, until the sackd just (re)started serves its socket
// and has fetched the configuration, or its service stops being active. It only waits: the
// status that follows says how it went.
func (d sackdDaemon) waitServing(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, charm.Or(d.c.ReadyTimeout, DefaultReadyTimeout))
	defer cancel()
	every := d.c.poll()
	_ = poll.UntilBackoff(ctx, poll.Backoff{Start: min(5*time.Millisecond, every), Max: every}, func(ctx context.Context) (bool, error) {
		if d.serving() {
			return true, nil
		}
		return !d.running(ctx), nil
	})
}

// serving reports whether sackd's socket and the configuration it fetched are there.
func (d sackdDaemon) serving() bool {
	for _, p := range []string{SackSocket, RunConf} {
		if _, err := os.Stat(d.c.Path(p)); err != nil {
			return false
		}
	}
	return true
}

// forget removes what sackd held of the cluster: the key and the configuration it fetched.
func (d sackdDaemon) forget() error {
	for _, p := range []string{KeyFile, RunConfDir} {
		if err := os.RemoveAll(d.c.Path(p)); err != nil {
			return fmt.Errorf("cannot remove %s: %w", p, err)
		}
	}
	return nil
}

// observe is what the status needs of a sackd that should run: its service, the
// configuration it fetched and sinfo through it, each looked at only when the one before is
// fine.
func (d sackdDaemon) observe(ctx context.Context) observed {
	var o observed
	if o.service, o.serviceErr = d.c.Services.Status(ctx, SackdService); o.serviceErr != nil || o.service.State != service.StateActive {
		return o
	}
	if _, err := os.Stat(d.c.Path(RunConf)); err != nil {
		o.noConf = true
		return o
	}
	_, o.sinfoErr = d.c.client().Partitions(ctx)
	return o
}
