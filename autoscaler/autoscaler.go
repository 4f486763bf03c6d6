// Package autoscaler grows and shrinks slurmd applications from Slurm's queue through a Juju
// client. Each [Scaler.Tick] reads the model (`juju status`), the pending jobs and the nodes
// (squeue, scontrol), asks [policy.Decide] what to do for every managed application and does
// it: `juju add-unit`, scontrol drain/resume, and `juju remove-unit` for idle nodes it drained
// itself, after rechecking that nothing runs on them. Jobs Slurm holds with reason
// PartitionConfig (submitted while their partition had no node) are handed back to the main
// scheduler once nodes are idle ([slurm.Client.Reconsider]). All state that matters is read again on
// every tick (units from Juju, nodes, drains and idle times from Slurm), so a restarted
// autoscaler resumes where the previous one stopped; only add-unit backoff and how long a unit
// has been waiting to register are kept in memory.
package autoscaler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/autoscaler/jujucli"
	"github.com/charmed-slurm/operators/autoscaler/policy"
	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// Juju is the Juju client the Scaler acts through (*jujucli.CLI).
type Juju interface {
	Status(ctx context.Context) (*jujucli.Status, error)
	AddUnit(ctx context.Context, app string, n int) error
	RemoveUnit(ctx context.Context, units ...string) error
}

// Slurm is what the Scaler reads from and does to Slurm (*slurm.Client).
type Slurm interface {
	PendingJobs(ctx context.Context) ([]slurm.PendingJob, error)
	Nodes(ctx context.Context) ([]slurm.Node, error)
	ShowNode(ctx context.Context, name string) (slurm.Node, error)
	JobsOnNode(ctx context.Context, node string) ([]slurm.Job, error)
	Drain(ctx context.Context, name, reason string) error
	Resume(ctx context.Context, name string) error
	Reconsider(ctx context.Context, job slurm.PendingJob) error
}

// Defaults for the Scaler's zero fields.
const (
	DefaultInterval  = 10 * time.Second
	DefaultRetryBase = 10 * time.Second
	DefaultRetryMax  = 5 * time.Minute
)

// Scaler makes the decisions of one autoscaler. Set Juju, Slurm and Apps; the other fields
// have defaults. A Scaler is not safe for concurrent Ticks.
type Scaler struct {
	Juju Juju
	// Slurm returns the Slurm client to use with the model as st shows it (for example one
	// that runs commands on the controller's leader unit through juju exec).
	Slurm func(st *jujucli.Status) (Slurm, error)
	Apps  []policy.App
	// DryRun reports the decisions without acting on them.
	DryRun bool
	// Interval is Run's period (DefaultInterval when zero).
	Interval time.Duration
	// RetryBase and RetryMax shape the add-unit backoff (policy.Backoff).
	RetryBase, RetryMax time.Duration
	// Location is the controller's time zone, in which scontrol prints LastBusyTime (nil: UTC).
	Location *time.Location
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Report receives the status lines: every decision that changed, and every failure.
	Report func(line string)

	firstSeen map[string]time.Time // unit → when this Scaler first saw it
	failures  map[string]*addFailure
	said      map[string]string // app → its last reported lines
}

type addFailure struct {
	count int
	until time.Time
	msg   string
}

// Run ticks every Interval until ctx ends. A failed tick (controller unreachable, Juju
// unavailable) is reported and the next tick tries again.
func (s *Scaler) Run(ctx context.Context) error {
	interval := cmp.Or(s.Interval, DefaultInterval)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.report("error: " + err.Error())
		}
		timer.Reset(interval)
	}
}

// Tick makes one decision for every application and acts on it (unless DryRun).
func (s *Scaler) Tick(ctx context.Context) error {
	if s.firstSeen == nil {
		s.firstSeen, s.failures, s.said = map[string]time.Time{}, map[string]*addFailure{}, map[string]string{}
	}
	st, err := s.Juju.Status(ctx)
	if err != nil {
		return err
	}
	sl, err := s.Slurm(st)
	if err != nil {
		return err
	}
	nodes, err := sl.Nodes(ctx)
	if err != nil {
		return err
	}
	pending, err := sl.PendingJobs(ctx)
	if err != nil {
		return err
	}
	now := s.now()
	byName := map[string]slurm.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	jobs, demand := s.demand(pending)
	seen := map[string]bool{}
	var errs []error
	for _, app := range s.Apps {
		a, ok := st.Applications[app.Name]
		if !ok {
			s.say(app.Name, []string{app.Name + ": application not found in juju status"})
			continue
		}
		in := policy.Input{App: app, PendingJobs: jobs[app.Name], PendingNodes: demand[app.Name]}
		for _, name := range a.UnitNames() {
			seen[name] = true
			if _, ok := s.firstSeen[name]; !ok {
				s.firstSeen[name] = now
			}
			u := policy.Unit{Name: name, Dying: a.Units[name].Dying(), Leader: a.Units[name].Leader, Age: now.Sub(s.firstSeen[name])}
			if n, ok := byName[slurmd.NodeName(name)]; ok {
				pn, err := s.node(n, now)
				if err != nil {
					return err
				}
				u.Node = &pn
			}
			in.Units = append(in.Units, u)
		}
		if f := s.failures[app.Name]; f != nil {
			in.AddFailures, in.LastError = f.count, f.msg
			in.RetryIn = max(f.until.Sub(now), 0)
		}
		d := policy.Decide(in)
		if s.DryRun {
			for i, l := range d.Lines {
				d.Lines[i] = "dry run: " + l
			}
			s.say(app.Name, d.Lines)
			continue
		}
		s.say(app.Name, d.Lines)
		if err := s.act(ctx, sl, app, in, d); err != nil {
			errs = append(errs, err)
		}
		if err := s.reconsider(ctx, sl, app, in, pending); err != nil {
			errs = append(errs, err)
		}
	}
	for u := range s.firstSeen {
		if !seen[u] {
			delete(s.firstSeen, u)
		}
	}
	return errors.Join(errs...)
}

// demand sums, per managed application, the pending jobs that more nodes would help and the
// nodes they need. A job allowed in several partitions counts for the first managed one.
func (s *Scaler) demand(pending []slurm.PendingJob) (jobs, nodes map[string]int) {
	jobs, nodes = map[string]int{}, map[string]int{}
	for _, j := range pending {
		if !policy.WantsNodes(j.Reason) {
			continue
		}
		for _, p := range j.Partitions {
			if slices.ContainsFunc(s.Apps, func(a policy.App) bool { return a.Name == p }) {
				jobs[p]++
				nodes[p] += max(j.Nodes, 1)
				break
			}
		}
	}
	return jobs, nodes
}

// node converts a Slurm node record for the policy.
func (s *Scaler) node(n slurm.Node, now time.Time) (policy.Node, error) {
	st := n.State
	pn := policy.Node{
		Name:     n.Name,
		Busy:     st.Busy(),
		Drain:    st.Drain(),
		OurDrain: st.Drain() && strings.HasPrefix(n.Reason, policy.DrainReason),
		Unusable: st.Down() || st.NotResponding() || st.Has(slurm.FlagFail) || st.Rebooting() ||
			st.Base == slurm.StateFuture || st.Base == slurm.StateUnknown || st.Has(slurm.FlagPoweredDown) ||
			st.Has(slurm.FlagInvalidReg),
	}
	if pn.Busy {
		return pn, nil
	}
	t, ok, err := n.LastBusy(s.Location)
	if err != nil {
		return pn, err
	}
	if ok {
		pn.IdleFor = max(now.Sub(t), 0)
	}
	return pn, nil
}

// act carries out a decision: resume, drain with recheck, remove-unit, add-unit.
func (s *Scaler) act(ctx context.Context, sl Slurm, app policy.App, in policy.Input, d policy.Decision) error {
	var errs []error
	for _, n := range d.Resume {
		if err := sl.Resume(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("cannot resume %s: %w", n, err))
		}
	}
	unitOf := map[string]string{}
	registered := map[string]bool{}
	for _, u := range in.Units {
		if u.Node != nil {
			unitOf[u.Node.Name] = u.Name
			registered[u.Name] = true
		}
	}
	var remove []string
	for _, n := range d.Drain {
		// The decision read the nodes, then the queue: a job the scheduler started on n in
		// between is seen now, before the drain, rather than by the recheck after it.
		if !s.stillIdle(ctx, sl, app, n) {
			continue
		}
		reason := fmt.Sprintf("%s idle, removing unit %s", policy.DrainReason, unitOf[n])
		if err := sl.Drain(ctx, n, reason); err != nil {
			errs = append(errs, fmt.Errorf("cannot drain %s: %w", n, err))
			continue
		}
		if s.recheck(ctx, sl, app, n) {
			remove = append(remove, unitOf[n])
		}
	}
	for _, u := range d.Remove {
		if !registered[u] || s.recheck(ctx, sl, app, slurmd.NodeName(u)) {
			remove = append(remove, u)
		}
	}
	if len(remove) > 0 {
		if err := s.Juju.RemoveUnit(ctx, remove...); err != nil {
			errs = append(errs, fmt.Errorf("cannot remove %s: %w", strings.Join(remove, " "), err))
		} else {
			s.report(fmt.Sprintf("%s: removed %s", app.Name, strings.Join(remove, " ")))
		}
	}
	if d.Add > 0 {
		if err := s.Juju.AddUnit(ctx, app.Name, d.Add); err != nil {
			f := s.failures[app.Name]
			if f == nil {
				f = &addFailure{}
				s.failures[app.Name] = f
			}
			f.count++
			f.msg = err.Error()
			wait := policy.Backoff(f.count, cmp.Or(s.RetryBase, DefaultRetryBase), cmp.Or(s.RetryMax, DefaultRetryMax))
			f.until = s.now().Add(wait)
			errs = append(errs, fmt.Errorf("cannot add %d units to %s (attempt %d, retrying in %s): %w", d.Add, app.Name, f.count, wait, err))
		} else {
			delete(s.failures, app.Name)
			s.report(fmt.Sprintf("%s: added %d units", app.Name, d.Add))
		}
	}
	return errors.Join(errs...)
}

// reconsider hands jobs Slurm holds for want of a node (reason PartitionConfig on 22.05,
// ReqNodeNotAvail or "Nodes required for job..." with FUTURE nodes on 24.11) back to the main
// scheduler once app's partition has usable nodes enough for them: Slurm otherwise leaves them
// to the backfill scheduler, up to bf_interval (30 s by default) after the nodes joined. At most
// maxReconsider jobs a decision, so a long queue costs a bounded number of RPCs.
func (s *Scaler) reconsider(ctx context.Context, sl Slurm, app policy.App, in policy.Input, pending []slurm.PendingJob) error {
	usable := 0
	for _, u := range in.Units {
		if !u.Dying && u.Node != nil && !u.Node.Drain && !u.Node.Unusable {
			usable++
		}
	}
	var ids []string
	var errs []error
	for _, j := range pending {
		if len(ids)+len(errs) == maxReconsider {
			break
		}
		if !policy.Held(j.Reason) || !slices.Contains(j.Partitions, app.Name) || max(j.Nodes, 1) > usable {
			continue
		}
		if err := sl.Reconsider(ctx, j); err != nil {
			errs = append(errs, fmt.Errorf("cannot ask Slurm to reconsider job %s: %w", j.ID, err))
			continue
		}
		ids = append(ids, j.ID)
	}
	if len(ids) > 0 {
		s.report(fmt.Sprintf("%s: jobs %s held for want of a node, with nodes up: asked Slurm to schedule them again", app.Name, strings.Join(ids, " ")))
	}
	return errors.Join(errs...)
}

// maxReconsider bounds the jobs handed back to the scheduler in one decision.
const maxReconsider = 50

// stillIdle confirms, just before the drain, that node is idle, undrained and runs no job.
func (s *Scaler) stillIdle(ctx context.Context, sl Slurm, app policy.App, node string) bool {
	n, err := sl.ShowNode(ctx, node)
	if err != nil {
		s.report(fmt.Sprintf("%s: %s: cannot check it before the drain: %v", app.Name, node, err))
		return false
	}
	if n.State.Busy() || n.State.Drain() {
		s.report(fmt.Sprintf("%s: %s is %s before the drain: keeping it", app.Name, node, n.State))
		return false
	}
	jobs, err := sl.JobsOnNode(ctx, node)
	if err != nil || len(jobs) > 0 {
		s.report(fmt.Sprintf("%s: %s has %d jobs before the drain (%v): keeping it", app.Name, node, len(jobs), err))
		return false
	}
	return true
}

// recheck confirms, just before remove-unit, that node is still drained by the autoscaler and
// that no job runs, completes or starts on it; a job that landed at the last moment keeps it.
func (s *Scaler) recheck(ctx context.Context, sl Slurm, app policy.App, node string) bool {
	n, err := sl.ShowNode(ctx, node)
	if err != nil {
		s.report(fmt.Sprintf("%s: %s: cannot recheck before removal: %v", app.Name, node, err))
		return false
	}
	if !n.State.Drained() || !strings.HasPrefix(n.Reason, policy.DrainReason) {
		s.report(fmt.Sprintf("%s: %s is %s (%s) at the recheck: not removing it now", app.Name, node, n.State, n.Reason))
		return false
	}
	jobs, err := sl.JobsOnNode(ctx, node)
	if err != nil {
		s.report(fmt.Sprintf("%s: %s: cannot recheck its jobs before removal: %v", app.Name, node, err))
		return false
	}
	if len(jobs) > 0 {
		s.report(fmt.Sprintf("%s: %s has %d jobs at the recheck: not removing it now", app.Name, node, len(jobs)))
		return false
	}
	return true
}

// say reports app's lines when they differ from the last ones reported.
func (s *Scaler) say(app string, lines []string) {
	joined := strings.Join(lines, "\n")
	if s.said[app] == joined {
		return
	}
	s.said[app] = joined
	for _, l := range lines {
		s.report(l)
	}
}

func (s *Scaler) report(line string) {
	if s.Report != nil {
		s.Report(line)
	}
}

func (s *Scaler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
