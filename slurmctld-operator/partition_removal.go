package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// partitionRemovals are the removals of departed applications' partitions (the state's
// Removing), one pass at a time: a partition goes once no job record of it is left.
type partitionRemovals struct{ h *hook }

// pass makes one pass over the partitions being removed: each whose jobs are all
// gone is removed, with one reconfigure after the pass if any was; it never waits.
func (pr partitionRemovals) pass(ctx context.Context) error {
	h := pr.h
	removed := false
	for _, app := range sortedKeys(h.st.Removing) {
		done, err := pr.finish(ctx, app)
		if err != nil {
			h.logf(ctx, juju.LevelWarning, "cannot remove partition %s yet: %v", app, err)
		}
		removed = removed || done
	}
	if removed && (slurmctldDaemon{h}).live(ctx) {
		return slurmctldDaemon{h}.reconfigure(ctx)
	}
	return nil
}

// finish removes app's partition if no job of it is left, deleting the app's remaining
// idle node records first. It reports whether the partition is gone.
func (pr partitionRemovals) finish(ctx context.Context, app string) (bool, error) {
	h := pr.h
	jobs, err := partitionJobs(ctx, h.client(), app)
	if err != nil {
		return false, err
	}
	var pending []string
	for _, j := range jobs {
		if j.State == "PENDING" {
			pending = append(pending, j.ID)
		}
	}
	h.st.Removing[app] = removal{Jobs: len(jobs), Pending: pending}
	if len(jobs) > 0 {
		return false, nil
	}
	cl := h.client()
	nodes, err := h.nodes.list(ctx)
	if err != nil {
		return false, err
	}
	left := 0
	for _, n := range nodes {
		// A node belongs to app by its name (the unit's), never by its features: node-config
		// may give a node any feature, and a node an administrator added by hand is not ours.
		if owner, ok := slurmd.NodeApp(n.Name); !ok || owner != app {
			continue
		}
		err := cl.DeleteNode(ctx, n.Name)
		switch {
		case err == nil:
			h.logf(ctx, juju.LevelInfo, "deleted node %s of removed application %s", n.Name, app)
			delete(h.st.Pending, n.Name)
		case errors.Is(err, slurm.ErrUnknownNode):
			delete(h.st.Pending, n.Name)
		default:
			left++
			h.logf(ctx, juju.LevelWarning, "cannot delete node %s of removed application %s yet: %v", n.Name, app, err)
		}
	}
	if left > 0 {
		return false, nil
	}
	// A refused or failed candidate must leave the record as it was: the order of Apps decides
	// the default partition.
	apps, rm, problem, hadProblem := slices.Clone(h.st.Apps), h.st.Removing[app], h.st.Problems[app], h.st.Problems[app] != ""
	_, err = h.conf.change(ctx, func(ctx context.Context) (bool, error) {
		if err := (slurmConf{h}).removePartition(ctx, app); err != nil {
			return false, err
		}
		h.st.dropApp(app)
		// The default partition may move to another application.
		_, err := slurmConf{h}.syncPartitions(ctx, nil)
		return true, err
	})
	if err != nil {
		h.st.Apps = apps
		h.st.Removing[app] = rm
		if hadProblem {
			h.st.setProblem(app, problem)
		}
		return false, err
	}
	h.logf(ctx, juju.LevelInfo, "removed partition %s", app)
	return true, nil
}

// partitionJobs lists every job record slurmctld still holds in partition, in all states:
// finished jobs are kept for MinJobAge and hold a reference to the partition until then.
func partitionJobs(ctx context.Context, cl *slurm.Client, partition string) ([]slurm.Job, error) {
	jobs, err := cl.PartitionJobRecords(ctx, partition)
	if err != nil {
		return nil, fmt.Errorf("cannot list the jobs of partition %s: %w", partition, err)
	}
	return jobs, nil
}
