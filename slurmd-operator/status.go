package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/charmed-slurm/operators/libs/gres"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// observed is what a hook saw of the node and of the controller's side: with the charm's
// state, all that the unit's status is made of (unitStatus). A hook fills in what it looked
// at; the zero value says nothing was seen beyond the state.
type observed struct {
	// goingDown: a stop without departure, the machine shuts down or reboots.
	goingDown bool
	// dataErr is why the controller's relation data is refused.
	dataErr error
	// dataPending: the controller is related, its data not complete yet, and slurmd was
	// never started with any.
	dataPending bool
	// installed: install ran; relations come after it (waiting, not yet blocked).
	installed bool
	// noRelation: there is no slurmctld relation (none yet, or it broke).
	noRelation bool
	// noController: the controller's data names no controller address.
	noController bool
	// left is why a departure left the node for the controller to delete (an
	// unreachable controller, a dead munged), if it did.
	left error
	// gresHeld: slurmd was not (re)started, its Gres= naming resources the controller does
	// not manage (State.GresWaiting).
	gresHeld bool
	// daemonsDown says which of this host's daemons are down ("slurmd and munged down").
	daemonsDown string
	// unregistered: the slurmd just started did not register in time.
	unregistered bool
	// node is the node's record, when read; nodeErr why it could not be read.
	node    *slurm.Node
	nodeErr error
}

// unitStatus is the unit's status from its state, the configuration's problem (cfgErr, shown
// as blocked above all) and what the hook observed: the one place that words the status
// (hook.report sets it; hook.progress shows a step under way).
func unitStatus(st *State, cfgErr error, node string, o observed) (juju.StatusCode, string) {
	switch {
	case cfgErr != nil:
		return juju.StatusBlocked, cfgErr.Error()
	case o.goingDown:
		return juju.StatusMaintenance, "node " + node + ": machine going down"
	case o.dataErr != nil:
		return juju.StatusBlocked, "slurmctld relation: " + o.dataErr.Error()
	case o.dataPending:
		return juju.StatusWaiting, "waiting for slurmctld data"
	case st.Departed && o.noRelation:
		return juju.StatusBlocked, "waiting for slurmctld relation"
	case st.Departed && o.left != nil && unreachable(o.left):
		return juju.StatusMaintenance, fmt.Sprintf("node %s left drained: controller unreachable", node)
	case st.Departed && o.left != nil:
		return juju.StatusMaintenance, fmt.Sprintf("node %s left for the controller to delete: %v", node, o.left)
	case st.Departed:
		return juju.StatusMaintenance, "node " + node + " removed"
	case o.installed:
		return juju.StatusWaiting, "waiting for slurmctld relation"
	case o.noRelation:
		return juju.StatusBlocked, "waiting for slurmctld relation"
	case o.noController:
		return juju.StatusWaiting, "waiting for slurmctld: no controller address"
	case st.Applied == nil && st.VersionRefused != "":
		return juju.StatusBlocked, st.VersionRefused
	case st.Applied == nil && st.ConfWaiting != "":
		return juju.StatusWaiting, st.ConfWaiting
	case o.gresHeld, st.Applied == nil && len(st.GresWaiting) > 0:
		return juju.StatusWaiting, unmanagedStatus(st.GresWaiting)
	case st.Applied == nil:
		return juju.StatusWaiting, "waiting for slurmctld data"
	case o.daemonsDown != "":
		return juju.StatusBlocked, fmt.Sprintf("node %s: %s", node, o.daemonsDown)
	case o.node != nil:
		return nodeStatus(st, *o.node)
	case o.unregistered, errors.Is(o.nodeErr, slurm.ErrUnknownNode):
		return juju.StatusWaiting, fmt.Sprintf("waiting for node %s to register", node)
	case errors.Is(o.nodeErr, errNoConf):
		return juju.StatusWaiting, fmt.Sprintf("waiting for slurmd on %s to fetch its configuration", node)
	case unreachable(o.nodeErr):
		return juju.StatusWaiting, fmt.Sprintf("node %s: controller unreachable", node)
	}
	return juju.StatusWaiting, fmt.Sprintf("node %s: cannot read its state", node)
}

// nodeStatus shows the node's state: "node slurmd-3 idle", "node slurmd-3 drained: reason",
// with the resources it runs with, the resources it waits for and a node-config staged.
func nodeStatus(st *State, n slurm.Node) (juju.StatusCode, string) {
	code := juju.StatusActive
	if n.State.NotResponding() {
		code = juju.StatusWaiting
	}
	msg := "node " + n.Name + " " + describeState(n)
	if a := st.Applied; a != nil {
		if g := gresSummary(appliedGres(a.Conf)); g != "" {
			msg += ", " + g
		}
	}
	if len(st.GresWaiting) > 0 {
		// A resource added since slurmd started: the node re-registers with it later.
		code, msg = juju.StatusWaiting, msg+"; "+unmanagedStatus(st.GresWaiting)
	}
	if st.StagedNodeConfig != "" {
		msg += "; node-config staged for the next reboot"
	}
	if st.ConfWaiting != "" {
		// The controller's configuration changed under a running node: it runs on.
		msg += "; " + st.ConfWaiting
	}
	if st.VersionRefused != "" {
		// The controller's Slurm changed under a running node: it runs on, untouched.
		code, msg = juju.StatusBlocked, msg+"; "+st.VersionRefused
	}
	return code, msg
}

// describeState is the node's state as sinfo words it, lower case, with the reason.
func describeState(n slurm.Node) string {
	var s string
	switch {
	case n.State.Drained():
		s = "drained"
	case n.State.Draining():
		s = "draining"
	default:
		s = strings.ToLower(n.State.Base)
		if n.State.Has(slurm.FlagCompleting) {
			s += "+completing"
		}
	}
	if r := rebootState(n); r != "" {
		s += ", " + r
	}
	if n.State.NotResponding() {
		s += " (not responding)"
	}
	if n.Reason != "" && (n.State.Drain() || n.State.Down()) {
		s += ": " + n.Reason
	}
	return s
}

// rebootState describes a reboot Slurm has under way on node n, or "".
func rebootState(n slurm.Node) string {
	switch {
	case n.State.Has(slurm.FlagRebootIssued):
		return "rebooting"
	case n.State.Has(slurm.FlagRebootRequested):
		return "reboot requested"
	}
	return ""
}

// unmanagedStatus is the waiting status of a node held back by unmanagedGres.
func unmanagedStatus(missing []string) string {
	return "waiting for slurmctld to manage GRES " + strings.Join(missing, ",")
}

// gresSummary describes g for a status: "2× gpu:tesla_t4, 1× fpga"; "" for none.
func gresSummary(g gres.Set) string {
	parts := make([]string, 0, len(g))
	for _, r := range g {
		name := r.Name
		if r.Type != "" {
			name += ":" + r.Type
		}
		parts = append(parts, gres.FormatCount(r.Count)+"× "+name)
	}
	return strings.Join(parts, ", ")
}
