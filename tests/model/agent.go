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
	Version        int    `json:"version,omitempty"` // the data version the hook acknowledges
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

// advance records in u's local state that h has run.
func (h Hook) advance(s *State, u *Unit) {
	L := &u.Seen
	rl := L.Relations[h.RelationID]
	switch h.Kind {
	case "install":
		L.Installed = true
		L.CharmVersion = h.Version
	case "upgrade-charm":
		L.CharmVersion = h.Version
		// Juju queues config-changed right after upgrade-charm (operation/runhook.go).
		L.ConfigVersion = -1
	case "leader-elected", "leader-settings-changed":
		L.LeaderHook = true
		L.WasLeader = h.Kind == "leader-elected"
		L.LeaderData = h.Version
	case "config-changed":
		L.ConfigVersion = h.Version
	case "start":
		L.Started = true
		if L.Rebooted {
			// The agent restarted with the machine: config-changed follows start.
			L.Rebooted = false
			L.ConfigVersion = -1
		}
	case "stop":
		if u.Reboot == RebootStop {
			u.Reboot = RebootDown // the machine goes down; the unit is not leaving
		} else {
			L.Stopped = true
		}
	case "remove":
		L.Removed = true
	case "update-status":
		L.UpdateStatusDue = false
	case "relation-created":
		if rl == nil {
			rl = &RelationLocal{}
			L.Relations[h.RelationID] = rl
		}
		rl.Created = true
		if rl.Joined == nil {
			rl.Joined = map[string]int{}
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
				if rl.ChangedPending == h.RemoteUnit {
					rl.ChangedPending = ""
				}
			} else {
				rl.AppVersion = h.Version
			}
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

// inScope reports whether unit u is in relation r's scope: alive and has run relation-created.
func inScope(u *Unit, r *Relation) bool {
	if u.Dying || r.Dying {
		return false
	}
	rl := u.Seen.Relations[r.ID]
	return rl != nil && rl.Created && !rl.Broken
}

// nextHook derives the unit's next hook from the model state and what the unit has seen, in
// Juju's order (worker/uniter/resolver.go, relation/resolver.go, leadership/resolver.go,
// secrets/resolver.go); now decides which owner secret hooks (rotate, expired) are due.
func nextHook(s *State, name string, now time.Time) (Hook, bool) {
	u := s.Units[name]
	if u == nil || !u.Ready || u.Failed != nil || u.Seen.Removed {
		return Hook{}, false
	}
	app := s.Applications[u.App]
	L := &u.Seen
	rels := make([]*Relation, 0, len(s.Relations))
	for _, r := range s.Relations {
		if _, ok := r.endpointOf(u.App); ok {
			rels = append(rels, r)
		}
	}
	sort.Slice(rels, func(i, j int) bool { return rels[i].ID < rels[j].ID })
	epName := func(r *Relation) string { ep, _ := r.endpointOf(u.App); return ep.Name }

	if u.Dying && !L.Installed {
		return Hook{}, false // never installed: nothing to tell the charm
	}
	if !L.Installed {
		return Hook{Kind: "install", Version: u.CharmVersion}, true
	}
	if u.Requeued != nil && u.Reboot == "" && !u.Dying {
		return *u.Requeued, true
	}
	if h, ok, hold := rebootHook(u); hold {
		return h, ok
	}
	if !u.Dying && L.CharmVersion != app.CharmVersion {
		return Hook{Kind: "upgrade-charm", Version: app.CharmVersion}, true
	}
	if !u.Dying {
		for _, r := range rels {
			if !r.Dying && L.Relations[r.ID] == nil {
				return Hook{Kind: "relation-created", RelationID: r.ID, Endpoint: epName(r), RemoteApp: r.remoteApp(u.App)}, true
			}
		}
	}
	isLeader := app.Leader == name
	if !u.Dying {
		switch {
		case isLeader && (!L.LeaderHook || !L.WasLeader):
			return Hook{Kind: "leader-elected", Version: app.LeaderDataVersion}, true
		case !isLeader && (!L.LeaderHook || L.LeaderData != app.LeaderDataVersion):
			return Hook{Kind: "leader-settings-changed", Version: app.LeaderDataVersion}, true
		}
	}
	if !u.Dying && L.ConfigVersion != app.ConfigVersion {
		return Hook{Kind: "config-changed", Version: app.ConfigVersion}, true
	}
	if !u.Dying && !L.Started {
		return Hook{Kind: "start"}, true
	}
	if !u.Dying {
		if h, ok := nextOwnerSecretHook(s, u, isLeader, now); ok {
			return h, true
		}
	}
	for _, r := range rels {
		if h, ok := nextRelationHook(s, u, app, r, epName(r)); ok {
			return h, true
		}
	}
	if u.Dying {
		if !L.Stopped {
			return Hook{Kind: "stop"}, true
		}
		return Hook{Kind: "remove"}, true
	}
	for _, id := range sortedKeys(s.Secrets) {
		sec := s.Secrets[id]
		c := sec.Consumers[name]
		if c == nil || len(sec.Revisions) == 0 {
			continue
		}
		latest := sec.latest().Revision
		if latest > c.Tracked && L.Secrets[id] < latest {
			return Hook{Kind: "secret-changed", SecretID: id, SecretLabel: c.Label, SecretRevision: latest}, true
		}
	}
	if L.UpdateStatusDue {
		return Hook{Kind: "update-status"}, true
	}
	return Hook{}, false
}

// nextRelationHook is Juju's relation resolver (worker/uniter/relation/resolver.go,
// nextHookForRelation) for unit u in relation r: the changed hook pending after a join first;
// then departures; then broken when the unit or the relation is dying (never for a peer
// relation); then the remote application's data; then joins (each followed by its changed);
// then changed data. Remote units are taken in lexical order, as Juju sorts them.
func nextRelationHook(s *State, u *Unit, app *Application, r *Relation, endpoint string) (Hook, bool) {
	rl := u.Seen.Relations[r.ID]
	if rl == nil || rl.Broken {
		return Hook{}, false
	}
	remoteApp := r.remoteApp(u.App)
	base := Hook{RelationID: r.ID, Endpoint: endpoint, RemoteApp: remoteApp}
	with := func(kind, remote, departing string, version int) (Hook, bool) {
		h := base
		h.Kind, h.RemoteUnit, h.DepartingUnit, h.Version = kind, remote, departing, version
		return h, true
	}
	if ru := rl.ChangedPending; ru != "" {
		return with("relation-changed", ru, "", r.UnitVersion[ru])
	}
	broken := u.Dying || r.Dying
	present := map[string]bool{}
	if !broken {
		for _, ou := range s.Units {
			if ou.App == remoteApp && ou.Name != u.Name && inScope(ou, r) && (!r.containerScoped() || ou.Machine == u.Machine) {
				present[ou.Name] = true
			}
		}
	}
	for _, ru := range sortedKeys(rl.Joined) {
		if !present[ru] {
			departing := ru
			if u.Dying || app.Dying {
				departing = u.Name
			}
			return with("relation-departed", ru, departing, rl.Joined[ru])
		}
	}
	if broken {
		if r.isPeer() {
			return Hook{}, false // Juju runs no relation-broken for a peer relation
		}
		return with("relation-broken", "", "", 0)
	}
	if v := r.AppVersion[remoteApp]; v != rl.AppVersion {
		return with("relation-changed", "", "", v)
	}
	units := sortedKeys(present)
	for _, ru := range units {
		if _, ok := rl.Joined[ru]; !ok {
			return with("relation-joined", ru, "", r.UnitVersion[ru])
		}
	}
	for _, ru := range units {
		if v := r.UnitVersion[ru]; rl.Joined[ru] != v {
			return with("relation-changed", ru, "", v)
		}
	}
	return Hook{}, false
}

// nextOwnerSecretHook returns the secret hooks Juju runs on a secret's owner (the unit, or the
// leader for an application secret; worker/uniter/secrets/resolver.go): secret-rotate when the
// rotation is due, secret-expired when a revision's expiry has passed, secret-remove for each
// revision no consumer tracks any more (obsolete, not the latest).
func nextOwnerSecretHook(s *State, u *Unit, isLeader bool, now time.Time) (Hook, bool) {
	for _, id := range sortedKeys(s.Secrets) {
		sec := s.Secrets[id]
		if len(sec.Revisions) == 0 || !(sec.OwnerUnit == u.Name || sec.OwnerApp == u.App && isLeader) {
			continue
		}
		base := Hook{SecretID: id, SecretLabel: sec.Label}
		if sec.RotatePolicy != "" && !sec.NextRotate.IsZero() && !now.Before(sec.NextRotate) {
			h := base
			h.Kind, h.Due = "secret-rotate", sec.NextRotate
			if !u.Seen.OwnerHooks[h.ownerHookKey()] {
				return h, true
			}
		}
		latest := sec.latest().Revision
		for _, rev := range sec.Revisions {
			h := base
			h.SecretRevision = rev.Revision
			if !rev.Expire.IsZero() && !now.Before(rev.Expire) {
				h.Kind = "secret-expired"
				if !u.Seen.OwnerHooks[h.ownerHookKey()] {
					return h, true
				}
			}
			if rev.Revision != latest && !sec.tracked(rev.Revision) {
				h.Kind = "secret-remove"
				if !u.Seen.OwnerHooks[h.ownerHookKey()] {
					return h, true
				}
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

// nextAction returns the unit's oldest pending action, when the unit may run one.
func nextAction(s *State, name string) (*ActionRun, bool) {
	u := s.Units[name]
	if u == nil || !u.Ready || !u.Seen.Started || u.Seen.Removed {
		return nil, false
	}
	var best *ActionRun
	for _, a := range s.Actions {
		if a.Unit == name && a.Status == "pending" {
			if best == nil || actionNumber(a.ID) < actionNumber(best.ID) {
				best = a
			}
		}
	}
	return best, best != nil
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
	// exec is the unit's run socket (juju-exec) and execQueue the commands waiting for their
	// turn; both under m.mu.
	exec      *execListener
	execQueue []*execRequest
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
	var retry <-chan time.Time
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
		if _, found := nextAction(m.state, a.unit); !found {
			if r := a.nextExec(u); r != nil {
				if a.machineDown() {
					a.execQueue = append([]*execRequest{r}, a.execQueue...)
					m.mu.Unlock()
					if !pauseForBoot(ctx) {
						return
					}
					continue
				}
				a.runExec(ctx, u, r)
				m.mu.Unlock()
				continue
			}
		}
		var hook Hook
		var ok bool
		if act, found := nextAction(m.state, a.unit); found {
			hook, ok = Hook{Kind: "action", ActionID: act.ID, ActionName: act.Name}, true
			act.Status = "running"
		} else {
			hook, ok = nextHook(m.state, a.unit, time.Now())
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
			if t := nextOwnerDeadline(m.state, u, time.Now()); !t.IsZero() {
				dueTimer = time.NewTimer(time.Until(t))
				due = dueTimer.C
			}
			m.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-due:
			case <-changed:
			case <-update.C:
				m.mu.Lock()
				if u := m.state.Units[a.unit]; u != nil && u.Seen.Started && !u.Dying {
					u.Seen.UpdateStatusDue = true
				}
				m.mu.Unlock()
				update.Reset(m.opts.UpdateStatusInterval)
			case <-retry:
				retry = nil
				m.mu.Lock()
				if u := m.state.Units[a.unit]; u != nil && u.Failed != nil {
					u.Failed = nil
					m.saveLater()
				}
				m.mu.Unlock()
			}
			if dueTimer != nil {
				dueTimer.Stop()
			}
			continue
		}
		if a.machineDown() {
			// The machine is down or going down (its systemd stopped the agent's service at the
			// start of the shutdown; watchBoots sees the reboot only once the next boot starts):
			// as under Juju, its agent runs no hook until it is back; the hook (or action) stays
			// pending.
			if hook.Kind == "action" {
				for _, act := range m.state.Actions {
					if act.ID == hook.ActionID {
						act.Status = "pending"
					}
				}
			}
			m.mu.Unlock()
			if !pauseForBoot(ctx) {
				return
			}
			continue
		}
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
		if hook.Kind != "action" {
			u.Requeued = nil
		}
		if err == nil {
			hc.commit(m.state)
			if hook.Kind != "action" {
				hook.advance(m.state, u)
			}
			if hook.Kind == "start" && u.Workload.Status == "maintenance" && u.Workload.Message == "installing charm software" {
				u.Workload = StatusInfo{Status: "unknown", Since: time.Now()}
			}
			a.retryDelay = 0
		} else if hook.Kind == "action" {
			// A failing action process fails the action, not the unit.
		} else if cut {
			h := hook
			u.Requeued = &h
			u.Agent = StatusInfo{Status: "idle", Since: time.Now()}
		} else {
			h := hook
			u.Failed = &h
			u.Agent = StatusInfo{Status: "error", Message: fmt.Sprintf("hook failed: %q", hook.Name()), Since: time.Now()}
			if m.opts.HookRetry > 0 {
				a.retryDelay = nextRetryDelay(a.retryDelay, m.opts.HookRetry)
				retry = time.After(a.retryDelay)
				m.progress("%s: retrying %q in %v", a.unit, hook.Name(), a.retryDelay)
			}
		}
		if hook.Kind == "action" {
			hc.finishAction(m.state, err)
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
	if h.Kind == "action" || h.Kind == runCommandsKind {
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
	if h.Kind == runCommandsKind {
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
