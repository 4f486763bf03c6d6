package jujutest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/libs/juju"
)

// toolError is a hook tool failure as Juju reports it.
type toolError struct {
	code int    // 1: the operation failed; 2: bad usage
	msg  string // printed as "ERROR <msg>"
	rule string // non-empty: a broken Juju rule, reported to the test
}

func failf(format string, args ...any) *toolError {
	return &toolError{code: 1, msg: fmt.Sprintf(format, args...)}
}

func usagef(format string, args ...any) *toolError {
	return &toolError{code: 2, msg: fmt.Sprintf(format, args...)}
}

func (e *toolError) breaks(rule string) *toolError {
	e.rule = rule
	return e
}

// args is a parsed command line.
type args struct {
	tool  string
	flags map[string]string
	pos   []string
	stdin []byte
}

func (a *args) has(name string) bool { _, ok := a.flags[name]; return ok }

type toolSpec struct {
	bools  []string
	values []string
	// json: the tool prints output and must be asked for --format=json.
	json bool
	run  func(m *model, a *args) ([]byte, *toolError)
}

var tools = map[string]toolSpec{
	"relation-ids":            {values: []string{"format"}, json: true, run: (*model).relationIDs},
	"relation-list":           {bools: []string{"app"}, values: []string{"format", "r", "relation"}, json: true, run: (*model).relationList},
	"relation-get":            {bools: []string{"app"}, values: []string{"format", "r", "relation"}, json: true, run: (*model).relationGet},
	"relation-set":            {bools: []string{"app"}, values: []string{"format", "r", "relation", "file"}, run: (*model).relationSet},
	"config-get":              {bools: []string{"all", "a"}, values: []string{"format"}, json: true, run: (*model).configGet},
	"is-leader":               {values: []string{"format"}, json: true, run: (*model).isLeader},
	"status-set":              {bools: []string{"application"}, run: (*model).statusSet},
	"status-get":              {bools: []string{"application", "include-data"}, values: []string{"format"}, json: true, run: (*model).statusGet},
	"application-version-set": {run: (*model).applicationVersionSet},
	"action-get":              {values: []string{"format"}, json: true, run: (*model).actionGet},
	"action-set":              {run: (*model).actionSet},
	"action-fail":             {run: (*model).actionFail},
	"action-log":              {run: (*model).actionLog},
	"secret-add":              {values: []string{"label", "description", "owner", "expire", "rotate", "file"}, run: (*model).secretAdd},
	"secret-get":              {bools: []string{"peek", "refresh"}, values: []string{"format", "label"}, json: true, run: (*model).secretGet},
	"secret-set":              {values: []string{"label", "description", "owner", "expire", "rotate", "file"}, run: (*model).secretSet},
	"secret-grant":            {values: []string{"r", "relation", "unit"}, run: (*model).secretGrant},
	"secret-revoke":           {values: []string{"r", "relation", "unit", "app", "application"}, run: (*model).secretRevoke},
	"secret-remove":           {values: []string{"revision"}, run: (*model).secretRemove},
	"secret-info-get":         {values: []string{"format", "label"}, json: true, run: (*model).secretInfoGet},
	"secret-ids":              {values: []string{"format"}, json: true, run: (*model).secretIDs},
	"open-port":               {values: []string{"endpoints"}, run: (*model).openPort},
	"close-port":              {values: []string{"endpoints"}, run: (*model).closePort},
	"opened-ports":            {bools: []string{"endpoints"}, values: []string{"format"}, json: true, run: (*model).openedPorts},
	"network-get":             {bools: []string{"ingress-address", "bind-address", "egress-subnets", "primary-address"}, values: []string{"format", "r", "relation"}, json: true, run: (*model).networkGet},
	"unit-get":                {values: []string{"format"}, json: true, run: (*model).unitGet},
	"juju-log":                {bools: []string{"debug"}, values: []string{"l", "log-level"}, run: (*model).jujuLog},
}

// parse parses argv like Juju's flag package: -x and --x alike,
// --x=value or --x value, flags and arguments interspersed, "--" ends the
// flags.
func parse(spec toolSpec, argv []string) (*args, *toolError) {
	a := &args{tool: argv[0], flags: map[string]string{}}
	isBool := map[string]bool{}
	for _, b := range spec.bools {
		isBool[b] = true
	}
	isValue := map[string]bool{}
	for _, v := range spec.values {
		isValue[v] = true
	}
	rest := argv[1:]
	for i := 0; i < len(rest); i++ {
		arg := rest[i]
		if arg == "--" {
			a.pos = append(a.pos, rest[i+1:]...)
			break
		}
		if len(arg) < 2 || arg[0] != '-' {
			a.pos = append(a.pos, arg)
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-")
		name, val, hasVal := strings.Cut(name, "=")
		switch {
		case isBool[name]:
			if hasVal && val != "true" && val != "false" {
				return nil, usagef("invalid value %q for flag --%s", val, name)
			}
			if !hasVal || val == "true" {
				a.flags[name] = "true"
			} else {
				delete(a.flags, name)
			}
		case isValue[name]:
			if !hasVal {
				if i+1 >= len(rest) {
					return nil, usagef("option needs an argument: %s", flagWithMinus(name))
				}
				i++
				val = rest[i]
			}
			a.flags[name] = val
		default:
			return nil, usagef("option provided but not defined: %s", arg)
		}
	}
	return a, nil
}

// Run implements juju.Runner.
func (m *model) Run(_ context.Context, c juju.Command) (juju.Result, error) {
	m.s.T.Helper()
	if len(c.Args) == 0 {
		return juju.Result{}, fmt.Errorf("jujutest: empty command")
	}
	spec, ok := tools[c.Args[0]]
	if !ok {
		m.s.T.Errorf("jujutest: hook tool %q is not modelled (argv %q)", c.Args[0], c.Args)
		return juju.Result{}, fmt.Errorf("jujutest: hook tool %q is not modelled", c.Args[0])
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, terr := parse(spec, c.Args)
	if terr == nil {
		a.stdin = c.Stdin
		if spec.json && a.flags["format"] != "json" {
			terr = usagef("jujutest models only --format=json output of %s", a.tool).breaks("ask hook tools for --format=json")
		}
	}
	var out []byte
	if terr == nil {
		out, terr = spec.run(m, a)
	}
	if terr != nil {
		if terr.rule != "" && !m.s.Lenient {
			m.s.T.Errorf("jujutest: %s broke a Juju rule: %s (%q: %s)", m.work.Unit, terr.rule, c.Args, terr.msg)
		}
		return juju.Result{ExitCode: terr.code, Stderr: []byte("ERROR " + terr.msg + "\n")}, nil
	}
	return juju.Result{Stdout: out}, nil
}

func jsonOut(v any) ([]byte, *toolError) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, failf("cannot encode output: %v", err)
	}
	return append(b, '\n'), nil
}

func noArgs(a *args) *toolError {
	if len(a.pos) > 0 {
		return usagef("unrecognized args: %q", a.pos)
	}
	return nil
}

// --- relations ---

// relationArg resolves -r/--relation (endpoint:N or N), defaulting to the
// event's relation.
func (m *model) relationArg(a *args) (*Relation, *toolError) {
	v := a.flags["r"]
	if a.has("relation") {
		v = a.flags["relation"]
	}
	if v == "" {
		v = string(m.ev.Relation)
	}
	if v == "" {
		return nil, usagef("no relation id specified")
	}
	ep, n, hasEp := strings.Cut(v, ":")
	if !hasEp {
		n, ep = ep, ""
	}
	num, err := strconv.Atoi(n)
	if err != nil {
		return nil, usagef("invalid value %q for option -r: invalid relation id", v)
	}
	rel := m.work.relation(num)
	if rel == nil || (ep != "" && rel.ID.Endpoint() != ep) {
		return nil, usagef("invalid value %q for option -r: relation not found", v)
	}
	return rel, nil
}

func (m *model) relationIDs(a *args) ([]byte, *toolError) {
	endpoint := m.ev.Endpoint
	switch len(a.pos) {
	case 0:
		if endpoint == "" {
			return nil, usagef("no endpoint name specified")
		}
	case 1:
		endpoint = a.pos[0]
	default:
		return nil, usagef("unrecognized args: %q", a.pos[1:])
	}
	type idNum struct {
		id  juju.RelationID
		num int
	}
	var found []idNum
	for _, r := range m.work.Relations {
		if ep, n, _ := r.ID.Parse(); ep == endpoint {
			found = append(found, idNum{r.ID, n})
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].num < found[j].num })
	ids := []juju.RelationID{}
	for _, f := range found {
		ids = append(ids, f.id)
	}
	return jsonOut(ids)
}

func (m *model) relationList(a *args) ([]byte, *toolError) {
	if e := noArgs(a); e != nil {
		return nil, e
	}
	rel, terr := m.relationArg(a)
	if terr != nil {
		return nil, terr
	}
	if a.has("app") {
		return jsonOut(rel.RemoteApp)
	}
	units := []string{}
	for _, u := range slices.Sorted(maps.Keys(rel.RemoteUnits)) {
		// In relation-departed the departing remote unit is no longer listed.
		if m.ev.Kind == juju.RelationDeparted && rel.ID == m.ev.Relation && u == m.ev.RemoteUnit {
			continue
		}
		units = append(units, u)
	}
	return jsonOut(units)
}

func (m *model) relationGet(a *args) ([]byte, *toolError) {
	rel, terr := m.relationArg(a)
	if terr != nil {
		return nil, terr
	}
	key, name := "-", m.ev.RemoteUnit
	if a.has("app") {
		name = m.ev.RemoteApp
	}
	switch len(a.pos) {
	case 0:
	case 1:
		key = a.pos[0]
	case 2:
		key, name = a.pos[0], a.pos[1]
	default:
		return nil, usagef("unrecognized args: %q", a.pos[2:])
	}
	if name == "" {
		return nil, usagef("no unit id specified")
	}
	st := m.work
	var data map[string]string
	isUnit := strings.Contains(name, "/")
	if a.has("app") && isUnit {
		return nil, usagef("expected application name, got unit name %q", name)
	}
	switch {
	case !isUnit && name == st.app() && rel.RemoteApp == st.app():
		// A peer relation: every unit reads the application's bag (LocalAppData), which
		// only the leader writes.
		data = rel.LocalAppData
	case !isUnit && name == st.app():
		if !st.Leader {
			return nil, failf("permission denied (unit is not the leader)").breaks("only the leader may read its own application's databag")
		}
		data = rel.LocalAppData
	case !isUnit && name == rel.RemoteApp:
		data = rel.RemoteAppData
	case !isUnit:
		return nil, failf("cannot read settings for application %q in relation %q: not found", name, rel.ID)
	case name == st.Unit:
		data = rel.LocalUnitData
	default:
		d, ok := rel.RemoteUnits[name]
		if !ok {
			return nil, failf("cannot read settings for unit %q in relation %q: unit %q: settings not found", name, rel.ID, name)
		}
		data = d
	}
	if key != "-" {
		return jsonOut(data[key])
	}
	if data == nil {
		data = map[string]string{}
	}
	return jsonOut(data)
}

func (m *model) relationSet(a *args) ([]byte, *toolError) {
	rel, terr := m.relationArg(a)
	if terr != nil {
		return nil, terr
	}
	settings := map[string]string{}
	if f, ok := a.flags["file"]; ok {
		raw := a.stdin
		if f != "-" {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, failf("cannot read settings file: %v", err)
			}
			raw = b
		}
		// Juju reads a YAML map; jujutest understands its JSON subset,
		// which is what juju.Relations writes.
		var fromFile map[string]string
		if err := json.Unmarshal(raw, &fromFile); err != nil {
			return nil, failf("jujutest reads relation-set settings files as JSON (a subset of YAML): %v", err)
		}
		for k, v := range fromFile {
			settings[k] = v
		}
	}
	seen := map[string]bool{}
	for _, kv := range a.pos {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("expected \"key=value\", got %q", kv)
		}
		if seen[k] {
			return nil, usagef("key %q specified more than once", k)
		}
		seen[k] = true
		settings[k] = v
	}
	target := &rel.LocalUnitData
	if a.has("app") {
		if !m.work.Leader {
			return nil, failf("cannot write relation settings").breaks("only the leader may write its application's databag")
		}
		target = &rel.LocalAppData
	}
	for k, v := range settings {
		if v == "" {
			delete(*target, k)
			continue
		}
		if *target == nil {
			*target = map[string]string{}
		}
		(*target)[k] = v
	}
	return nil, nil
}

// --- config, leadership, status ---

func (m *model) configGet(a *args) ([]byte, *toolError) {
	cfg := m.work.Config
	if cfg == nil {
		cfg = map[string]any{}
	}
	switch len(a.pos) {
	case 0:
		return jsonOut(cfg)
	case 1:
		if a.has("all") || a.has("a") {
			return nil, usagef("cannot use argument --all together with key %q", a.pos[0])
		}
		return jsonOut(cfg[a.pos[0]])
	}
	return nil, usagef("unrecognized args: %q", a.pos[1:])
}

func (m *model) isLeader(a *args) ([]byte, *toolError) {
	if e := noArgs(a); e != nil {
		return nil, e
	}
	return jsonOut(m.work.Leader)
}

func (m *model) statusSet(a *args) ([]byte, *toolError) {
	if len(a.pos) == 0 || len(a.pos) > 2 {
		return nil, usagef("invalid args, require <status> [message]")
	}
	code := juju.StatusCode(a.pos[0])
	if !code.Settable() {
		return nil, usagef("invalid status %q, expected one of [maintenance blocked waiting active]", code).breaks("status-set takes maintenance, blocked, waiting or active")
	}
	st := juju.WorkloadStatus{Code: code}
	if len(a.pos) == 2 {
		st.Message = a.pos[1]
	}
	if a.has("application") {
		if !m.work.Leader {
			return nil, failf("this unit is not the leader").breaks("only the leader may set the application status")
		}
		m.both(func(s *State) { s.AppStatus = st })
		return nil, nil
	}
	m.both(func(s *State) { s.UnitStatus = st })
	return nil, nil
}

func (m *model) applicationVersionSet(a *args) ([]byte, *toolError) {
	if len(a.pos) != 1 {
		return nil, usagef("invalid args, require <new-version>")
	}
	m.both(func(s *State) { s.Version = a.pos[0] })
	return nil, nil
}

func statusOut(st juju.WorkloadStatus) map[string]any {
	data := st.Data
	if data == nil {
		data = map[string]any{}
	}
	code := st.Code
	if code == "" {
		code = juju.StatusUnknown
	}
	return map[string]any{"status": code, "message": st.Message, "status-data": data}
}

func (m *model) statusGet(a *args) ([]byte, *toolError) {
	if e := noArgs(a); e != nil {
		return nil, e
	}
	if !a.has("include-data") {
		return nil, usagef("jujutest models status-get only with --include-data")
	}
	if a.has("application") {
		if !m.work.Leader {
			return nil, failf("finding application status: this unit is not the leader").breaks("only the leader may read the application status")
		}
		app := statusOut(m.work.AppStatus)
		app["units"] = map[string]any{m.work.Unit: statusOut(m.work.UnitStatus)}
		return jsonOut(map[string]any{"application-status": app})
	}
	return jsonOut(statusOut(m.work.UnitStatus))
}

// --- actions ---

var actionKey = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)

var reservedActionKeys = map[string]bool{"stdout": true, "stdout-encoding": true, "stderr": true, "stderr-encoding": true}

func (m *model) inAction(tool string) *toolError {
	if m.ev.Kind != juju.Action {
		return failf("%s: not running an action", tool).breaks("action tools work only in actions")
	}
	return nil
}

func (m *model) actionGet(a *args) ([]byte, *toolError) {
	if e := m.inAction(a.tool); e != nil {
		return nil, e
	}
	params := m.work.Action.Params
	if params == nil {
		params = map[string]any{}
	}
	if len(a.pos) == 0 {
		return jsonOut(params)
	}
	var v any = params
	for _, k := range strings.Split(a.pos[0], ".") {
		mp, ok := v.(map[string]any)
		if !ok {
			return jsonOut(nil)
		}
		v = mp[k]
	}
	return jsonOut(v)
}

func (m *model) actionSet(a *args) ([]byte, *toolError) {
	if e := m.inAction(a.tool); e != nil {
		return nil, e
	}
	results := map[string]string{}
	for _, kv := range a.pos {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, usagef("argument %q must be of the form key...=value", kv).breaks("action-set takes key=value")
		}
		for _, part := range strings.Split(k, ".") {
			if !actionKey.MatchString(part) {
				return nil, usagef("key %q must start and end with lowercase alphanumeric, and contain only lowercase alphanumeric and hyphens", part).
					breaks("action-set keys are lowercase alphanumeric and '-', dotted for nesting")
			}
		}
		if top, _, _ := strings.Cut(k, "."); reservedActionKeys[top] {
			return nil, usagef("cannot set reserved action key %q", top).breaks("action-set keys stdout, stderr, stdout-encoding and stderr-encoding are reserved")
		}
		results[k] = v
	}
	m.both(func(s *State) {
		if s.Action.Results == nil {
			s.Action.Results = map[string]string{}
		}
		for k, v := range results {
			s.Action.Results[k] = v
		}
	})
	return nil, nil
}

func (m *model) actionFail(a *args) ([]byte, *toolError) {
	if e := m.inAction(a.tool); e != nil {
		return nil, e
	}
	if len(a.pos) > 1 {
		return nil, usagef("unrecognized args: %q", a.pos[1:])
	}
	msg := "action failed without reason given"
	if len(a.pos) == 1 {
		msg = a.pos[0]
	}
	m.both(func(s *State) { s.Action.Failed, s.Action.Message = true, msg })
	return nil, nil
}

func (m *model) actionLog(a *args) ([]byte, *toolError) {
	if e := m.inAction(a.tool); e != nil {
		return nil, e
	}
	if len(a.pos) == 0 {
		return nil, usagef("no message specified")
	}
	msg := strings.Join(a.pos, " ")
	m.both(func(s *State) { s.Action.Logs = append(s.Action.Logs, msg) })
	return nil, nil
}

// --- ports, network, log ---

func (m *model) portArg(a *args) (juju.Port, *toolError) {
	if len(a.pos) != 1 {
		return juju.Port{}, usagef("expected exactly one port, got %q", a.pos)
	}
	p, err := juju.ParsePort(a.pos[0])
	if err != nil {
		return juju.Port{}, usagef("%v", err)
	}
	return p, nil
}

func (m *model) openPort(a *args) ([]byte, *toolError) {
	p, terr := m.portArg(a)
	if terr != nil {
		return nil, terr
	}
	for _, q := range m.work.Ports {
		if q == p {
			return nil, nil
		}
	}
	m.work.Ports = append(m.work.Ports, p)
	sort.Slice(m.work.Ports, func(i, j int) bool {
		pi, pj := m.work.Ports[i], m.work.Ports[j]
		return pi.Number < pj.Number || pi.Number == pj.Number && pi.Protocol < pj.Protocol
	})
	return nil, nil
}

func (m *model) closePort(a *args) ([]byte, *toolError) {
	p, terr := m.portArg(a)
	if terr != nil {
		return nil, terr
	}
	for i, q := range m.work.Ports {
		if q == p {
			m.work.Ports = append(m.work.Ports[:i:i], m.work.Ports[i+1:]...)
			break
		}
	}
	return nil, nil
}

func (m *model) openedPorts(a *args) ([]byte, *toolError) {
	if e := noArgs(a); e != nil {
		return nil, e
	}
	out := []string{}
	for _, p := range m.work.Ports {
		out = append(out, p.String())
	}
	return jsonOut(out)
}

func (m *model) networkGet(a *args) ([]byte, *toolError) {
	if len(a.pos) != 1 {
		return nil, usagef("no endpoint specified")
	}
	ep := a.pos[0]
	info, ok := m.work.Networks[ep]
	if !ok {
		addr := m.work.PrivateAddress
		if addr == "" {
			return nil, failf("no network config found for binding %q", ep)
		}
		info = juju.NetworkInfo{
			BindAddresses:    []juju.BindAddress{{InterfaceName: "eth0", Addresses: []juju.InterfaceAddress{{Value: addr, CIDR: addr + "/32"}}}},
			EgressSubnets:    []string{addr + "/32"},
			IngressAddresses: []string{addr},
		}
	}
	first := func(s []string) string {
		if len(s) == 0 {
			return ""
		}
		return s[0]
	}
	bind := ""
	if len(info.BindAddresses) > 0 && len(info.BindAddresses[0].Addresses) > 0 {
		bind = info.BindAddresses[0].Addresses[0].Value
	}
	picked := map[string]any{}
	if a.has("ingress-address") {
		picked["ingress-address"] = first(info.IngressAddresses)
	}
	if a.has("bind-address") || a.has("primary-address") {
		picked["bind-address"] = bind
	}
	if a.has("egress-subnets") {
		picked["egress-subnets"] = info.EgressSubnets
	}
	switch len(picked) {
	case 0:
		return jsonOut(info)
	case 1:
		for _, v := range picked {
			return jsonOut(v)
		}
	}
	return jsonOut(picked)
}

func (m *model) unitGet(a *args) ([]byte, *toolError) {
	if len(a.pos) != 1 {
		return nil, usagef("expected private-address or public-address")
	}
	switch a.pos[0] {
	case "private-address", "public-address":
		if m.work.PrivateAddress == "" {
			return nil, failf("%s not set", a.pos[0])
		}
		return jsonOut(m.work.PrivateAddress)
	}
	return nil, usagef("unknown setting %q", a.pos[0])
}

func (m *model) jujuLog(a *args) ([]byte, *toolError) {
	level := juju.LevelInfo
	if v, ok := a.flags["l"]; ok {
		level = juju.LogLevel(v)
	}
	if v, ok := a.flags["log-level"]; ok {
		level = juju.LogLevel(v)
	}
	if a.has("debug") {
		level = juju.LevelDebug
	}
	switch level {
	case juju.LevelDebug, juju.LevelInfo, juju.LevelWarning, juju.LevelError, "TRACE", "CRITICAL":
	default:
		return nil, usagef("invalid log level %q", level)
	}
	if len(a.pos) == 0 {
		return nil, usagef("no message specified")
	}
	msg := strings.Join(a.pos, " ")
	m.both(func(s *State) { s.Logs = append(s.Logs, Log{Level: level, Message: msg}) })
	return nil, nil
}

// flagWithMinus is a flag as gnuflag names it in its errors: -x for one letter, --name else.
func flagWithMinus(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
