package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"

	"github.com/charmed-slurm/operators/interfaces/slurmdbd"
	"github.com/charmed-slurm/operators/libs/authkey"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/poll"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// ensureKey writes the controller's auth key for its authentication (the munge key, and
// munged (re)started, before Slurm 23.11; slurm.key after) and reports whether it changed.
func (h *hook) ensureKey(ctx context.Context, feat slurm.Features, d slurmdbd.ControllerData) (bool, error) {
	c := h.c
	owner, mode := MungeUser, fs.FileMode(0o400)
	if !feat.Munge {
		owner, mode = SlurmUser, 0o600
	}
	uid, gid, err := c.UserIDs(owner)
	if err != nil {
		return false, err
	}
	changed, err := authkey.Write(ctx, c.Path(feat.AuthKeyFile), d.AuthKey, authkey.Options{Mode: mode, UID: uid, GID: gid})
	if err != nil {
		return false, err
	}
	if changed {
		h.logf(ctx, juju.LevelInfo, "wrote auth key %s (key id %s)", feat.AuthKeyFile, d.AuthKeyID)
	}
	if feat.Munge {
		if err := c.Munge(c.Services, c.MungeService, c.Slurm).Ensure(ctx, changed); err != nil {
			return false, err
		}
	}
	return changed, nil
}

// running reports whether slurmdbd runs.
func (h *hook) running(ctx context.Context) bool {
	st, err := h.c.Services.Status(ctx, Service)
	return err == nil && st.State == service.StateActive
}

// startSlurmdbd defines slurmdbd, enables it and (re)starts it, then waits (bounded by
// StartTimeout) until it listens.
func (h *hook) startSlurmdbd(ctx context.Context, restart bool) error {
	c := h.c
	uid, gid, err := c.UserIDs(SlurmUser)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Path(RunDir), 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", RunDir, err)
	}
	if err := os.Chown(c.Path(RunDir), uid, gid); err != nil {
		return fmt.Errorf("cannot give %s to %s: %w", RunDir, SlurmUser, err)
	}
	// As slurm, as Debian 13's unit runs it: systemd then makes its RuntimeDirectory
	// (/run/slurmdbd, where 24.11 binds its sack socket) slurm's.
	// slurmdbd 26.05 wakes its RPC thread with a SIGUSR1 to itself while it shuts down on
	// SIGTERM (rpc_mgr_wake), and now and then its handler is gone by then: it dies by that
	// signal. Counted as a clean exit, an operator's stop leaves it stopped (inactive), not
	// failed, which the charm would start again. slurmdbd ignores SIGUSR1 otherwise.
	spec := service.Spec{Name: Service, Summary: "Slurm accounting daemon", Command: []string{"/usr/sbin/slurmdbd", "-D"}, User: SlurmUser, SuccessSignals: []string{"SIGUSR1"}}
	if err := c.Services.Configure(ctx, spec); err != nil {
		return fmt.Errorf("cannot configure slurmdbd: %w", err)
	}
	if err := c.Services.Enable(ctx, Service); err != nil {
		return fmt.Errorf("cannot enable slurmdbd: %w", err)
	}
	verb, do := "start", c.Services.Start
	if restart {
		verb, do = "restart", c.Services.Restart
	}
	if err := h.k.SetUnitStatus(ctx, juju.StatusMaintenance, verb+"ing slurmdbd"); err != nil {
		return err
	}
	if err := do(ctx, Service); err != nil {
		return fmt.Errorf("cannot %s slurmdbd (see %s): %w", verb, LogFile, err)
	}
	return h.waitListening(ctx)
}

// waitListening waits until slurmdbd accepts connections on its port on this host.
func (h *hook) waitListening(ctx context.Context) error {
	c := h.c
	wctx, cancel := context.WithTimeout(ctx, c.StartTimeout)
	if c.StartTimeout == 0 {
		wctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
	}
	defer cancel()
	dial := c.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(slurmdbd.DefaultPort))
	var last error
	err := poll.Until(wctx, c.poll(), func(ctx context.Context) (bool, error) {
		conn, err := dial(ctx, "tcp", addr)
		if err != nil {
			last = err
			return false, nil
		}
		conn.Close()
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("slurmdbd started but does not listen on %s (see %s): %w", addr, LogFile, errors.Join(last, err))
	}
	return nil
}
