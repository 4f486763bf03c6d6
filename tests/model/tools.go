package model

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// toolFunc runs one hook tool; callers hold m.mu.
type toolFunc func(t *toolCall) error

var tools = map[string]toolFunc{
	"relation-ids":            (*toolCall).relationIDs,
	"relation-list":           (*toolCall).relationList,
	"relation-get":            (*toolCall).relationGet,
	"relation-set":            (*toolCall).relationSet,
	"config-get":              (*toolCall).configGet,
	"is-leader":               (*toolCall).isLeader,
	"status-set":              (*toolCall).statusSet,
	"status-get":              (*toolCall).statusGet,
	"action-get":              (*toolCall).actionGet,
	"action-set":              (*toolCall).actionSet,
	"action-fail":             (*toolCall).actionFail,
	"action-log":              (*toolCall).actionLog,
	"secret-add":              (*toolCall).secretAdd,
	"secret-get":              (*toolCall).secretGet,
	"secret-set":              (*toolCall).secretSet,
	"secret-grant":            (*toolCall).secretGrant,
	"secret-revoke":           (*toolCall).secretRevoke,
	"secret-remove":           (*toolCall).secretRemove,
	"secret-ids":              (*toolCall).secretIDs,
	"secret-info-get":         (*toolCall).secretInfoGet,
	"open-port":               (*toolCall).openPort,
	"close-port":              (*toolCall).closePort,
	"opened-ports":            (*toolCall).openedPorts,
	"juju-log":                (*toolCall).jujuLog,
	"network-get":             (*toolCall).networkGet,
	"unit-get":                (*toolCall).unitGet,
	"application-version-set": (*toolCall).applicationVersionSet,
	"leader-get":              (*toolCall).leaderGet,
	"leader-set":              (*toolCall).leaderSet,
	"state-get":               (*toolCall).stateGet,
	"state-set":               (*toolCall).stateSet,
	"state-delete":            (*toolCall).stateDelete,
}

// ToolNames lists the hook tools the model serves.
func ToolNames() []string {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// usageError is a command-line error: exit code 2, as Juju's cmd package does.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

type toolCall struct {
	hc     *hookContext
	name   string
	args   []string
	stdin  []byte
	stdout io.Writer
	fs     *pflag.FlagSet
	format *string
}

// runTool serves one hook tool invocation.
func (m *Model) runTool(ctx context.Context, req Request, stdout, stderr io.Writer) int {
	if len(req.Argv) == 0 {
		fmt.Fprintln(stderr, "ERROR no command")
		return 2
	}
	// The tool runs under the model's lock, writing to buffers: a client that does not read its
	// output cannot stall the model.
	var outBuf, errBuf bytes.Buffer
	code := m.runToolLocked(req, &outBuf, &errBuf)
	stdout.Write(outBuf.Bytes())
	stderr.Write(errBuf.Bytes())
	return code
}

func (m *Model) runToolLocked(req Request, stdout, stderr io.Writer) int {
	name := filepath.Base(req.Argv[0])
	m.mu.Lock()
	defer m.mu.Unlock()
	hc := m.contexts[req.Context]
	if hc == nil {
		fmt.Fprintf(stderr, "ERROR bad request: unknown context id %q\n", req.Context)
		return 1
	}
	fn, ok := tools[name]
	if !ok {
		fmt.Fprintf(stderr, "ERROR bad request: unknown command %q\n", name)
		return 2
	}
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(true)
	t := &toolCall{hc: hc, name: name, args: req.Argv[1:], stdin: req.Stdin, stdout: stdout, fs: fs}
	err := fn(t)
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ERROR %s\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "ERROR %s\n", err)
		return 1
	}
}

// withFormat adds --format (smart, json or yaml) to t's flags.
func (t *toolCall) withFormat() {
	t.format = t.fs.String("format", "smart", "output format: smart, json or yaml")
}

// parse parses the flags; positional arguments are returned.
func (t *toolCall) parse(min, max int) ([]string, error) {
	if err := t.fs.Parse(t.args); err != nil {
		return nil, &usageError{err.Error()}
	}
	if t.format != nil {
		switch *t.format {
		case "smart", "json", "yaml":
		default:
			return nil, &usageError{fmt.Sprintf("invalid value %q for option --format: unknown format", *t.format)}
		}
	}
	args := t.fs.Args()
	if len(args) < min {
		return nil, &usageError{"missing arguments"}
	}
	if max >= 0 && len(args) > max {
		return nil, &usageError{fmt.Sprintf("unrecognized args: %q", args[max:])}
	}
	return args, nil
}

// out writes v in the chosen format.
func (t *toolCall) out(v any) error {
	format := "smart"
	if t.format != nil {
		format = *t.format
	}
	return writeFormatted(t.stdout, format, v)
}

func writeFormatted(w io.Writer, format string, v any) error {
	switch format {
	case "json":
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		if v == nil {
			return nil
		}
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	switch x := v.(type) {
	case nil:
		return nil
	case bool:
		if x {
			_, err := fmt.Fprintln(w, "True")
			return err
		}
		_, err := fmt.Fprintln(w, "False")
		return err
	case string:
		_, err := fmt.Fprintln(w, x)
		return err
	case []string:
		for _, s := range x {
			if _, err := fmt.Fprintln(w, s); err != nil {
				return err
			}
		}
		return nil
	case int, int64, float64:
		_, err := fmt.Fprintln(w, x)
		return err
	}
	return writeFormatted(w, "yaml", v)
}

// Hook-context helpers.

func (t *toolCall) unitState() *Unit { return t.hc.view.Units[t.hc.unit] }

func (t *toolCall) isLeaderNow() bool {
	a := t.hc.view.Applications[t.hc.app]
	return a != nil && a.Leader == t.hc.unit
}

// relation resolves -r (or the hook's relation).
func (t *toolCall) relation(arg string) (*Relation, error) {
	if arg == "" {
		if !strings.HasPrefix(t.hc.hook.Kind, "relation-") {
			return nil, &usageError{"no relation id specified"}
		}
		arg = strconv.Itoa(t.hc.hook.RelationID)
	}
	idStr := arg
	if i := strings.LastIndex(arg, ":"); i >= 0 {
		idStr = arg[i+1:]
	}
	id, err := strconv.Atoi(idStr)
	if err != nil {
		return nil, &usageError{fmt.Sprintf("invalid value %q for option -r: invalid relation id", arg)}
	}
	r := t.hc.view.Relations[id]
	if r == nil {
		return nil, &usageError{fmt.Sprintf("invalid value %q for option -r: relation not found", arg)}
	}
	ep, ok := r.endpointOf(t.hc.app)
	if !ok || (strings.Contains(arg, ":") && arg[:strings.LastIndex(arg, ":")] != ep.Name) {
		return nil, &usageError{fmt.Sprintf("invalid value %q for option -r: relation not found", arg)}
	}
	return r, nil
}

func (t *toolCall) relationIDs() error {
	t.withFormat()
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	ep := t.hc.hook.Endpoint
	if len(args) == 1 {
		ep = args[0]
	}
	if ep == "" {
		return &usageError{"no endpoint name specified"}
	}
	app := t.hc.view.Applications[t.hc.app]
	if _, _, ok := app.Charm.endpoint(ep); !ok {
		return fmt.Errorf("invalid endpoint %q", ep)
	}
	ids := []string{}
	var nums []int
	for _, r := range t.hc.view.Relations {
		if e, ok := r.endpointOf(t.hc.app); ok && e.Name == ep && !r.Dying {
			if rl := t.unitState().Seen.Relations[r.ID]; rl != nil && rl.Broken {
				continue
			}
			nums = append(nums, r.ID)
		}
	}
	sort.Ints(nums)
	for _, n := range nums {
		ids = append(ids, fmt.Sprintf("%s:%d", ep, n))
	}
	return t.out(ids)
}

// members is the remote units this unit sees in r during this hook.
func (t *toolCall) members(r *Relation) []string {
	rl := t.unitState().Seen.Relations[r.ID]
	set := map[string]bool{}
	if rl != nil {
		for u := range rl.Joined {
			set[u] = true
		}
	}
	h := t.hc.hook
	if h.RelationID == r.ID {
		switch h.Kind {
		case "relation-joined":
			set[h.RemoteUnit] = true
		case "relation-departed":
			delete(set, h.RemoteUnit)
		}
	}
	out := sortedKeys(set)
	sort.Slice(out, func(i, j int) bool { return unitNumber(out[i]) < unitNumber(out[j]) })
	return out
}

func (t *toolCall) relationList() error {
	t.withFormat()
	rel := t.fs.StringP("relation", "r", "", "relation id")
	app := t.fs.Bool("app", false, "list the remote application")
	if _, err := t.parse(0, 0); err != nil {
		return err
	}
	r, err := t.relation(*rel)
	if err != nil {
		return err
	}
	if *app {
		return t.out(r.remoteApp(t.hc.app))
	}
	return t.out(t.members(r))
}

func (t *toolCall) relationGet() error {
	t.withFormat()
	rel := t.fs.StringP("relation", "r", "", "relation id")
	app := t.fs.Bool("app", false, "get the application databag")
	args, err := t.parse(0, 2)
	if err != nil {
		return err
	}
	r, err := t.relation(*rel)
	if err != nil {
		return err
	}
	key := ""
	if len(args) > 0 && args[0] != "-" {
		key = args[0]
	}
	who := ""
	if len(args) > 1 {
		who = args[1]
	} else if *app {
		who = t.hc.hook.RemoteApp
		if who == "" && t.hc.hook.RelationID == r.ID {
			who = r.remoteApp(t.hc.app)
		}
	} else {
		who = t.hc.hook.RemoteUnit
	}
	if who == "" {
		return &usageError{"no unit or application specified"}
	}
	var data map[string]string
	if *app {
		appName, _, _ := strings.Cut(who, "/")
		if _, ok := r.endpointOf(appName); !ok {
			return fmt.Errorf("cannot read settings for application %q in relation %d: application not in relation", appName, r.ID)
		}
		if appName == t.hc.app && !r.isPeer() && !t.isLeaderNow() {
			return fmt.Errorf("cannot read application settings of %q: permission denied (unit is not the leader)", appName)
		}
		data = r.AppData[appName]
	} else {
		if !strings.Contains(who, "/") {
			return fmt.Errorf("invalid unit name %q", who)
		}
		appName, _, _ := strings.Cut(who, "/")
		if _, ok := r.endpointOf(appName); !ok {
			return fmt.Errorf("cannot read settings for unit %q in relation %d: unit not found", who, r.ID)
		}
		data = r.UnitData[who]
	}
	if key != "" {
		return t.out(data[key])
	}
	if data == nil {
		data = map[string]string{}
	}
	return t.out(data)
}

// parseSettings parses key=value arguments; an empty value deletes the key.
func parseSettings(args []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, &usageError{fmt.Sprintf("expected \"key=value\", got %q", a)}
		}
		out[k] = v
	}
	return out, nil
}

func (t *toolCall) relationSet() error {
	rel := t.fs.StringP("relation", "r", "", "relation id")
	app := t.fs.Bool("app", false, "set the application databag")
	file := t.fs.String("file", "", "YAML file of settings (- for stdin)")
	t.fs.String("format", "", "deprecated")
	args, err := t.parse(0, -1)
	if err != nil {
		return err
	}
	r, err := t.relation(*rel)
	if err != nil {
		return err
	}
	settings := map[string]string{}
	if *file != "" {
		var raw map[string]any
		if err := yaml.Unmarshal(t.stdin, &raw); err != nil {
			return fmt.Errorf("cannot parse settings file: %w", err)
		}
		for k, v := range raw {
			if v == nil {
				settings[k] = ""
			} else {
				settings[k] = fmt.Sprint(v)
			}
		}
	}
	kv, err := parseSettings(args)
	if err != nil {
		return err
	}
	for k, v := range kv {
		settings[k] = v
	}
	if *app && !t.isLeaderNow() {
		return errors.New("cannot write relation settings: permission denied (unit is not the leader)")
	}
	id, unit, appName, peer := r.ID, t.hc.unit, t.hc.app, r.isPeer()
	writeApp := *app
	return t.hc.do(func(s *State) error {
		r := s.Relations[id]
		if r == nil {
			return fmt.Errorf("relation %d is gone", id)
		}
		key := unit
		data, versions := r.UnitData, r.UnitVersion
		if writeApp {
			key, data, versions = appName, r.AppData, r.AppVersion
		}
		var changed bool
		data[key], changed = applySettings(data[key], settings)
		if changed {
			versions[key]++
			if writeApp && peer {
				if u := s.Units[unit]; u != nil {
					rl := u.Seen.Relations[id]
					if rl == nil {
						rl = &RelationLocal{Joined: map[string]int{}}
						if u.Seen.Relations == nil {
							u.Seen.Relations = map[int]*RelationLocal{}
						}
						u.Seen.Relations[id] = rl
					}
					rl.AppVersion = versions[key]
				}
			}
		}
		return nil
	})
}

func (t *toolCall) configGet() error {
	t.withFormat()
	all := t.fs.BoolP("all", "a", false, "print all keys")
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	a := t.hc.view.Applications[t.hc.app]
	cfg := effectiveConfig(a)
	if len(args) == 1 {
		return t.out(cfg[args[0]])
	}
	if *all {
		out := map[string]any{}
		for k := range a.Charm.Options {
			out[k] = cfg[k]
		}
		return t.out(out)
	}
	return t.out(cfg)
}

func (t *toolCall) isLeader() error {
	t.withFormat()
	if _, err := t.parse(0, 0); err != nil {
		return err
	}
	return t.out(t.isLeaderNow())
}

var workloadStatuses = map[string]bool{"maintenance": true, "blocked": true, "waiting": true, "active": true}

func (t *toolCall) statusSet() error {
	application := t.fs.Bool("application", false, "set the application status")
	args, err := t.parse(1, 2)
	if err != nil {
		return err
	}
	if !workloadStatuses[args[0]] {
		return &usageError{fmt.Sprintf("invalid status %q, expected one of [maintenance blocked waiting active]", args[0])}
	}
	msg := ""
	if len(args) > 1 {
		msg = args[1]
	}
	if *application && !t.isLeaderNow() {
		return errors.New("setting application status: this unit is not the leader")
	}
	st := StatusInfo{Status: args[0], Message: msg, Since: time.Now()}
	unit, app := t.hc.unit, t.hc.app
	if *application {
		return t.hc.now(func(s *State) error {
			if a := s.Applications[app]; a != nil {
				a.Status = st
			}
			return nil
		})
	}
	return t.hc.now(func(s *State) error {
		if u := s.Units[unit]; u != nil {
			u.Workload = st
		}
		return nil
	})
}

func statusMap(st StatusInfo, withData bool) map[string]any {
	m := map[string]any{"status": st.Status, "message": st.Message}
	if withData {
		m["status-data"] = map[string]any{}
	}
	return m
}

func (t *toolCall) statusGet() error {
	t.withFormat()
	application := t.fs.Bool("application", false, "get the application status")
	includeData := t.fs.Bool("include-data", false, "include message and data")
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	if *application {
		if !t.isLeaderNow() {
			return errors.New("finding application status: this unit is not the leader")
		}
		a := t.hc.view.Applications[t.hc.app]
		units := map[string]any{}
		for _, u := range t.hc.view.Units {
			if u.App == t.hc.app {
				units[u.Name] = statusMap(u.Workload, true)
			}
		}
		st := statusMap(a.Status, true)
		st["units"] = units
		return t.out(map[string]any{"application-status": st})
	}
	st := t.unitState().Workload
	if len(args) == 1 {
		v, ok := statusMap(st, true)[args[0]]
		if !ok {
			return fmt.Errorf("status-get: %q is not a valid key", args[0])
		}
		return t.out(v)
	}
	if !*includeData {
		return t.out(st.Status)
	}
	return t.out(statusMap(st, true))
}

func (t *toolCall) action() (*ActionRun, error) {
	if t.hc.hook.Kind != "action" {
		return nil, errors.New("not running an action")
	}
	act := t.hc.m.state.Actions[t.hc.hook.ActionID]
	if act == nil {
		return nil, errors.New("action not found")
	}
	return act, nil
}

func (t *toolCall) actionGet() error {
	t.withFormat()
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	act, err := t.action()
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return t.out(act.Params)
	}
	var v any = act.Params
	for _, k := range strings.Split(args[0], ".") {
		mp, ok := v.(map[string]any)
		if !ok {
			return t.out(nil)
		}
		v = mp[k]
	}
	return t.out(v)
}

var actionKey = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)

var reservedActionKeys = map[string]bool{"stdout": true, "stdout-encoding": true, "stderr": true, "stderr-encoding": true}

func (t *toolCall) actionSet() error {
	args, err := t.parse(1, -1)
	if err != nil {
		return err
	}
	act, err := t.action()
	if err != nil {
		return err
	}
	type kv struct {
		path []string
		val  string
	}
	var sets []kv
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return &usageError{fmt.Sprintf("argument %q must be of the form key...=value", a)}
		}
		path := strings.Split(k, ".")
		for _, p := range path {
			if !actionKey.MatchString(p) {
				return fmt.Errorf("key %q must start and end with lowercase alphanumeric, and contain only lowercase alphanumeric, hyphens and periods", p)
			}
		}
		if reservedActionKeys[path[0]] {
			return fmt.Errorf("cannot set reserved action key %q", path[0])
		}
		sets = append(sets, kv{path, v})
	}
	if act.Results == nil {
		act.Results = map[string]any{}
	}
	for _, s := range sets {
		m := act.Results
		for _, p := range s.path[:len(s.path)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[s.path[len(s.path)-1]] = s.val
	}
	return nil
}

func (t *toolCall) actionFail() error {
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	if _, err := t.action(); err != nil {
		return err
	}
	t.hc.actionFailed = true
	t.hc.actionMessage = "action failed without reason given, check action for errors"
	if len(args) == 1 {
		t.hc.actionMessage = args[0]
	}
	return nil
}

func (t *toolCall) actionLog() error {
	args, err := t.parse(1, -1)
	if err != nil {
		return err
	}
	act, err := t.action()
	if err != nil {
		return err
	}
	line := strings.Join(args, " ")
	act.Log = append(act.Log, time.Now().UTC().Format(time.RFC3339)+" "+line)
	t.hc.m.progress("%s: action %s: %s", t.hc.unit, act.Name, line)
	return nil
}

// Secrets.

var secretKey = regexp.MustCompile(`^([a-z](?:-?[a-z0-9]){2,})$`)

// parseSecretContent parses key=value, key#base64=value and key#file=path (the client turns
// #file into a plain value) arguments.
func parseSecretContent(args []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return nil, &usageError{fmt.Sprintf("expected \"key=value\", got %q", a)}
		}
		name, enc, _ := strings.Cut(k, "#")
		if !secretKey.MatchString(name) {
			return nil, fmt.Errorf("secret key %q not valid", name)
		}
		switch enc {
		case "":
		case "base64":
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return nil, fmt.Errorf("secret value for %q is not base64: %w", name, err)
			}
			v = string(b)
		default:
			return nil, fmt.Errorf("secret key %q: unknown encoding %q", name, enc)
		}
		out[name] = v
	}
	return out, nil
}

// findSecret resolves a secret id (secret:xid, secret://uuid/xid or xid) or label.
func (t *toolCall) findSecret(id, label string) (*Secret, error) {
	if id != "" {
		x := id
		x = strings.TrimPrefix(x, "secret:")
		x = strings.TrimPrefix(x, "//")
		if i := strings.LastIndex(x, "/"); i >= 0 {
			x = x[i+1:]
		}
		if sec := t.hc.view.Secrets["secret:"+x]; sec != nil {
			return sec, nil
		}
		return nil, fmt.Errorf("secret %q not found", id)
	}
	if label == "" {
		return nil, &usageError{"secret URI or label must be specified"}
	}
	if sec := t.hc.view.secretByLabel(t.hc.unit, label); sec != nil {
		return sec, nil
	}
	return nil, fmt.Errorf("secret with label %q not found", label)
}

// mayManage reports whether this unit may change sec (owner; app secrets only by the leader).
func (t *toolCall) mayManage(sec *Secret) error {
	if !sec.ownedBy(t.hc.unit, t.hc.app) {
		return errors.New("permission denied")
	}
	if sec.OwnerApp != "" && !t.isLeaderNow() {
		return errors.New("permission denied: only the leader may manage application secrets")
	}
	return nil
}

func (t *toolCall) secretAdd() error {
	label := t.fs.String("label", "", "a label")
	desc := t.fs.String("description", "", "a description")
	owner := t.fs.String("owner", "application", "application or unit")
	t.fs.String("expire", "", "expiry (not enforced)")
	t.fs.String("rotate", "", "rotation policy (not enforced)")
	file := t.fs.String("file", "", "YAML file of content")
	args, err := t.parse(0, -1)
	if err != nil {
		return err
	}
	content, err := parseSecretContent(args)
	if err != nil {
		return err
	}
	if *file != "" {
		var raw map[string]string
		if err := yaml.Unmarshal(t.stdin, &raw); err != nil {
			return fmt.Errorf("cannot parse secret file: %w", err)
		}
		fc, err := parseSecretContent(settingsArgs(raw))
		if err != nil {
			return err
		}
		for k, v := range fc {
			content[k] = v
		}
	}
	if len(content) == 0 {
		return errors.New("missing secret value")
	}
	var ownerApp, ownerUnit string
	switch *owner {
	case "application":
		if !t.isLeaderNow() {
			return errors.New("cannot create a secret owned by the application: this unit is not the leader")
		}
		ownerApp = t.hc.app
	case "unit":
		ownerUnit = t.hc.unit
	default:
		return &usageError{fmt.Sprintf("invalid value %q for option --owner", *owner)}
	}
	if *label != "" && t.hc.view.secretByLabel(t.hc.unit, *label) != nil {
		return fmt.Errorf("secret with label %q already exists", *label)
	}
	id := newSecretID()
	lbl, d := *label, *desc
	if err := t.hc.do(func(s *State) error {
		s.Secrets[id] = &Secret{
			ID: id, OwnerApp: ownerApp, OwnerUnit: ownerUnit, Label: lbl, Description: d,
			Revisions: []SecretRevision{{Revision: 1, Content: content}},
			Consumers: map[string]*SecretConsumer{},
		}
		return nil
	}); err != nil {
		return err
	}
	_, err = fmt.Fprintln(t.stdout, id)
	return err
}

func settingsArgs(m map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, k+"="+m[k])
	}
	return out
}

func (t *toolCall) secretGet() error {
	t.withFormat()
	label := t.fs.String("label", "", "a label")
	peek := t.fs.Bool("peek", false, "get the latest revision, keep tracking the current one")
	refresh := t.fs.Bool("refresh", false, "track the latest revision and get it")
	args, err := t.parse(0, 2)
	if err != nil {
		return err
	}
	if *peek && *refresh {
		return &usageError{"specify one of --peek or --refresh but not both"}
	}
	id, key := "", ""
	if len(args) > 0 {
		id = args[0]
	}
	if len(args) > 1 {
		key = args[1]
	}
	sec, err := t.findSecret(id, *label)
	if err != nil {
		return err
	}
	var content map[string]string
	if sec.ownedBy(t.hc.unit, t.hc.app) {
		if sec.OwnerApp != "" && !t.isLeaderNow() && !sec.grantedTo(t.hc.unit, t.hc.app) {
			// Non-leader units of the owning application may read it, as in Juju.
		}
		if id != "" && *label != "" && *label != sec.Label {
			lbl := *label
			secID := sec.ID
			if err := t.hc.do(func(s *State) error {
				if x := s.Secrets[secID]; x != nil {
					x.Label = lbl
				}
				return nil
			}); err != nil {
				return err
			}
		}
		content = sec.latest().Content
	} else {
		if !sec.grantedTo(t.hc.unit, t.hc.app) {
			return fmt.Errorf("permission denied: secret %q is not granted to %s", sec.ID, t.hc.unit)
		}
		c := sec.Consumers[t.hc.unit]
		tracked := 0
		if c != nil {
			tracked = c.Tracked
		}
		latest := sec.latest().Revision
		rev := tracked
		newTracked := tracked
		switch {
		case *peek:
			rev = latest
		case *refresh || tracked == 0:
			rev, newTracked = latest, latest
		}
		r, ok := sec.revision(rev)
		if !ok {
			return fmt.Errorf("secret %q revision %d not found", sec.ID, rev)
		}
		content = r.Content
		newLabel := ""
		if c != nil {
			newLabel = c.Label
		}
		if *label != "" && id != "" {
			newLabel = *label
		}
		if c == nil || newTracked != tracked || newLabel != c.Label {
			unit, secID := t.hc.unit, sec.ID
			if err := t.hc.do(func(s *State) error {
				x := s.Secrets[secID]
				if x == nil {
					return fmt.Errorf("secret %s is gone", secID)
				}
				if x.Consumers == nil {
					x.Consumers = map[string]*SecretConsumer{}
				}
				x.Consumers[unit] = &SecretConsumer{Label: newLabel, Tracked: newTracked}
				return nil
			}); err != nil {
				return err
			}
		}
	}
	if key != "" {
		name, enc, _ := strings.Cut(key, "#")
		v, ok := content[name]
		if !ok {
			return fmt.Errorf("secret %q has no key %q", sec.ID, name)
		}
		if enc == "base64" {
			v = base64.StdEncoding.EncodeToString([]byte(v))
		}
		return t.out(v)
	}
	return t.out(content)
}

func (t *toolCall) secretSet() error {
	label := t.fs.String("label", "", "a label")
	desc := t.fs.String("description", "", "a description")
	t.fs.String("expire", "", "expiry (not enforced)")
	t.fs.String("rotate", "", "rotation policy (not enforced)")
	t.fs.String("owner", "", "owner")
	file := t.fs.String("file", "", "YAML file of content")
	args, err := t.parse(1, -1)
	if err != nil {
		return err
	}
	sec, err := t.findSecret(args[0], "")
	if err != nil {
		return err
	}
	if err := t.mayManage(sec); err != nil {
		return err
	}
	content, err := parseSecretContent(args[1:])
	if err != nil {
		return err
	}
	if *file != "" {
		var raw map[string]string
		if err := yaml.Unmarshal(t.stdin, &raw); err != nil {
			return fmt.Errorf("cannot parse secret file: %w", err)
		}
		fc, err := parseSecretContent(settingsArgs(raw))
		if err != nil {
			return err
		}
		for k, v := range fc {
			content[k] = v
		}
	}
	secID, lbl, d := sec.ID, *label, *desc
	return t.hc.do(func(s *State) error {
		x := s.Secrets[secID]
		if x == nil {
			return fmt.Errorf("secret %s is gone", secID)
		}
		if lbl != "" {
			x.Label = lbl
		}
		if d != "" {
			x.Description = d
		}
		if len(content) > 0 && fmt.Sprint(content) != fmt.Sprint(x.latest().Content) {
			x.Revisions = append(x.Revisions, SecretRevision{Revision: x.latest().Revision + 1, Content: content})
		}
		return nil
	})
}

func (t *toolCall) secretGrant() error {
	rel := t.fs.StringP("relation", "r", "", "relation id")
	unitFlag := t.fs.String("unit", "", "grant to this unit only")
	args, err := t.parse(1, 1)
	if err != nil {
		return err
	}
	if *rel == "" {
		return &usageError{"missing relation"}
	}
	sec, err := t.findSecret(args[0], "")
	if err != nil {
		return err
	}
	if err := t.mayManage(sec); err != nil {
		return err
	}
	r, err := t.relation(*rel)
	if err != nil {
		return err
	}
	remote := r.remoteApp(t.hc.app)
	if *unitFlag != "" && !strings.HasPrefix(*unitFlag, remote+"/") {
		return fmt.Errorf("cannot grant secret to unit %q: not a unit of %q", *unitFlag, remote)
	}
	secID, id, unit := sec.ID, r.ID, *unitFlag
	return t.hc.do(func(s *State) error {
		x := s.Secrets[secID]
		if x == nil {
			return fmt.Errorf("secret %s is gone", secID)
		}
		if s.Relations[id] == nil {
			return fmt.Errorf("relation %d is gone", id)
		}
		for _, g := range x.Grants {
			if g.RelationID == id && g.App == remote && g.Unit == unit {
				return nil
			}
		}
		x.Grants = append(x.Grants, SecretGrant{RelationID: id, App: remote, Unit: unit})
		return nil
	})
}

func (t *toolCall) secretRevoke() error {
	rel := t.fs.StringP("relation", "r", "", "relation id")
	appFlag := t.fs.String("app", "", "revoke from this application")
	unitFlag := t.fs.String("unit", "", "revoke from this unit")
	args, err := t.parse(1, 1)
	if err != nil {
		return err
	}
	sec, err := t.findSecret(args[0], "")
	if err != nil {
		return err
	}
	if err := t.mayManage(sec); err != nil {
		return err
	}
	relID := -1
	if *rel != "" {
		r, err := t.relation(*rel)
		if err != nil {
			return err
		}
		relID = r.ID
	}
	secID, app, unit := sec.ID, *appFlag, *unitFlag
	return t.hc.do(func(s *State) error {
		x := s.Secrets[secID]
		if x == nil {
			return fmt.Errorf("secret %s is gone", secID)
		}
		var keep []SecretGrant
		for _, g := range x.Grants {
			match := (relID < 0 || g.RelationID == relID) && (app == "" || g.App == app) && (unit == "" || g.Unit == unit)
			if !match {
				keep = append(keep, g)
			}
		}
		x.Grants = keep
		for cu := range x.Consumers {
			capp, _, _ := strings.Cut(cu, "/")
			if !x.grantedTo(cu, capp) {
				delete(x.Consumers, cu)
			}
		}
		return nil
	})
}

func (t *toolCall) secretRemove() error {
	revision := t.fs.Int("revision", 0, "remove only this revision")
	args, err := t.parse(1, 1)
	if err != nil {
		return err
	}
	sec, err := t.findSecret(args[0], "")
	if err != nil {
		return err
	}
	if err := t.mayManage(sec); err != nil {
		return err
	}
	secID, rev := sec.ID, *revision
	if rev != 0 {
		if _, ok := sec.revision(rev); !ok {
			return fmt.Errorf("secret %q revision %d not found", sec.ID, rev)
		}
	}
	return t.hc.do(func(s *State) error {
		x := s.Secrets[secID]
		if x == nil {
			return nil
		}
		if rev == 0 || len(x.Revisions) == 1 {
			delete(s.Secrets, secID)
			return nil
		}
		var keep []SecretRevision
		for _, r := range x.Revisions {
			if r.Revision != rev {
				keep = append(keep, r)
			}
		}
		x.Revisions = keep
		return nil
	})
}

func (t *toolCall) secretIDs() error {
	t.withFormat()
	if _, err := t.parse(0, 0); err != nil {
		return err
	}
	ids := []string{}
	for _, id := range sortedKeys(t.hc.view.Secrets) {
		if t.hc.view.Secrets[id].ownedBy(t.hc.unit, t.hc.app) {
			ids = append(ids, id)
		}
	}
	return t.out(ids)
}

func (t *toolCall) secretInfoGet() error {
	t.withFormat()
	label := t.fs.String("label", "", "a label")
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	id := ""
	if len(args) == 1 {
		id = args[0]
	}
	sec, err := t.findSecret(id, *label)
	if err != nil {
		return err
	}
	if !sec.ownedBy(t.hc.unit, t.hc.app) {
		return errors.New("permission denied")
	}
	owner := "application"
	if sec.OwnerUnit != "" {
		owner = "unit"
	}
	info := map[string]any{"revision": sec.latest().Revision, "owner": owner, "rotation": "never"}
	if sec.Label != "" {
		info["label"] = sec.Label
	}
	if sec.Description != "" {
		info["description"] = sec.Description
	}
	return t.out(map[string]any{strings.TrimPrefix(sec.ID, "secret:"): info})
}

// Ports.

var portRe = regexp.MustCompile(`^(\d+)(?:-(\d+))?(?:/(tcp|udp))?$`)

func normalizePort(arg string) (string, error) {
	if arg == "icmp" {
		return "icmp", nil
	}
	m := portRe.FindStringSubmatch(arg)
	if m == nil {
		return "", &usageError{fmt.Sprintf("invalid port or range %q", arg)}
	}
	from, _ := strconv.Atoi(m[1])
	to := from
	if m[2] != "" {
		to, _ = strconv.Atoi(m[2])
	}
	if from < 1 || to > 65535 || from > to {
		return "", &usageError{fmt.Sprintf("invalid port or range %q", arg)}
	}
	proto := m[3]
	if proto == "" {
		proto = "tcp"
	}
	if from == to {
		return fmt.Sprintf("%d/%s", from, proto), nil
	}
	return fmt.Sprintf("%d-%d/%s", from, to, proto), nil
}

func (t *toolCall) ports(open bool) error {
	t.fs.String("endpoints", "", "endpoints (ignored)")
	args, err := t.parse(1, 1)
	if err != nil {
		return err
	}
	p, err := normalizePort(args[0])
	if err != nil {
		return err
	}
	unit := t.hc.unit
	return t.hc.do(func(s *State) error {
		u := s.Units[unit]
		if u == nil {
			return nil
		}
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
	})
}

func (t *toolCall) openPort() error  { return t.ports(true) }
func (t *toolCall) closePort() error { return t.ports(false) }

func (t *toolCall) openedPorts() error {
	t.withFormat()
	t.fs.Bool("endpoints", false, "show endpoints (ignored)")
	if _, err := t.parse(0, 0); err != nil {
		return err
	}
	ports := append([]string{}, t.unitState().Ports...)
	return t.out(ports)
}

func (t *toolCall) jujuLog() error {
	level := t.fs.StringP("log-level", "l", "INFO", "log level")
	debug := t.fs.Bool("debug", false, "log at DEBUG level")
	args, err := t.parse(1, -1)
	if err != nil {
		return err
	}
	lvl := strings.ToUpper(*level)
	if *debug {
		lvl = "DEBUG"
	}
	switch lvl {
	case "TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL":
	default:
		return &usageError{fmt.Sprintf("invalid log level %q", *level)}
	}
	t.hc.m.appendLog(fmt.Sprintf("%s: %s %s unit.%s.juju-log %s", unitTag(t.hc.unit), time.Now().Format("15:04:05"), lvl, t.hc.unit, strings.Join(args, " ")))
	return nil
}

func (t *toolCall) address() (string, error) {
	ms := t.hc.m.state.Machines[t.hc.machine]
	if ms == nil || ms.Address == "" {
		return "", errors.New("unit has no address")
	}
	return ms.Address, nil
}

func (t *toolCall) networkGet() error {
	t.withFormat()
	rel := t.fs.StringP("relation", "r", "", "relation id")
	ingress := t.fs.Bool("ingress-address", false, "only the ingress address")
	bind := t.fs.Bool("bind-address", false, "only the bind address")
	egress := t.fs.Bool("egress-subnets", false, "only the egress subnets")
	primary := t.fs.Bool("primary-address", false, "only the primary address (deprecated)")
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	binding := ""
	if len(args) == 1 {
		binding = args[0]
	} else if *rel != "" {
		r, err := t.relation(*rel)
		if err != nil {
			return err
		}
		ep, _ := r.endpointOf(t.hc.app)
		binding = ep.Name
	} else {
		return &usageError{"no arguments specified"}
	}
	a := t.hc.view.Applications[t.hc.app]
	if _, _, ok := a.Charm.endpoint(binding); !ok && binding != "juju-info" {
		return fmt.Errorf("no network config found for binding %q", binding)
	}
	addr, err := t.address()
	if err != nil {
		return err
	}
	cidr := addr + "/32"
	switch {
	case *ingress:
		return t.out(addr)
	case *bind, *primary:
		return t.out(addr)
	case *egress:
		return t.out(cidr)
	}
	return t.out(map[string]any{
		"bind-addresses": []any{map[string]any{
			"mac-address":    "",
			"interface-name": "eth0",
			"addresses":      []any{map[string]any{"hostname": "", "address": addr, "cidr": cidr, "value": addr}},
			"macaddress":     "",
			"interfacename":  "eth0",
		}},
		"egress-subnets":    []string{cidr},
		"ingress-addresses": []string{addr},
	})
}

func (t *toolCall) unitGet() error {
	t.withFormat()
	args, err := t.parse(1, 1)
	if err != nil {
		return err
	}
	switch args[0] {
	case "private-address", "public-address":
	default:
		return &usageError{fmt.Sprintf("unknown setting %q", args[0])}
	}
	addr, err := t.address()
	if err != nil {
		return err
	}
	return t.out(addr)
}

func (t *toolCall) applicationVersionSet() error {
	args, err := t.parse(1, 1)
	if err != nil {
		return err
	}
	app, v := t.hc.app, args[0]
	return t.hc.now(func(s *State) error {
		if a := s.Applications[app]; a != nil {
			a.Version = v
		}
		return nil
	})
}

func (t *toolCall) leaderGet() error {
	t.withFormat()
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	data := t.hc.view.Applications[t.hc.app].LeaderData
	if data == nil {
		data = map[string]string{}
	}
	if len(args) == 1 && args[0] != "-" {
		return t.out(data[args[0]])
	}
	return t.out(data)
}

func (t *toolCall) leaderSet() error {
	args, err := t.parse(0, -1)
	if err != nil {
		return err
	}
	kv, err := parseSettings(args)
	if err != nil {
		return err
	}
	if !t.isLeaderNow() {
		return errors.New("cannot write leadership settings: this unit is not the leader")
	}
	app := t.hc.app
	return t.hc.do(func(s *State) error {
		a := s.Applications[app]
		if a == nil {
			return nil
		}
		a.LeaderData, _ = applySettings(a.LeaderData, kv)
		return nil
	})
}

func (t *toolCall) stateGet() error {
	t.withFormat()
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	data := t.unitState().CharmState
	if data == nil {
		data = map[string]string{}
	}
	if len(args) == 1 {
		v, ok := data[args[0]]
		if !ok {
			return fmt.Errorf("%q not found", args[0])
		}
		return t.out(v)
	}
	return t.out(data)
}

func (t *toolCall) stateSet() error {
	t.fs.String("file", "", "YAML file of values")
	args, err := t.parse(0, -1)
	if err != nil {
		return err
	}
	kv, err := parseSettings(args)
	if err != nil {
		return err
	}
	unit := t.hc.unit
	return t.hc.do(func(s *State) error {
		u := s.Units[unit]
		if u == nil {
			return nil
		}
		u.CharmState, _ = applySettings(u.CharmState, kv)
		return nil
	})
}

func (t *toolCall) stateDelete() error {
	args, err := t.parse(1, 1)
	if err != nil {
		return err
	}
	unit, key := t.hc.unit, args[0]
	return t.hc.do(func(s *State) error {
		if u := s.Units[unit]; u != nil {
			delete(u.CharmState, key)
		}
		return nil
	})
}

// applySettings applies key=value settings to a databag as Juju's setting tools do: an empty
// value deletes its key. It returns the bag (made when nil) and whether anything changed.
func applySettings(bag, kv map[string]string) (map[string]string, bool) {
	if bag == nil {
		bag = map[string]string{}
	}
	changed := false
	for k, v := range kv {
		old, had := bag[k]
		switch {
		case v == "" && had:
			delete(bag, k)
			changed = true
		case v != "" && (!had || old != v):
			bag[k] = v
			changed = true
		}
	}
	return bag, changed
}
