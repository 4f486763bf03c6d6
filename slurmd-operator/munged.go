package main

import (
	"context"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// munged's start on a new node's join, beside the hook's other work: what needs no key (its
// socket directory, its status, its service's definition: munge.Daemon.Prepare) runs while
// the relation and the key's secret are read (prepareMunged), and munged's start and first
// answer run while slurmd's configuration is built and defined (startMunged). slurmd starts
// once munged answers (authReady): munged still reads the controller's key at its start,
// and slurmd still starts only with munged answering.

// prepareMunged starts, when this relation hook is a new node's join, the connection to the
// service manager (connectAhead) and, on a Slurm that authenticates with munge, munged's
// Prepare in the background: the controller's data may start munged, and nothing of munged
// has been set up yet. The caller waits for it before the hook ends (mungedPrepared).
func (h *hook) prepareMunged(ctx context.Context) {
	switch h.hc.Event.Kind {
	case juju.RelationCreated, juju.RelationJoined, juju.RelationChanged:
	default:
		return
	}
	if h.st.Applied != nil || h.st.Departed {
		return
	}
	h.connectAhead(ctx)
	if h.st.Facts == nil {
		return
	}
	if v, err := slurm.ParseVersion(h.st.Facts.Version); err != nil || !slurm.FeaturesOf(v).Munge {
		return
	}
	d := h.c.munged()
	h.mungePrep = charm.Start(func() (*munge.Prepared, error) { return d.Prepare(ctx) })
}

// connectAhead starts the connection to the host's service manager in the background, when
// the manager can (auto.Manager.Connect): a new node's join starts slurmd (and munged) once
// the relation and the key's secret are read, and on a machine the connection to systemd
// (a socket, its authentication, a Hello through dbus-daemon) is made while they are. The
// first service call waits for it; the manager's Close, at the hook's end, too.
func (h *hook) connectAhead(ctx context.Context) {
	if m, ok := h.c.Services.(interface{ Connect(context.Context) }); ok {
		m.Connect(ctx)
	}
}

// mungedPrepared is munged's Prepare: the one prepareMunged started, or one run now.
func (h *hook) mungedPrepared(ctx context.Context) (*munge.Prepared, error) {
	if h.mungePrep != nil {
		return h.mungePrep.Wait()
	}
	return h.c.munged().Prepare(ctx)
}

// startMunged starts munged with the key written (restart: the key changed): in the
// background when beside is set (authReady waits for it), else before it returns.
func (h *hook) startMunged(ctx context.Context, restart, beside bool) error {
	p, err := h.mungedPrepared(ctx)
	if err != nil {
		return err
	}
	if !beside {
		return p.Start(ctx, restart)
	}
	h.authUp = charm.Start(func() (struct{}, error) { return struct{}{}, p.Start(ctx, restart) })
	return nil
}

// authReady waits for what authUp left running (munged's start, or auth/slurm's key write),
// if anything, and returns its error.
func (h *hook) authReady() error {
	if h.authUp == nil {
		return nil
	}
	_, err := h.authUp.Wait()
	return err
}

// waitMunged waits for what the hook runs of munged in the background: no request or
// command is left running when the hook ends.
func (h *hook) waitMunged() {
	if h.mungePrep != nil {
		h.mungePrep.Wait()
	}
	h.authReady()
}
