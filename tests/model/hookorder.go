package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Hook order under the referee (docs/fidelity.md, "Hook order"): every unit agent tells the
// referee, in order, when it starts (AgentStart), each choice it makes of what runs next with
// the remote state it chose from (AgentChoice: the unit's view of the model as Juju's remote
// state watcher would give it to the uniter, a remotestate.Snapshot), and how each hook it ran
// ended. The referee runs Juju 3.6's own uniter (its resolver, operation executor and the
// relation and secrets state it keeps) beside each unit on the same remote states, and a
// choice Juju's uniter would not make fails the test at Close.

// AgentEvent is one step of a unit agent, for the referee.
type AgentEvent struct {
	Unit string `json:"unit"`
	// Start: the agent starts (its unit's machine is provisioned, or booted again).
	Start *AgentStart `json:"start,omitempty"`
	// Choice: the agent chose what runs next (Hook nil: nothing to run now).
	Choice *AgentChoice `json:"choice,omitempty"`
	// Done is how the hook or action chosen last ended: "ok", "failed" (the hook exited
	// non-zero: the unit is in error) or "terminated" (cut off by its machine's shutdown).
	Done string `json:"done,omitempty"`
}

// AgentStart is an agent's start.
type AgentStart struct {
	// Reboot: the machine booted again (the uniter's reboot detection: start runs first).
	Reboot bool        `json:"reboot,omitempty"`
	Remote RemoteState `json:"remote"`
	// Retry: failed hooks are retried automatically (the model's HookRetry > 0).
	Retry bool `json:"retry,omitempty"`
}

// AgentChoice is an agent's choice of what runs next.
type AgentChoice struct {
	Remote RemoteState `json:"remote"`
	Hook   *Hook       `json:"hook,omitempty"`
	// Scopes are the relations the unit is in the scope of once the choice is made.
	Scopes []int `json:"scopes,omitempty"`
}

// RemoteState is a unit's view of the model as Juju's remote state watcher gives it to the
// uniter (internal/worker/uniter/remotestate.Snapshot), in the model's terms. Counters only
// grow; the referee turns them into the versions of a watcher started with the agent.
type RemoteState struct {
	Life    string `json:"life"`             // alive, dying
	AppLife string `json:"application-life"` // alive, dying
	Charm   string `json:"charm"`            // the application's charm URL
	// CharmVersion counts the application's refreshes (the revision in Charm).
	CharmVersion int    `json:"charm-version"`
	Config       string `json:"config"` // the config hash
	Leader       bool   `json:"leader,omitempty"`
	// LeaderSettings counts the changes of the application's leader settings.
	LeaderSettings int `json:"leader-settings"`
	// UpdateStatus counts the agent's update-status timer ticks, RetryHook its hook-retry
	// timer's.
	UpdateStatus int    `json:"update-status"`
	RetryHook    int    `json:"retry-hook"`
	Resolved     string `json:"resolved,omitempty"` // "", retry-hooks, no-hooks
	// Actions are the unit's queued and running actions, oldest first.
	Actions   []RemoteAction         `json:"actions,omitempty"`
	Relations map[int]RemoteRelation `json:"relations,omitempty"`
	// ConsumedSecrets: the latest revision of each secret the unit consumes.
	ConsumedSecrets map[string]RemoteSecret `json:"consumed-secrets,omitempty"`
	// OwnedSecrets are the secrets the unit owns (its own, or its application's).
	OwnedSecrets map[string]OwnedSecret `json:"owned-secrets,omitempty"`
	// SecretRotations, ExpiredSecretRevisions ("<uri>/<revision>") and ObsoleteSecretRevisions
	// are the owner's secret hooks due, in the order the model runs them.
	SecretRotations         []string         `json:"secret-rotations,omitempty"`
	ExpiredSecretRevisions  []string         `json:"expired-secret-revisions,omitempty"`
	ObsoleteSecretRevisions map[string][]int `json:"obsolete-secret-revisions,omitempty"`
	// Commands are the ids of the juju-exec commands queued for the unit, oldest first.
	Commands []string `json:"commands,omitempty"`
}

// RemoteAction is a queued or running action.
type RemoteAction struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// RemoteRelation is one relation of the unit's application.
type RemoteRelation struct {
	Key       string `json:"key"`
	Life      string `json:"life"`
	Endpoint  string `json:"endpoint"`
	Role      string `json:"role"`
	Interface string `json:"interface"`
	RemoteApp string `json:"remote-application"`
	// Members are the remote units in the relation's scope, with their data's version;
	// AppMembers the remote application's data version.
	Members    map[string]int64 `json:"members,omitempty"`
	AppMembers map[string]int64 `json:"application-members,omitempty"`
}

// RemoteSecret is a consumed secret's latest revision and the consumer's label. Notified: its
// owner published a revision the unit does not track, or the unit was told of one before (the
// consumed-secrets watcher reports it).
type RemoteSecret struct {
	Revision int    `json:"revision"`
	Label    string `json:"label,omitempty"`
	Notified bool   `json:"notified,omitempty"`
}

// OwnedSecret is what the owner's hook context knows of a secret it owns.
type OwnedSecret struct {
	Application    bool   `json:"application,omitempty"` // owned by the application
	LatestRevision int    `json:"latest-revision"`
	Label          string `json:"label,omitempty"`
	// NextRotate is when its rotation falls due (zero: never).
	NextRotate time.Time `json:"next-rotate,omitzero"`
}

// remoteState is unit u's remote state at now, its agent's timers having fired ticks
// (update-status) and retries (hook retry) times.
func (s *State) remoteState(u *Unit, ticks, retries int, now time.Time) RemoteState {
	app := s.Applications[u.App]
	life := func(dying bool) string {
		if dying {
			return "dying"
		}
		return "alive"
	}
	rs := RemoteState{
		Life: life(u.Dying), AppLife: life(app.Dying),
		Charm:          fmt.Sprintf("local:%s-%d", app.Charm.Name, app.CharmVersion),
		CharmVersion:   app.CharmVersion,
		Config:         strconv.Itoa(app.ConfigVersion),
		Leader:         app.Leader == u.Name,
		LeaderSettings: app.LeaderDataVersion,
		UpdateStatus:   ticks, RetryHook: retries,
		Resolved:  u.Resolved,
		Relations: map[int]RemoteRelation{},
	}
	var acts []*ActionRun
	for _, a := range s.Actions {
		if a.Unit == u.Name && (a.Status == "pending" || a.Status == "running") {
			acts = append(acts, a)
		}
	}
	sort.Slice(acts, func(i, j int) bool { return actionNumber(acts[i].ID) < actionNumber(acts[j].ID) })
	for _, a := range acts {
		rs.Actions = append(rs.Actions, RemoteAction{ID: a.ID, Name: a.Name})
	}
	for id, r := range s.Relations {
		ep, ok := r.endpointOf(u.App)
		if !ok {
			continue
		}
		remote := r.remoteApp(u.App)
		rr := RemoteRelation{Key: r.key(), Life: life(r.Dying), Endpoint: ep.Name, Role: ep.Role, Interface: ep.Interface,
			RemoteApp: remote, Members: map[string]int64{}, AppMembers: map[string]int64{}}
		if !r.Dying {
			for _, ou := range s.Units {
				// A container-scoped relation holds the units of one machine only.
				if ou.App == remote && ou.Name != u.Name && inScope(ou, r) && (!r.containerScoped() || ou.Machine == u.Machine) {
					rr.Members[ou.Name] = int64(r.UnitVersion[ou.Name])
				}
			}
			rr.AppMembers[remote] = int64(r.AppVersion[remote])
		}
		rs.Relations[id] = rr
	}
	isLeader := app.Leader == u.Name
	for _, id := range sortedKeys(s.Secrets) {
		sec := s.Secrets[id]
		if len(sec.Revisions) == 0 {
			continue
		}
		latest := sec.latest().Revision
		if c := sec.Consumers[u.Name]; c != nil {
			if rs.ConsumedSecrets == nil {
				rs.ConsumedSecrets = map[string]RemoteSecret{}
			}
			rs.ConsumedSecrets[id] = RemoteSecret{Revision: latest, Label: c.Label, Notified: latest > c.Tracked || u.Seen.Secrets[id] > 0}
		}
		if !(sec.OwnerUnit == u.Name || sec.OwnerApp == u.App && isLeader) {
			continue
		}
		if rs.OwnedSecrets == nil {
			rs.OwnedSecrets = map[string]OwnedSecret{}
		}
		rs.OwnedSecrets[id] = OwnedSecret{Application: sec.OwnerApp != "", LatestRevision: latest, Label: sec.Label, NextRotate: sec.NextRotate}
		if sec.RotatePolicy != "" && !sec.NextRotate.IsZero() && !now.Before(sec.NextRotate) {
			h := Hook{Kind: "secret-rotate", SecretID: id, Due: sec.NextRotate}
			if !u.Seen.OwnerHooks[h.ownerHookKey()] {
				rs.SecretRotations = append(rs.SecretRotations, id)
			}
		}
		for _, rev := range sec.Revisions {
			h := Hook{SecretID: id, SecretRevision: rev.Revision}
			if h.Kind = "secret-expired"; !rev.Expire.IsZero() && !now.Before(rev.Expire) && !u.Seen.OwnerHooks[h.ownerHookKey()] {
				rs.ExpiredSecretRevisions = append(rs.ExpiredSecretRevisions, fmt.Sprintf("%s/%d", id, rev.Revision))
			}
			if h.Kind = "secret-remove"; rev.Revision != latest && !sec.tracked(rev.Revision) {
				if rs.ObsoleteSecretRevisions == nil {
					rs.ObsoleteSecretRevisions = map[string][]int{}
				}
				rs.ObsoleteSecretRevisions[id] = append(rs.ObsoleteSecretRevisions[id], rev.Revision)
			}
		}
	}
	return rs
}

// scopes are the relations unit u is in the scope of.
func (u *Unit) scopes() []int {
	var ids []int
	for id, rl := range u.Seen.Relations {
		if !rl.Broken {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	return ids
}

// refereeAgent hands one of ag's events to the referee; callers hold m.mu. A choice of nothing
// that repeats the last one is not sent again.
func (ag *agent) refereeEvent(e AgentEvent) {
	r := ag.m.referee
	if r == nil {
		return
	}
	e.Unit = ag.unit
	if e.Choice != nil && e.Choice.Hook == nil {
		b, _ := json.Marshal(e.Choice)
		if bytes.Equal(b, ag.lastIdle) {
			return
		}
		ag.lastIdle = b
	} else {
		ag.lastIdle = nil
	}
	r.send(RefereeRequest{Agent: &e})
}

// refereeChoice reports the agent's choice h (nil: nothing), made over rs, to the referee;
// callers hold m.mu.
func (ag *agent) refereeChoice(u *Unit, rs RemoteState, h *Hook) {
	if ag.m.referee == nil {
		return
	}
	ag.refereeEvent(AgentEvent{Choice: &AgentChoice{Remote: rs, Hook: h, Scopes: u.scopes()}})
}

// refereeStart reports the agent's start to the referee (reboot: its machine booted again);
// callers hold m.mu.
func (ag *agent) refereeStart(u *Unit, reboot bool) {
	if ag.m.referee == nil {
		return
	}
	rs := ag.remoteState(u, time.Now())
	ag.refereeEvent(AgentEvent{Start: &AgentStart{Reboot: reboot, Remote: rs, Retry: ag.m.opts.HookRetry > 0}})
}

// remoteState is unit u's remote state at now as its agent sees it: with its timers' fires
// and the juju-exec commands queued; callers hold m.mu.
func (ag *agent) remoteState(u *Unit, now time.Time) RemoteState {
	rs := ag.m.state.remoteState(u, ag.ticks, ag.retries, now)
	rs.Commands = ag.commandIDs()
	return rs
}
