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
}

// Name is the hook's name (JUJU_HOOK_NAME), e.g. "slurmd-relation-joined", or the action's.
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
	case "leader-elected", "leader-settings-changed":
		L.LeaderHook = true
		L.WasLeader = h.Kind == "leader-elected"
	case "config-changed":
		L.ConfigVersion = h.Version
	case "start":
		L.Started = true
	case "stop":
		L.Stopped = true
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
			rl.Joined[h.RemoteUnit] = -1
		}
	case "relation-changed":
		if rl != nil {
			if h.RemoteUnit != "" {
				rl.Joined[h.RemoteUnit] = h.Version
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
	}
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
// Juju's order.
func nextHook(s *State, name string) (Hook, bool) {
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
		return Hook{Kind: "install"}, true
	}
	if !u.Dying {
		for _, r := range rels {
			if !r.Dying && L.Relations[r.ID] == nil {
				return Hook{Kind: "relation-created", RelationID: r.ID, Endpoint: epName(r), RemoteApp: r.remoteApp(u.App)}, true
			}
		}
	}
	isLeader := app.Leader == name
	if !u.Dying && (!L.LeaderHook || isLeader && !L.WasLeader) {
		if isLeader {
			return Hook{Kind: "leader-elected"}, true
		}
		return Hook{Kind: "leader-settings-changed"}, true
	}
	if !u.Dying && L.ConfigVersion != app.ConfigVersion {
		return Hook{Kind: "config-changed", Version: app.ConfigVersion}, true
	}
	if !u.Dying && !L.Started {
		return Hook{Kind: "start"}, true
	}
	for _, r := range rels {
		rl := L.Relations[r.ID]
		if rl == nil || rl.Broken {
			continue
		}
		remoteApp := r.remoteApp(u.App)
		base := Hook{RelationID: r.ID, Endpoint: epName(r), RemoteApp: remoteApp}
		joined := sortedKeys(rl.Joined)
		sort.Slice(joined, func(i, j int) bool { return unitNumber(joined[i]) < unitNumber(joined[j]) })
		if u.Dying {
			// The leaving unit departs from every remote unit, then the relation breaks.
			for _, ru := range joined {
				h := base
				h.Kind, h.RemoteUnit, h.DepartingUnit = "relation-departed", ru, name
				return h, true
			}
			h := base
			h.Kind = "relation-broken"
			return h, true
		}
		present := map[string]bool{}
		var presentNames []string
		for _, ou := range s.Units {
			if ou.App == remoteApp && ou.Name != name && inScope(ou, r) && inScope(u, r) {
				present[ou.Name] = true
				presentNames = append(presentNames, ou.Name)
			}
		}
		sort.Slice(presentNames, func(i, j int) bool { return unitNumber(presentNames[i]) < unitNumber(presentNames[j]) })
		for _, ru := range joined {
			if !present[ru] {
				h := base
				h.Kind, h.RemoteUnit, h.DepartingUnit = "relation-departed", ru, ru
				return h, true
			}
		}
		if r.Dying {
			h := base
			h.Kind = "relation-broken"
			return h, true
		}
		for _, ru := range presentNames {
			if _, ok := rl.Joined[ru]; !ok {
				h := base
				h.Kind, h.RemoteUnit = "relation-joined", ru
				return h, true
			}
		}
		for _, ru := range presentNames {
			if v := r.UnitVersion[ru]; rl.Joined[ru] != v {
				h := base
				h.Kind, h.RemoteUnit, h.Version = "relation-changed", ru, v
				return h, true
			}
		}
		if v := r.AppVersion[remoteApp]; v != rl.AppVersion {
			h := base
			h.Kind, h.Version = "relation-changed", v
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
	m          *Model
	unit       string
	machineID  string
	machine    Machine
	done       chan struct{}
	running    bool
	retryDelay time.Duration
	charmDir   string // as seen on the machine
	toolsDir   string
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
		var hook Hook
		var ok bool
		if act, found := nextAction(m.state, a.unit); found {
			hook, ok = Hook{Kind: "action", ActionID: act.ID, ActionName: act.Name}, true
			act.Status = "running"
		} else {
			hook, ok = nextHook(m.state, a.unit)
		}
		if !ok {
			if u.Failed == nil {
				u.Agent = StatusInfo{Status: "idle", Since: u.Agent.Since}
				if u.Agent.Since.IsZero() {
					u.Agent.Since = time.Now()
				}
			}
			changed := m.changed
			m.mu.Unlock()
			select {
			case <-ctx.Done():
				return
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
		hc, snap := a.newContext(hook)
		msg := u.Agent.Message
		m.mu.Unlock()
		view := fromSnapshot(snap)
		m.mu.Lock()
		hc.view = view
		m.contexts[hc.id] = hc
		m.mu.Unlock()

		m.progress("%s: %s", a.unit, msg)
		err := a.runHook(ctx, hc)
		if ctx.Err() != nil {
			return
		}

		m.mu.Lock()
		delete(m.contexts, hc.id)
		a.running = false
		u = m.state.Units[a.unit]
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
		} else {
			h := hook
			u.Failed = &h
			u.Agent = StatusInfo{Status: "error", Message: fmt.Sprintf("hook failed: %q", hook.Name()), Since: time.Now()}
			if m.opts.HookRetry > 0 {
				if a.retryDelay == 0 {
					a.retryDelay = m.opts.HookRetry
				} else if a.retryDelay *= 2; a.retryDelay > 5*time.Minute {
					a.retryDelay = 5 * time.Minute
				}
				retry = time.After(a.retryDelay)
			}
		}
		if hook.Kind == "action" {
			hc.finishAction(m.state, err)
		}
		m.cleanup()
		m.saveLater()
		m.notify()
		m.mu.Unlock()
		if err != nil && hook.Kind != "action" {
			m.progress("%s: hook failed: %q: %v", a.unit, hook.Name(), err)
		}
	}
}

// finish destroys the unit's machine and removes the unit from the model.
func (a *agent) finish(ctx context.Context) {
	m := a.m
	if a.machine != nil {
		m.progress("%s: removing machine %s", a.unit, a.machineID)
		if err := a.machine.Destroy(ctx); err != nil {
			m.progress("%s: %v", a.unit, err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.state.Units[a.unit]
	delete(m.state.Units, a.unit)
	delete(m.state.Machines, a.machineID)
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

// provision creates the unit's machine and installs the charm and the hook tools on it.
func (a *agent) provision(ctx context.Context) error {
	m := a.m
	m.progress("%s: creating machine %s", a.unit, a.machineID)
	mach, err := m.newMachine(ctx, a.machineID, a.unit)
	if err != nil {
		return fmt.Errorf("cannot create machine %s: %w", a.machineID, err)
	}
	m.mu.Lock()
	a.machine = mach
	u := m.state.Units[a.unit]
	app := m.state.Applications[u.App]
	charmSrc := app.CharmDir
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
	m.mu.Lock()
	u.Ready = true
	u.Agent = StatusInfo{Status: "idle", Since: time.Now()}
	m.saveLater()
	m.notify()
	m.mu.Unlock()
	return nil
}

// env is the hook's environment, as Juju's uniter sets it.
func (a *agent) env(hc *hookContext) []string {
	m := a.m
	h := hc.hook
	env := map[string]string{
		"PATH":                       a.toolsDir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG":                       "C.UTF-8",
		"CHARM_DIR":                  a.charmDir,
		"JUJU_CHARM_DIR":             a.charmDir,
		"JUJU_UNIT_NAME":             a.unit,
		"JUJU_MODEL_NAME":            hc.view.Name,
		"JUJU_MODEL_UUID":            hc.view.UUID,
		"JUJU_CONTEXT_ID":            hc.id,
		"JUJU_AGENT_SOCKET_ADDRESS":  m.sockPath,
		"JUJU_AGENT_SOCKET_NETWORK":  "unix",
		"JUJU_VERSION":               JujuVersion,
		"JUJU_HOOK_NAME":             h.Name(),
		"JUJU_DISPATCH_PATH":         h.dispatchPath(),
		"JUJU_MACHINE_ID":            a.machineID,
		"JUJU_PRINCIPAL_UNIT":        "",
		"JUJU_AVAILABILITY_ZONE":     "",
		"JUJU_API_ADDRESSES":         "",
		"JUJU_CHARM_HTTP_PROXY":      "",
		"JUJU_CHARM_HTTPS_PROXY":     "",
		"JUJU_CHARM_NO_PROXY":        "",
		"JUJU_CHARM_FTP_PROXY":       "",
		"JUJU_METER_STATUS":          "",
		"JUJU_METER_INFO":            "",
		"JUJU_SLA":                   "unsupported",
		"JUJU_CONTAINER_NAMES":       "",
		"JUJU_TARGET_BASE":           "",
		"JUJU_NOTICE_ID":             "",
		"JUJU_PEBBLE_SOCKET_PATH":    "",
		"JUJU_WORKLOAD_NAME":         "",
		"JUJU_STORAGE_ID":            "",
		"JUJU_STORAGE_LOCATION":      "",
		"JUJU_STORAGE_KIND":          "",
		"JUJU_SECRET_ID":             "",
		"JUJU_SECRET_LABEL":          "",
		"JUJU_SECRET_REVISION":       "",
		"JUJU_RELATION":              "",
		"JUJU_RELATION_ID":           "",
		"JUJU_REMOTE_UNIT":           "",
		"JUJU_REMOTE_APP":            "",
		"JUJU_DEPARTING_UNIT":        "",
		"JUJU_ACTION_NAME":           "",
		"JUJU_ACTION_UUID":           "",
		"JUJU_ACTION_ID":             "",
		"JUJU_CHARM_UNIT_STATE_FILE": "",
	}
	for k, v := range env {
		if v == "" && k != "JUJU_PRINCIPAL_UNIT" {
			delete(env, k)
		}
	}
	if strings.HasPrefix(h.Kind, "relation-") {
		env["JUJU_RELATION"] = h.Endpoint
		env["JUJU_RELATION_ID"] = fmt.Sprintf("%s:%d", h.Endpoint, h.RelationID)
		env["JUJU_REMOTE_APP"] = h.RemoteApp
		if h.RemoteUnit != "" {
			env["JUJU_REMOTE_UNIT"] = h.RemoteUnit
		}
		if h.DepartingUnit != "" {
			env["JUJU_DEPARTING_UNIT"] = h.DepartingUnit
		}
	}
	if h.Kind == "secret-changed" {
		env["JUJU_SECRET_ID"] = h.SecretID
		if h.SecretLabel != "" {
			env["JUJU_SECRET_LABEL"] = h.SecretLabel
		}
	}
	if h.Kind == "action" {
		env["JUJU_ACTION_NAME"] = h.ActionName
		env["JUJU_ACTION_UUID"] = h.ActionID
		delete(env, "JUJU_HOOK_NAME") // actions have no hook name
	}
	out := make([]string, 0, len(env))
	for _, k := range sortedKeys(env) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// runHook runs the charm's dispatch for hc on the unit's machine.
func (a *agent) runHook(ctx context.Context, hc *hookContext) error {
	argv := []string{"env", "-C", a.charmDir, filepath.Join(a.charmDir, "dispatch")}
	cmd := a.machine.Command(ctx, argv)
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
