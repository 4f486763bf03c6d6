package model

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Hook is one hook (or action) a unit agent runs.
type Hook struct {
	Kind           string `json:"kind"` // install, start, relation-joined, secret-changed, action, ...
	RelationID     int    `json:"relation-id,omitempty"`
	Endpoint       string `json:"endpoint,omitempty"`
	RemoteUnit     string `json:"remote-unit,omitempty"`
	RemoteApp      string `json:"remote-app,omitempty"`
	DepartingUnit  string `json:"departing-unit,omitempty"`
	SecretID       string `json:"secret-id,omitempty"`
	SecretLabel    string `json:"secret-label,omitempty"`
	SecretRevision int    `json:"secret-revision,omitempty"`
	ActionID       string `json:"action-id,omitempty"`
	ActionName     string `json:"action-name,omitempty"`
	// CommandsID is a juju-exec's id among its unit's queued commands (Kind run-commands).
	CommandsID string `json:"commands-id,omitempty"`
	Version    int    `json:"version,omitempty"` // the data version the hook acknowledges
	// Due is when a secret-rotate hook fell due.
	Due time.Time `json:"due,omitzero"`
}

// Name is the hook's name (JUJU_HOOK_NAME), e.g. "slurmd-relation-joined", or the action's;
// "run-commands" for a juju-exec context, which has no hook name.
func (h Hook) Name() string {
	switch {
	case h.Kind == "action":
		return h.ActionName
	case strings.HasPrefix(h.Kind, "relation-"):
		return h.Endpoint + "-" + h.Kind
	}
	return h.Kind
}

// dispatchPath is JUJU_DISPATCH_PATH.
func (h Hook) dispatchPath() string {
	if h.Kind == "action" {
		return "actions/" + h.ActionName
	}
	return "hooks/" + h.Name()
}

// advance records in u's local state that h has run (Juju's operation commit,
// internal/worker/uniter/operation/runhook.go, and the relation and secrets state the
// uniter keeps): install and start mark the unit, config-changed before the first start
// queues start, upgrade-charm queues config-changed, relation hooks move the unit's view of
// the relation, secret hooks its view of the secret.
func (h Hook) advance(s *State, u *Unit) {
	L := &u.Seen
	u.Queued = nil
	rl := L.Relations[h.RelationID]
	switch h.Kind {
	case "install":
		L.Installed = true
		L.CharmVersion = h.Version
	case "leader-settings-changed":
		L.LeaderData = h.Version
	case "config-changed":
		L.ConfigVersion = h.Version
		if !L.Started {
			u.Queued = &Hook{Kind: "start"}
		}
	case "upgrade-charm":
		u.Queued = &Hook{Kind: "config-changed"}
	case "start":
		L.Started, L.Stopped = true, false
	case "stop":
		L.Stopped = true
	case "remove":
		L.Removed = true
	case "relation-created":
		if rl != nil {
			rl.Created = true
		}
	case "relation-joined":
		if rl != nil {
			rl.Joined[h.RemoteUnit] = h.Version
			rl.ChangedPending = h.RemoteUnit
		}
	case "relation-changed":
		if rl != nil {
			if h.RemoteUnit != "" {
				rl.Joined[h.RemoteUnit] = h.Version
			} else {
				rl.AppVersion = h.Version
			}
			rl.ChangedPending = ""
		}
	case "relation-departed":
		if rl != nil {
			delete(rl.Joined, h.RemoteUnit)
		}
	case "relation-broken":
		if rl != nil {
			rl.Broken = true
		}
	case "secret-changed":
		L.Secrets[h.SecretID] = h.SecretRevision
	case "secret-remove", "secret-expired", "secret-rotate":
		L.OwnerHooks[h.ownerHookKey()] = true
		if h.Kind == "secret-rotate" {
			if sec := s.Secrets[h.SecretID]; sec != nil {
				sec.NextRotate = nextRotation(sec.RotatePolicy, sec.NextRotate, h.Due)
			}
		}
	}
}

// ownerHookKey identifies an owner's secret hook in UnitLocal.OwnerHooks.
func (h Hook) ownerHookKey() string {
	if h.Kind == "secret-rotate" {
		return fmt.Sprintf("%s %s@%d", h.Kind, h.SecretID, h.Due.UnixNano())
	}
	return fmt.Sprintf("%s %s/%d", h.Kind, h.SecretID, h.SecretRevision)
}

// inScope reports whether unit u is in relation r's scope as the other units see it: it has
// entered it (when its agent first saw the relation alive) and has not left it (its
// relation-broken), and neither the unit nor the relation is dying (Juju reports a dying unit
// departed at once: state/cleanup.go, PrepareLeaveScope).
func inScope(u *Unit, r *Relation) bool {
	if u.Dying || r.Dying {
		return false
	}
	rl := u.Seen.Relations[r.ID]
	return rl != nil && !rl.Broken
}

// agentRestarted resets what Juju's uniter keeps only in memory when the unit agent starts
// again (internal/worker/uniter/uniter.go: a new remote state watcher and resolver.LocalState,
// its secrets tracker reloaded): leader-settings-changed is due again on a unit that does not
// lead, the update-status and retry timers start anew, and the consumed secrets the unit knows
// are taken at their latest revision.
func (s *State) agentRestarted(u *Unit, ticks, retries int) {
	L := &u.Seen
	L.LeaderData = -1
	L.UpdateStatus, L.Retries = ticks, retries
	for id := range L.Secrets {
		if sec := s.Secrets[id]; sec != nil && len(sec.Revisions) > 0 {
			L.Secrets[id] = sec.latest().Revision
		}
	}
}

// decide is Juju's uniter resolver (internal/worker/uniter/resolver.go, uniterResolver.NextOp,
// and the resolvers it asks in turn) for unit u over its remote state rs: it returns the hook
// or action to run next, and applies to u the operations that run none (entering a relation's
// scope, accepting or resigning leadership, deploying a refreshed charm, skipping a resolved
// hook), as Juju's uniter runs them before it asks again. In order:
//
//	reboot: start, once the agent is back after a boot (nothing queued or failed)
//	created relations: the unit enters the scope of each relation it sees alive, then runs
//	  relation-created for it (relation/resolver.go, createdRelationsResolver)
//	leadership: accept (leader-elected queued) or resign; leader-settings-changed on a unit
//	  that does not lead, when the leader settings changed since it last ran it
//	secrets: secret-expired, secret-rotate, secret-changed, secret-remove
//	actions: the oldest queued one, when nothing is queued, also in a hook error
//	commands: the oldest juju-exec queued (runcommands/runcommands.go), whatever is queued or
//	  failed
//	a failed hook: replayed on the retry timer or `juju resolve`, skipped with --no-retry
//	a queued hook: start after the first config-changed, config-changed after upgrade-charm,
//	  leader-elected after leadership was accepted, a hook cut off by a shutdown
//	then (nextOp): a dying unit's relation hooks, stop, remove; install; a refreshed charm
//	  (upgrade-charm queued); config-changed; relation hooks; update-status
//
// Juju picks the relation, and the consumed secret, of its next hook in map order; the model
// takes them in order (relations by id, peer relations after the others; secrets by id).
func decide(u *Unit, rs *RemoteState) (Hook, bool) {
	L := &u.Seen
	if !u.Ready || L.Removed {
		return Hook{}, false
	}
	dying := rs.Life == "dying"
	for {
		idle := u.Queued == nil && u.Failed == nil
		if L.RebootDetected {
			switch {
			case !L.Started:
				L.RebootDetected = false
			case idle:
				L.RebootDetected = false
				return Hook{Kind: "start"}, true
			}
		}
		if L.Installed && !dying && idle {
			enterScopes(u, rs)
			for _, id := range sortedRelationIDs(rs, false) {
				r := rs.Relations[id]
				if rl := L.Relations[id]; rl != nil && !rl.Created && !rl.Broken && r.Life == "alive" {
					return Hook{Kind: "relation-created", RelationID: id, Endpoint: r.Endpoint, RemoteApp: r.RemoteApp}, true
				}
			}
		}
		if L.Installed {
			if rs.Leader && !L.Leader && !dying && idle {
				L.Leader = true
				u.Queued = &Hook{Kind: "leader-elected"}
				continue
			}
			if L.Leader && (!rs.Leader || dying) {
				L.Leader = false
				continue
			}
			if idle && !L.Leader && !dying && L.LeaderData != rs.LeaderSettings {
				return Hook{Kind: "leader-settings-changed", Version: rs.LeaderSettings}, true
			}
		}
		if L.Installed && !dying && idle {
			if h, ok := secretHook(u, rs); ok {
				return h, true
			}
		}
		if len(rs.Actions) > 0 && (idle || u.Failed != nil) {
			a := rs.Actions[0]
			return Hook{Kind: "action", ActionID: a.ID, ActionName: a.Name}, true
		}
		if len(rs.Commands) > 0 {
			return Hook{Kind: RunCommands, CommandsID: rs.Commands[0]}, true
		}
		switch {
		case u.Failed != nil:
			// `juju resolve --no-retry` committed it already (Model.Resolve).
			if rs.Resolved == "retry-hooks" || rs.RetryHook > L.Retries {
				u.Resolved = "" // acted on (Juju's uniter clears it as it retries the hook)
				return *u.Failed, true
			}
			return Hook{}, false
		case u.Queued != nil:
			h := *u.Queued
			switch {
			case h.Kind == "leader-elected" && !rs.Leader:
				// No longer the leader when it would run: Juju skips it (operation/runhook.go,
				// Prepare).
				u.Queued = nil
				continue
			case h.Kind == "config-changed":
				h.Version, _ = strconv.Atoi(rs.Config)
			}
			return h, true
		}
		if dying {
			if h, ok := relationHook(u, rs); ok {
				return h, true
			}
			switch {
			case L.Started && !L.Stopped:
				return Hook{Kind: "stop"}, true
			case L.Installed && !L.Removed:
				return Hook{Kind: "remove"}, true
			}
			return Hook{}, false
		}
		if !L.Installed {
			return Hook{Kind: "install", Version: u.CharmVersion}, true
		}
		if L.CharmVersion != rs.CharmVersion {
			// Juju deploys the new charm (operation/deploy.go), queues upgrade-charm and restarts
			// its resolver loop with a new remote state watcher.
			L.CharmVersion = rs.CharmVersion
			u.Queued = &Hook{Kind: "upgrade-charm", Version: rs.CharmVersion}
			L.LeaderData = -1
			L.UpdateStatus, L.Retries = rs.UpdateStatus, rs.RetryHook
			continue
		}
		if strconv.Itoa(L.ConfigVersion) != rs.Config {
			v, _ := strconv.Atoi(rs.Config)
			return Hook{Kind: "config-changed", Version: v}, true
		}
		if h, ok := relationHook(u, rs); ok {
			return h, true
		}
		if rs.UpdateStatus != L.UpdateStatus {
			return Hook{Kind: "update-status"}, true
		}
		return Hook{}, false
	}
}

// enterScopes enters the scope of every relation the unit sees alive and has not entered
// (relation/statetracker.go, SynchronizeScopes); a dying unit enters none
// (state/relationunit.go, EnterScope).
func enterScopes(u *Unit, rs *RemoteState) {
	if rs.Life != "alive" {
		return
	}
	for id, r := range rs.Relations {
		if u.Seen.Relations[id] == nil && r.Life == "alive" {
			u.Seen.Relations[id] = &RelationLocal{Joined: map[string]int{}}
		}
	}
}

// sortedRelationIDs are rs's relations by id; with peersLast, peer relations after the others.
func sortedRelationIDs(rs *RemoteState, peersLast bool) []int {
	ids := make([]int, 0, len(rs.Relations))
	for id := range rs.Relations {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		pi, pj := rs.Relations[ids[i]].Role == "peer", rs.Relations[ids[j]].Role == "peer"
		if peersLast && pi != pj {
			return pj
		}
		return ids[i] < ids[j]
	})
	return ids
}

// relationHook is Juju's relations resolver (relation/resolver.go): the unit enters the scope
// of the relations it sees alive, then the first relation with a hook to run gives it, peer
// relations last.
func relationHook(u *Unit, rs *RemoteState) (Hook, bool) {
	enterScopes(u, rs)
	for _, id := range sortedRelationIDs(rs, true) {
		if h, ok := nextRelationHook(u, rs, id); ok {
			return h, true
		}
	}
	return Hook{}, false
}

// nextRelationHook is Juju's relation resolver (relation/resolver.go, nextHookForRelation) for
// unit u in relation id: the changed hook pending after a join first; then departures; then
// broken when the unit or the relation is dying (never for a peer relation); then the remote
// application's data; then joins (each followed by its changed); then changed data. Remote
// units are taken in lexical order, as Juju sorts them.
func nextRelationHook(u *Unit, rs *RemoteState, id int) (Hook, bool) {
	rl := u.Seen.Relations[id]
	r := rs.Relations[id]
	if rl == nil || rl.Broken {
		return Hook{}, false
	}
	base := Hook{RelationID: id, Endpoint: r.Endpoint, RemoteApp: r.RemoteApp}
	with := func(kind, remote, departing string, version int64) (Hook, bool) {
		h := base
		h.Kind, h.RemoteUnit, h.DepartingUnit, h.Version = kind, remote, departing, int(version)
		return h, true
	}
	broken := rs.Life == "dying" || r.Life == "dying"
	members, apps := r.Members, r.AppMembers
	if broken {
		members, apps = nil, nil
	}
	if ru := rl.ChangedPending; ru != "" {
		return with("relation-changed", ru, "", members[ru])
	}
	for _, ru := range sortedKeys(rl.Joined) {
		if _, ok := members[ru]; !ok {
			departing := ru
			if rs.Life != "alive" || rs.AppLife != "alive" {
				departing = u.Name
			}
			return with("relation-departed", ru, departing, int64(rl.Joined[ru]))
		}
	}
	if broken {
		if r.Role == "peer" {
			return Hook{}, false // Juju runs no relation-broken for a peer relation
		}
		return with("relation-broken", "", "", 0)
	}
	if v, ok := apps[r.RemoteApp]; ok && int(v) != rl.AppVersion {
		return with("relation-changed", "", "", v)
	}
	for _, ru := range sortedKeys(members) {
		if _, ok := rl.Joined[ru]; !ok {
			return with("relation-joined", ru, "", members[ru])
		}
	}
	for _, ru := range sortedKeys(members) {
		if v := members[ru]; int64(rl.Joined[ru]) != v {
			return with("relation-changed", ru, "", v)
		}
	}
	return Hook{}, false
}

// secretHook is Juju's secrets resolver (secrets/resolver.go): on the owner secret-expired,
// then secret-rotate, in the order they fell due; on a consumer secret-changed when it was
// told of a revision it has not seen; on the owner secret-remove for each revision no consumer
// tracks any more (not the latest).
func secretHook(u *Unit, rs *RemoteState) (Hook, bool) {
	owned := func(id string) Hook {
		return Hook{SecretID: id, SecretLabel: rs.OwnedSecrets[id].Label}
	}
	if len(rs.ExpiredSecretRevisions) > 0 {
		id, rev, _ := strings.Cut(rs.ExpiredSecretRevisions[0], "/")
		h := owned(id)
		h.Kind = "secret-expired"
		h.SecretRevision, _ = strconv.Atoi(rev)
		return h, true
	}
	if len(rs.SecretRotations) > 0 {
		id := rs.SecretRotations[0]
		h := owned(id)
		h.Kind, h.Due = "secret-rotate", rs.OwnedSecrets[id].NextRotate
		return h, true
	}
	for _, id := range sortedKeys(rs.ConsumedSecrets) {
		if c := rs.ConsumedSecrets[id]; c.Notified && u.Seen.Secrets[id] != c.Revision {
			return Hook{Kind: "secret-changed", SecretID: id, SecretLabel: c.Label, SecretRevision: c.Revision}, true
		}
	}
	for _, id := range sortedKeys(rs.ObsoleteSecretRevisions) {
		for _, rev := range rs.ObsoleteSecretRevisions[id] {
			h := owned(id)
			h.Kind, h.SecretRevision = "secret-remove", rev
			if !u.Seen.OwnerHooks[h.ownerHookKey()] {
				return h, true
			}
		}
	}
	return Hook{}, false
}

// nextOwnerDeadline is the earliest future time an owner secret hook of unit u falls due
// (zero: none), so that the agent wakes up for it.
func nextOwnerDeadline(s *State, u *Unit, now time.Time) time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, sec := range s.Secrets {
		if !sec.ownedBy(u.Name, u.App) {
			continue
		}
		if sec.RotatePolicy != "" {
			consider(sec.NextRotate)
		}
		for _, rev := range sec.Revisions {
			consider(rev.Expire)
		}
	}
	return next
}

// rotatePeriods are Juju's rotation policies (core/secrets/secret.go).
var rotatePeriods = map[string]time.Duration{
	"hourly": time.Hour, "daily": 24 * time.Hour, "weekly": 7 * 24 * time.Hour,
	"monthly": 30 * 24 * time.Hour, "quarterly": 90 * 24 * time.Hour, "yearly": 365 * 24 * time.Hour,
}

// nextRotation is the rotation time after due under policy (zero for no policy).
func nextRotation(policy string, last, due time.Time) time.Time {
	p, ok := rotatePeriods[policy]
	if !ok {
		return time.Time{}
	}
	if last.IsZero() {
		last = due
	}
	return last.Add(p)
}

func actionNumber(id string) int { n, _ := strconv.Atoi(id); return n }

// agent runs one unit's hooks, one at a time, on the unit's machine.
type agent struct {
	m         *Model
	unit      string
	machineID string
	machine   Machine
	// shared: the machine is the principal's (a subordinate unit's agent), destroyed by the
	// principal's agent only.
	shared     bool
	done       chan struct{}
	running    bool
	retryDelay time.Duration
	charmDir   string // as seen on the machine
	toolsDir   string
	// booted is the machine's boot number the boot watcher has recorded (Rebootable machines),
	// under m.mu.
	booted int
	// ticks and retries count the update-status and hook-retry timers' fires (under m.mu), for
	// the referee; lastIdle is the last choice of nothing it was sent.
	ticks, retries int
	lastIdle       []byte
	// retry fires when the failed hook is due to be retried (under m.mu).
	retry <-chan time.Time
	// exec is the unit's run socket (juju-exec) and execQueue the commands waiting for their
	// turn; both under m.mu.
	exec      *execListener
	execQueue []*execRequest
	execIDs   int // the run-commands ids handed out
}

func newAgent(m *Model, unit, machineID string) *agent {
	return &agent{m: m, unit: unit, machineID: machineID, done: make(chan struct{})}
}

func unitTag(unit string) string { return "unit-" + strings.ReplaceAll(unit, "/", "-") }

// run is the agent's loop: provision the machine, then run hooks until the unit is removed.
func (a *agent) run(ctx context.Context) {
	defer close(a.done)
	m := a.m
	if err := a.provision(ctx); err != nil {
		m.mu.Lock()
		if u := m.state.Units[a.unit]; u != nil {
			u.Agent = StatusInfo{Status: "error", Message: err.Error(), Since: time.Now()}
			if ms := m.state.Machines[a.machineID]; ms != nil {
				ms.Status, ms.Message = "error", err.Error()
			}
			m.saveLater()
			m.notify()
		}
		m.mu.Unlock()
		m.progress("%s: %v", a.unit, err)
		return
	}
	update := time.NewTimer(m.opts.UpdateStatusInterval)
	defer update.Stop()
	for {
		m.mu.Lock()
		u := m.state.Units[a.unit]
		if u == nil {
			m.mu.Unlock()
			return
		}
		if u.Dying && (u.Seen.Removed || !u.Seen.Installed) {
			m.mu.Unlock()
			a.finish(ctx)
			return
		}
		if u.Reboot != "" || a.machineDown() {
			// The machine is down or going down (its systemd stopped the agent's service at the
			// start of the shutdown; watchBoots sees the reboot only once the next boot starts):
			// as under Juju, its agent decides and runs nothing until it is back.
			changed := m.changed
			m.mu.Unlock()
			if !pauseForBoot(ctx, changed) {
				return
			}
			continue
		}
		now := time.Now()
		rs := a.remoteState(u, now)
		hook, ok := decide(u, &rs)
		if m.referee != nil && !ok {
			a.refereeChoice(u, rs, nil)
		}
		if u.Failed == nil {
			u.Resolved = "" // nothing to resolve
		}
		if ok && hook.Kind == RunCommands {
			r := a.takeExec(hook.CommandsID)
			a.refereeChoice(u, rs, &hook)
			a.runExec(ctx, u, r)
			if ctx.Err() != nil {
				m.mu.Unlock()
				return
			}
			// Juju's run-commands operation succeeds whatever the commands did: their result
			// is juju-exec's (operation/runcommands.go, Execute).
			a.refereeEvent(AgentEvent{Done: "ok"})
			m.mu.Unlock()
			continue
		}
		if !ok {
			if u.Failed == nil {
				u.Agent = StatusInfo{Status: "idle", Since: u.Agent.Since}
				if u.Agent.Since.IsZero() {
					u.Agent.Since = time.Now()
				}
			}
			changed := m.changed
			var due <-chan time.Time
			var dueTimer *time.Timer
			if t := nextOwnerDeadline(m.state, u, now); !t.IsZero() {
				dueTimer = time.NewTimer(time.Until(t))
				due = dueTimer.C
			}
			retry := a.retry
			m.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-due:
			case <-changed:
			case <-update.C:
				m.mu.Lock()
				a.ticks++
				m.mu.Unlock()
				update.Reset(m.opts.UpdateStatusInterval)
			case <-retry:
				m.mu.Lock()
				a.retry = nil
				a.retries++
				m.mu.Unlock()
			}
			if dueTimer != nil {
				dueTimer.Stop()
			}
			continue
		}
		if hook.Kind == "action" {
			if act := m.state.Actions[hook.ActionID]; act != nil {
				act.Status = "running"
			}
		} else {
			// Juju notes the retry timer's version as it prepares any hook, and the
			// update-status timer's as it commits one.
			u.Seen.Retries = rs.RetryHook
		}
		ticks := rs.UpdateStatus
		a.refereeChoice(u, rs, &hook)
		a.running = true
		u.Agent = StatusInfo{Status: "executing", Message: "running " + hook.Name() + " hook", Since: time.Now()}
		if hook.Kind == "action" {
			u.Agent.Message = "running action " + hook.Name()
		}
		if hook.Kind == "install" {
			u.Workload = StatusInfo{Status: "maintenance", Message: "installing charm software", Since: time.Now()}
		}
		hc, view := a.newContext(hook)
		msg := u.Agent.Message
		charmSrc := m.state.Applications[u.App].CharmDir
		if hook.Kind == "upgrade-charm" {
			u.CharmVersion = hook.Version
		}
		m.mu.Unlock()
		if hook.Kind == "upgrade-charm" {
			// Juju deploys the new charm's files, then runs upgrade-charm.
			if err := installCharm(charmSrc, a.machine.Path(path.Join("/var/lib/juju/agents", unitTag(a.unit), "charm"))); err != nil {
				m.progress("%s: cannot install the refreshed charm: %v", a.unit, err)
			}
		}
		m.mu.Lock()
		hc.view = view
		m.contexts[hc.id] = hc
		m.mu.Unlock()

		m.progress("%s: %s", a.unit, msg)
		boot := 0
		if r, isR := a.machine.(Rebootable); isR {
			boot = r.Boots()
		}
		lock := m.machineLock(a.machineID)
		lock.Lock()
		err := a.runHook(ctx, hc)
		lock.Unlock()
		if ctx.Err() != nil {
			return
		}
		// A hook cut off by its machine's shutdown (the agent's service stopped under it, then
		// its tools unmounted, its process killed) is not a failed hook: Juju queues a
		// terminated hook again (runner.ErrTerminated) and its agent, down with the machine,
		// runs it first once it is back.
		cut := false
		if r, isR := a.machine.(Rebootable); isR && err != nil && hook.Kind != "action" {
			cut = r.Boots() != boot || !r.AgentRunning()
		}

		m.mu.Lock()
		delete(m.contexts, hc.id)
		a.running = false
		u = m.state.Units[a.unit]
		if err == nil {
			hc.commit(m.state)
			if hook.Kind != "action" {
				u.Failed = nil
				hook.advance(m.state, u)
				u.Seen.UpdateStatus = ticks
			}
			if hook.Kind == "start" && u.Workload.Status == "maintenance" && u.Workload.Message == "installing charm software" {
				u.Workload = StatusInfo{Status: "unknown", Since: time.Now()}
			}
			a.retryDelay = 0
		} else if hook.Kind == "action" {
			// A failing action process fails the action, not the unit.
		} else if cut {
			h := hook
			u.Failed, u.Queued = nil, &h
			u.Agent = StatusInfo{Status: "idle", Since: time.Now()}
		} else {
			h := hook
			u.Failed, u.Queued = &h, nil
			u.Agent = StatusInfo{Status: "error", Message: fmt.Sprintf("hook failed: %q", hook.Name()), Since: time.Now()}
			a.startRetry(hook)
		}
		if hook.Kind == "action" {
			hc.finishAction(m.state, err)
		}
		switch {
		case err == nil || hook.Kind == "action":
			a.refereeEvent(AgentEvent{Done: "ok"})
		case cut:
			a.refereeEvent(AgentEvent{Done: "terminated"})
		default:
			a.refereeEvent(AgentEvent{Done: "failed"})
		}
		m.cleanup()
		m.saveLater()
		m.notify()
		m.mu.Unlock()
		switch {
		case cut:
			m.progress("%s: hook %q cut off by the machine's shutdown; it runs again after the boot: %v", a.unit, hook.Name(), err)
		case err != nil && hook.Kind != "action":
			m.progress("%s: hook failed: %q: %v", a.unit, hook.Name(), err)
		case err == nil && hook.Kind != "action":
			// Juju's uniter logs the same line when a hook succeeds (operation/runhook.go).
			m.progress("%s: ran %q hook (via hook dispatching script: dispatch)", a.unit, hook.Name())
		}
	}
}

// startRetry starts the retry timer of failed hook h, when automatic retries are on; callers
// hold m.mu.
func (a *agent) startRetry(h Hook) {
	if a.m.opts.HookRetry <= 0 {
		return
	}
	a.retryDelay = nextRetryDelay(a.retryDelay, a.m.opts.HookRetry)
	a.retry = time.After(a.retryDelay)
	a.m.progress("%s: retrying %q in %v", a.unit, h.Name(), a.retryDelay)
}

// nextRetryDelay is the delay before the next automatic retry of a failed hook, after prev
// (zero for the first failure): Juju's hook retry strategy starts at base (5 s by default),
// doubles and is capped at MaxHookRetry (apiserver/facades/agent/retrystrategy).
func nextRetryDelay(prev, base time.Duration) time.Duration {
	if prev == 0 {
		return min(base, MaxHookRetry)
	}
	return min(2*prev, MaxHookRetry)
}

// finish destroys the unit's machine and removes the unit from the model.
func (a *agent) finish(ctx context.Context) {
	m := a.m
	m.mu.Lock()
	sub := a.principal() != ""
	m.mu.Unlock()
	if !sub && !a.waitSubordinates(ctx) {
		return
	}
	if a.machine != nil && !sub {
		m.progress("%s: removing machine %s", a.unit, a.machineID)
		if err := a.machine.Destroy(ctx); err != nil {
			m.progress("%s: %v", a.unit, err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a.closeExec()
	u := m.state.Units[a.unit]
	delete(m.state.Units, a.unit)
	if !sub {
		delete(m.state.Machines, a.machineID)
	}
	delete(m.agents, a.unit)
	for _, sec := range m.state.Secrets {
		delete(sec.Consumers, a.unit)
		if sec.OwnerUnit == a.unit {
			delete(m.state.Secrets, sec.ID)
		}
	}
	for _, r := range m.state.Relations {
		delete(r.UnitData, a.unit)
		delete(r.UnitVersion, a.unit)
	}
	if u != nil {
		m.electLeader(u.App)
	}
	m.cleanup()
	m.saveLater()
	m.notify()
	m.progress("%s: removed", a.unit)
}

// principal is the unit a subordinate unit's agent shares its machine with ("" for a
// principal unit); callers hold m.mu.
func (a *agent) principal() string {
	if u := a.m.state.Units[a.unit]; u != nil {
		return u.Principal
	}
	return ""
}

// waitSubordinates waits until the subordinate units beside this unit are gone (they leave
// first, as under Juju, where a principal is removed only once its subordinates are); false
// when ctx ends first.
func (a *agent) waitSubordinates(ctx context.Context) bool {
	m := a.m
	for {
		m.mu.Lock()
		left := false
		for _, u := range m.state.Units {
			if u.Principal == a.unit {
				left = true
			}
		}
		changed := m.changed
		m.mu.Unlock()
		if !left {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}

// sharedMachine waits for the machine of principal (a subordinate's) to be provisioned.
func (a *agent) sharedMachine(ctx context.Context, principal string) (Machine, error) {
	m := a.m
	for {
		m.mu.Lock()
		pa := m.agents[principal]
		var mach Machine
		if pa != nil {
			mach = pa.machine
		}
		changed := m.changed
		m.mu.Unlock()
		switch {
		case pa == nil:
			return nil, fmt.Errorf("principal unit %s is gone", principal)
		case mach != nil:
			return mach, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// machineLock is the lock of machine id that every unit agent on it holds while it runs a
// hook, as Juju's machine lock (a subordinate's hooks never overlap its principal's).
func (m *Model) machineLock(id string) *sync.Mutex {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.machineLocks == nil {
		m.machineLocks = map[string]*sync.Mutex{}
	}
	l := m.machineLocks[id]
	if l == nil {
		l = &sync.Mutex{}
		m.machineLocks[id] = l
	}
	return l
}

// provision creates the unit's machine (a subordinate unit's is its principal's) and installs
// the charm and the hook tools on it.
func (a *agent) provision(ctx context.Context) error {
	m := a.m
	m.mu.Lock()
	principal := a.principal()
	m.mu.Unlock()
	var mach Machine
	var err error
	if principal != "" {
		m.progress("%s: joining %s on machine %s", a.unit, principal, a.machineID)
		mach, err = a.sharedMachine(ctx, principal)
	} else {
		m.progress("%s: creating machine %s", a.unit, a.machineID)
		mach, err = m.newMachine(ctx, a.machineID, a.unit)
	}
	if err != nil {
		return fmt.Errorf("cannot create machine %s: %w", a.machineID, err)
	}
	m.mu.Lock()
	a.machine, a.shared = mach, principal != ""
	u := m.state.Units[a.unit]
	app := m.state.Applications[u.App]
	charmSrc := app.CharmDir
	u.CharmVersion = app.CharmVersion // the charm version whose files the machine gets
	ms := m.state.Machines[a.machineID]
	ms.Hostname = mach.Hostname()
	ms.Base = machineBase(mach)
	if mach.Addr().IsValid() {
		ms.Address = mach.Addr().String()
	}
	ms.Status = "started"
	u.Workload = StatusInfo{Status: "waiting", Message: "agent initialising", Since: time.Now()}
	m.saveLater()
	m.notify()
	m.mu.Unlock()

	tag := unitTag(a.unit)
	charmIn := path.Join("/var/lib/juju/agents", tag, "charm")
	toolsIn := path.Join("/var/lib/juju/tools", tag)
	a.charmDir = filepath.Join(mach.Root(), charmIn)
	a.toolsDir = filepath.Join(mach.Root(), toolsIn)
	if err := installCharm(charmSrc, mach.Path(charmIn)); err != nil {
		return fmt.Errorf("cannot install charm on machine %s: %w", a.machineID, err)
	}
	if err := linkUnitTools(m.toolsDir, mach.Path(toolsIn)); err != nil {
		return fmt.Errorf("cannot install hook tools on machine %s: %w", a.machineID, err)
	}
	if err := a.listenExec(); err != nil {
		return fmt.Errorf("cannot serve juju-exec on machine %s: %w", a.machineID, err)
	}
	m.mu.Lock()
	u.Ready = true
	u.Agent = StatusInfo{Status: "idle", Since: time.Now()}
	a.refereeStart(u, false)
	m.saveLater()
	m.notify()
	m.mu.Unlock()
	if r, ok := mach.(Rebootable); ok {
		m.mu.Lock()
		a.booted = r.Boots()
		m.mu.Unlock()
		go a.watchBoots(ctx, r)
	}
	return nil
}

// env is the hook's environment, as Juju's uniter sets it (worker/uniter/runner/context,
// HookVars and OSDependentEnvVars): the common variables always, empty ones exported as empty
// strings; the relation, action and secret variables for those hooks.
func (a *agent) env(hc *hookContext) []string {
	m := a.m
	h := hc.hook
	hookName := h.Name()
	if h.Kind == "action" || h.Kind == RunCommands {
		hookName = "" // actions and juju-exec have no hook name: Juju exports it empty
	}
	env := map[string]string{
		"PATH":                      a.toolsDir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG":                      "C.UTF-8",
		"DEBIAN_FRONTEND":           "noninteractive",
		"APT_LISTCHANGES_FRONTEND":  "none",
		"CHARM_DIR":                 a.charmDir,
		"JUJU_CHARM_DIR":            a.charmDir,
		"JUJU_CONTEXT_ID":           hc.id,
		"JUJU_HOOK_NAME":            hookName,
		"JUJU_DISPATCH_PATH":        h.dispatchPath(),
		"JUJU_AGENT_SOCKET_ADDRESS": m.sockPath,
		"JUJU_AGENT_SOCKET_NETWORK": "unix",
		"JUJU_UNIT_NAME":            a.unit,
		"JUJU_MODEL_UUID":           hc.view.UUID,
		"JUJU_MODEL_NAME":           hc.view.Name,
		"JUJU_API_ADDRESSES":        "",
		"JUJU_SLA":                  "unsupported",
		"JUJU_MACHINE_ID":           a.machineID,
		"JUJU_PRINCIPAL_UNIT":       "",
		"JUJU_AVAILABILITY_ZONE":    "",
		"JUJU_VERSION":              JujuVersion,
		"CLOUD_API_VERSION":         "",
		"JUJU_CHARM_HTTP_PROXY":     "",
		"JUJU_CHARM_HTTPS_PROXY":    "",
		"JUJU_CHARM_FTP_PROXY":      "",
		"JUJU_CHARM_NO_PROXY":       "",
	}
	switch {
	case strings.HasPrefix(h.Kind, "relation-"):
		env["JUJU_RELATION"] = h.Endpoint
		env["JUJU_RELATION_ID"] = fmt.Sprintf("%s:%d", h.Endpoint, h.RelationID)
		env["JUJU_REMOTE_UNIT"] = h.RemoteUnit // empty for application-level and broken hooks
		env["JUJU_REMOTE_APP"] = h.RemoteApp
		if h.DepartingUnit != "" {
			env["JUJU_DEPARTING_UNIT"] = h.DepartingUnit
		}
	case strings.HasPrefix(h.Kind, "secret-"):
		env["JUJU_SECRET_ID"] = h.SecretID
		env["JUJU_SECRET_LABEL"] = h.SecretLabel
		if h.SecretRevision > 0 && h.Kind != "secret-changed" {
			env["JUJU_SECRET_REVISION"] = strconv.Itoa(h.SecretRevision)
		}
	case h.Kind == "action":
		env["JUJU_ACTION_NAME"] = h.ActionName
		env["JUJU_ACTION_UUID"] = h.ActionID
		env["JUJU_ACTION_TAG"] = "action-" + h.ActionID
	}
	if h.Kind == RunCommands {
		delete(env, "JUJU_DISPATCH_PATH") // set by Juju's runner for hooks and actions only
	}
	out := make([]string, 0, len(env))
	for _, k := range sortedKeys(env) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// runHook runs the charm's dispatch for hc on the unit's machine.
func (a *agent) runHook(ctx context.Context, hc *hookContext) error {
	cmd := a.machine.Command(ctx, a.charmDir, []string{filepath.Join(a.charmDir, "dispatch")})
	cmd.Env = append(cmd.Env, a.env(hc)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if text := strings.TrimRight(out.String(), "\n"); text != "" {
		a.m.mu.Lock()
		for _, line := range strings.Split(text, "\n") {
			a.m.appendLog(fmt.Sprintf("%s: %s %s %s", unitTag(a.unit), time.Now().Format("15:04:05"), "WARNING", hc.hook.Name()+": "+line))
		}
		if hc.hook.Kind == "action" {
			if act := a.m.state.Actions[hc.hook.ActionID]; act != nil {
				act.Output = out.String()
			}
		}
		a.m.mu.Unlock()
	}
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) {
		return fmt.Errorf("exit status %d", ee.ExitCode())
	}
	return err
}
