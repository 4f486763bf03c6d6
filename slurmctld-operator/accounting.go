package main

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/charmed-slurm/operators/interfaces/slurmdbd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// Accounting: the slurmdbd relation. The leader grants the cluster's auth key secret to the
// relation and publishes the cluster name and its Slurm version; once slurmdbd publishes where
// it listens (and is not older than the controller), slurm.conf gets
// AccountingStorageType=accounting_storage/slurmdbd, AccountingStorageHost/Port and
// AccountingStorageTRES=gres/gpu (unless slurm-conf-parameters sets it; slurmConf.editAccounting),
// through the candidate check like every slurm.conf change, and slurmctld is restarted once
// (slurmctldDaemon.restartForAccounting: Slurm loads its accounting storage plugin at start
// only; the hook does not wait for it, a later pass settles the restart). Running and queued jobs survive the restart (they are in StateSaveLocation);
// slurmctld registers the cluster with slurmdbd and sends the records of the jobs it holds.
// Removing the relation turns accounting off the same way. While slurmdbd or its database is
// away slurmctld keeps scheduling and queues the records; the status shows the queue (sdiag's
// DBD agent queue) until it drains (accountingStatus).

// dbdRelation is the slurmdbd relation: what the leader publishes there and the accounting
// state it sets from slurmdbd's data.
type dbdRelation struct{ h *hook }

// handle handles every hook of the slurmdbd endpoint.
func (r dbdRelation) handle(ctx context.Context) error {
	h := r.h
	ev, evErr := slurmdbd.Requirer{HookContext: h.hc}.Event(ctx)
	if !h.leader || h.configProblem() != nil {
		return nil
	}
	switch ev := ev.(type) {
	case slurmdbd.DbdJoined:
		h.st.Accounting = h.st.Accounting.joined(ev.Relation, ev.App)
		if evErr != nil {
			var de *slurmdbd.DataError
			if !errors.As(evErr, &de) {
				return evErr
			}
			h.st.Accounting.Refused = evErr.Error()
			h.logf(ctx, juju.LevelWarning, "accounting stays off: %v", evErr)
		}
		return r.publish(ctx)
	case slurmdbd.DbdReady:
		return r.ready(ctx, ev)
	case slurmdbd.DbdDisconnected:
		return r.gone(ctx)
	}
	return evErr
}

// publish grants the auth key secret to the slurmdbd relation and publishes the controller's
// data there, unless the record says both were done.
func (r dbdRelation) publish(ctx context.Context) error {
	h := r.h
	a := h.st.Accounting
	if a == nil {
		return nil
	}
	id, err := (authKey{h}).secret(ctx)
	if err != nil {
		return err
	}
	if _, err := h.features(ctx); err != nil {
		return err
	}
	v, err := slurm.ParseVersion(h.st.SlurmVersion)
	if err != nil {
		return fmt.Errorf("cannot read the controller's Slurm version: %w", err)
	}
	bag := slurmdbd.ControllerBag{AuthSecretID: string(id), ClusterName: h.cfg.ClusterName, SlurmVersion: v}
	data, err := bag.Encode()
	if err != nil {
		return fmt.Errorf("cannot publish controller data on %s: %w", a.Relation, err)
	}
	rec := h.pub.Dbd
	if rec == nil || rec.Relation != a.Relation {
		rec = &publishedDbd{Relation: a.Relation}
	}
	if err := rec.grant(ctx, h.hc.Secrets, id, a.Relation); err != nil {
		return err
	}
	if !maps.Equal(rec.Data, data) {
		if err := (slurmdbd.Requirer{HookContext: h.hc}).PublishController(ctx, a.Relation, bag); err != nil {
			return fmt.Errorf("cannot publish controller data on %s: %w", a.Relation, err)
		}
		rec.Data = data
	}
	h.pub.Dbd = rec
	return nil
}

// ready records where slurmdbd listens and turns accounting on (or keeps it off, saying
// why, for a slurmdbd older than the controller).
func (r dbdRelation) ready(ctx context.Context, ev slurmdbd.DbdReady) error {
	h := r.h
	a := h.st.Accounting.joined(ev.Relation, ev.App)
	h.st.Accounting = a
	if err := r.publish(ctx); err != nil {
		return err
	}
	prev := *a
	a.set(ctx, h, ev.Data)
	if err := r.apply(ctx); err != nil {
		*a = prev
		return err
	}
	return nil
}

// set records slurmdbd's data d; accounting stays off (Refused) with a slurmdbd older than
// the controller.
func (a *accounting) set(ctx context.Context, h *hook, d slurmdbd.DbdData) {
	a.Host, a.Port, a.Version, a.Refused = d.Host, d.Port, d.SlurmVersion.String(), ""
	if ctl, err := slurm.ParseVersion(h.st.SlurmVersion); err == nil {
		if err := slurmdbd.CheckVersions(d.SlurmVersion, ctl); err != nil {
			a.Refused = err.Error()
			h.logf(ctx, juju.LevelWarning, "accounting stays off: %v", err)
		}
	}
}

// gone turns accounting off: the relation is gone.
func (r dbdRelation) gone(ctx context.Context) error {
	h := r.h
	prev := h.st.Accounting
	h.st.Accounting = nil
	h.pub.Dbd = nil
	if err := r.apply(ctx); err != nil {
		h.st.Accounting = prev
		return err
	}
	return nil
}

// apply writes slurm.conf for the accounting state (candidate check) and has a running
// slurmctld apply it (slurmctldDaemon.apply restarts it when its accounting storage changed).
func (r dbdRelation) apply(ctx context.Context) error {
	h := r.h
	refused, err := slurmConf{h}.rewrite(ctx)
	if refused != nil && h.st.Accounting != nil {
		h.st.Accounting.Refused = "Slurm refuses the accounting configuration: " + refusal(refused)
	}
	return err
}
