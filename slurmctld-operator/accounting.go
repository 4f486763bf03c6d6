package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/slurmdbd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// Accounting: the slurmdbd relation. The leader grants the cluster's auth key secret to the
// relation and publishes the cluster name and its Slurm version; once slurmdbd publishes where
// it listens (and is not older than the controller), slurm.conf gets
// AccountingStorageType=accounting_storage/slurmdbd, AccountingStorageHost/Port and
// AccountingStorageTRES=gres/gpu (unless slurm-conf-parameters sets it), through the
// candidate check like every slurm.conf change, and slurmctld is restarted once (Slurm loads
// its accounting storage plugin at start only). Running and queued jobs survive the restart
// (they are in StateSaveLocation); slurmctld registers the cluster with slurmdbd and sends the
// records of the jobs it holds. Removing the relation turns accounting off the same way.
// While slurmdbd or its database is away slurmctld keeps scheduling and queues the records;
// the status shows the queue (sdiag's DBD agent queue) until it drains.

// accountingTRES is what AccountingStorageTRES adds to Slurm's default TRES (cpu, mem, node,
// energy, billing, fs/disk, vmem, pages): GPUs, so that sacct shows gres/gpu.
const accountingTRES = "gres/gpu"

// accounting is what the controller knows of its slurmdbd.
type accounting struct {
	// Relation and App are the slurmdbd relation and application.
	Relation juju.RelationID `json:"relation"`
	App      string          `json:"app,omitempty"`
	// Host, Port and Version are slurmdbd's data, once published.
	Host    string `json:"host,omitempty"`
	Port    int    `json:"port,omitempty"`
	Version string `json:"version,omitempty"`
	// Refused says why accounting stays off with this slurmdbd ("" when it is on).
	Refused string `json:"refused,omitempty"`
}

// publishedDbd is what the leader wrote to the slurmdbd relation in hooks that succeeded
// (published.Dbd): the secret granted and the databag.
type publishedDbd struct {
	Relation juju.RelationID   `json:"relation"`
	Granted  string            `json:"granted,omitempty"`
	Data     map[string]string `json:"data,omitempty"`
}

// storage is the AccountingStorageHost:Port slurm.conf should name, "" for no accounting.
func (a *accounting) storage() string {
	if a == nil || a.Host == "" || a.Refused != "" {
		return ""
	}
	return a.Host + ":" + strconv.Itoa(a.Port)
}

// slurmdbdRelation handles every hook of the slurmdbd endpoint.
func (c *Charm) slurmdbdRelation(ctx context.Context, h *hook) error {
	ev, evErr := slurmdbd.Requirer{HookContext: h.hc}.Event(ctx)
	if !h.leader || h.cfgErr != nil || h.clusterNameError() != nil {
		return h.setStatus(ctx)
	}
	var err error
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
		err = h.publishAccounting(ctx)
	case slurmdbd.DbdReady:
		err = h.dbdReady(ctx, ev)
	case slurmdbd.DbdDisconnected:
		err = h.dbdGone(ctx)
	default:
		err = evErr
	}
	if err != nil {
		return err
	}
	return h.setStatus(ctx)
}

// joined is a with the relation id and application, keeping slurmdbd's data of the same
// relation.
func (a *accounting) joined(rel juju.RelationID, app string) *accounting {
	if a == nil || a.Relation != rel {
		return &accounting{Relation: rel, App: app}
	}
	if app != "" {
		a.App = app
	}
	return a
}

// publishAccounting grants the auth key secret to the slurmdbd relation and publishes the
// controller's data there, unless the record says both were done.
func (h *hook) publishAccounting(ctx context.Context) error {
	a := h.st.Accounting
	if a == nil {
		return nil
	}
	id, err := h.authSecret(ctx)
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
	if rec.Granted != string(id) {
		if err := h.hc.Secrets.Grant(ctx, id, a.Relation, ""); err != nil {
			return fmt.Errorf("cannot grant the auth key secret to %s: %w", a.Relation, err)
		}
		rec.Granted = string(id)
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

// dbdReady records where slurmdbd listens and turns accounting on (or keeps it off, saying
// why, for a slurmdbd older than the controller).
func (h *hook) dbdReady(ctx context.Context, ev slurmdbd.DbdReady) error {
	a := h.st.Accounting.joined(ev.Relation, ev.App)
	h.st.Accounting = a
	if err := h.publishAccounting(ctx); err != nil {
		return err
	}
	prev := *a
	a.Host, a.Port, a.Version, a.Refused = ev.Data.Host, ev.Data.Port, ev.Data.SlurmVersion.String(), ""
	if ctl, err := slurm.ParseVersion(h.st.SlurmVersion); err == nil {
		if err := slurmdbd.CheckVersions(ev.Data.SlurmVersion, ctl); err != nil {
			a.Refused = err.Error()
			h.logf(ctx, juju.LevelWarning, "accounting stays off: %v", err)
		}
	}
	if err := h.applyAccounting(ctx); err != nil {
		*a = prev
		return err
	}
	return nil
}

// dbdGone turns accounting off: the relation is gone.
func (h *hook) dbdGone(ctx context.Context) error {
	prev := h.st.Accounting
	h.st.Accounting = nil
	h.pub.Dbd = nil
	if err := h.applyAccounting(ctx); err != nil {
		h.st.Accounting = prev
		return err
	}
	return nil
}

// applyAccounting writes slurm.conf for the accounting state (candidate check) and restarts a
// running slurmctld when its accounting storage changes.
func (h *hook) applyAccounting(ctx context.Context) error {
	feat, err := h.features(ctx)
	if err != nil {
		return err
	}
	changed, err := h.changeConf(ctx, func(ctx context.Context) (bool, error) { return h.writeSlurmConf(ctx, feat) })
	var ce *slurm.ConfigError
	switch {
	case errors.As(err, &ce):
		if h.st.Accounting != nil {
			h.st.Accounting.Refused = "Slurm refuses the accounting configuration: " + refusal(ce)
		}
		h.logf(ctx, juju.LevelWarning, "slurm.conf left as it was: %v", err)
		return nil
	case err != nil:
		return err
	}
	if !h.running(ctx) {
		return nil
	}
	return h.apply(ctx, changed)
}

// editAccounting sets slurm.conf's accounting keys for the accounting state (writeSlurmConf
// runs it after slurm-conf-parameters): the slurmdbd keys when accounting is on, none when
// it is off; AccountingStorageTRES unless slurm-conf-parameters sets it.
func (h *hook) editAccounting(d *slurmconf.Doc) error {
	a := h.st.Accounting
	on := a.storage() != ""
	typ := "accounting_storage/none"
	if on {
		typ = "accounting_storage/slurmdbd"
	}
	if err := d.Set("AccountingStorageType", typ); err != nil {
		return err
	}
	if !on {
		d.Delete("AccountingStorageHost")
		d.Delete("AccountingStoragePort")
	} else {
		if err := d.Set("AccountingStorageHost", a.Host); err != nil {
			return err
		}
		if err := d.Set("AccountingStoragePort", strconv.Itoa(a.Port)); err != nil {
			return err
		}
	}
	if !h.extra.Has("AccountingStorageTRES") {
		d.Delete("AccountingStorageTRES")
		if on {
			return d.Set("AccountingStorageTRES", accountingTRES)
		}
	}
	return nil
}

// accountingRestartNeeded reports whether slurmctld runs with another accounting storage than
// slurm.conf names (Slurm reads it at start only).
func (h *hook) accountingRestartNeeded() bool {
	return h.st.AccountingRunning != h.st.Accounting.storage()
}

// restartForAccounting restarts slurmctld so that it loads the accounting storage slurm.conf
// names. Running and queued jobs survive it (StateSaveLocation); the hook does not wait for
// them. The status says why it restarts.
//
// A cluster that slurmdbd does not know yet registers itself at this start. Slurm 23.02 and
// later keep a ClusterID in StateSaveLocation/clustername, made up at the first start without
// accounting, and a slurmdbd before 26.05 registers the cluster under an id of its own:
// slurmctld then refuses to start ("CLUSTER ID MISMATCH"). So for a cluster slurmdbd does not
// hold, the file goes first and slurmctld takes slurmdbd's id (the check is there against two
// controllers sharing one StateSaveLocation, which this is not). If slurmctld does not come
// back with accounting all the same, accounting is turned off again, naming the failure, and
// slurmctld is restarted as it was: it keeps scheduling.
func (h *hook) restartForAccounting(ctx context.Context) error {
	want := h.st.Accounting.storage()
	why := "turn accounting off"
	if want != "" {
		why = "turn accounting on (slurmdbd at " + want + ")"
		if err := h.forgetLocalClusterID(ctx); err != nil {
			return err
		}
	}
	if err := h.progress(ctx, "restarting slurmctld to "+why+"; running jobs keep running"); err != nil {
		return err
	}
	if err := h.c.restart(ctx, svcSlurmctld); err != nil {
		return err
	}
	h.st.AccountingRunning = want
	h.st.GresRunning = h.gresTypes() // the restart applies every key
	h.forgetNodes()
	if err := h.waitUp(ctx, "restarted"); err != nil {
		if want == "" {
			return err
		}
		return h.rollBackAccounting(ctx, err)
	}
	h.logf(ctx, juju.LevelInfo, "restarted slurmctld to %s", why)
	h.repairPartitions(ctx)
	return nil
}

// forgetLocalClusterID removes StateSaveLocation/clustername when slurmdbd does not know the
// cluster yet (see restartForAccounting). slurmdbd is asked with the live slurm.conf, which
// names it already.
func (h *hook) forgetLocalClusterID(ctx context.Context) error {
	known, err := h.c.client().ClusterKnown(ctx, h.cfg.ClusterName)
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "cannot ask slurmdbd whether it knows cluster %s (the ClusterID file stays): %v", h.cfg.ClusterName, err)
		return nil
	}
	if known {
		return nil
	}
	path := h.c.Path(stateSaveDir + "/clustername")
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove %s: %w", path, err)
	}
	h.logf(ctx, juju.LevelInfo, "cluster %s is new to slurmdbd: it registers with slurmdbd's ClusterID", h.cfg.ClusterName)
	return nil
}

// rollBackAccounting turns accounting off again after slurmctld failed to come back with it
// (cause), and restarts slurmctld without it.
func (h *hook) rollBackAccounting(ctx context.Context, cause error) error {
	h.st.Accounting.Refused = "slurmctld did not start with accounting (see " + slurmctldLog + "): " + firstLine(cause.Error())
	h.logf(ctx, juju.LevelError, "accounting turned off again: %v", cause)
	feat, err := h.features(ctx)
	if err != nil {
		return err
	}
	if _, err := h.changeConf(ctx, func(ctx context.Context) (bool, error) { return h.writeSlurmConf(ctx, feat) }); err != nil {
		return errors.Join(cause, err)
	}
	if err := h.c.restart(ctx, svcSlurmctld); err != nil {
		return errors.Join(cause, err)
	}
	h.st.AccountingRunning = ""
	return h.waitUp(ctx, "restarted without accounting")
}

// accountingStatus is the status's note on accounting ("" without a slurmdbd relation).
func (h *hook) accountingStatus(ctx context.Context) string {
	a := h.st.Accounting
	switch {
	case a == nil:
		return ""
	case a.Refused != "":
		return "; accounting off: " + a.Refused
	case a.Host == "":
		return "; waiting for slurmdbd"
	case h.st.AccountingRunning != a.storage():
		return "; accounting not applied yet (slurmctld restart pending)"
	}
	n, err := h.c.client().DbdAgentQueue(ctx)
	switch {
	case err != nil:
		return "; accounting via slurmdbd (cannot read sdiag: " + firstLine(err.Error()) + ")"
	case n > 0:
		return fmt.Sprintf("; accounting behind: %d records queued for slurmdbd", n)
	}
	return "; accounting via slurmdbd"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
