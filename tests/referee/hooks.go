package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/juju/charm/v12/hooks"
	jujuerrors "github.com/juju/errors"
	"github.com/juju/loggo"
	"github.com/juju/names/v5"

	"github.com/charmed-slurm/operators/tests/model"
	"github.com/juju/juju/core/life"
	coremodel "github.com/juju/juju/core/model"
	coresecrets "github.com/juju/juju/core/secrets"
	jworker "github.com/juju/juju/internal/worker"
	"github.com/juju/juju/internal/worker/fortress"
	"github.com/juju/juju/internal/worker/uniter"
	"github.com/juju/juju/internal/worker/uniter/actions"
	"github.com/juju/juju/internal/worker/uniter/hook"
	"github.com/juju/juju/internal/worker/uniter/leadership"
	"github.com/juju/juju/internal/worker/uniter/operation"
	"github.com/juju/juju/internal/worker/uniter/reboot"
	"github.com/juju/juju/internal/worker/uniter/relation"
	"github.com/juju/juju/internal/worker/uniter/remotestate"
	"github.com/juju/juju/internal/worker/uniter/resolver"
	"github.com/juju/juju/internal/worker/uniter/runcommands"
	"github.com/juju/juju/internal/worker/uniter/runner"
	"github.com/juju/juju/internal/worker/uniter/secrets"
	"github.com/juju/juju/internal/worker/uniter/upgradeseries"
	"github.com/juju/juju/internal/worker/uniter/verifycharmprofile"
	"github.com/juju/juju/rpc/params"
)

// The hook-order referee: beside every unit of the model runs Juju 3.6's own uniter loop
// (internal/worker/uniter: resolver.Loop, NewUniterResolver with the created-relations,
// leadership, secrets, actions, reboot and relations resolvers, the operation executor and
// factory, the relation state of each relation (relation.State, the relationer and its state
// manager) and the secrets tracker), fed the remote states the model's agent chose from
// (model.AgentEvent). Where Juju's uniter would run a hook the model's agent does not run
// (or nothing where the model runs one, or another hook), the referee reports it. Juju picks
// the relation (and the consumed secret) of its next hook in Go's random map order, so any
// relation Juju could pick is accepted.
//
// What the uniter asks of the controller (the unit's persisted state, the charm archive, the
// action's name, who owns a secret, whether the unit leads) is answered from the model's
// remote state; the hook and action runners return how the model's run ended.

// hookJudge routes agent events to one shadow uniter per unit.
type hookJudge struct {
	dir     string
	mu      sync.Mutex
	shadows map[string]*shadow
	wg      sync.WaitGroup
}

func newHookJudge(dir string) *hookJudge {
	return &hookJudge{dir: dir, shadows: map[string]*shadow{}}
}

// event queues e for its unit's shadow uniter; it never waits for Juju's code.
func (j *hookJudge) event(e *model.AgentEvent) {
	j.mu.Lock()
	s := j.shadows[e.Unit]
	if s == nil {
		s = newShadow(filepath.Join(j.dir, strings.ReplaceAll(e.Unit, "/", "-")), e.Unit)
		j.shadows[e.Unit] = s
		j.wg.Add(1)
		go func() {
			defer j.wg.Done()
			s.run()
		}()
	}
	j.mu.Unlock()
	s.q.push(e)
}

// finish waits for every shadow to judge what it was sent and returns the differences found,
// one per unit at most (the first).
func (j *hookJudge) finish() []string {
	j.mu.Lock()
	for _, s := range j.shadows {
		s.q.close()
	}
	j.mu.Unlock()
	j.wg.Wait()
	var diffs []string
	for _, unit := range sortedUnits(j.shadows) {
		if d := j.shadows[unit].diff; d != "" {
			diffs = append(diffs, d)
		}
	}
	return diffs
}

func sortedUnits(m map[string]*shadow) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// eventQueue is a unit's events, in the order its agent sent them.
type eventQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	items   []*model.AgentEvent
	closed  bool
	changed chan struct{}
}

func newEventQueue() *eventQueue {
	q := &eventQueue{changed: make(chan struct{}, 1)}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *eventQueue) push(e *model.AgentEvent) {
	q.mu.Lock()
	q.items = append(q.items, e)
	q.cond.Broadcast()
	q.mu.Unlock()
	select {
	case q.changed <- struct{}{}:
	default:
	}
}

func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
	select {
	case q.changed <- struct{}{}:
	default:
	}
}

// peek waits for the next event and returns it (nil once the queue is closed and empty).
func (q *eventQueue) peek() *model.AgentEvent {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return nil
	}
	return q.items[0]
}

// pop waits for the next event and removes it; while events remain, changed is kept
// signalled (the uniter's loop waits on it when it has nothing to do).
func (q *eventQueue) pop() *model.AgentEvent {
	e := q.peek()
	if e != nil {
		q.mu.Lock()
		q.items = q.items[1:]
		more := len(q.items) > 0
		q.mu.Unlock()
		if more {
			select {
			case q.changed <- struct{}{}:
			default:
			}
		}
	}
	return e
}

// shadow is Juju's uniter for one unit of the model. Its persisted state (the operation
// state, the relation and secret states the controller keeps for the unit) lasts across its
// agent's restarts; the rest is made anew at each start, as the uniter is.
type shadow struct {
	unit, app, dir string
	q              *eventQueue
	log            loggo.Logger

	rw       *unitStateRW
	exec     operation.Executor
	factory  operation.Factory
	rels     *relationTracker
	secrets  secrets.SecretStateTracker
	charmURL string // the unit's charm, as the uniter last set it
	retry    bool

	mu      sync.Mutex // guards what Snapshot (called by the loop's goroutines) touches
	abort   chan struct{}
	stopped bool
	rebase  bool              // the watcher (re)started: the next remote state is its base
	base    model.RemoteState // the counters when the watcher started
	last    remotestate.Snapshot

	cur     *model.AgentChoice // the choice being run
	made    map[operation.Operation]opInfo
	expect  *model.Hook // the model's hook Juju chose and has not run yet
	dead    bool        // Juju's uniter found the unit dead
	history []string
	diff    string
}

// opInfo is what an operation the referee's factory made does.
type opInfo struct {
	kind     string // "hook", "skip", "action" or "commands"
	hook     hook.Info
	action   string
	commands string // the juju-exec's id
}

func newShadow(dir, unit string) *shadow {
	ctx := loggo.NewContext(loggo.CRITICAL)
	app, _, _ := strings.Cut(unit, "/")
	return &shadow{unit: unit, app: app, dir: dir, q: newEventQueue(), log: ctx.GetLogger("referee")}
}

// fail records the first difference and stops judging this unit.
func (s *shadow) fail(format string, args ...any) {
	if s.diff == "" {
		s.diff = fmt.Sprintf("hook order of %s: %s\n  hooks run so far: %s", s.unit, fmt.Sprintf(format, args...), s.historyText())
	}
	s.stop()
}

func (s *shadow) historyText() string {
	h := s.history
	if len(h) > 20 {
		h = append([]string{"…"}, h[len(h)-20:]...)
	}
	if len(h) == 0 {
		return "none"
	}
	return strings.Join(h, ", ")
}

// stop ends the uniter loop of the running incarnation.
func (s *shadow) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		s.stopped = true
		close(s.abort)
	}
}

func (s *shadow) run() {
	defer func() {
		if p := recover(); p != nil {
			s.fail("the referee's uniter panicked: %v\n%s", p, debug.Stack())
		}
		for s.q.pop() != nil {
		}
		os.RemoveAll(s.dir)
	}()
	for s.diff == "" {
		e := s.q.pop()
		switch {
		case e == nil:
			return
		case e.Start != nil:
			s.incarnation(e.Start)
		case e.Choice != nil && e.Choice.Hook == nil && s.dead:
		case e.Choice != nil && s.dead:
			s.fail("the model runs %s after Juju's uniter found the unit dead", hookText(*e.Choice.Hook))
		default:
			s.fail("the model's agent sent %+v outside a run of its uniter", e)
		}
	}
}

// incarnation runs Juju's uniter from an agent start until the next start or the end.
func (s *shadow) incarnation(start *model.AgentStart) {
	s.mu.Lock()
	s.abort, s.stopped = make(chan struct{}), false
	s.base, s.rebase = start.Remote, false
	s.last = s.snapshotOf(&start.Remote)
	s.mu.Unlock()
	s.retry = start.Retry
	if s.exec == nil {
		if err := s.setUp(start); err != nil {
			s.fail("cannot start Juju's uniter: %v", err)
			return
		}
	}
	var err error
	if s.secrets, err = secrets.NewSecrets(&secretsClient{start}, names.NewUnitTag(s.unit), s.rw, s.log); err != nil {
		s.fail("cannot start Juju's secrets tracker: %v", err)
		return
	}
	// The uniter resumes an install first (Uniter.charmState).
	charmURL := s.charmURL
	if st := s.exec.State(); st.Kind == operation.Install {
		op, err := s.factory.NewInstall(st.CharmURL)
		if err == nil {
			err = s.exec.Run(op, nil)
		}
		if err != nil {
			s.fail("Juju's uniter cannot install the charm: %v", err)
			return
		}
		charmURL = st.CharmURL
	}
	rebootResolver := reboot.NewResolver(s.log, start.Reboot)
	charmModifiedVersion := 0
	for {
		cfg := uniter.ResolverConfig{
			ModelType:           coremodel.IAAS,
			ClearResolved:       func() error { return nil },
			ReportHookError:     func(hook.Info) error { return nil },
			ShouldRetryHooks:    s.retry,
			StartRetryHookTimer: func() {},
			StopRetryHookTimer:  func() {},
			VerifyCharmProfile:  verifycharmprofile.NewResolver(s.log, coremodel.IAAS),
			UpgradeSeries:       upgradeseries.NewResolver(s.log),
			Reboot:              rebootResolver,
			Leadership:          leadership.NewResolver(s.log),
			Actions:             actions.NewResolver(s.log),
			CreatedRelations:    relation.NewCreatedRelationResolver(s.rels, s.log),
			Relations:           relation.NewRelationResolver(s.rels, nil, s.log),
			Storage:             noOp{},
			Commands:            runcommands.NewCommandsResolver(commandStore{}, func(string) {}),
			Secrets:             secrets.NewSecretsResolver(s.log, s.secrets, func(string) {}, func(string) {}, func(map[string][]int) {}),
			Logger:              s.log,
		}
		j := &judge{s: s, inner: uniter.NewUniterResolver(cfg)}
		localState := resolver.LocalState{CharmURL: charmURL, CharmModifiedVersion: charmModifiedVersion,
			UpgradeMachineStatus: coremodel.UpgradeSeriesNotStarted}
		for err == nil {
			err = resolver.Loop(resolver.LoopConfig{
				Resolver: j, Watcher: s, Executor: s.exec, Factory: recordingFactory{s.factory, s},
				Abort: s.abort, CharmDirGuard: nopGuard{}, CharmDir: filepath.Join(s.dir, "charm"), Logger: s.log,
			}, &localState)
			switch {
			case err == nil:
			case errors.Is(err, resolver.ErrLoopAborted):
			case errors.Is(err, operation.ErrHookFailed):
				err = nil
			case errors.Is(err, runner.ErrTerminated):
				localState.HookWasShutdown = true
				err = nil
			case errors.Is(err, resolver.ErrUnitDead), errors.Is(err, jworker.ErrTerminateAgent):
				s.dead = true
			case errors.Is(err, resolver.ErrRestart):
				charmURL, charmModifiedVersion = localState.CharmURL, localState.CharmModifiedVersion
			case s.diff == "":
				s.fail("Juju's uniter stopped: %v", err)
			}
		}
		if !errors.Is(err, resolver.ErrRestart) {
			return
		}
		s.mu.Lock()
		s.rebase = true
		s.mu.Unlock()
		err = nil
	}
}

// setUp makes what outlives the agent's restarts: the unit's state in the controller, the
// operation executor, the relation state, and the charm directory the loop checks for.
func (s *shadow) setUp(start *model.AgentStart) error {
	charmDir := filepath.Join(s.dir, "charm")
	if err := os.MkdirAll(charmDir, 0o755); err != nil {
		return err
	}
	meta := "name: " + s.app + "\nsummary: s\ndescription: d\n"
	if err := os.WriteFile(filepath.Join(charmDir, "metadata.yaml"), []byte(meta), 0o644); err != nil {
		return err
	}
	s.rw = &unitStateRW{}
	var err error
	s.exec, err = operation.NewExecutor(s.unit, operation.ExecutorConfig{
		StateReadWriter: s.rw,
		InitialState:    operation.State{Kind: operation.Install, Step: operation.Queued, CharmURL: start.Remote.Charm},
		AcquireLock:     func(string, string) (func(), error) { return func() {}, nil },
		Logger:          s.log,
	})
	if err != nil {
		return err
	}
	s.factory = operation.NewFactory(operation.FactoryParams{
		Deployer:      nopDeployer{},
		RunnerFactory: runnerFactory{s},
		Callbacks:     &callbacks{s},
		State:         newActionsState(s),
		Logger:        s.log,
	})
	s.rels, err = newRelationTracker(s)
	return err
}

// Snapshot is the remote state of the model's next choice (the remotestate.Watcher's
// Snapshot): it waits for it. At the agent's next start or the end of the events, the loop is
// stopped.
func (s *shadow) Snapshot() remotestate.Snapshot {
	e := s.q.peek()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case e != nil && e.Choice != nil:
		if s.rebase {
			s.base, s.rebase = e.Choice.Remote, false
		}
		s.last = s.snapshotOf(&e.Choice.Remote)
	case e == nil || e.Start != nil:
		if !s.stopped {
			s.stopped = true
			close(s.abort)
		}
	}
	return s.last
}

// RemoteStateChanged signals the model's agent sent something.
func (s *shadow) RemoteStateChanged() <-chan struct{} { return s.q.changed }
func (s *shadow) Kill()                               {}
func (s *shadow) Wait() error                         { return nil }

// snapshotOf is the remote state r as Juju's remote state watcher started with the agent
// (s.base) gives it; callers hold s.mu.
func (s *shadow) snapshotOf(r *model.RemoteState) remotestate.Snapshot {
	snap := remotestate.Snapshot{
		Life:                    life.Value(r.Life),
		Relations:               map[int]remotestate.RelationSnapshot{},
		CharmURL:                r.Charm,
		ResolvedMode:            params.ResolvedMode(r.Resolved),
		RetryHookVersion:        r.RetryHook - s.base.RetryHook,
		ConfigHash:              r.Config,
		Leader:                  r.Leader,
		LeaderSettingsVersion:   1 + r.LeaderSettings - s.base.LeaderSettings,
		UpdateStatusVersion:     r.UpdateStatus - s.base.UpdateStatus,
		ActionChanged:           map[string]int{},
		SecretRotations:         slices.Clone(r.SecretRotations),
		ExpiredSecretRevisions:  slices.Clone(r.ExpiredSecretRevisions),
		ConsumedSecretInfo:      map[string]coresecrets.SecretRevisionInfo{},
		ObsoleteSecretRevisions: map[string][]int{},
		DeletedSecretRevisions:  map[string][]int{},
		Commands:                slices.Clone(r.Commands),
		UpgradeMachineStatus:    coremodel.UpgradeSeriesNotStarted,
	}
	for _, a := range r.Actions {
		snap.ActionsPending = append(snap.ActionsPending, a.ID)
		snap.ActionChanged[a.ID] = 0
	}
	for id, rel := range r.Relations {
		rs := remotestate.RelationSnapshot{Life: life.Value(rel.Life), Members: map[string]int64{}, ApplicationMembers: map[string]int64{}}
		for u, v := range rel.Members {
			rs.Members[u] = v
		}
		for a, v := range rel.AppMembers {
			rs.ApplicationMembers[a] = v
		}
		snap.Relations[id] = rs
	}
	for uri, c := range r.ConsumedSecrets {
		if c.Notified {
			snap.ConsumedSecretInfo[uri] = coresecrets.SecretRevisionInfo{Revision: c.Revision, Label: c.Label}
		}
	}
	for uri, revs := range r.ObsoleteSecretRevisions {
		snap.ObsoleteSecretRevisions[uri] = slices.Clone(revs)
	}
	return snap
}

// judge is the uniter's resolver as the referee runs it: Juju's, asked for the next operation
// at each choice of the model's agent, whose choice must be one Juju's could be.
type judge struct {
	s     *shadow
	inner resolver.Resolver
}

func (j *judge) NextOp(local resolver.LocalState, remote remotestate.Snapshot, f operation.Factory) (operation.Operation, error) {
	s := j.s
	e := s.q.peek()
	if e == nil || e.Choice == nil {
		s.stop()
		return nil, resolver.ErrNoOperation
	}
	if s.expect != nil {
		s.fail("the model ran %s; Juju's uniter chose it too but skipped it when preparing it", hookText(*s.expect))
		return nil, resolver.ErrNoOperation
	}
	s.made = map[operation.Operation]opInfo{}
	choice := e.Choice
	op, err := j.inner.NextOp(local, remote, f)
	info, runs := s.describe(op)
	switch {
	case err == nil && !runs:
		return op, nil // an operation that runs no hook (leadership, a charm deployed, a skip)
	case errors.Is(err, resolver.ErrRestart):
		return nil, err
	case err != nil && !isNoOp(err):
		s.fail("Juju's uniter fails to choose: %v", err)
		return nil, err
	}
	want := choice.Hook
	if err != nil {
		if want != nil {
			s.fail("the model runs %s; Juju's uniter runs nothing (%v)\n%s", hookText(*want), jujuerrors.Cause(err), s.state(local, choice))
			return nil, resolver.ErrNoOperation
		}
		s.q.pop()
		return nil, err
	}
	if want == nil {
		s.fail("the model runs nothing; Juju's uniter runs %s\n%s", s.opText(info), s.state(local, choice))
		return nil, resolver.ErrNoOperation
	}
	if !s.matches(info, want) {
		alt, ok := j.alternative(local, remote, f, info, want)
		if !ok {
			s.fail("the model runs %s; Juju's uniter runs %s\n%s", hookText(*want), s.opText(info), s.state(local, choice))
			return nil, resolver.ErrNoOperation
		}
		op = alt
	}
	s.q.pop()
	s.cur, s.expect = choice, want
	if got := s.rels.scopes(); !slices.Equal(got, choice.Scopes) {
		s.fail("as %s runs, the model has the unit in the scope of relations %v; Juju's uniter has entered %v", hookText(*want), choice.Scopes, got)
		return nil, resolver.ErrNoOperation
	}
	return op, nil
}

func isNoOp(err error) bool {
	return errors.Is(err, resolver.ErrNoOperation) || errors.Is(err, resolver.ErrWaiting) ||
		errors.Is(err, resolver.ErrUnitDead) || errors.Is(err, jworker.ErrTerminateAgent)
}

// alternative looks for the model's hook among the other hooks Juju's uniter could have
// chosen: it picks the relation of a relation hook, and the secret of a secret-changed or
// secret-remove hook, in Go's random map order. Each relation (or secret) Juju chose is taken
// out of the remote state and Juju asked again, for as long as it picks a hook of the same
// resolver (relation-created; another relation hook, peer relations last; a secret hook of the
// same kind).
func (j *judge) alternative(local resolver.LocalState, remote remotestate.Snapshot, f operation.Factory, first opInfo, want *model.Hook) (operation.Operation, bool) {
	s := j.s
	class := func(i opInfo) string {
		k := i.hook.Kind
		switch {
		case i.kind != "hook":
			return ""
		case k == hooks.RelationCreated:
			return "created"
		case k.IsRelation():
			if peer, _ := s.rels.IsPeerRelation(i.hook.RelationId); peer {
				return "peer"
			}
			return "relation"
		case k == hooks.SecretChanged, k == hooks.SecretRemove:
			return string(k)
		}
		return ""
	}
	c := class(first)
	if c == "" {
		return nil, false
	}
	r := remote
	r.Relations = maps(remote.Relations)
	r.ConsumedSecretInfo = maps(remote.ConsumedSecretInfo)
	r.ObsoleteSecretRevisions = maps(remote.ObsoleteSecretRevisions)
	for info := first; class(info) == c; {
		switch c {
		case "secret-changed", "secret-remove":
			delete(r.ConsumedSecretInfo, info.hook.SecretURI)
			delete(r.ObsoleteSecretRevisions, info.hook.SecretURI)
		default:
			delete(r.Relations, info.hook.RelationId)
		}
		s.made = map[operation.Operation]opInfo{}
		op, err := j.inner.NextOp(local, r, f)
		if err != nil {
			return nil, false
		}
		info, _ = s.describe(op)
		if class(info) == c && s.matches(info, want) {
			return op, true
		}
	}
	return nil, false
}

func maps[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// describe says what op does, from the operations the referee's factory made; runs is true
// for a hook or an action (what the model's agent runs).
func (s *shadow) describe(op operation.Operation) (opInfo, bool) {
	for op != nil {
		if t := reflect.TypeOf(op); t.Comparable() {
			if i, ok := s.made[op]; ok {
				return i, i.kind == "hook" || i.kind == "action" || i.kind == "commands"
			}
		}
		w, ok := op.(operation.WrappedOperation)
		if !ok {
			break
		}
		op = w.WrappedOperation()
	}
	return opInfo{}, false
}

// matches reports whether Juju's operation runs the model's hook h.
func (s *shadow) matches(i opInfo, h *model.Hook) bool {
	switch i.kind {
	case "action":
		return h.Kind == "action" && h.ActionID == i.action
	case "commands":
		return h.Kind == model.RunCommands && h.CommandsID == i.commands
	}
	if i.kind != "hook" || string(i.hook.Kind) != h.Kind {
		return false
	}
	j := i.hook
	switch {
	case j.Kind.IsRelation():
		m := model.Hook{Kind: h.Kind, RelationID: j.RelationId, RemoteUnit: j.RemoteUnit, RemoteApp: j.RemoteApplication, DepartingUnit: j.DepartingUnit}
		have := model.Hook{Kind: h.Kind, RelationID: h.RelationID, RemoteUnit: h.RemoteUnit, RemoteApp: h.RemoteApp, DepartingUnit: h.DepartingUnit}
		if j.Kind == hooks.RelationJoined || j.Kind == hooks.RelationChanged || j.Kind == hooks.RelationDeparted {
			m.Version, have.Version = int(j.ChangeVersion), h.Version
		}
		return m == have
	case j.Kind.IsSecret():
		if j.SecretURI != h.SecretID {
			return false
		}
		return j.SecretRevision == 0 || j.SecretRevision == h.SecretRevision
	}
	return true
}

// opText names what Juju's operation runs.
func (s *shadow) opText(i opInfo) string {
	switch i.kind {
	case "action":
		return "action " + i.action
	case "commands":
		return fmt.Sprintf("juju-exec commands %s", i.commands)
	}
	h := model.Hook{Kind: string(i.hook.Kind), RelationID: i.hook.RelationId, RemoteUnit: i.hook.RemoteUnit,
		RemoteApp: i.hook.RemoteApplication, DepartingUnit: i.hook.DepartingUnit, SecretID: i.hook.SecretURI,
		SecretRevision: i.hook.SecretRevision, Version: int(i.hook.ChangeVersion)}
	if name, err := s.rels.Name(i.hook.RelationId); err == nil {
		h.Endpoint = name
	}
	return hookText(h)
}

// hookText names a hook with what tells it apart.
func hookText(h model.Hook) string {
	switch h.Kind {
	case "action":
		return fmt.Sprintf("action %s (%s)", h.ActionID, h.ActionName)
	case model.RunCommands:
		return fmt.Sprintf("juju-exec commands %s", h.CommandsID)
	}
	var parts []string
	if strings.HasPrefix(h.Kind, "relation-") {
		parts = append(parts, fmt.Sprintf("relation %d", h.RelationID))
		if h.RemoteUnit != "" {
			parts = append(parts, "unit "+h.RemoteUnit)
		} else if h.RemoteApp != "" {
			parts = append(parts, "app "+h.RemoteApp)
		}
		if h.DepartingUnit != "" {
			parts = append(parts, "departing "+h.DepartingUnit)
		}
		if h.Kind != "relation-created" && h.Kind != "relation-broken" {
			parts = append(parts, fmt.Sprintf("version %d", h.Version))
		}
	}
	if h.SecretID != "" {
		parts = append(parts, h.SecretID)
		if h.SecretRevision > 0 {
			parts = append(parts, fmt.Sprintf("revision %d", h.SecretRevision))
		}
	}
	name := h.Name()
	if len(parts) > 0 {
		name += " (" + strings.Join(parts, ", ") + ")"
	}
	return name
}

// state describes the uniter's local state and the model's remote state at a choice.
func (s *shadow) state(local resolver.LocalState, c *model.AgentChoice) string {
	st := local.State
	hk := ""
	if st.Hook != nil {
		hk = " " + string(st.Hook.Kind)
	}
	return fmt.Sprintf("  Juju's local state: %s %s%s, installed %v, started %v, stopped %v, leader %v\n  remote state: %+v",
		st.Kind, st.Step, hk, st.Installed, st.Started, st.Stopped, st.Leader, c.Remote)
}

// ran records that the model ran h, named name by Juju, and returns how it ended.
func (s *shadow) ran(name string) error {
	h := s.expect
	s.expect = nil
	if h == nil {
		s.fail("Juju's uniter runs %s, which the model did not choose", name)
		return errors.New("not chosen")
	}
	if name != h.Name() {
		s.fail("the model runs %s; Juju's uniter runs it as %s", hookText(*h), name)
		return errors.New("misnamed")
	}
	e := s.q.pop()
	switch {
	case e == nil:
		s.stop()
		return errors.New("the model stopped")
	case e.Done == "":
		s.fail("the model's agent sent %+v while it ran %s", e, hookText(*h))
		return errors.New("out of order")
	}
	s.history = append(s.history, hookText(*h))
	switch e.Done {
	case "ok":
		return nil
	case "terminated":
		s.history[len(s.history)-1] += " (cut off)"
		return runner.ErrTerminated
	}
	s.history[len(s.history)-1] += " (failed)"
	return errors.New("exit status 1")
}

type noOp struct{}

func (noOp) NextOp(resolver.LocalState, remotestate.Snapshot, operation.Factory) (operation.Operation, error) {
	return nil, resolver.ErrNoOperation
}

type nopGuard struct{}

func (nopGuard) Unlock() error                 { return nil }
func (nopGuard) Lockdown(fortress.Abort) error { return nil }
