package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

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
	var call *toolCallRecord
	if m.referee != nil {
		call = hc.toolCall(req)
		stdout, stderr = io.MultiWriter(stdout, &call.out), io.MultiWriter(stderr, &call.err)
	}
	t := &toolCall{hc: hc, name: name, args: req.Argv[1:], stdin: req.Stdin, stdout: stdout, fs: fs}
	err := fn(t)
	var ue *usageError
	code := 0
	switch {
	case err == nil:
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ERROR %s\n", err)
		code = 2
	default:
		fmt.Fprintf(stderr, "ERROR %s\n", err)
		code = 1
	}
	if call != nil {
		hc.finishToolCall(call, code)
		m.refereeTool(&call.ToolCall)
	}
	return code
}

// withFormat adds --format (smart, json or yaml) to t's flags.
func (t *toolCall) withFormat() {
	t.format = t.fs.String("format", "smart", "output format: smart, json or yaml")
}

// parse parses the flags; positional arguments are returned.
func (t *toolCall) parse(min, max int) ([]string, error) {
	if err := t.fs.Parse(t.args); err != nil {
		return nil, &usageError{flagError(err)}
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
		if x == "" {
			return nil // Juju's smart format writes nothing, not even a newline, for ""
		}
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

// flagError words a flag parsing error as Juju's gnuflag does ("option provided but not
// defined: --bogus", "option needs an argument: --format").
func flagError(err error) string {
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "unknown flag: "); ok {
		return "option provided but not defined: " + f
	}
	if f, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		if q, sh, ok := strings.Cut(f, " in "); ok && strings.HasPrefix(q, "'") {
			f = sh // shorthand: "'r' in -r"
		}
		return "option needs an argument: " + f
	}
	if f, ok := strings.CutPrefix(msg, "unknown shorthand flag: "); ok {
		if i := strings.Index(f, " in "); i >= 0 {
			f = f[:i]
		}
		return "option provided but not defined: -" + strings.Trim(f, "'")
	}
	return msg
}
