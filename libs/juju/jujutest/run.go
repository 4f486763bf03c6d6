package jujutest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/charmed-slurm/operators/libs/juju"
)

// TB is the part of testing.TB that jujutest reports to.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

var _ TB = testing.TB(nil)

// Scenario runs events against States.
type Scenario struct {
	// T receives the failures: a broken Juju rule (t.Errorf) and a bad
	// State or event (t.Fatalf). A *testing.T.
	T TB
	// Lenient turns broken rules into tool errors only, without failing
	// the test: for tests that check how a charm copes with such errors.
	Lenient bool
}

// Run is Scenario{T: t}.Run.
func Run(t TB, in State, ev juju.Event, h juju.Handler) (State, error) {
	t.Helper()
	return Scenario{T: t}.Run(in, ev, h)
}

// Run runs ev through juju.Main with handler h against a copy of in and
// returns the State after the event and h's error (nil on success; an
// ErrNoHandler error when a router had no handler, which Main treats as
// success). in is not modified.
//
// The event needs only its Kind and Name and the fields that identify it
// (Relation and RemoteUnit, SecretID, ...; the Hook, RelationHook,
// ActionEvent and SecretHook helpers build them); Run fills in the unit,
// application, model and the relation's remote application from in, and
// passes the event through juju.Event.Env and juju.ReadEvent as Juju's
// environment would.
func (s Scenario) Run(in State, ev juju.Event, h juju.Handler) (State, error) {
	t := s.T
	t.Helper()
	if err := in.validate(); err != nil {
		t.Fatalf("jujutest: invalid State: %v", err)
	}
	if in.Model == "" {
		in.Model = "test-model"
	}
	ev = s.fillEvent(in, ev)
	ev, err := juju.ReadEvent(juju.EnvMap(ev.Env()))
	if err != nil {
		t.Fatalf("jujutest: invalid event: %v", err)
	}
	work, now := in.clone(), in.clone()
	m := &model{s: s, ev: ev, work: &work, now: &now}
	var herr error
	wrapped := func(ctx context.Context, hc *juju.HookContext) error {
		herr = h(ctx, hc)
		return herr
	}
	var stderr bytes.Buffer
	code := juju.Main(context.Background(), juju.NewHookContext(ev, m), wrapped, &stderr)
	m.mu.Lock()
	defer m.mu.Unlock()
	if code != 0 {
		if herr == nil {
			herr = errors.New(strings.TrimSpace(stderr.String()))
		}
		return *m.now, herr
	}
	out := *m.work
	afterHook(&out, ev)
	return out, herr
}

func (s Scenario) fillEvent(in State, ev juju.Event) juju.Event {
	t := s.T
	t.Helper()
	if ev.Name == "" {
		t.Fatalf("jujutest: event without a name: %+v", ev)
	}
	ev.DispatchPath = ""
	ev.Unit = in.Unit
	ev.App = in.app()
	ev.Model = in.Model
	ev.ModelUUID = "00000000-0000-4000-8000-000000000000"
	ev.CharmDir = "/var/lib/juju/agents/unit-" + strings.ReplaceAll(in.Unit, "/", "-") + "/charm"
	ev.ContextID = in.Unit + "-" + ev.Name + "-1"
	ev.MachineID = "0"
	ev.JujuVersion = "3.6.0"
	switch {
	case ev.Kind.IsRelation():
		_, num, err := ev.Relation.Parse()
		if err != nil {
			t.Fatalf("jujutest: event %s: %v", ev.Name, err)
		}
		rel := in.relation(num)
		if rel == nil || rel.ID != ev.Relation {
			t.Fatalf("jujutest: event %s: relation %s is not in the State", ev.Name, ev.Relation)
		}
		ev.Endpoint = rel.ID.Endpoint()
		ev.RemoteApp = rel.RemoteApp
		if ev.Kind == juju.RelationDeparted && ev.DepartingUnit == "" {
			ev.DepartingUnit = ev.RemoteUnit
		}
	case ev.Kind == juju.Action:
		if ev.ActionUUID == "" {
			ev.ActionUUID = "1"
		}
	case ev.Kind.IsSecret():
		if sec := in.secret(ev.SecretID); sec != nil && ev.SecretLabel == "" {
			ev.SecretLabel = sec.Label
		}
	}
	return ev
}

// afterHook applies what Juju changes in the unit's view once a hook has
// completed: a departed remote unit leaves the relation, a broken relation
// goes away.
func afterHook(s *State, ev juju.Event) {
	switch ev.Kind {
	case juju.RelationDeparted:
		if _, num, err := ev.Relation.Parse(); err == nil {
			if rel := s.relation(num); rel != nil {
				delete(rel.RemoteUnits, ev.RemoteUnit)
			}
		}
	case juju.RelationBroken:
		for i, r := range s.Relations {
			if r.ID == ev.Relation {
				s.Relations = append(s.Relations[:i:i], s.Relations[i+1:]...)
				break
			}
		}
	}
}

// Hook is a non-relation hook event (Install, ConfigChanged, ...).
func Hook(kind juju.Kind) juju.Event {
	return juju.Event{Kind: kind, Name: string(kind)}
}

// RelationHook is a relation hook on relation id (local side, slurmd:1);
// remoteUnit is the remote unit concerned (empty for created and broken).
// For RelationDeparted the departing unit defaults to remoteUnit; set
// DepartingUnit to the local unit for the leaving unit's side.
func RelationHook(kind juju.Kind, id juju.RelationID, remoteUnit string) juju.Event {
	return juju.Event{Kind: kind, Name: juju.HookName(kind, id.Endpoint()), Relation: id, RemoteUnit: remoteUnit}
}

// ActionEvent is the action name; its parameters are State.Action.Params.
func ActionEvent(name string) juju.Event {
	return juju.Event{Kind: juju.Action, Name: name}
}

// SecretHook is a secret hook for secret id; revision is needed for
// SecretRemove and SecretExpired.
func SecretHook(kind juju.Kind, id juju.SecretID, revision int) juju.Event {
	return juju.Event{Kind: kind, Name: string(kind), SecretID: id, SecretRevision: revision}
}

// model is the Runner a handler's clients talk to during one event.
type model struct {
	s    Scenario
	ev   juju.Event
	mu   sync.Mutex
	work *State // transactional: committed only if the handler succeeds
	now  *State // immediate effects only: kept if the handler fails
}

// both applies an immediate (non-transactional) change.
func (m *model) both(f func(s *State)) {
	f(m.work)
	f(m.now)
}
