// Package jujutest is an in-memory Juju model of one unit for charm unit
// tests, in the scenario style: a State goes in, one hook or action runs a
// handler, and the new State comes out.
//
//	out, err := jujutest.Run(t, jujutest.State{
//		Unit:   "slurmd/0",
//		Leader: true,
//		Relations: []jujutest.Relation{{
//			ID: "slurmctld:1", RemoteApp: "slurmctld",
//			RemoteUnits: map[string]map[string]string{"slurmctld/0": {}},
//		}},
//	}, jujutest.RelationHook(juju.RelationJoined, "slurmctld:1", "slurmctld/0"), router.Dispatch)
//
// The model implements juju.Runner: the handler's clients run the same
// command lines they run under Juju (relation-set -r slurmctld:1 --file -
// with the settings on stdin, secret-get ID --format=json, ...), and the
// model parses those argv slices and answers with Juju's output formats, so
// a test exercises the charm's real command lines. The event goes through
// juju.Main, as in production: exit code, juju-log and action-fail included.
//
// # Juju's rules
//
// The model enforces what Juju enforces, answering with the error the real
// tool gives (exit code 1 or 2, "ERROR ..." on stderr):
//
//   - only the leader writes its application's databag (relation-set --app),
//     reads it (relation-get --app of its own application), sets or reads
//     the application status, and creates or manages application-owned
//     secrets;
//   - a secret's content is visible to its owner (the owning application's
//     units, or the owning unit) and to the units of applications it was
//     granted to over a relation (secret-grant -r, optionally --unit);
//     secret-get of an unknown id or label fails like Juju;
//   - action-set keys are lowercase letters, digits and '-' (starting and
//     ending with a letter or digit), dotted for nesting, and not one of
//     stdout, stderr, stdout-encoding, stderr-encoding; action tools only
//     work in actions;
//   - secret content keys are lowercase, at least 3 characters.
//
// Breaking a rule that only a buggy charm breaks (a non-leader writing
// application data, an invalid action-set key, managing a secret it does
// not own, ...) also fails the test through t.Errorf, naming the rule,
// unless Scenario.Lenient is set. Conditions a correct charm must handle (a
// secret that is not found or not yet granted, a unit that has left) are
// only tool errors.
//
// # Commit rules
//
// As under Juju, relation data, secrets and opened ports change only if the
// handler succeeds (juju.Main exits 0); a failing hook's writes are
// discarded. Status, juju-log lines and action results, logs and failure
// take effect at once and survive a failing handler.
package jujutest

import (
	"fmt"
	"maps"

	"github.com/charmed-slurm/operators/libs/juju"
)

// State is the model as one unit sees it.
type State struct {
	// Unit is the local unit (slurmd/0); its application is the part
	// before the slash. Required.
	Unit string
	// Model is the model's name; "test-model" when empty.
	Model  string
	Leader bool
	// Config is what config-get --all prints (option → value).
	Config map[string]any
	// Relations are the relations the unit's application takes part in.
	Relations []Relation
	// Secrets are the secrets the unit owns or may be granted.
	Secrets []Secret
	// UnitStatus and AppStatus are the workload statuses.
	UnitStatus juju.WorkloadStatus
	AppStatus  juju.WorkloadStatus
	// Version is the workload version set with application-version-set.
	Version string
	// Ports are the unit's opened ports, sorted.
	Ports []juju.Port
	// Networks is network-get's answer per endpoint; an endpoint missing
	// here gets PrivateAddress as its only address.
	Networks       map[string]juju.NetworkInfo
	PrivateAddress string
	// Action is the running action's parameters (in) and its results,
	// logs and failure (out). Used only for action events.
	Action ActionState
	// Logs are the juju-log lines, in order.
	Logs []Log
}

// Relation is one relation from the local unit's side.
type Relation struct {
	// ID is the relation from the local side: <local endpoint>:<number>.
	ID juju.RelationID
	// RemoteApp is the application at the other end (the local
	// application itself for a peer relation).
	RemoteApp     string
	LocalAppData  map[string]string
	LocalUnitData map[string]string
	RemoteAppData map[string]string
	// RemoteUnits maps each remote unit in the relation (what
	// relation-list prints) to its databag.
	RemoteUnits map[string]map[string]string
}

// Secret is one Juju secret.
type Secret struct {
	// ID is the secret's URI, secret:<id>.
	ID juju.SecretID
	// Owner is the owning application (slurmctld) or unit (slurmctld/0).
	// The local unit owns the secret if Owner is its application or itself.
	Owner string
	// Label is the owner's label if the local unit owns the secret, or the
	// local unit's consumer label otherwise.
	Label       string
	Description string
	// Revisions holds the content of revision 1, 2, ...; a nil entry is a
	// removed revision. The last entry is the latest revision.
	Revisions []map[string]string
	// Tracked is the revision a consumer reads without --peek or
	// --refresh; 0 until its first secret-get.
	Tracked int
	// Grants are the relations (and optionally single units) the owner
	// granted the secret to. Relation numbers are shared by both sides,
	// so a grant made by the owner on slurmd:3 is seen by the consumer on
	// relation slurmctld:3.
	Grants []Grant
}

// Grant is one secret-grant.
type Grant struct {
	Relation juju.RelationID
	Unit     string // empty: every unit of the relation's remote application
}

// ActionState is the running action's data.
type ActionState struct {
	// Params is what action-get prints.
	Params map[string]any
	// Results are the action-set results, keyed by the dotted key.
	Results map[string]string
	// Failed is set by action-fail, with Message its message.
	Failed  bool
	Message string
	// Logs are the action-log messages.
	Logs []string
}

// Log is one juju-log line.
type Log struct {
	Level   juju.LogLevel
	Message string
}

func (s State) app() string {
	app, _ := juju.UnitApp(s.Unit)
	return app
}

func (s State) validate() error {
	if _, err := juju.UnitApp(s.Unit); err != nil {
		return fmt.Errorf("State.Unit: %w", err)
	}
	seen := map[int]bool{}
	for _, r := range s.Relations {
		_, num, err := r.ID.Parse()
		if err != nil {
			return fmt.Errorf("State.Relations: %w", err)
		}
		if seen[num] {
			return fmt.Errorf("State.Relations: relation number %d used twice", num)
		}
		seen[num] = true
		if r.RemoteApp == "" {
			return fmt.Errorf("State.Relations: relation %s has no RemoteApp", r.ID)
		}
		for u := range r.RemoteUnits {
			if app, err := juju.UnitApp(u); err != nil || app != r.RemoteApp {
				return fmt.Errorf("State.Relations: relation %s: remote unit %q is not a unit of %s", r.ID, u, r.RemoteApp)
			}
		}
	}
	ids := map[juju.SecretID]bool{}
	for _, sec := range s.Secrets {
		if sec.ID == "" || ids[sec.ID] {
			return fmt.Errorf("State.Secrets: missing or duplicate id %q", sec.ID)
		}
		ids[sec.ID] = true
		if sec.Owner == "" {
			return fmt.Errorf("State.Secrets: secret %s has no Owner", sec.ID)
		}
		if len(sec.Revisions) == 0 {
			return fmt.Errorf("State.Secrets: secret %s has no revisions", sec.ID)
		}
		if sec.Tracked < 0 || sec.Tracked > len(sec.Revisions) {
			return fmt.Errorf("State.Secrets: secret %s tracks revision %d of %d", sec.ID, sec.Tracked, len(sec.Revisions))
		}
	}
	return nil
}

func (s State) clone() State {
	c := s
	c.Config = cloneAnyMap(s.Config)
	c.Relations = nil
	for _, r := range s.Relations {
		r.LocalAppData = maps.Clone(r.LocalAppData)
		r.LocalUnitData = maps.Clone(r.LocalUnitData)
		r.RemoteAppData = maps.Clone(r.RemoteAppData)
		if r.RemoteUnits != nil {
			units := make(map[string]map[string]string, len(r.RemoteUnits))
			for u, d := range r.RemoteUnits {
				units[u] = maps.Clone(d)
			}
			r.RemoteUnits = units
		}
		c.Relations = append(c.Relations, r)
	}
	c.Secrets = nil
	for _, sec := range s.Secrets {
		revs := make([]map[string]string, len(sec.Revisions))
		for i, rev := range sec.Revisions {
			revs[i] = maps.Clone(rev)
		}
		sec.Revisions = revs
		sec.Grants = append([]Grant(nil), sec.Grants...)
		c.Secrets = append(c.Secrets, sec)
	}
	c.UnitStatus.Data = cloneAnyMap(s.UnitStatus.Data)
	c.AppStatus.Data = cloneAnyMap(s.AppStatus.Data)
	c.Ports = append([]juju.Port(nil), s.Ports...)
	c.Networks = maps.Clone(s.Networks)
	c.Action.Params = cloneAnyMap(s.Action.Params)
	c.Action.Results = maps.Clone(s.Action.Results)
	c.Action.Logs = append([]string(nil), s.Action.Logs...)
	c.Logs = append([]Log(nil), s.Logs...)
	return c
}

func cloneAnyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = cloneAny(v)
	}
	return c
}

func cloneAny(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneAnyMap(v)
	case []any:
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = cloneAny(e)
		}
		return c
	}
	return v
}

func (s *State) relation(num int) *Relation {
	for i := range s.Relations {
		if _, n, _ := s.Relations[i].ID.Parse(); n == num {
			return &s.Relations[i]
		}
	}
	return nil
}

func (s *State) secret(id juju.SecretID) *Secret {
	for i := range s.Secrets {
		if s.Secrets[i].ID == id {
			return &s.Secrets[i]
		}
	}
	return nil
}
