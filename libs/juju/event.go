package juju

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Kind is what happened: a hook kind or an action.
type Kind string

// The hook kinds a Router can route, and Action for actions. Relation kinds
// are the hook name's suffix; the endpoint is in Event.Endpoint.
const (
	Install               Kind = "install"
	Start                 Kind = "start"
	Stop                  Kind = "stop"
	Remove                Kind = "remove"
	ConfigChanged         Kind = "config-changed"
	UpdateStatus          Kind = "update-status"
	LeaderElected         Kind = "leader-elected"
	LeaderSettingsChanged Kind = "leader-settings-changed"
	UpgradeCharm          Kind = "upgrade-charm"
	RelationCreated       Kind = "relation-created"
	RelationJoined        Kind = "relation-joined"
	RelationChanged       Kind = "relation-changed"
	RelationDeparted      Kind = "relation-departed"
	RelationBroken        Kind = "relation-broken"
	SecretChanged         Kind = "secret-changed"
	SecretRotate          Kind = "secret-rotate"
	SecretRemove          Kind = "secret-remove"
	SecretExpired         Kind = "secret-expired"
	// Action is any action; Event.Name is the action's name.
	Action Kind = "action"
	// OtherHook is a hook this package does not know (storage, pebble,
	// series upgrade, ...). It can only be routed by its full name.
	OtherHook Kind = "other"
)

var simpleKinds = map[Kind]bool{
	Install: true, Start: true, Stop: true, Remove: true, ConfigChanged: true,
	UpdateStatus: true, LeaderElected: true, LeaderSettingsChanged: true,
	UpgradeCharm: true, SecretChanged: true, SecretRotate: true,
	SecretRemove: true, SecretExpired: true,
}

var relationKinds = []Kind{RelationCreated, RelationJoined, RelationChanged, RelationDeparted, RelationBroken}

// IsRelation reports whether k is one of the <endpoint>-relation-* kinds.
func (k Kind) IsRelation() bool { return slices.Contains(relationKinds, k) }

// IsSecret reports whether k is one of the secret-* hook kinds.
func (k Kind) IsSecret() bool {
	return k == SecretChanged || k == SecretRotate || k == SecretRemove || k == SecretExpired
}

// RelationID names one relation from the local unit's side, as Juju's
// JUJU_RELATION_ID does: "<endpoint>:<number>" (slurmd:3).
type RelationID string

// Parse splits the id into its endpoint and number.
func (id RelationID) Parse() (endpoint string, num int, err error) {
	ep, n, ok := strings.Cut(string(id), ":")
	if !ok || ep == "" {
		return "", 0, fmt.Errorf("invalid relation id %q: want <endpoint>:<number>", string(id))
	}
	num, err = strconv.Atoi(n)
	if err != nil || num < 0 || strconv.Itoa(num) != n {
		return "", 0, fmt.Errorf("invalid relation id %q: want <endpoint>:<number>", string(id))
	}
	return ep, num, nil
}

// Endpoint is the id's endpoint, or "" if the id is malformed.
func (id RelationID) Endpoint() string {
	ep, _, err := id.Parse()
	if err != nil {
		return ""
	}
	return ep
}

// SecretID is a Juju secret's URI as the tools print it: secret:<id>.
type SecretID string

// NormalizeSecretID turns a bare secret id (as secret-ids prints it) into the
// secret:<id> form that secret-add prints; other forms are returned as is.
func NormalizeSecretID(s string) SecretID {
	if s == "" || strings.Contains(s, ":") {
		return SecretID(s)
	}
	return SecretID("secret:" + s)
}

// Event is one hook or action invocation, read from Juju's environment.
type Event struct {
	Kind Kind
	// Name is the hook's full name (slurmd-relation-joined) or the
	// action's name (node-config).
	Name         string
	DispatchPath string // hooks/install, actions/node-config

	Unit        string // slurmd/3
	App         string // slurmd
	Model       string
	ModelUUID   string
	CharmDir    string
	ContextID   string
	MachineID   string
	JujuVersion string

	// Relation hooks.
	Endpoint      string     // slurmd
	Relation      RelationID // slurmd:3
	RemoteUnit    string     // slurmctld/0; empty on relation-created/broken
	RemoteApp     string     // slurmctld
	DepartingUnit string     // relation-departed: the unit leaving

	// Actions.
	ActionUUID string

	// Secret hooks.
	SecretID       SecretID
	SecretLabel    string
	SecretRevision int // secret-remove and secret-expired: the revision concerned
}

// EnvMap adapts a map to the lookup function ReadEvent takes.
func EnvMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// ReadEvent reads the event from Juju's environment variables through
// lookup (os.LookupEnv at runtime). It fails, naming the variable, when a
// variable the event needs is missing or malformed.
func ReadEvent(lookup func(string) (string, bool)) (Event, error) {
	get := func(k string) string {
		v, _ := lookup(k)
		return v
	}
	ev := Event{
		DispatchPath:  get("JUJU_DISPATCH_PATH"),
		Unit:          get("JUJU_UNIT_NAME"),
		Model:         get("JUJU_MODEL_NAME"),
		ModelUUID:     get("JUJU_MODEL_UUID"),
		CharmDir:      get("JUJU_CHARM_DIR"),
		ContextID:     get("JUJU_CONTEXT_ID"),
		MachineID:     get("JUJU_MACHINE_ID"),
		JujuVersion:   get("JUJU_VERSION"),
		Relation:      RelationID(get("JUJU_RELATION_ID")),
		RemoteUnit:    get("JUJU_REMOTE_UNIT"),
		RemoteApp:     get("JUJU_REMOTE_APP"),
		DepartingUnit: get("JUJU_DEPARTING_UNIT"),
		ActionUUID:    get("JUJU_ACTION_UUID"),
		SecretID:      SecretID(get("JUJU_SECRET_ID")),
		SecretLabel:   get("JUJU_SECRET_LABEL"),
	}
	fail := func(format string, args ...any) (Event, error) {
		return Event{}, fmt.Errorf("cannot read juju event: "+format, args...)
	}
	if ev.Unit == "" {
		return fail("JUJU_UNIT_NAME is not set")
	}
	app, err := UnitApp(ev.Unit)
	if err != nil {
		return fail("JUJU_UNIT_NAME: %v", err)
	}
	ev.App = app

	switch dir, name, _ := strings.Cut(ev.DispatchPath, "/"); {
	case ev.DispatchPath == "":
		// Old-style invocation without dispatch: fall back on the names.
		if a := get("JUJU_ACTION_NAME"); a != "" {
			ev.Kind, ev.Name = Action, a
		} else if h := get("JUJU_HOOK_NAME"); h != "" {
			ev.Name = h
		} else {
			return fail("JUJU_DISPATCH_PATH is not set")
		}
	case dir == "hooks" && name != "" && !strings.Contains(name, "/"):
		ev.Name = name
	case dir == "actions" && name != "" && !strings.Contains(name, "/"):
		ev.Kind, ev.Name = Action, name
	default:
		return fail("JUJU_DISPATCH_PATH %q: want hooks/<hook> or actions/<action>", ev.DispatchPath)
	}

	if ev.Kind == Action {
		if a := get("JUJU_ACTION_NAME"); a != "" && a != ev.Name {
			return fail("JUJU_ACTION_NAME %q does not match JUJU_DISPATCH_PATH %q", a, ev.DispatchPath)
		}
		return ev, nil
	}
	ev.Kind = hookKind(ev.Name)
	switch {
	case ev.Kind.IsRelation():
		ev.Endpoint = strings.TrimSuffix(ev.Name, "-"+string(ev.Kind))
		if ev.Relation == "" {
			return fail("JUJU_RELATION_ID is not set for hook %s", ev.Name)
		}
		ep, _, err := ev.Relation.Parse()
		if err != nil {
			return fail("JUJU_RELATION_ID: %v", err)
		}
		if ep != ev.Endpoint {
			return fail("JUJU_RELATION_ID %q is not on endpoint %q of hook %s", ev.Relation, ev.Endpoint, ev.Name)
		}
		if r := get("JUJU_RELATION"); r != "" && r != ev.Endpoint {
			return fail("JUJU_RELATION %q does not match hook %s", r, ev.Name)
		}
		if ev.RemoteApp == "" && ev.RemoteUnit != "" {
			ev.RemoteApp, _ = UnitApp(ev.RemoteUnit)
		}
		if ev.Kind == RelationDeparted && ev.DepartingUnit == "" {
			return fail("JUJU_DEPARTING_UNIT is not set for hook %s", ev.Name)
		}
	case ev.Kind.IsSecret():
		if ev.SecretID == "" {
			return fail("JUJU_SECRET_ID is not set for hook %s", ev.Name)
		}
		if rev := get("JUJU_SECRET_REVISION"); rev != "" {
			n, err := strconv.Atoi(rev)
			if err != nil || n < 0 {
				return fail("JUJU_SECRET_REVISION %q is not a revision number", rev)
			}
			ev.SecretRevision = n
		}
		if (ev.Kind == SecretRemove || ev.Kind == SecretExpired) && ev.SecretRevision == 0 {
			return fail("JUJU_SECRET_REVISION is not set for hook %s", ev.Name)
		}
	}
	return ev, nil
}

func hookKind(name string) Kind {
	if simpleKinds[Kind(name)] {
		return Kind(name)
	}
	for _, k := range relationKinds {
		if ep, ok := strings.CutSuffix(name, "-"+string(k)); ok && ep != "" {
			return k
		}
	}
	return OtherHook
}

// HookName is the full hook name for kind on endpoint: "install", or
// "slurmd-relation-joined" for a relation kind.
func HookName(kind Kind, endpoint string) string {
	if kind.IsRelation() {
		return endpoint + "-" + string(kind)
	}
	return string(kind)
}

// UnitApp returns the application of a unit name: slurmd/3 → slurmd.
func UnitApp(unit string) (string, error) {
	app, num, ok := strings.Cut(unit, "/")
	if !ok || app == "" {
		return "", fmt.Errorf("invalid unit name %q: want <application>/<number>", unit)
	}
	if n, err := strconv.Atoi(num); err != nil || n < 0 || strconv.Itoa(n) != num {
		return "", fmt.Errorf("invalid unit name %q: want <application>/<number>", unit)
	}
	return app, nil
}

func decodeJSON(out []byte, v any) error {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return errors.New("empty output")
	}
	return json.Unmarshal(out, v)
}

// Env returns the JUJU_* environment variables Juju sets for ev (those the
// event carries; PATH and the agent socket are the runner's business).
// ReadEvent(EnvMap(ev.Env())) gives ev back. The local model and jujutest
// use it to invoke charms exactly as Juju does.
func (ev Event) Env() map[string]string {
	env := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			env[k] = v
		}
	}
	set("JUJU_DISPATCH_PATH", ev.DispatchPath)
	if ev.DispatchPath == "" && ev.Name != "" {
		if ev.Kind == Action {
			set("JUJU_DISPATCH_PATH", "actions/"+ev.Name)
		} else {
			set("JUJU_DISPATCH_PATH", "hooks/"+ev.Name)
		}
	}
	set("JUJU_UNIT_NAME", ev.Unit)
	set("JUJU_MODEL_NAME", ev.Model)
	set("JUJU_MODEL_UUID", ev.ModelUUID)
	set("JUJU_CHARM_DIR", ev.CharmDir)
	set("JUJU_CONTEXT_ID", ev.ContextID)
	set("JUJU_MACHINE_ID", ev.MachineID)
	set("JUJU_VERSION", ev.JujuVersion)
	if ev.Kind == Action {
		set("JUJU_ACTION_NAME", ev.Name)
		set("JUJU_ACTION_UUID", ev.ActionUUID)
	} else {
		set("JUJU_HOOK_NAME", ev.Name)
	}
	set("JUJU_RELATION", ev.Endpoint)
	set("JUJU_RELATION_ID", string(ev.Relation))
	set("JUJU_REMOTE_UNIT", ev.RemoteUnit)
	set("JUJU_REMOTE_APP", ev.RemoteApp)
	set("JUJU_DEPARTING_UNIT", ev.DepartingUnit)
	set("JUJU_SECRET_ID", string(ev.SecretID))
	set("JUJU_SECRET_LABEL", ev.SecretLabel)
	if ev.SecretRevision > 0 {
		set("JUJU_SECRET_REVISION", strconv.Itoa(ev.SecretRevision))
	}
	return env
}
