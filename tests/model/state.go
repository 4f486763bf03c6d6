package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"
)

// State is the whole model as saved on disk (state.json in the model directory). It is only
// touched under the model's lock; hook contexts work on a deep copy taken when the hook starts.
type State struct {
	Name         string                   `json:"name"`
	UUID         string                   `json:"uuid"`
	NextMachine  int                      `json:"next-machine"`
	NextRelation int                      `json:"next-relation"`
	NextAction   int                      `json:"next-action"`
	Machines     map[string]*MachineState `json:"machines"`
	Applications map[string]*Application  `json:"applications"`
	Units        map[string]*Unit         `json:"units"`
	Relations    map[int]*Relation        `json:"relations"`
	Secrets      map[string]*Secret       `json:"secrets"`
	Actions      map[string]*ActionRun    `json:"actions"`
}

// MachineState is one machine (a host) carrying one unit.
type MachineState struct {
	ID       string `json:"id"`
	Hostname string `json:"hostname"`
	Address  string `json:"address,omitempty"`
	Unit     string `json:"unit"`
	Status   string `json:"status"` // pending, started, error
	Message  string `json:"message,omitempty"`
	Base     string `json:"base,omitempty"` // "<os>@<channel>" when the machine knows it (Based)
	// BootID is the running machine's boot id, new on every boot (Rebootable machines).
	BootID string `json:"boot-id,omitempty"`
}

// Application is one deployed application.
type Application struct {
	Name          string            `json:"name"`
	Charm         *Charm            `json:"charm"`
	CharmDir      string            `json:"charm-dir"` // unpacked charm on the model's side
	Config        map[string]any    `json:"config,omitempty"`
	ConfigVersion int               `json:"config-version"`
	Leader        string            `json:"leader,omitempty"`
	NextUnit      int               `json:"next-unit"`
	Status        StatusInfo        `json:"status"`
	Version       string            `json:"version,omitempty"`
	Dying         bool              `json:"dying,omitempty"`
	LeaderData    map[string]string `json:"leader-data,omitempty"`
	// LeaderDataVersion counts the leader-set commits that changed LeaderData; non-leaders run
	// leader-settings-changed until they have seen the latest.
	LeaderDataVersion int `json:"leader-data-version,omitempty"`
	// CharmVersion counts refreshes; a unit runs upgrade-charm when it has seen an older one.
	CharmVersion int `json:"charm-version,omitempty"`
	// Base is the base the application was deployed with (deploy --base); "" is the
	// provisioner's default (see BaseProvisioner).
	Base string `json:"base,omitempty"`
}

// StatusInfo is a status value with its message.
type StatusInfo struct {
	Status  string    `json:"status"`
	Message string    `json:"message"`
	Since   time.Time `json:"since"`
}

// Unit is one unit of an application and its agent's view of the model.
type Unit struct {
	Name    string `json:"name"`
	App     string `json:"application"`
	Machine string `json:"machine"`
	// Principal is the unit a subordinate unit was added beside (on its machine).
	Principal string     `json:"principal,omitempty"`
	Dying     bool       `json:"dying,omitempty"`
	Workload  StatusInfo `json:"workload-status"`
	Agent     StatusInfo `json:"agent-status"`
	Ports     []string   `json:"ports,omitempty"`
	// Ready is true once the unit's machine is up and the charm is installed on it.
	Ready bool `json:"ready"`
	// CharmVersion is the application's CharmVersion whose files are on the unit's machine.
	CharmVersion int `json:"charm-version,omitempty"`
	// Failed is the hook that failed (the unit is in error until resolved).
	Failed *Hook `json:"failed,omitempty"`
	// Queued is the hook queued to run next, as Juju's uniter queues it
	// (internal/worker/uniter/operation): start after the first config-changed, config-changed
	// after upgrade-charm, leader-elected once leadership is accepted, upgrade-charm once the
	// refreshed charm is deployed, and a hook cut off by its machine's shutdown
	// (runner.ErrTerminated), run first when the agent is back.
	Queued *Hook `json:"queued,omitempty"`
	// CharmState is the charm's own key-value store (state-get, state-set).
	CharmState map[string]string `json:"charm-state,omitempty"`
	Seen       UnitLocal         `json:"seen"`
	// Reboot is the phase of a reboot of the unit's machine under way (RebootStop,
	// RebootDown), "" when none is.
	Reboot string `json:"reboot,omitempty"`
	// Resolved is how `juju resolve` asked the failed hook to be resolved (retry-hooks,
	// no-hooks) until the agent acts on it.
	Resolved string `json:"resolved,omitempty"`
}

// UnitLocal is what the unit agent has already told the charm (like the uniter's local state):
// the next hook is derived by comparing it with the model.
type UnitLocal struct {
	Installed bool `json:"installed,omitempty"`
	// Leader: the unit accepted its leadership (leader-elected queued), until it resigned.
	Leader        bool `json:"leader,omitempty"`
	ConfigVersion int  `json:"config-version"`
	// LeaderData is the leader settings' version as of the last leader-settings-changed; -1
	// when none ran since the agent started.
	LeaderData   int  `json:"leader-data"`
	CharmVersion int  `json:"charm-version,omitempty"`
	Started      bool `json:"started,omitempty"`
	Stopped      bool `json:"stopped,omitempty"`
	// RebootDetected: the agent started after its machine booted again; start runs first.
	RebootDetected bool `json:"reboot-detected,omitempty"`
	Removed        bool `json:"removed,omitempty"`
	// UpdateStatus is the agent's update-status timer count as of the last hook; Retries its
	// hook-retry timer count as of the last hook started.
	UpdateStatus int                    `json:"update-status"`
	Retries      int                    `json:"retries"`
	Relations    map[int]*RelationLocal `json:"relations,omitempty"`
	Secrets      map[string]int         `json:"secrets,omitempty"` // secret-changed already run for revision
	// OwnerHooks records the owner's secret hooks already run: "secret-remove secret:x/2",
	// "secret-expired secret:x/3", "secret-rotate secret:x@<time>".
	OwnerHooks map[string]bool `json:"owner-hooks,omitempty"`
}

// RelationLocal is a unit's view of one relation whose scope it entered (when its agent first
// saw the relation alive).
type RelationLocal struct {
	Created    bool           `json:"created"` // relation-created ran
	Broken     bool           `json:"broken,omitempty"`
	Joined     map[string]int `json:"joined,omitempty"` // remote unit → data version seen
	AppVersion int            `json:"app-version"`
	// ChangedPending names the remote unit whose relation-changed must run next: Juju runs it
	// right after that unit's relation-joined.
	ChangedPending string `json:"changed-pending,omitempty"`
}

// Relation is one integration between two applications (or a peer relation of one).
type Relation struct {
	ID          int                          `json:"id"`
	Endpoints   []RelationEndpoint           `json:"endpoints"`
	Dying       bool                         `json:"dying,omitempty"`
	AppData     map[string]map[string]string `json:"app-data"`
	AppVersion  map[string]int               `json:"app-version"`
	UnitData    map[string]map[string]string `json:"unit-data"`
	UnitVersion map[string]int               `json:"unit-version"`
}

// RelationEndpoint is one side of a relation.
type RelationEndpoint struct {
	App       string `json:"application"`
	Name      string `json:"name"`
	Role      string `json:"role"`
	Interface string `json:"interface"`
	Scope     string `json:"scope,omitempty"`
}

// Secret is a Juju secret with its revisions, grants and consumers.
type Secret struct {
	ID          string                     `json:"id"` // "secret:<xid>"
	OwnerApp    string                     `json:"owner-application,omitempty"`
	OwnerUnit   string                     `json:"owner-unit,omitempty"`
	Label       string                     `json:"label,omitempty"`
	Description string                     `json:"description,omitempty"`
	Revisions   []SecretRevision           `json:"revisions"`
	Grants      []SecretGrant              `json:"grants,omitempty"`
	Consumers   map[string]*SecretConsumer `json:"consumers,omitempty"`
	// RotatePolicy is hourly, daily, weekly, monthly, quarterly, yearly or empty (never);
	// NextRotate is when the owner next gets secret-rotate.
	RotatePolicy string    `json:"rotate-policy,omitempty"`
	NextRotate   time.Time `json:"next-rotate,omitzero"`
}

// SecretRevision is one revision's content.
type SecretRevision struct {
	Revision int               `json:"revision"`
	Content  map[string]string `json:"content"`
	// Expire is when the owner gets secret-expired for this revision (zero: never).
	Expire time.Time `json:"expire,omitzero"`
}

// SecretGrant gives an application (Unit empty) or one unit read access through a relation.
type SecretGrant struct {
	RelationID int    `json:"relation-id"`
	App        string `json:"application"`
	Unit       string `json:"unit,omitempty"`
}

// SecretConsumer is a consuming unit's tracked revision and label.
type SecretConsumer struct {
	Label   string `json:"label,omitempty"`
	Tracked int    `json:"tracked"`
}

// ActionRun is one queued, running or finished action.
type ActionRun struct {
	ID        string         `json:"id"`
	Unit      string         `json:"unit"`
	Name      string         `json:"name"`
	Params    map[string]any `json:"params"`
	Status    string         `json:"status"` // pending, running, completed, failed
	Message   string         `json:"message,omitempty"`
	Results   map[string]any `json:"results,omitempty"`
	Log       []string       `json:"log,omitempty"`
	Output    string         `json:"output,omitempty"`
	Enqueued  time.Time      `json:"enqueued"`
	Completed time.Time      `json:"completed,omitzero"`
}

func newState(name, uuid string) *State {
	return &State{
		Name: name, UUID: uuid,
		Machines:     map[string]*MachineState{},
		Applications: map[string]*Application{},
		Units:        map[string]*Unit{},
		Relations:    map[int]*Relation{},
		Secrets:      map[string]*Secret{},
		Actions:      map[string]*ActionRun{},
	}
}

// clone returns a deep copy of s: what a JSON round trip of s would give (every field is
// exported and tagged), without the encoding. Every hook gets one, taken under the model's lock,
// as its view of the model; copying through JSON instead was the model's largest cost at scale
// (37% of its CPU in a 128-unit scale-out).
func (s *State) clone() *State {
	c := deepCopy(reflect.ValueOf(s)).Interface().(*State)
	c.fill()
	return c
}

// deepCopy copies v and everything it points to: pointers, maps, slices and interfaces are
// copied anew (nil stays nil); structs field by field (a struct without exported fields, such as
// time.Time, is a value); strings, numbers and booleans as they are.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(deepCopy(v.Elem()))
		return c
	case reflect.Map:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			c.SetMapIndex(it.Key(), deepCopy(it.Value()))
		}
		return c
	case reflect.Slice:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			c.Index(i).Set(deepCopy(v.Index(i)))
		}
		return c
	case reflect.Interface:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		c := reflect.New(v.Type()).Elem()
		c.Set(deepCopy(v.Elem()))
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		for i := range v.NumField() {
			if f := c.Field(i); f.CanSet() {
				f.Set(deepCopy(v.Field(i)))
			}
		}
		return c
	}
	return v
}

// fill makes every nil map non-nil, after loading from JSON.
func (s *State) fill() {
	if s.Machines == nil {
		s.Machines = map[string]*MachineState{}
	}
	if s.Applications == nil {
		s.Applications = map[string]*Application{}
	}
	if s.Units == nil {
		s.Units = map[string]*Unit{}
	}
	if s.Relations == nil {
		s.Relations = map[int]*Relation{}
	}
	if s.Secrets == nil {
		s.Secrets = map[string]*Secret{}
	}
	if s.Actions == nil {
		s.Actions = map[string]*ActionRun{}
	}
	for _, r := range s.Relations {
		if r.AppData == nil {
			r.AppData = map[string]map[string]string{}
		}
		if r.AppVersion == nil {
			r.AppVersion = map[string]int{}
		}
		if r.UnitData == nil {
			r.UnitData = map[string]map[string]string{}
		}
		if r.UnitVersion == nil {
			r.UnitVersion = map[string]int{}
		}
	}
	for _, u := range s.Units {
		if u.Seen.Relations == nil {
			u.Seen.Relations = map[int]*RelationLocal{}
		}
		if u.Seen.Secrets == nil {
			u.Seen.Secrets = map[string]int{}
		}
		if u.Seen.OwnerHooks == nil {
			u.Seen.OwnerHooks = map[string]bool{}
		}
	}
	for _, sec := range s.Secrets {
		if sec.Consumers == nil {
			sec.Consumers = map[string]*SecretConsumer{}
		}
	}
}

// loadState reads path; a missing file gives nil and no error.
func loadState(path string) (*State, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read model state: %w", err)
	}
	s := &State{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("cannot parse model state %s: %w", path, err)
	}
	s.fill()
	return s, nil
}

// writeFileAtomic writes data to a temporary file in the same directory, syncs it and renames
// it over path.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// encode encodes s compactly (the writer indents it, outside the model's lock).
func (s *State) encode() ([]byte, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("cannot encode model state: %w", err)
	}
	return data, nil
}

// stateWriter writes the state file from its own goroutine, so that the unit agents' saves
// after every hook do not hold the model's lock through a file creation and an fsync (2 ms
// here with 30 units, while every hook tool call of every unit waits for the lock). Every
// write is still atomic and synced; a state not yet written is replaced by a newer one, since
// only the latest matters. Verbs and Close wait for their state to be on disk (wait).
type stateWriter struct {
	path    string
	mu      sync.Mutex
	cond    *sync.Cond
	data    []byte // latest state not yet written, nil when none
	gen     uint64 // generation of the latest state put
	done    uint64 // generation of the latest state written (or failed)
	err     error  // the outcome of that write
	running bool   // a goroutine is writing
}

func newStateWriter(path string) *stateWriter {
	w := &stateWriter{path: path}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// put queues data as the state to write and returns its generation, for wait.
func (w *stateWriter) put(data []byte) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	w.data = data
	if !w.running {
		w.running = true
		go w.loop()
	}
	return w.gen
}

func (w *stateWriter) loop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.data != nil {
		data, gen := w.data, w.gen
		w.data = nil
		w.mu.Unlock()
		var buf bytes.Buffer
		err := json.Indent(&buf, data, "", "  ")
		if err == nil {
			err = writeFileAtomic(w.path, buf.Bytes(), 0o600)
		}
		w.mu.Lock()
		w.done, w.err = gen, err
		w.cond.Broadcast()
	}
	w.running = false
}

// wait returns once the state of generation gen, or a newer one, is written, with the error of
// that write.
func (w *stateWriter) wait(gen uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.done < gen {
		w.cond.Wait()
	}
	if w.err != nil {
		return fmt.Errorf("cannot save model state: %w", w.err)
	}
	return nil
}

// relationEndpoint returns the endpoint of app in r (for a peer relation, its only endpoint).
func (r *Relation) endpointOf(app string) (RelationEndpoint, bool) {
	for _, ep := range r.Endpoints {
		if ep.App == app {
			return ep, true
		}
	}
	return RelationEndpoint{}, false
}

// remoteApp returns the application on the other side of r from app (itself for peers).
func (r *Relation) remoteApp(app string) string {
	for _, ep := range r.Endpoints {
		if ep.App != app {
			return ep.App
		}
	}
	return app
}

func (r *Relation) isPeer() bool { return len(r.Endpoints) == 1 }

// containerScoped reports a relation of which one endpoint is container-scoped: Juju then
// scopes the whole relation to the units of one machine (state/relation.go).
func (r *Relation) containerScoped() bool {
	for _, ep := range r.Endpoints {
		if ep.Scope == "container" {
			return true
		}
	}
	return false
}

// key is the relation's key as juju shows it: "a:x b:y".
func (r *Relation) key() string {
	s := ""
	for i, ep := range r.Endpoints {
		if i > 0 {
			s += " "
		}
		s += ep.App + ":" + ep.Name
	}
	return s
}

// secretByLabel finds a secret by its owner label (as seen by unit) or consumer label.
func (s *State) secretByLabel(unit, label string) *Secret {
	u := s.Units[unit]
	for _, sec := range s.Secrets {
		if sec.Label == label && u != nil && (sec.OwnerApp == u.App || sec.OwnerUnit == unit) {
			return sec
		}
	}
	for _, sec := range s.Secrets {
		if c := sec.Consumers[unit]; c != nil && c.Label == label {
			return sec
		}
	}
	return nil
}

func (sec *Secret) latest() SecretRevision {
	return sec.Revisions[len(sec.Revisions)-1]
}

// tracked reports whether a consumer still tracks revision n.
func (sec *Secret) tracked(n int) bool {
	for _, c := range sec.Consumers {
		if c.Tracked == n {
			return true
		}
	}
	return false
}

func (sec *Secret) revision(n int) (SecretRevision, bool) {
	for _, r := range sec.Revisions {
		if r.Revision == n {
			return r, true
		}
	}
	return SecretRevision{}, false
}

// ownedBy reports whether unit (of app) owns sec.
func (sec *Secret) ownedBy(unit, app string) bool {
	return (sec.OwnerApp != "" && sec.OwnerApp == app) || (sec.OwnerUnit != "" && sec.OwnerUnit == unit)
}

// readableBy reports whether unit may read sec as a consumer.
func (sec *Secret) grantedTo(unit, app string) bool {
	for _, g := range sec.Grants {
		if g.Unit == unit || (g.Unit == "" && g.App == app) {
			return true
		}
	}
	return false
}
