package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/poll"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// startWait bounds the wait for a freshly started slurmctld to answer `scontrol ping`.
const startWait = 30 * time.Second

// slurmctldDaemon is slurmctld on this host: its configuration brought to the charm's, started,
// reconfigured or restarted when that changed, and its partitions checked after.
type slurmctldDaemon struct{ h *hook }

// ensure writes the key, slurm.conf and partitions and makes sure munged and
// slurmctld run, reconfiguring a running slurmctld once if its configuration changed.
func (ctl slurmctldDaemon) ensure(ctx context.Context) error {
	h := ctl.h
	feat, err := h.features(ctx)
	if err != nil {
		return err
	}
	if err := (authKey{h}).ensure(ctx, feat); err != nil {
		return err
	}
	wrote, err := writeGresConf(ctx, h.c.Settings)
	if err != nil {
		return err
	}
	if wrote {
		h.logf(ctx, juju.LevelInfo, "wrote %s (Include %s)", gresConfPath, gresLocalPath)
	}
	cgroupChanged, err := writeCgroupConf(ctx, h.c.Settings, feat)
	if err != nil {
		return err
	}
	if cgroupChanged {
		h.logf(ctx, juju.LevelInfo, "wrote %s (CgroupPlugin=disabled)", cgroupConfPath)
	}
	prevExtra := h.st.ExtraKeys
	changed, err := h.conf.change(ctx, func(ctx context.Context) (bool, error) {
		confChanged, err := slurmConf{h}.write(ctx, feat)
		if err != nil {
			return false, err
		}
		partsChanged, err := slurmConf{h}.syncPartitions(ctx, nil)
		return confChanged || partsChanged, err
	})
	var ce *slurm.ConfigError
	switch {
	case errors.As(err, &ce) && len(h.extra) > 0:
		// Slurm cannot read slurm.conf with these parameters: the live file, and a running
		// slurmctld, keep the previous ones; a controller that is not running yet stays so.
		h.st.ExtraKeys = prevExtra
		h.st.ConfRefused = "slurm-conf-parameters: " + refusal(ce)
		h.logf(ctx, juju.LevelWarning, "slurm.conf left as it was: %v", err)
		return nil
	case err != nil:
		return err
	}
	h.st.ConfRefused = ""
	if h.c.running(ctx) {
		if err := ctl.apply(ctx, changed || cgroupChanged); err != nil {
			return err
		}
	} else if err := ctl.start(ctx); err != nil {
		return err
	}
	h.st.ClusterName = h.cfg.ClusterName
	// The Slurm version in juju status's Version column, once per version.
	if err := h.k.SetVersion(ctx, h.st.SlurmVersion); err != nil {
		return err
	}
	return publisher{h}.openPort(ctx)
}

// start defines, enables and starts slurmctld and waits (bounded) until it answers.
func (ctl slurmctldDaemon) start(ctx context.Context) error {
	h := ctl.h
	c := h.c
	if err := h.progress(ctx, "starting slurmctld"); err != nil {
		return err
	}
	spec := service.Spec{Name: svcSlurmctld, Summary: "Slurm controller", Command: []string{"/usr/sbin/slurmctld", "-D", "-f", confPath}}
	if err := c.Services.Configure(ctx, spec); err != nil {
		return fmt.Errorf("cannot configure slurmctld: %w", err)
	}
	if err := c.Services.Enable(ctx, svcSlurmctld); err != nil {
		return fmt.Errorf("cannot enable slurmctld: %w", err)
	}
	if err := c.Services.Start(ctx, svcSlurmctld); err != nil {
		return fmt.Errorf("cannot start slurmctld (see %s): %w", slurmctldLog, err)
	}
	// slurm.conf as written is what slurmctld now runs with.
	h.st.GresRunning = h.st.gresTypes()
	if err := ctl.waitUp(ctx, "started"); err != nil {
		return err
	}
	h.logf(ctx, juju.LevelInfo, "slurmctld started")
	return nil
}

// waitUp waits (bounded by startWait) until a slurmctld just started or restarted answers.
func (ctl slurmctldDaemon) waitUp(ctx context.Context, what string) error {
	h := ctl.h
	c := h.c
	wctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	var last error
	err := poll.Until(wctx, c.poll(), func(ctx context.Context) (bool, error) {
		_, last = c.client().Ping(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("slurmctld %s but does not answer (see %s): %w", what, slurmctldLog, errors.Join(last, err))
	}
	return nil
}

// apply makes a running slurmctld read its configuration files after they changed: one
// restart when GresTypes differs from what it runs with (Slurm ignores a GresTypes change
// on reconfigure), else one `scontrol reconfigure` when changed is set.
func (ctl slurmctldDaemon) apply(ctx context.Context, changed bool) error {
	h := ctl.h
	if h.st.gresRestartNeeded() {
		return ctl.restartForGres(ctx)
	}
	if changed {
		return ctl.reconfigure(ctx)
	}
	return nil
}

// restartForGres restarts slurmctld so that it manages the GresTypes slurm.conf lists (a
// restart keeps the dynamic nodes and the jobs, from the saved state), waits until it
// answers, then checks partition membership as after a reconfigure.
func (ctl slurmctldDaemon) restartForGres(ctx context.Context) error {
	h := ctl.h
	want := h.st.gresTypes()
	if err := h.progress(ctx, "restarting slurmctld for GresTypes="+want); err != nil {
		return err
	}
	if err := h.c.restart(ctx, svcSlurmctld); err != nil {
		return err
	}
	prev := h.st.GresRunning
	h.st.GresRunning = want
	h.nodes.forget()
	if err := ctl.waitUp(ctx, "restarted"); err != nil {
		return err
	}
	h.logf(ctx, juju.LevelInfo, "restarted slurmctld: GresTypes %q → %q (a GresTypes change needs a restart)", prev, want)
	ctl.repairPartitions(ctx)
	return nil
}

// reconfigure runs one `scontrol reconfigure`.
func (ctl slurmctldDaemon) reconfigure(ctx context.Context) error {
	h := ctl.h
	if err := h.progress(ctx, "reconfiguring"); err != nil {
		return err
	}
	err := h.c.client().Reconfigure(ctx)
	h.nodes.forget()
	if err != nil {
		return fmt.Errorf("cannot reconfigure slurmctld: %w", err)
	}
	h.logf(ctx, juju.LevelInfo, "reconfigured slurmctld")
	ctl.repairPartitions(ctx)
	return nil
}

// repairPartitions checks that every partition holds exactly the registered nodes of its
// NodeSet and repairs one that does not. Slurm before 23.02.2 rebuilds NodeSet partitions
// from stale feature bitmaps on `scontrol reconfigure` when the node table has holes
// (deleted nodes), dropping registered nodes from their partition until the next
// registration (SchedMD bug 16295; libs/slurm's RepairPartitionMembership). It runs after
// every reconfigure and on update-status; a failure is logged, not fatal: the next run
// tries again.
// The hook's node list serves every partition: each node record names the partitions that
// hold it (Partitions=, from the same bitmaps as the partition's Nodes=; real 22.05 shows
// the loss there too, slurmtest's show-node-moved). Only a partition found wrong is
// repaired, which reads the nodes and the partition again.
func (ctl slurmctldDaemon) repairPartitions(ctx context.Context) {
	h := ctl.h
	cl := h.c.client()
	nodes, err := h.nodes.list(ctx)
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "cannot check the nodes of the partitions: %v", err)
		return
	}
	for _, app := range h.st.Apps {
		if _, rm := h.st.Removing[app]; rm {
			continue
		}
		if membersOf(app, nodes).OK() {
			continue
		}
		repaired, err := cl.RepairPartitionMembership(ctx, app, app)
		if err != nil {
			h.logf(ctx, juju.LevelWarning, "cannot check the nodes of partition %s: %v", app, err)
			continue
		}
		if len(repaired) > 0 {
			h.nodes.forget()
			h.logf(ctx, juju.LevelWarning, "partition %s had lost or gained nodes after a reconfigure (Slurm bug 16295): repaired %s", app, strings.Join(repaired, ","))
		}
	}
}

// membersOf compares partition app (its NodeSet's feature is app too) with the nodes
// carrying the feature, from the node records alone: the partition holds the nodes whose
// Partitions= name it.
func membersOf(app string, nodes []slurm.Node) slurm.Membership {
	p := slurm.Partition{Name: app, NodeSets: []string{app}}
	for _, n := range nodes {
		if slices.Contains(n.Partitions, app) {
			p.Nodes = append(p.Nodes, n.Name)
		}
	}
	return slurm.MembershipOf(p, nodes, app)
}
