package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/charmed-slurm/operators/libs/hostlist"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// report sets the unit status from everything known in this hook, unless this unit set
// the same status last (the kit's status cache, saved with the state).
// The node counts it shows are kept in the state for the next hooks (nodeCounts), and
// dropped when it shows none.
func (h *hook) report(ctx context.Context) error {
	counted := false
	counts := func(ctx context.Context) (nodeCounts, error) {
		counted = true
		return h.nodeCounts(ctx)
	}
	code, msg := unitStatus(ctx, h.st, h.leader, h.configProblem(), h.extra, observer{running: h.c.running, nodes: counts, dbdQueue: h.client().DbdAgentQueue, role: h.haStatus, backupWait: h.backupWait})
	if !counted {
		h.st.NodeCounts = nil
	}
	return h.k.SetUnitStatus(ctx, code, msg)
}

// progress shows a step in maintenance status; report replaces it at the end of the hook.
func (h *hook) progress(ctx context.Context, msg string) error {
	return h.k.SetUnitStatus(ctx, juju.StatusMaintenance, msg)
}

// observer is what the status asks of the host beyond the state, each only when the status
// gets that far: whether slurmctld runs, the node list's counts, (with accounting on) how many
// records wait for slurmdbd, and this controller's role among several (haStatus, "" with one
// controller); and, on a unit that is not the leader, what keeps it from running slurmctld
// ("code:message", "" when nothing does).
type observer struct {
	running    func(ctx context.Context) bool
	nodes      func(ctx context.Context) (nodeCounts, error)
	dbdQueue   func(ctx context.Context) (int, error)
	role       func(ctx context.Context) string
	backupWait string
}

// unitStatus is the unit status, the one place it is worded: from the state, leadership, the
// configuration's problem and its slurm.conf parameters (extra) and the slurmctld restart
// under way, then (only when it gets that far) whether slurmctld runs and its node list.
func unitStatus(ctx context.Context, st *charmState, leader bool, configProblem error, extra slurmconf.Params, o observer) (juju.StatusCode, string) {
	if st.Leaving {
		if st.HandedTo != "" {
			return juju.StatusMaintenance, "leaving: slurmctld stopped, control handed to " + st.HandedTo
		}
		return juju.StatusMaintenance, "leaving: slurmctld stopped"
	}
	if configProblem != nil {
		return juju.StatusBlocked, configProblem.Error()
	}
	if st.ConfRefused != "" && leader {
		return juju.StatusBlocked, st.ConfRefused
	}
	if sd := st.StoodDown; sd != nil {
		return juju.StatusActive, "standing by, slurmctld stopped: control handed to " + sd.By + " by its takeover action (run takeover on this unit to take it back)"
	}
	if !leader {
		if code, msg, ok := strings.Cut(o.backupWait, ":"); ok {
			return juju.StatusCode(code), msg
		}
		if code, msg, ok := restartStatus(st.Restart); ok {
			return code, msg
		}
		if !o.running(ctx) {
			return juju.StatusMaintenance, "slurmctld is not running"
		}
		if role := o.role(ctx); role != "" {
			return juju.StatusActive, "slurmctld " + role + st.TurnNote
		}
		return juju.StatusWaiting, "waiting for the leader's configuration"
	}
	if apps := sortedKeys(st.Problems); len(apps) > 0 {
		return juju.StatusBlocked, fmt.Sprintf("slurmd application %s: %s", apps[0], st.Problems[apps[0]])
	}
	if code, msg, ok := restartStatus(st.Restart); ok {
		return code, msg
	}
	if !o.running(ctx) {
		return juju.StatusMaintenance, "slurmctld is not running"
	}
	c, err := o.nodes(ctx)
	if err != nil {
		if errors.Is(err, slurm.ErrControllerUnreachable) {
			return juju.StatusWaiting, "slurmctld is not responding"
		}
		return juju.StatusWaiting, fmt.Sprintf("cannot list nodes: %v", err)
	}
	if apps := sortedKeys(st.Removing); len(apps) > 0 {
		app, r := apps[0], st.Removing[apps[0]]
		if len(r.Pending) > 0 {
			msg := fmt.Sprintf("removing partition %s: pending jobs %s can never run there; run settle-jobs partition=%s with move-to=<partition> or cancel=true", app, strings.Join(r.Pending, ","), app)
			if others := r.Jobs - len(r.Pending); others > 0 {
				msg += fmt.Sprintf(" (also waiting for %d other jobs to finish)", others)
			}
			return juju.StatusBlocked, msg
		}
		jobs := "the jobs" // not counted yet (removal.Jobs is -1 until squeue answers)
		if r.Jobs >= 0 {
			jobs = fmt.Sprintf("%d jobs", r.Jobs)
		}
		return juju.StatusWaiting, fmt.Sprintf("waiting for %s in partition %s to finish before removing it", jobs, app)
	}
	msg := fmt.Sprintf("slurmctld up, %d nodes (%d idle, %d allocated, %d drained", c.Nodes, c.Idle, c.Alloc, c.Drained)
	if role := o.role(ctx); role != "" {
		msg = fmt.Sprintf("slurmctld %s, %d nodes (%d idle, %d allocated, %d drained", role, c.Nodes, c.Idle, c.Alloc, c.Drained)
	}
	if c.Draining > 0 {
		msg += fmt.Sprintf(", %d draining", c.Draining)
	}
	if c.Down > 0 {
		msg += fmt.Sprintf(", %d down", c.Down)
	}
	msg += ")"
	if pend := sortedKeys(st.Pending); len(pend) > 0 {
		msg += "; removing " + hostlist.CompressSorted(pend) + " once idle"
	}
	if len(st.Apps) == 0 {
		msg += "; waiting for a slurmd application"
	}
	msg += st.TurnNote
	msg += accountingStatus(ctx, st, o)
	msg += rebootStatus(st.Reboots) + cosStatus(st, extra)
	return juju.StatusActive, msg
}

// restartStatus is the status while the slurmctld restart r is under way (ok false when r is
// nil): blocked naming its failure, else maintenance saying what it does.
func restartStatus(r *pendingRestart) (juju.StatusCode, string, bool) {
	switch {
	case r == nil:
		return "", "", false
	case r.Failed != "":
		return juju.StatusBlocked, r.Failed, true
	}
	return juju.StatusMaintenance, "slurmctld restarting to " + r.What + "; running jobs keep running", true
}

// accountingStatus is the accounting part of the unit status ("" without a slurmdbd
// relation): off and why, waiting for slurmdbd, a restart still to make, or the records queued
// for slurmdbd (sdiag's DBD agent queue) while slurmdbd or its database is away.
func accountingStatus(ctx context.Context, st *charmState, o observer) string {
	a := st.Accounting
	switch {
	case a == nil:
		return ""
	case a.Refused != "":
		return "; accounting off: " + a.Refused
	case a.Host == "":
		return "; waiting for slurmdbd"
	case st.AccountingRunning != a.storage():
		return "; accounting not applied yet (slurmctld restart pending)"
	}
	n, err := o.dbdQueue(ctx)
	switch {
	case err != nil:
		return "; accounting via slurmdbd (cannot read sdiag: " + firstLine(err.Error()) + ")"
	case n > 0:
		return fmt.Sprintf("; accounting behind: %d records queued for slurmdbd", n)
	}
	return "; accounting via slurmdbd"
}

// rebootStatus is the rolling reboot's part of the unit status, or "".
func rebootStatus(r *rebootPlan) string {
	if r == nil {
		return ""
	}
	msg := fmt.Sprintf("; rebooting %s", hostlist.Compress(sortedKeys(r.Asked)))
	if len(r.Queued) > 0 {
		msg += fmt.Sprintf(", %d nodes queued (max-unavailable %d)", len(r.Queued), r.Max)
	}
	return msg
}

// cosStatus is the unit status's note on COS with a cos-agent relation: on Slurm older than
// 25.11 that no metrics come; when slurm-conf-parameters (extra) hides jobs (PrivateData) and
// lets no scrape through, that Slurm refuses the scrapes.
func cosStatus(st *charmState, extra slurmconf.Params) string {
	if note := metricsStatus(st); note != "" {
		return note
	}
	if len(st.COS.Relations) == 0 || st.SlurmVersion == "" {
		return ""
	}
	if !openMetrics(st.SlurmVersion) {
		return fmt.Sprintf("; no metrics for cos-agent: Slurm %s serves none (25.11 or later does)", st.SlurmVersion)
	}
	if metricsRefused(extra) {
		return "; metrics for cos-agent refused: PrivateData hides jobs, set MetricsParameters=ignore_private_data in slurm-conf-parameters"
	}
	return ""
}
