package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/juju/charm/v12"
	"github.com/juju/errors"
	"github.com/juju/loggo"
	"github.com/juju/names/v5"

	"github.com/charmed-slurm/operators/tests/model"
	"github.com/juju/juju/core/life"
	"github.com/juju/juju/core/network"
	"github.com/juju/juju/core/relation"
	"github.com/juju/juju/core/secrets"
	"github.com/juju/juju/internal/worker/uniter/runner/jujuc"
	"github.com/juju/juju/rpc/params"
)

// hookContext is the jujuc.Context Juju's hook tools run against in the referee: the unit's
// hook context over the model's state as the tool saw it (model.ToolCall.Before). Juju's
// commands (internal/worker/uniter/runner/jujuc) parse, validate, format and call it; it
// answers as Juju's runner/context.HookContext answers from its API (the rules of
// internal/worker/uniter/runner/context and of the controller's uniter facade, which cannot
// run here), and writes into s, which is then compared with the model's state after the call.
// Methods of no tool the model serves (storage, payloads, resources, pod specs, goal-state,
// credential-get, juju-reboot) are left to the nil embedded interface: calling one panics,
// which the referee reports.
type hookContext struct {
	jujuc.Context
	s       *model.State
	call    *model.ToolCall
	logs    *[]string
	failed  bool
	message string
}

var _ jujuc.Context = (*hookContext)(nil)

func (c *hookContext) unit() *model.Unit       { return c.s.Units[c.call.Unit] }
func (c *hookContext) app() *model.Application { return c.s.Applications[c.call.App] }
func (c *hookContext) leader() bool            { return c.app().Leader == c.call.Unit }

func (c *hookContext) UnitName() string { return c.call.Unit }

// GetLogger is the unit's logger; juju-log lines are kept as the model writes them to the
// debug log ("unit-<app>-<n>: <time> <LEVEL> <module> <message>", the time left out).
func (c *hookContext) GetLogger(module string) loggo.Logger {
	ctx := loggo.NewContext(loggo.TRACE)
	ctx.AddWriter("referee", loggo.NewMinimumLevelWriter(writerFunc(func(e loggo.Entry) {
		*c.logs = append(*c.logs, fmt.Sprintf("%s: %s %s %s", "unit-"+strings.ReplaceAll(c.call.Unit, "/", "-"), e.Level, e.Module, e.Message))
	}), loggo.TRACE))
	return ctx.GetLogger(module)
}

type writerFunc func(loggo.Entry)

func (f writerFunc) Write(e loggo.Entry) { f(e) }

// ConfigSettings is the application's effective config: set values, else the charm's defaults
// (an option without either is nil, as Juju's charm.Settings hold it).
func (c *hookContext) ConfigSettings() (charm.Settings, error) {
	a := c.app()
	out := charm.Settings{}
	for name, o := range a.Charm.Options {
		if v, ok := a.Config[name]; ok {
			out[name] = v
		} else {
			out[name] = o.Default
		}
	}
	return out, nil
}

// Status.

func (c *hookContext) UnitStatus() (*jujuc.StatusInfo, error) {
	w := c.unit().Workload
	return &jujuc.StatusInfo{Status: w.Status, Info: w.Message, Data: map[string]interface{}{}}, nil
}

func (c *hookContext) SetUnitStatus(st jujuc.StatusInfo) error {
	u := c.unit()
	u.Workload.Status, u.Workload.Message = st.Status, st.Info
	return nil
}

// ErrIsNotLeader is runner/context's error for application status by a non-leader.
var errIsNotLeader = errors.Errorf("this unit is not the leader")

func (c *hookContext) ApplicationStatus() (jujuc.ApplicationStatusInfo, error) {
	if !c.leader() {
		return jujuc.ApplicationStatusInfo{}, errIsNotLeader
	}
	a := c.app()
	out := jujuc.ApplicationStatusInfo{Application: jujuc.StatusInfo{
		Tag: names.NewApplicationTag(a.Name).String(), Status: a.Status.Status, Info: a.Status.Message, Data: map[string]interface{}{}}}
	for _, name := range sortedKeys(c.s.Units) {
		u := c.s.Units[name]
		if u.App == a.Name {
			out.Units = append(out.Units, jujuc.StatusInfo{Tag: name, Status: u.Workload.Status, Info: u.Workload.Message, Data: map[string]interface{}{}})
		}
	}
	return out, nil
}

func (c *hookContext) SetApplicationStatus(st jujuc.StatusInfo) error {
	if !c.leader() {
		return errIsNotLeader
	}
	a := c.app()
	a.Status.Status, a.Status.Message = st.Status, st.Info
	return nil
}

// Version.

func (c *hookContext) UnitWorkloadVersion() (string, error) { return c.app().Version, nil }
func (c *hookContext) SetUnitWorkloadVersion(v string) error {
	c.app().Version = v
	return nil
}

// Leadership.

func (c *hookContext) IsLeader() (bool, error) { return c.leader(), nil }

func (c *hookContext) LeaderSettings() (map[string]string, error) {
	out := map[string]string{}
	for k, v := range c.app().LeaderData {
		out[k] = v
	}
	return out, nil
}

func (c *hookContext) WriteLeaderSettings(kv map[string]string) error {
	if !c.leader() {
		return errors.New("cannot write settings: not the leader")
	}
	a := c.app()
	a.LeaderData = map[string]string{}
	for k, v := range kv {
		if v != "" {
			a.LeaderData[k] = v
		}
	}
	return nil
}

// Charm state.

func (c *hookContext) GetCharmState() (map[string]string, error) {
	out := map[string]string{}
	for k, v := range c.unit().CharmState {
		out[k] = v
	}
	return out, nil
}

func (c *hookContext) GetCharmStateValue(key string) (string, error) {
	v, ok := c.unit().CharmState[key]
	if !ok {
		return "", errors.NotFoundf("%q", key)
	}
	return v, nil
}

func (c *hookContext) SetCharmStateValue(k, v string) error {
	u := c.unit()
	if u.CharmState == nil {
		u.CharmState = map[string]string{}
	}
	u.CharmState[k] = v
	return nil
}

func (c *hookContext) DeleteCharmStateValue(k string) error {
	delete(c.unit().CharmState, k)
	return nil
}

// Actions.

func (c *hookContext) action() (*model.ActionRun, error) {
	if c.call.Hook.Kind != "action" {
		return nil, errors.New("not running an action")
	}
	act := c.s.Actions[c.call.Hook.ActionID]
	if act == nil {
		return nil, errors.New("not running an action")
	}
	return act, nil
}

func (c *hookContext) ActionParams() (map[string]interface{}, error) {
	act, err := c.action()
	if err != nil {
		return nil, err
	}
	return act.Params, nil
}

// UpdateActionResults nests value under keys, as runner/context's addValueToMap does.
func (c *hookContext) UpdateActionResults(keys []string, value interface{}) error {
	act, err := c.action()
	if err != nil {
		return err
	}
	if act.Results == nil {
		act.Results = map[string]any{}
	}
	m := act.Results
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = value
	return nil
}

func (c *hookContext) SetActionMessage(msg string) error {
	if _, err := c.action(); err != nil {
		return err
	}
	c.message = msg
	return nil
}

func (c *hookContext) SetActionFailed() error {
	if _, err := c.action(); err != nil {
		return err
	}
	c.failed = true
	return nil
}

func (c *hookContext) LogActionMessage(msg string) error {
	act, err := c.action()
	if err != nil {
		return err
	}
	act.Log = append(act.Log, msg)
	return nil
}

// Networking.

func (c *hookContext) address() (string, error) {
	ms := c.s.Machines[c.call.Machine]
	if ms == nil || ms.Address == "" {
		return "", errors.NotFoundf("private address")
	}
	return ms.Address, nil
}

func (c *hookContext) PublicAddress() (string, error) {
	a, err := c.address()
	if err != nil {
		return "", errors.NotFoundf("public address")
	}
	return a, nil
}

func (c *hookContext) PrivateAddress() (string, error) { return c.address() }

func (c *hookContext) AvailabilityZone() (string, error) { return "", nil }

func (c *hookContext) OpenPortRange(_ string, pr network.PortRange) error {
	return c.setPort(pr, true)
}

func (c *hookContext) ClosePortRange(_ string, pr network.PortRange) error {
	return c.setPort(pr, false)
}

func portString(pr network.PortRange) string {
	if pr.Protocol == "icmp" {
		return "icmp"
	}
	if pr.FromPort == pr.ToPort {
		return fmt.Sprintf("%d/%s", pr.FromPort, pr.Protocol)
	}
	return fmt.Sprintf("%d-%d/%s", pr.FromPort, pr.ToPort, pr.Protocol)
}

func (c *hookContext) setPort(pr network.PortRange, open bool) error {
	u := c.unit()
	p := portString(pr)
	var keep []string
	for _, x := range u.Ports {
		if x != p {
			keep = append(keep, x)
		}
	}
	if open {
		keep = append(keep, p)
	}
	sort.Strings(keep)
	u.Ports = keep
	return nil
}

func (c *hookContext) OpenedPortRanges() network.GroupedPortRanges {
	out := network.GroupedPortRanges{}
	for _, p := range c.unit().Ports {
		pr, err := network.ParsePortRange(p)
		if err == nil {
			out[""] = append(out[""], pr)
		}
	}
	return out
}

// NetworkInfo answers as the model's single-address machines do: one interface, the
// machine's address as bind, ingress and egress (/32).
func (c *hookContext) NetworkInfo(bindings []string, relID int) (map[string]params.NetworkInfoResult, error) {
	out := map[string]params.NetworkInfoResult{}
	for _, b := range bindings {
		if b == "" && relID >= 0 {
			r := c.s.Relations[relID]
			if r == nil {
				return nil, errors.NotFoundf("relation %d", relID)
			}
			b = endpointOf(r, c.call.App).Name
		}
		if !hasEndpoint(c.app().Charm, b) && b != "juju-info" {
			out[b] = params.NetworkInfoResult{Error: &params.Error{Message: fmt.Sprintf("undefined for unit charm: binding name %q not defined by the unit's charm", b)}}
			continue
		}
		addr, err := c.address()
		if err != nil {
			return nil, err
		}
		cidr := addr + "/32"
		out[b] = params.NetworkInfoResult{
			Info:             []params.NetworkInfo{{InterfaceName: "eth0", Addresses: []params.InterfaceAddress{{Address: addr, CIDR: cidr}}}},
			EgressSubnets:    []string{cidr},
			IngressAddresses: []string{addr},
		}
	}
	return out, nil
}

// Relations.

func hasEndpoint(ch *model.Charm, name string) bool {
	for _, eps := range []map[string]model.Endpoint{ch.Provides, ch.Requires, ch.Peers} {
		if _, ok := eps[name]; ok {
			return true
		}
	}
	return false
}

func endpointOf(r *model.Relation, app string) model.RelationEndpoint {
	for _, ep := range r.Endpoints {
		if ep.App == app {
			return ep
		}
	}
	return model.RelationEndpoint{}
}

func inRelation(r *model.Relation, app string) bool { return endpointOf(r, app).App == app }

func remoteApp(r *model.Relation, app string) string {
	for _, ep := range r.Endpoints {
		if ep.App != app {
			return ep.App
		}
	}
	return app
}

// contextRelation reports whether relation r is in the unit's hook context and whether it is
// broken there (runner/context/contextfactory.go: every relation the unit's tracker knows,
// the one whose relation-broken runs flagged broken).
func (c *hookContext) contextRelation(r *model.Relation) (in, broken bool) {
	if !inRelation(r, c.call.App) {
		return false, false
	}
	rl := c.unit().Seen.Relations[r.ID]
	if c.call.Hook.Kind == "relation-broken" && c.call.Hook.RelationID == r.ID {
		return true, true
	}
	return rl == nil && !r.Dying || rl != nil && !rl.Broken, false
}

func (c *hookContext) Relation(id int) (jujuc.ContextRelation, error) {
	r := c.s.Relations[id]
	if r == nil {
		return nil, errors.NotFoundf("relation")
	}
	in, broken := c.contextRelation(r)
	if !in {
		return nil, errors.NotFoundf("relation")
	}
	return &contextRelation{c: c, r: r, broken: broken}, nil
}

func (c *hookContext) RelationIds() ([]int, error) {
	ids := []int{}
	for _, id := range sortedKeys(c.s.Relations) {
		if in, broken := c.contextRelation(c.s.Relations[id]); in && !broken {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func (c *hookContext) HookRelation() (jujuc.ContextRelation, error) {
	if !strings.HasPrefix(c.call.Hook.Kind, "relation-") {
		return nil, errors.NotFoundf("relation")
	}
	return c.Relation(c.call.Hook.RelationID)
}

func (c *hookContext) RemoteUnitName() (string, error) {
	if c.call.Hook.RemoteUnit == "" {
		return "", errors.NotFoundf("remote unit")
	}
	return c.call.Hook.RemoteUnit, nil
}

func (c *hookContext) RemoteApplicationName() (string, error) {
	if c.call.Hook.RemoteApp == "" {
		return "", errors.NotFoundf("saas application")
	}
	return c.call.Hook.RemoteApp, nil
}

// contextRelation is runner/context.ContextRelation over the model's relation.
type contextRelation struct {
	c      *hookContext
	r      *model.Relation
	broken bool
}

func (cr *contextRelation) Id() int { return cr.r.ID }
func (cr *contextRelation) Name() string {
	return endpointOf(cr.r, cr.c.call.App).Name
}
func (cr *contextRelation) RelationTag() names.RelationTag {
	return names.NewRelationTag(relationKey(cr.r))
}
func (cr *contextRelation) FakeId() string          { return fmt.Sprintf("%s:%d", cr.Name(), cr.r.ID) }
func (cr *contextRelation) Suspended() bool         { return false }
func (cr *contextRelation) RemoteModelUUID() string { return "" }
func (cr *contextRelation) SetStatus(relation.Status) error {
	return errors.NotImplementedf("relation status")
}
func (cr *contextRelation) RemoteApplicationName() string { return remoteApp(cr.r, cr.c.call.App) }
func (cr *contextRelation) Life() life.Value {
	if cr.r.Dying {
		return life.Dying
	}
	return life.Alive
}

// relationKey is Juju's relation key: "app:ep" for a peer relation, else the two endpoints,
// the requirer... sorted as state/relation.go sorts them (by role: provider first).
func relationKey(r *model.Relation) string {
	var parts []string
	for _, ep := range r.Endpoints {
		parts = append(parts, ep.App+":"+ep.Name)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// UnitNames is the relation's members as the unit sees them in this hook (its relation state,
// with the joining unit added in relation-joined and the departing one gone in
// relation-departed, as Juju's relation cache is prepared).
func (cr *contextRelation) UnitNames() []string {
	set := map[string]bool{}
	if rl := cr.c.unit().Seen.Relations[cr.r.ID]; rl != nil {
		for u := range rl.Joined {
			set[u] = true
		}
	}
	h := cr.c.call.Hook
	if h.RelationID == cr.r.ID {
		switch h.Kind {
		case "relation-joined":
			set[h.RemoteUnit] = true
		case "relation-departed":
			delete(set, h.RemoteUnit)
		}
	}
	return sortedKeys(set)
}

// settings is a relation databag the hook writes (jujuc.Settings).
type settings struct{ m map[string]string }

func (s settings) Map() params.Settings {
	out := params.Settings{}
	for k, v := range s.m {
		out[k] = v
	}
	return out
}
func (s settings) Set(k, v string) { s.m[k] = v }
func (s settings) Delete(k string) { delete(s.m, k) }

func (cr *contextRelation) Settings() (jujuc.Settings, error) {
	if cr.r.UnitData[cr.c.call.Unit] == nil {
		cr.r.UnitData[cr.c.call.Unit] = map[string]string{}
	}
	return settings{cr.r.UnitData[cr.c.call.Unit]}, nil
}

// ApplicationSettings is the unit's own application databag, which only the leader may
// read or write (the uniter facade's ReadLocalApplicationSettings: permission denied).
func (cr *contextRelation) ApplicationSettings() (jujuc.Settings, error) {
	if !cr.c.leader() {
		return nil, errors.New("permission denied (unit is not the leader)")
	}
	if cr.r.AppData[cr.c.call.App] == nil {
		cr.r.AppData[cr.c.call.App] = map[string]string{}
	}
	return settings{cr.r.AppData[cr.c.call.App]}, nil
}

func (cr *contextRelation) ReadSettings(unit string) (params.Settings, error) {
	app, _, _ := strings.Cut(unit, "/")
	if !inRelation(cr.r, app) {
		return nil, errors.Errorf("unit %q: settings not found", unit)
	}
	data := cr.r.UnitData[unit]
	if _, known := cr.c.s.Units[unit]; !known && data == nil {
		return nil, errors.Errorf("unit %q: settings not found", unit)
	}
	return settings{data}.Map(), nil
}

func (cr *contextRelation) ReadApplicationSettings(app string) (params.Settings, error) {
	if !inRelation(cr.r, app) {
		return nil, errors.Errorf("application %q: settings not found", app)
	}
	if app == cr.c.call.App && !cr.c.leader() && len(cr.r.Endpoints) > 1 {
		return nil, errors.New("permission denied (unit is not the leader)")
	}
	return settings{cr.r.AppData[app]}.Map(), nil
}

// Secrets.

func secretID(uri *secrets.URI) string { return "secret:" + uri.ID }

func (c *hookContext) ownedBy(sec *model.Secret) bool {
	return sec.OwnerUnit == c.call.Unit || sec.OwnerApp == c.call.App
}

func (c *hookContext) granted(sec *model.Secret) bool {
	for _, g := range sec.Grants {
		if g.App == c.call.App && (g.Unit == "" || g.Unit == c.call.Unit) {
			return true
		}
	}
	return false
}

func latest(sec *model.Secret) model.SecretRevision { return sec.Revisions[len(sec.Revisions)-1] }

func (c *hookContext) byLabel(label string) *model.Secret {
	for _, id := range sortedKeys(c.s.Secrets) {
		sec := c.s.Secrets[id]
		if c.ownedBy(sec) && sec.Label == label {
			return sec
		}
		if cons := sec.Consumers[c.call.Unit]; cons != nil && cons.Label == label {
			return sec
		}
	}
	return nil
}

// GetSecret reads a secret as the secrets backend client does: the owner reads the latest
// revision; a consumer it is granted to reads the revision it tracks (the latest on first
// read, or with --refresh; --peek reads the latest and keeps the tracked one).
func (c *hookContext) GetSecret(uri *secrets.URI, label string, refresh, peek bool) (secrets.SecretValue, error) {
	if uri == nil && label == "" {
		return nil, errors.NotValidf("empty URI and label")
	}
	var sec *model.Secret
	if uri != nil {
		sec = c.s.Secrets[secretID(uri)]
	} else {
		sec = c.byLabel(label)
	}
	if sec == nil {
		if uri != nil {
			return nil, errors.NotFoundf("secret %q", uri.ID)
		}
		return nil, errors.NotFoundf("secret with label %q", label)
	}
	if c.ownedBy(sec) {
		if uri != nil && label != "" {
			sec.Label = label
		}
		return secrets.NewSecretValue(encode(latest(sec).Content)), nil
	}
	if !c.granted(sec) {
		return nil, errors.Errorf("permission denied")
	}
	cons := sec.Consumers[c.call.Unit]
	tracked := 0
	if cons != nil {
		tracked = cons.Tracked
	}
	rev, newTracked := tracked, tracked
	switch {
	case peek:
		rev = latest(sec).Revision
	case refresh || tracked == 0:
		rev, newTracked = latest(sec).Revision, latest(sec).Revision
	}
	var content map[string]string
	for _, r := range sec.Revisions {
		if r.Revision == rev {
			content = r.Content
		}
	}
	if content == nil {
		return nil, errors.NotFoundf("secret %q revision %d", sec.ID, rev)
	}
	newLabel := ""
	if cons != nil {
		newLabel = cons.Label
	}
	if label != "" && uri != nil {
		newLabel = label
	}
	if sec.Consumers == nil {
		sec.Consumers = map[string]*model.SecretConsumer{}
	}
	sec.Consumers[c.call.Unit] = &model.SecretConsumer{Label: newLabel, Tracked: newTracked}
	return secrets.NewSecretValue(encode(content)), nil
}

// encode is the secret content as Juju holds it: each value base64 encoded.
func encode(content map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range content {
		out[k] = base64Encode(v)
	}
	return out
}

// mayManage: an application's secret only by its leader (runner/context: ErrIsNotLeader),
// another's not at all (the secrets manager facade: permission denied).
func (c *hookContext) mayManage(sec *model.Secret) error {
	if !c.ownedBy(sec) {
		return errors.New("permission denied")
	}
	if sec.OwnerApp != "" && !c.leader() {
		return errIsNotLeader
	}
	return nil
}

func (c *hookContext) managed(uri *secrets.URI) (*model.Secret, error) {
	sec := c.s.Secrets[secretID(uri)]
	if sec == nil {
		return nil, errors.NotFoundf("secret %q", uri.ID)
	}
	return sec, c.mayManage(sec)
}

// CreateSecret adds the secret under the id the model gave it (the one new in the model's
// state after the call), so that the two states compare.
func (c *hookContext) CreateSecret(args *jujuc.SecretCreateArgs) (*secrets.URI, error) {
	sec := &model.Secret{Consumers: map[string]*model.SecretConsumer{}}
	switch args.OwnerTag.Kind() {
	case names.ApplicationTagKind:
		if !c.leader() {
			return nil, errIsNotLeader
		}
		sec.OwnerApp = c.call.App
	default:
		sec.OwnerUnit = c.call.Unit
	}
	if args.Label != nil {
		if c.byLabel(*args.Label) != nil {
			return nil, errors.AlreadyExistsf("secret with label %q", *args.Label)
		}
		sec.Label = *args.Label
	}
	for id := range c.call.After.Secrets {
		if c.s.Secrets[id] == nil {
			sec.ID = id
		}
	}
	if sec.ID == "" {
		sec.ID = "secret:" + secrets.NewURI().ID
	}
	content, err := args.Value.Values()
	if err != nil {
		return nil, err
	}
	sec.Revisions = []model.SecretRevision{{Revision: 1, Content: content}}
	c.update(sec, &args.SecretUpdateArgs)
	c.s.Secrets[sec.ID] = sec
	return secrets.ParseURI(sec.ID)
}

// update applies the metadata of args; the times are taken from the model's state after the
// call (they are set from the clock when the tool runs).
func (c *hookContext) update(sec *model.Secret, args *jujuc.SecretUpdateArgs) {
	after := c.call.After.Secrets[sec.ID]
	if args.Description != nil {
		sec.Description = *args.Description
	}
	if args.Label != nil {
		sec.Label = *args.Label
	}
	if args.RotatePolicy != nil {
		sec.RotatePolicy = string(*args.RotatePolicy)
		if *args.RotatePolicy == secrets.RotateNever {
			sec.RotatePolicy = ""
		}
		sec.NextRotate = time.Time{}
		if after != nil {
			sec.NextRotate = after.NextRotate
		}
	}
	if args.ExpireTime != nil && after != nil && len(after.Revisions) > 0 {
		sec.Revisions[len(sec.Revisions)-1].Expire = latest(after).Expire
	}
}

func (c *hookContext) UpdateSecret(uri *secrets.URI, args *jujuc.SecretUpdateArgs) error {
	sec, err := c.managed(uri)
	if err != nil {
		return err
	}
	if args.Value != nil && !args.Value.IsEmpty() {
		content, err := args.Value.Values()
		if err != nil {
			return err
		}
		if fmt.Sprint(content) != fmt.Sprint(latest(sec).Content) {
			sec.Revisions = append(sec.Revisions, model.SecretRevision{Revision: latest(sec).Revision + 1, Content: content})
		}
	}
	c.update(sec, args)
	return nil
}

func (c *hookContext) RemoveSecret(uri *secrets.URI, revision *int) error {
	sec, err := c.managed(uri)
	if err != nil {
		return err
	}
	if revision == nil || len(sec.Revisions) == 1 {
		delete(c.s.Secrets, sec.ID)
		return nil
	}
	var keep []model.SecretRevision
	found := false
	for _, r := range sec.Revisions {
		if r.Revision != *revision {
			keep = append(keep, r)
		} else {
			found = true
		}
	}
	if !found {
		return errors.NotFoundf("secret %q revision %d", uri.ID, *revision)
	}
	sec.Revisions = keep
	return nil
}

func (c *hookContext) grantTarget(args *jujuc.SecretGrantRevokeArgs) (relID int, app, unit string, err error) {
	relID = -1
	if args.RelationKey != nil {
		relID = -2
		for _, r := range c.s.Relations {
			if relationKey(r) == *args.RelationKey {
				relID = r.ID
			}
		}
	}
	if args.ApplicationName != nil {
		app = *args.ApplicationName
	}
	if args.UnitName != nil {
		unit = *args.UnitName
		app, _, _ = strings.Cut(unit, "/")
	}
	return relID, app, unit, nil
}

func (c *hookContext) GrantSecret(uri *secrets.URI, args *jujuc.SecretGrantRevokeArgs) error {
	sec, err := c.managed(uri)
	if err != nil {
		return err
	}
	relID, app, unit, _ := c.grantTarget(args)
	if relID < 0 {
		return errors.NotFoundf("relation")
	}
	for _, g := range sec.Grants {
		if g.RelationID == relID && g.App == app && g.Unit == unit {
			return nil
		}
	}
	sec.Grants = append(sec.Grants, model.SecretGrant{RelationID: relID, App: app, Unit: unit})
	return nil
}

func (c *hookContext) RevokeSecret(uri *secrets.URI, args *jujuc.SecretGrantRevokeArgs) error {
	sec, err := c.managed(uri)
	if err != nil {
		return err
	}
	relID, app, unit, _ := c.grantTarget(args)
	var keep []model.SecretGrant
	for _, g := range sec.Grants {
		match := (relID == -1 || g.RelationID == relID) && (app == "" || g.App == app) && (unit == "" || g.Unit == unit)
		if !match {
			keep = append(keep, g)
		}
	}
	sec.Grants = keep
	for cu := range sec.Consumers {
		capp, _, _ := strings.Cut(cu, "/")
		ok := false
		for _, g := range sec.Grants {
			if g.App == capp && (g.Unit == "" || g.Unit == cu) {
				ok = true
			}
		}
		if !ok {
			delete(sec.Consumers, cu)
		}
	}
	return nil
}

// SecretMetadata is the unit's owned secrets (the application's for any unit of it, as
// the secrets manager facade lists them), by secret id.
func (c *hookContext) SecretMetadata() (map[string]jujuc.SecretMetadata, error) {
	out := map[string]jujuc.SecretMetadata{}
	for id, sec := range c.s.Secrets {
		if !c.ownedBy(sec) || len(sec.Revisions) == 0 {
			continue
		}
		var owner names.Tag = names.NewApplicationTag(c.call.App)
		if sec.OwnerUnit != "" {
			owner = names.NewUnitTag(sec.OwnerUnit)
		}
		md := jujuc.SecretMetadata{Owner: owner, Description: sec.Description, Label: sec.Label,
			RotatePolicy: secrets.RotatePolicy(sec.RotatePolicy), LatestRevision: latest(sec).Revision}
		if md.RotatePolicy == "" {
			md.RotatePolicy = secrets.RotateNever
		}
		if e := latest(sec).Expire; !e.IsZero() {
			md.LatestExpireTime = &e
		}
		if !sec.NextRotate.IsZero() {
			t := sec.NextRotate
			md.NextRotateTime = &t
		}
		out[strings.TrimPrefix(id, "secret:")] = md
	}
	return out, nil
}

func sortedKeys[K interface{ ~string | ~int }, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

var _ = strconv.Itoa
