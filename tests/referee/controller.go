package main

import (
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/juju/charm/v12"
	"github.com/juju/charm/v12/hooks"
	jujuerrors "github.com/juju/errors"
	"github.com/juju/names/v5"
	utilexec "github.com/juju/utils/v3/exec"

	"github.com/charmed-slurm/operators/tests/model"
	apiuniter "github.com/juju/juju/api/agent/uniter"
	"github.com/juju/juju/api/base"
	"github.com/juju/juju/core/life"
	coremodel "github.com/juju/juju/core/model"
	corerelation "github.com/juju/juju/core/relation"
	coresecrets "github.com/juju/juju/core/secrets"
	"github.com/juju/juju/core/watcher"
	unitercharm "github.com/juju/juju/internal/worker/uniter/charm"
	"github.com/juju/juju/internal/worker/uniter/hook"
	"github.com/juju/juju/internal/worker/uniter/operation"
	"github.com/juju/juju/internal/worker/uniter/relation"
	"github.com/juju/juju/internal/worker/uniter/remotestate"
	"github.com/juju/juju/internal/worker/uniter/runner"
	runnercontext "github.com/juju/juju/internal/worker/uniter/runner/context"
	"github.com/juju/juju/internal/worker/uniter/runner/jujuc"
	"github.com/juju/juju/rpc/params"
)

// The controller side of the referee's uniters: what Juju's uniter asks its API (and its hook
// runner) is answered here from the model's remote state. This file holds no decision of
// Juju's: those are Juju's code, called from hooks.go.

// remote is the model's remote state of the choice being judged.
func (s *shadow) remote() *model.RemoteState {
	if e := s.q.peek(); e != nil && e.Choice != nil {
		return &e.Choice.Remote
	}
	if s.cur != nil {
		return &s.cur.Remote
	}
	return &s.base
}

// unitStateRW is the unit's state as the controller keeps it for the uniter (the operation
// state, the relations' and the secrets' states).
type unitStateRW struct {
	mu sync.Mutex
	st params.UnitStateResult
}

func (rw *unitStateRW) State() (params.UnitStateResult, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	st := rw.st
	st.RelationState = maps(rw.st.RelationState)
	return st, nil
}

func (rw *unitStateRW) SetState(a params.SetUnitStateArg) error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if a.UniterState != nil {
		rw.st.UniterState = *a.UniterState
	}
	if a.RelationState != nil {
		rw.st.RelationState = maps(*a.RelationState)
	}
	if a.SecretState != nil {
		rw.st.SecretState = *a.SecretState
	}
	return nil
}

// recordingFactory is Juju's operation factory, noting what each hook and action operation it
// makes runs.
type recordingFactory struct {
	operation.Factory
	s *shadow
}

func (f recordingFactory) NewRunHook(info hook.Info) (operation.Operation, error) {
	op, err := f.Factory.NewRunHook(info)
	if err == nil {
		f.s.made[op] = opInfo{kind: "hook", hook: info}
	}
	return op, err
}

func (f recordingFactory) NewSkipHook(info hook.Info) (operation.Operation, error) {
	op, err := f.Factory.NewSkipHook(info)
	if err == nil {
		f.s.made[op] = opInfo{kind: "skip", hook: info}
	}
	return op, err
}

func (f recordingFactory) NewCommands(args operation.CommandArgs, sendResponse operation.CommandResponseFunc) (operation.Operation, error) {
	op, err := f.Factory.NewCommands(args, sendResponse)
	if err == nil {
		f.s.made[op] = opInfo{kind: "commands", commands: args.Commands}
	}
	return op, err
}

// commandStore is the juju-exec commands the unit's run listener queued
// (runcommands.Commands): the model's, by their ids, which stand for the commands too. Their
// response is handed to the model's juju-exec, as Juju's run listener hands it to its client.
type commandStore struct{}

func (commandStore) AddCommand(operation.CommandArgs, operation.CommandResponseFunc) string {
	return "" // the model's agent queues the commands
}

func (commandStore) GetCommand(id string) (operation.CommandArgs, operation.CommandResponseFunc) {
	return operation.CommandArgs{Commands: id, RelationId: -1, RunLocation: runner.Workload},
		func(*utilexec.ExecResponse, error) bool { return true }
}

func (commandStore) RemoveCommand(string) {}

func (f recordingFactory) NewAction(id string) (operation.Operation, error) {
	op, err := f.Factory.NewAction(id)
	if err == nil {
		f.s.made[op] = opInfo{kind: "action", action: id}
	}
	return op, err
}

// callbacks are the uniter's operation callbacks (operationCallbacks in uniter/op_callbacks.go):
// hooks are prepared and committed by Juju's relation and secrets state.
type callbacks struct{ s *shadow }

func (c *callbacks) PrepareHook(hi hook.Info) (string, error) {
	switch {
	case hi.Kind.IsRelation():
		return c.s.rels.PrepareHook(hi)
	case hi.Kind.IsSecret():
		if err := c.s.secrets.PrepareHook(hi); err != nil {
			return "", err
		}
	}
	return string(hi.Kind), nil
}

func (c *callbacks) CommitHook(hi hook.Info) error {
	switch {
	case hi.Kind.IsRelation():
		return c.s.rels.CommitHook(hi)
	case hi.Kind.IsSecret():
		return c.s.secrets.CommitHook(hi)
	}
	return nil
}

func (c *callbacks) SetExecutingStatus(string) error                                    { return nil }
func (c *callbacks) NotifyHookCompleted(string, runnercontext.Context)                  {}
func (c *callbacks) NotifyHookFailed(string, runnercontext.Context)                     {}
func (c *callbacks) FailAction(string, string) error                                    { return nil }
func (c *callbacks) ActionStatus(string) (string, error)                                { return params.ActionRunning, nil }
func (c *callbacks) SetUpgradeSeriesStatus(coremodel.UpgradeSeriesStatus, string) error { return nil }
func (c *callbacks) SetSecretRotated(string, int) error                                 { return nil }
func (c *callbacks) RemoteInit(remotestate.ContainerRunningStatus, <-chan struct{}) error {
	return nil
}

func (c *callbacks) GetArchiveInfo(url string) (unitercharm.BundleInfo, error) {
	return bundleInfo(url), nil
}

func (c *callbacks) SetCurrentCharm(url string) error {
	c.s.charmURL = url
	return nil
}

func (c *callbacks) SecretsRemoved(deleted, deletedObsolete map[string][]int) error {
	return c.s.secrets.SecretsRemoved(deleted, deletedObsolete)
}

type bundleInfo string

func (b bundleInfo) URL() string                    { return string(b) }
func (b bundleInfo) ArchiveSha256() (string, error) { return "", nil }

// nopDeployer deploys nothing: the model deploys the charm's files.
type nopDeployer struct{}

func (nopDeployer) Stage(unitercharm.BundleInfo, <-chan struct{}) error { return nil }
func (nopDeployer) Deploy() error                                       { return nil }

// runnerFactory makes runners that run nothing: they return how the model's run ended.
type runnerFactory struct{ s *shadow }

func (f runnerFactory) NewCommandRunner(runnercontext.CommandInfo) (runner.Runner, error) {
	return &hookRunner{s: f.s, ctx: &runnerContext{s: f.s}}, nil
}

func (f runnerFactory) NewHookRunner(info hook.Info) (runner.Runner, error) {
	return &hookRunner{s: f.s, ctx: &runnerContext{s: f.s}}, nil
}

func (f runnerFactory) NewActionRunner(a *apiuniter.Action, _ <-chan struct{}) (runner.Runner, error) {
	return &hookRunner{s: f.s, ctx: &runnerContext{s: f.s, action: a.Name()}}, nil
}

type hookRunner struct {
	s   *shadow
	ctx *runnerContext
}

func (r *hookRunner) Context() runnercontext.Context { return r.ctx }
func (r *hookRunner) RunHook(name string) (runner.HookHandlerType, error) {
	return runner.DispatchingHookHandler, r.s.ran(name)
}
func (r *hookRunner) RunAction(name string) (runner.HookHandlerType, error) {
	return runner.DispatchingHookHandler, r.s.ran(name)
}
func (r *hookRunner) RunCommands(string, runner.RunLocation) (*utilexec.ExecResponse, error) {
	return &utilexec.ExecResponse{}, r.s.ran(model.RunCommands)
}

// runnerContext is the hook context as the operations read it: whether the unit leads, the
// secrets it owns, the action's name.
type runnerContext struct {
	runnercontext.Context
	s      *shadow
	action string
}

func (c *runnerContext) Prepare() error                       { return nil }
func (c *runnerContext) UnitName() string                     { return c.s.unit }
func (c *runnerContext) IsLeader() (bool, error)              { return c.s.remote().Leader, nil }
func (c *runnerContext) HasExecutionSetUnitStatus() bool      { return true }
func (c *runnerContext) ResetExecutionSetUnitStatus()         {}
func (c *runnerContext) SetUnitStatus(jujuc.StatusInfo) error { return nil }
func (c *runnerContext) Relation(int) (jujuc.ContextRelation, error) {
	return nil, jujuerrors.NotFoundf("relation")
}
func (c *runnerContext) ActionData() (*runnercontext.ActionData, error) {
	return &runnercontext.ActionData{Name: c.action}, nil
}

func (c *runnerContext) SecretMetadata() (map[string]jujuc.SecretMetadata, error) {
	out := map[string]jujuc.SecretMetadata{}
	for id, o := range c.s.remote().OwnedSecrets {
		uri, err := coresecrets.ParseURI(id)
		if err != nil {
			return nil, err
		}
		var owner names.Tag = names.NewUnitTag(c.s.unit)
		if o.Application {
			owner = names.NewApplicationTag(c.s.app)
		}
		out[uri.ID] = jujuc.SecretMetadata{Owner: owner, LatestRevision: o.LatestRevision, Label: o.Label}
	}
	return out, nil
}

// secretsClient answers the secrets tracker's start: the latest revision of each secret the
// unit consumes.
type secretsClient struct{ start *model.AgentStart }

func (c *secretsClient) GetConsumerSecretsRevisionInfo(_ string, uris []string) (map[string]coresecrets.SecretRevisionInfo, error) {
	out := map[string]coresecrets.SecretRevisionInfo{}
	for _, uri := range uris {
		if s, ok := c.start.Remote.ConsumedSecrets[uri]; ok {
			out[uri] = coresecrets.SecretRevisionInfo{Revision: s.Revision, Label: s.Label}
		}
	}
	return out, nil
}

func (c *secretsClient) WatchConsumedSecretsChanges(string) (watcher.StringsWatcher, error) {
	return nil, errors.New("not watched")
}
func (c *secretsClient) WatchObsolete(...names.Tag) (watcher.StringsWatcher, error) {
	return nil, errors.New("not watched")
}
func (c *secretsClient) WatchDeleted(...names.Tag) (watcher.StringsWatcher, error) {
	return nil, errors.New("not watched")
}

// newActionsState is the uniter API's State as operation.NewAction uses it: an action's name.
func newActionsState(s *shadow) *apiuniter.State {
	return apiuniter.NewState(apiCaller{s: s}, names.NewUnitTag(s.unit))
}

type apiCaller struct {
	base.APICaller
	s *shadow
}

func (c apiCaller) BestFacadeVersion(string) int { return 19 }

func (c apiCaller) APICall(objType string, _ int, _, request string, args, response any) error {
	if objType != "Uniter" || request != "Actions" {
		return jujuerrors.NotSupportedf("%s.%s", objType, request)
	}
	out := response.(*params.ActionResults)
	for _, e := range args.(params.Entities).Entities {
		tag, err := names.ParseActionTag(e.Tag)
		if err != nil {
			return err
		}
		res := params.ActionResult{Error: &params.Error{Code: params.CodeNotFound, Message: "action " + tag.Id() + " not found"}}
		for _, a := range c.s.remote().Actions {
			if a.ID == tag.Id() {
				res = params.ActionResult{Action: &params.Action{Tag: e.Tag, Receiver: names.NewUnitTag(c.s.unit).String(), Name: a.Name}}
			}
		}
		out.Results = append(out.Results, res)
	}
	return nil
}

// relationTracker is the uniter's relation state tracker (relationStateTracker in
// uniter/relation/statetracker.go, which needs Juju's API) over Juju's own relationers and
// relation state manager: it enters a relation's scope when it first sees it alive, and
// forgets it after its relation-broken.
type relationTracker struct {
	s           *shadow
	stateMgr    relation.StateManager
	relationers map[int]relation.Relationer
	remoteApp   map[int]string
	created     map[int]bool
	peer        map[int]bool
}

func newRelationTracker(s *shadow) (*relationTracker, error) {
	mgr, err := relation.NewStateManager(s.rw, s.log)
	if err != nil {
		return nil, err
	}
	return &relationTracker{s: s, stateMgr: mgr, relationers: map[int]relation.Relationer{},
		remoteApp: map[int]string{}, created: map[int]bool{}, peer: map[int]bool{}}, nil
}

func (t *relationTracker) SynchronizeScopes(remote remotestate.Snapshot) error {
	meta := t.s.remote().Relations
	for id, rs := range remote.Relations {
		if r, ok := t.relationers[id]; ok {
			if rs.Life == life.Dying || rs.Suspended {
				if err := r.SetDying(); err != nil {
					return err
				}
			}
			continue
		}
		m, ok := meta[id]
		if rs.Life != life.Alive || rs.Suspended || !ok {
			continue
		}
		t.peer[id] = m.Role == string(charm.RolePeer)
		t.remoteApp[id] = m.RemoteApp
		r := relation.NewRelationer(&relationUnit{id: id, m: m, unitLife: t.s.remote().Life}, t.stateMgr, unitGetter{}, t.s.log)
		if err := r.Join(); err != nil {
			// As relationStateTracker.SynchronizeScopes: the state Join made goes again; a unit
			// that cannot enter the scope (it is dying) leaves the relation alone.
			removeErr := t.stateMgr.RemoveRelation(id, unitGetter{}, map[string]bool{})
			if !params.IsCodeCannotEnterScope(err) {
				return err
			}
			if removeErr != nil {
				return removeErr
			}
			continue
		}
		t.relationers[id] = r
	}
	return nil
}

func (t *relationTracker) gone(id int) {
	delete(t.relationers, id)
	delete(t.remoteApp, id)
	delete(t.peer, id)
	delete(t.created, id)
}

func (t *relationTracker) IsKnown(id int) bool { return t.relationers[id] != nil }

func (t *relationTracker) IsImplicit(id int) (bool, error) {
	if r := t.relationers[id]; r != nil {
		return r.IsImplicit(), nil
	}
	return false, jujuerrors.NotFoundf("relation: %d", id)
}

func (t *relationTracker) IsPeerRelation(id int) (bool, error) {
	if t.relationers[id] != nil {
		return t.peer[id], nil
	}
	return false, jujuerrors.NotFoundf("relation: %d", id)
}

func (t *relationTracker) HasContainerScope(id int) (bool, error) {
	if r := t.relationers[id]; r != nil {
		return r.RelationUnit().Endpoint().Scope == charm.ScopeContainer, nil
	}
	return false, jujuerrors.NotFoundf("relation: %d", id)
}

func (t *relationTracker) RelationCreated(id int) bool     { return t.created[id] }
func (t *relationTracker) RemoteApplication(id int) string { return t.remoteApp[id] }
func (t *relationTracker) StateFound(id int) bool          { return t.stateMgr.RelationFound(id) }
func (t *relationTracker) LocalUnitName() string           { return t.s.unit }
func (t *relationTracker) Report() map[string]any          { return nil }

func (t *relationTracker) GetInfo() map[int]*runnercontext.RelationInfo {
	return map[int]*runnercontext.RelationInfo{}
}

func (t *relationTracker) State(id int) (*relation.State, error) {
	if t.relationers[id] != nil {
		return t.stateMgr.Relation(id)
	}
	return nil, jujuerrors.NotFoundf("relation: %d", id)
}

func (t *relationTracker) Name(id int) (string, error) {
	if r := t.relationers[id]; r != nil {
		return r.RelationUnit().Endpoint().Name, nil
	}
	return "", jujuerrors.NotFoundf("relation: %d", id)
}

func (t *relationTracker) LocalUnitAndApplicationLife() (life.Value, life.Value, error) {
	r := t.s.remote()
	return life.Value(r.Life), life.Value(r.AppLife), nil
}

func (t *relationTracker) PrepareHook(hi hook.Info) (string, error) {
	r := t.relationers[hi.RelationId]
	if r == nil {
		return "", operation.ErrSkipExecute
	}
	return r.PrepareHook(hi)
}

func (t *relationTracker) CommitHook(hi hook.Info) (err error) {
	defer func() {
		if err != nil {
			return
		}
		switch hi.Kind {
		case hooks.RelationCreated:
			t.created[hi.RelationId] = true
		case hooks.RelationBroken:
			t.gone(hi.RelationId)
		}
	}()
	r := t.relationers[hi.RelationId]
	if r == nil {
		return nil
	}
	return r.CommitHook(hi)
}

// scopes are the relations whose scope the unit has entered.
func (t *relationTracker) scopes() []int {
	var ids []int
	for id := range t.relationers {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// relationUnit is the unit in one relation, as the uniter API gives it.
type relationUnit struct {
	id       int
	m        model.RemoteRelation
	unitLife string
}

func (ru *relationUnit) ApplicationSettings() (*apiuniter.Settings, error) { return nil, nil }
func (ru *relationUnit) Settings() (*apiuniter.Settings, error)            { return nil, nil }
func (ru *relationUnit) ReadSettings(string) (params.Settings, error)      { return nil, nil }
func (ru *relationUnit) EnterScope() error {
	// The controller lets only a live unit enter the scope of a live relation
	// (state/relationunit.go, EnterScope).
	if ru.unitLife != "alive" || ru.m.Life != "alive" {
		return &params.Error{Code: params.CodeCannotEnterScope, Message: "cannot enter scope: unit or relation is not alive"}
	}
	return nil
}
func (ru *relationUnit) LeaveScope() error           { return nil }
func (ru *relationUnit) Relation() relation.Relation { return (*relationAPI)(ru) }
func (ru *relationUnit) Endpoint() apiuniter.Endpoint {
	return apiuniter.Endpoint{Relation: charm.Relation{Name: ru.m.Endpoint, Role: charm.RelationRole(ru.m.Role),
		Interface: ru.m.Interface, Scope: charm.ScopeGlobal}}
}

// relationAPI is the relation as the uniter API gives it.
type relationAPI relationUnit

func (r *relationAPI) Endpoint() (*apiuniter.Endpoint, error) {
	ep := (*relationUnit)(r).Endpoint()
	return &ep, nil
}
func (r *relationAPI) Id() int                             { return r.id }
func (r *relationAPI) Life() life.Value                    { return life.Value(r.m.Life) }
func (r *relationAPI) OtherApplication() string            { return r.m.RemoteApp }
func (r *relationAPI) OtherModelUUID() string              { return "" }
func (r *relationAPI) Refresh() error                      { return nil }
func (r *relationAPI) SetStatus(corerelation.Status) error { return nil }
func (r *relationAPI) String() string                      { return r.m.Key }
func (r *relationAPI) Suspended() bool                     { return false }
func (r *relationAPI) UpdateSuspended(bool)                {}
func (r *relationAPI) Tag() names.RelationTag {
	return names.NewRelationTag(strings.ReplaceAll(r.m.Key, "/", "-"))
}
func (r *relationAPI) Unit(names.UnitTag) (relation.RelationUnit, error) {
	return (*relationUnit)(r), nil
}

// unitGetter finds no unit: a relation's state is removed after its relation-broken, when it
// has no members left.
type unitGetter struct{}

func (unitGetter) Unit(tag names.UnitTag) (relation.Unit, error) {
	return nil, &params.Error{Code: params.CodeNotFound, Message: tag.Id() + " not found"}
}
