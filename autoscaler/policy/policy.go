// Package policy is the autoscaler's decision logic, pure and clock-free: given what Slurm and
// Juju show for one slurmd application (its units, their nodes, the pending jobs' node demand)
// and the application's limits, [Decide] says how many units to add, which idle nodes to drain
// for removal, which drained nodes to remove or take back, and why, as status lines.
//
// The rules, in order:
//   - Demand is the node count of pending jobs whose reason more nodes can cure ([WantsNodes]).
//   - While demand remains, nothing is removed: nodes the autoscaler drained are resumed first,
//     then units are added for what idle and still-registering capacity does not cover, at most
//     ScaleOutStep at once and never beyond Max units (dying units count until they are gone).
//   - With no demand, nodes idle for at least IdleTime are drained (at most ScaleInStep at once,
//     never below Min), and a node the autoscaler drained is removed only once it is drained
//     (no job runs or completes on it); the caller rechecks that just before remove-unit.
//   - A unit whose node has not registered after RegisterTimeout is removed; a failed add-unit is
//     retried after [Backoff].
package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DrainReason prefixes the reason of every drain the autoscaler makes: a node drained with it
// is the autoscaler's to remove or resume, also after a restart. Other drains are left alone.
const DrainReason = "autoscaler:"

// App is one slurmd application (its partition has the same name) and its limits.
type App struct {
	Name string
	// Min and Max bound the number of units.
	Min, Max int
	// IdleTime is how long a node must have been idle before it is removed.
	IdleTime time.Duration
	// ScaleOutStep and ScaleInStep bound the units added and removed in one decision.
	ScaleOutStep, ScaleInStep int
	// RegisterTimeout is how long a new unit may take to register its node before it is
	// removed as failed.
	RegisterTimeout time.Duration
}

// Check reports an invalid configuration.
func (a App) Check() error {
	switch {
	case a.Name == "":
		return fmt.Errorf("application without a name")
	case a.Min < 0 || a.Max < 1 || a.Min > a.Max:
		return fmt.Errorf("application %s: want 0 <= min <= max and max >= 1, got min=%d max=%d", a.Name, a.Min, a.Max)
	case a.ScaleOutStep < 1 || a.ScaleInStep < 1:
		return fmt.Errorf("application %s: scale-out and scale-in steps must be at least 1", a.Name)
	case a.IdleTime < 0 || a.RegisterTimeout <= 0:
		return fmt.Errorf("application %s: idle time must be >= 0 and register timeout > 0", a.Name)
	}
	return nil
}

// Node is a unit's Slurm node as the decision needs it.
type Node struct {
	Name string
	// Busy: jobs run or complete on it (ALLOCATED, MIXED or COMPLETING).
	Busy bool
	// Drain: the node is marked to drain (by anyone); OurDrain: with DrainReason.
	Drain, OurDrain bool
	// Unusable: down, not responding, failing or rebooting: neither idle capacity nor removable.
	Unusable bool
	// IdleFor is how long the node has been idle (since LastBusyTime); zero when busy.
	IdleFor time.Duration
}

// Unit is one unit of the application, as juju status lists it.
type Unit struct {
	Name  string // slurmd/3
	Dying bool   // being removed (life: dying)
	// Leader: the application's leader, removed last among equally idle units (no needless
	// leader election).
	Leader bool
	// Node is the unit's registered node, nil while it has none.
	Node *Node
	// Age is how long the unit has been known (a lower bound after a restart).
	Age time.Duration
}

// Input is everything one decision looks at.
type Input struct {
	App   App
	Units []Unit
	// PendingJobs and PendingNodes are the pending jobs that more nodes would help, and the
	// nodes they need in total.
	PendingJobs, PendingNodes int
	// AddFailures counts add-unit failures in a row; RetryIn > 0 means the next attempt must
	// wait that long; LastError is the last failure's message.
	AddFailures int
	RetryIn     time.Duration
	LastError   string
}

// Decision is what to do now, and why.
type Decision struct {
	// Add is the number of units to add.
	Add int
	// Resume lists nodes the autoscaler drained that demand wants back.
	Resume []string
	// Drain lists idle nodes to drain for removal (then recheck, then remove their units).
	Drain []string
	// Remove lists units to remove: their node is drained by the autoscaler and idle (recheck
	// it first), or it never registered.
	Remove []string
	// Lines say what was decided and why.
	Lines []string
}

// reasons are the pending reasons that more nodes in the job's partition can cure.
var reasons = []string{
	"None",           // not yet looked at by the scheduler
	"Resources",      // no free node now
	"Priority",       // queued behind jobs that wait for resources
	"BadConstraints", // its nodes were deleted while it waited
	"NodeDown",
}

// WantsNodes reports whether a job pending for reason would run with more nodes in its
// partition. Dependencies, holds, limits, reservations and down partitions are not demand.
func WantsNodes(reason string) bool {
	return slices.Contains(reasons, reason) || Held(reason)
}

// Held reports a pending reason that says the job's partition had no usable node for it when
// Slurm last looked: PartitionConfig (22.05, no node at all), "ReqNodeNotAvail, ..." and
// "Nodes required for job are DOWN, ..." (24.11 with FUTURE nodes; squeue prints the latter
// with underscores in some versions). Slurm leaves such jobs to its backfill scheduler.
func Held(reason string) bool {
	return reason == "PartitionConfig" || strings.HasPrefix(reason, "ReqNodeNotAvail") ||
		strings.HasPrefix(strings.ReplaceAll(reason, "_", " "), "Nodes required for job")
}

// Decide makes one decision for one application.
func Decide(in Input) Decision {
	a := in.App
	var d Decision
	say := func(format string, args ...any) {
		d.Lines = append(d.Lines, a.Name+": "+fmt.Sprintf(format, args...))
	}
	var (
		total                     = len(in.Units) // every unit, dying ones included, counts for Max
		live, busy, coming, dying int
		idle, ours                []Node
		leader                    string
	)
	for _, u := range in.Units {
		if u.Dying {
			dying++
			continue
		}
		live++
		n := u.Node
		if u.Leader && n != nil {
			leader = n.Name
		}
		switch {
		case n == nil && u.Age >= a.RegisterTimeout:
			d.Remove = append(d.Remove, u.Name)
			say("%s registered no node in %s: removing", u.Name, round(u.Age))
		case n == nil:
			coming++
		case n.OurDrain:
			ours = append(ours, *n)
		case n.Busy:
			busy++
		case !n.Drain && !n.Unusable:
			idle = append(idle, *n)
		}
	}
	demand := in.PendingNodes
	if demand > 0 {
		// Take back what the autoscaler was about to remove before adding anything.
		slices.SortFunc(ours, byName)
		for _, n := range ours {
			if demand == 0 {
				break
			}
			d.Resume = append(d.Resume, n.Name)
			say("%s drained for removal but %d pending jobs need nodes: resuming", n.Name, in.PendingJobs)
			demand--
		}
		need := demand - len(idle) - coming
		room := a.Max - total
		switch {
		case need <= 0:
			say("%d pending jobs need %d nodes: %d idle, %d starting: waiting for the scheduler", in.PendingJobs, in.PendingNodes, len(idle), coming)
		case in.RetryIn > 0:
			say("%d pending jobs need %d more nodes: add-unit failed %d times (%s): retrying in %s", in.PendingJobs, need, in.AddFailures, in.LastError, round(in.RetryIn))
		case room <= 0:
			say("%d pending jobs need %d more nodes: at max %d units (%d dying): not adding", in.PendingJobs, need, a.Max, dying)
		default:
			d.Add = min(need, room, a.ScaleOutStep)
			say("%d pending jobs need %d more nodes: adding %d", in.PendingJobs, need, d.Add)
		}
		return d
	}
	// No demand: finish the removals under way, then look for idle nodes.
	for _, n := range ours {
		if n.Busy {
			say("%s drained for removal but a job still runs on it: waiting", n.Name)
			continue
		}
		d.Remove = append(d.Remove, unitOf(in.Units, n.Name))
		say("%s drained and idle: removing", n.Name)
	}
	// Units that stay: live ones minus those being removed.
	staying := live - len(d.Remove)
	isLeader := func(n Node) int {
		if n.Name == leader {
			return 1
		}
		return 0
	}
	// Longest idle first; the leader's node last, so that leadership stays put.
	slices.SortFunc(idle, func(x, y Node) int {
		return cmp.Or(cmp.Compare(isLeader(x), isLeader(y)), cmp.Compare(y.IdleFor, x.IdleFor), byName(x, y))
	})
	for _, n := range idle {
		if n.IdleFor < a.IdleTime {
			continue
		}
		if staying <= a.Min {
			say("%s idle over %s: at min %d units: keeping", n.Name, round(a.IdleTime), a.Min)
			break
		}
		if len(d.Drain)+len(d.Remove) >= a.ScaleInStep {
			break
		}
		d.Drain = append(d.Drain, n.Name)
		say("%s idle %s: removing", n.Name, round(n.IdleFor))
		staying--
	}
	if len(d.Lines) == 0 {
		say("%d units (%d busy, %d idle, %d starting, %d dying), no pending jobs: nothing to do", live, busy, len(idle), coming, dying)
	}
	return d
}

// Backoff is the wait before retrying add-unit after failures in a row: base doubling with
// each failure, at most max.
func Backoff(failures int, base, max time.Duration) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := base
	for i := 1; i < failures && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

func byName(x, y Node) int { return cmp.Compare(x.Name, y.Name) }

// unitOf returns the unit whose node is named node.
func unitOf(units []Unit, node string) string {
	for _, u := range units {
		if u.Node != nil && u.Node.Name == node {
			return u.Name
		}
	}
	return ""
}

// round shortens a duration for a status line: 1m5s, 12s.
func round(d time.Duration) time.Duration { return d.Round(time.Second) }

// Default limits for ParseApp.
const (
	DefaultIdleTime        = 5 * time.Minute
	DefaultRegisterTimeout = 10 * time.Minute
	DefaultStep            = 4
)

// ParseApp parses an application spec "NAME[:key=value,...]" with keys min, max, idle,
// register-timeout (durations such as 90s or 5m), out and in (the steps), e.g.
// "slurmd:min=1,max=6,idle=2m,out=4,in=2". Unset keys default to min 0, max 1, idle
// DefaultIdleTime, register-timeout DefaultRegisterTimeout and steps DefaultStep.
func ParseApp(spec string) (App, error) {
	name, opts, _ := strings.Cut(spec, ":")
	a := App{Name: name, Max: 1, IdleTime: DefaultIdleTime, RegisterTimeout: DefaultRegisterTimeout,
		ScaleOutStep: DefaultStep, ScaleInStep: DefaultStep}
	if name == "" || strings.ContainsAny(name, " \t/=,") {
		return App{}, fmt.Errorf("invalid application spec %q: bad application name %q", spec, name)
	}
	ints := map[string]*int{"min": &a.Min, "max": &a.Max, "out": &a.ScaleOutStep, "in": &a.ScaleInStep}
	durations := map[string]*time.Duration{"idle": &a.IdleTime, "register-timeout": &a.RegisterTimeout}
	if opts != "" {
		for _, kv := range strings.Split(opts, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return App{}, fmt.Errorf("invalid application spec %q: %q is not key=value", spec, kv)
			}
			var err error
			if p, ok := ints[k]; ok {
				*p, err = strconv.Atoi(v)
			} else if p, ok := durations[k]; ok {
				*p, err = time.ParseDuration(v)
			} else {
				return App{}, fmt.Errorf("invalid application spec %q: unknown key %q (want min, max, idle, out, in, register-timeout)", spec, k)
			}
			if err != nil {
				return App{}, fmt.Errorf("invalid application spec %q: bad %s=%q", spec, k, v)
			}
		}
	}
	if err := a.Check(); err != nil {
		return App{}, fmt.Errorf("invalid application spec %q: %w", spec, err)
	}
	return a, nil
}
