package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// ReadyMessage is the unit's status message once Slurm's clients work through sackd.
const ReadyMessage = "login node ready"

// observed is what a hook saw of the relation and of sackd: with the charm's state, all that
// the unit's status is made of (unitStatus). A hook fills in what it looked at; the zero
// value says nothing was seen beyond the state.
type observed struct {
	// left: this unit left the relation (its own relation-departed); it is going away.
	left bool
	// dataErr is why the controller's relation data is refused.
	dataErr error
	// noRelation: there is no slurmctld relation (none yet, or it broke in this hook);
	// relationErr: the relation could not be listed.
	noRelation  bool
	relationErr error
	// service is sackd's service as the service manager says; serviceErr why it could not
	// be asked.
	service    service.Status
	serviceErr error
	// noConf: sackd has not fetched the configuration yet.
	noConf bool
	// sinfoErr is why sinfo did not answer through sackd.
	sinfoErr error
}

// unitStatus is the unit's status from its state and what the hook observed: the one place
// that words the status (hook.report sets it; hook.progress shows a step under way).
func unitStatus(st *State, o observed) (juju.StatusCode, string) {
	a := st.Applied
	switch {
	case st.refused() != "":
		return juju.StatusBlocked, st.refused()
	case o.left:
		return juju.StatusMaintenance, "login node left the cluster"
	case o.dataErr != nil:
		return juju.StatusBlocked, "slurmctld relation: " + o.dataErr.Error()
	case a == nil && st.VersionRefused != "":
		return juju.StatusBlocked, st.VersionRefused
	case a == nil && st.ConfWaiting != "":
		return juju.StatusWaiting, st.ConfWaiting
	case a == nil && o.relationErr != nil:
		return juju.StatusWaiting, fmt.Sprintf("cannot list the slurmctld relation: %v", o.relationErr)
	case a == nil && o.noRelation:
		return juju.StatusBlocked, "waiting for slurmctld relation"
	case a == nil:
		return juju.StatusWaiting, "waiting for slurmctld data"
	}
	code, msg := sackdStatus(a, o)
	if st.ConfWaiting != "" {
		// The controller's configuration changed under a running sackd: it runs on.
		msg += "; " + st.ConfWaiting
	}
	if st.VersionRefused != "" {
		// The controller's Slurm (or this machine's) changed under a running sackd: it runs
		// on, untouched.
		code, msg = juju.StatusBlocked, msg+"; "+st.VersionRefused
	}
	return code, msg
}

// sackdStatus is the status of a login node whose sackd runs as a says: its service, the
// configuration it fetched, sinfo through it.
func sackdStatus(a *Applied, o observed) (juju.StatusCode, string) {
	switch {
	case o.serviceErr != nil:
		return juju.StatusBlocked, "sackd: service manager unreachable"
	case o.service.State == service.StateFailed:
		return juju.StatusBlocked, "sackd failed (see its log: journalctl -u sackd)"
	case o.service.State != service.StateActive:
		return juju.StatusWaiting, "sackd is " + string(o.service.State)
	case o.noConf:
		return juju.StatusWaiting, "waiting for sackd to fetch the configuration from " + strings.Join(a.Controllers, ",")
	case errors.Is(o.sinfoErr, slurm.ErrControllerUnreachable):
		return juju.StatusWaiting, "slurmctld unreachable from this login node"
	case o.sinfoErr != nil:
		return juju.StatusWaiting, "sinfo does not answer through sackd: " + lastLine(o.sinfoErr)
	}
	return juju.StatusActive, ReadyMessage
}

// lastLine is the last line of a Slurm command's error output (the one that says why), or the
// error.
func lastLine(err error) string {
	msg := err.Error()
	var ce *slurm.CommandError
	if errors.As(err, &ce) && ce.Stderr != "" {
		msg = ce.Stderr
	}
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
