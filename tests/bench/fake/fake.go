// Package fake answers Juju's hook tools from a JSON fixture and stubs Slurm's, munge's and
// apt's commands, for timing operator hooks without Juju or Slurm (see tests/bench). It uses
// the standard library only, so that the binary built from it (tests/cmd/bench/faketool) starts
// as fast as a Go program can.
//
// One binary answers under every name: Main looks at the base name of argv[0], so the binary
// is installed as symlinks named after HookTools on PATH and bind-mounted over SlurmCommands.
package fake

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Environment variables read by Main.
const (
	// FixtureEnv names the JSON Fixture file the fake hook tools answer from.
	FixtureEnv = "BENCH_FAKE_FIXTURE"
	// LogEnv names a file every fake call appends one line to ("tool arg arg...").
	LogEnv = "BENCH_FAKE_LOG"
	// WritesEnv, when set, names the running hook's pending relation writes (JSON lines): the
	// hook's relation-get calls see its own relation-set calls, as in Juju. Unset, writes are
	// forgotten at once.
	WritesEnv = "BENCH_FAKE_WRITES"
)

// MeasureName is the name under which Main runs its arguments as a command and writes the
// command's Measurement as JSON to the file named by $BENCH_MEASURE_OUT.
const MeasureName = "bench-measure"

// MeasureOutEnv names the file a bench-measure run writes its Measurement to.
const MeasureOutEnv = "BENCH_MEASURE_OUT"

// Measurement is one command's cost as its parent saw it. The command is started from this
// small process, so its peak RSS is its own (or this launcher's few MiB, whichever is larger),
// not that of a large parent whose memory a vfork-started child inherits in the kernel's count.
type Measurement struct {
	WallNS    int64 `json:"wall_ns"`
	UserNS    int64 `json:"user_ns"`
	SysNS     int64 `json:"sys_ns"`
	MaxRSSKiB int64 `json:"maxrss_kib"`
	Exit      int   `json:"exit"`
}

func measure(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, MeasureName+": no command")
		return 2
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	var ee *exec.ExitError
	var m Measurement
	if err != nil && !errors.As(err, &ee) {
		// The command did not start (not installed, say): exit 127 as a shell would.
		fmt.Fprintf(stderr, "%s: %v\n", MeasureName, err)
		m = Measurement{WallNS: int64(wall), Exit: 127}
	} else {
		ps := cmd.ProcessState
		m = Measurement{WallNS: int64(wall), UserNS: int64(ps.UserTime()), SysNS: int64(ps.SystemTime()), Exit: ps.ExitCode()}
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			m.MaxRSSKiB = ru.Maxrss
		}
	}
	data, _ := json.Marshal(m)
	if p := os.Getenv(MeasureOutEnv); p != "" {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", MeasureName, err)
			return 2
		}
	}
	return m.Exit
}

// HookTools are the Juju hook tools Main answers.
var HookTools = []string{
	"relation-ids", "relation-list", "relation-get", "relation-set", "config-get", "is-leader",
	"status-set", "status-get", "juju-log", "open-port", "close-port", "opened-ports",
	"action-get", "action-set", "action-fail", "action-log", "secret-add", "secret-get",
	"secret-set", "secret-grant", "secret-revoke", "secret-remove", "secret-info-get",
	"secret-ids", "network-get", "unit-get", "application-version-set", "leader-get", "leader-set",
}

// SlurmCommands are the system commands Main stubs: Slurm's, munge's and apt's.
var SlurmCommands = []string{
	"scontrol", "sinfo", "squeue", "sbatch", "srun", "scancel", "slurmd", "slurmctld",
	"munged", "mungekey", "munge", "unmunge", "apt-get", "dpkg-query",
}

// Answers reports whether argv0 (os.Args[0]) names a tool Main answers.
func Answers(argv0 string) bool {
	name := filepath.Base(argv0)
	return slices.Contains(HookTools, name) || slices.Contains(SlurmCommands, name)
}

// Fixture is what the fake hook tools answer: one unit's view of its model.
type Fixture struct {
	Leader bool           `json:"leader"`
	Config map[string]any `json:"config"`
	// Relations by id ("slurmd:1").
	Relations []Relation `json:"relations"`
	// Secrets by id ("secret:..."); Labels maps a label to its secret id.
	Secrets map[string]map[string]string `json:"secrets"`
	Labels  map[string]string            `json:"labels"`
	// Hidden are the ids of Secrets the unit may not read (not granted to it): secret-get
	// refuses them as Juju does.
	Hidden []string `json:"hidden,omitempty"`
	// Ingress is the address network-get and unit-get give.
	Ingress string `json:"ingress"`
	// Commands are the answers of the stubbed system commands, first matching prefix wins.
	Commands []Command `json:"commands"`
}

// Relation is one relation as the unit sees it.
type Relation struct {
	ID        string   `json:"id"`
	Endpoint  string   `json:"endpoint"`
	RemoteApp string   `json:"remote-app"`
	Units     []string `json:"units"`
	// Data by unit or application name.
	Data map[string]map[string]string `json:"data"`
}

// Command answers a stubbed command whose argv (without the program's directory) starts
// with Argv. Block makes it run until SIGTERM (a daemon in the foreground).
type Command struct {
	Argv   []string `json:"argv"`
	Stdout string   `json:"stdout,omitempty"`
	Stderr string   `json:"stderr,omitempty"`
	Exit   int      `json:"exit,omitempty"`
	Block  bool     `json:"block,omitempty"`
}

// Main runs argv as the hook tool or stubbed command named by argv[0], answering from the
// Fixture named by $BENCH_FAKE_FIXTURE, and returns the exit code. It accepts the command
// lines libs/juju runs (docs/contracts.md) and keeps Juju's rules on them (the conformance
// table of libs/juju/jujutest/conformance): only the leader ($JUJU_UNIT_NAME's application's)
// writes or reads its application databag and sets the application status; relation-get reads
// the unit itself and the relation's remote side only; a Hidden secret is not readable.
// It is only as clever as a benchmark needs: writes are kept for the hook at most ($BENCH_FAKE_WRITES)
// and never committed, so every run of a hook sees the same model.
func Main(argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	name := filepath.Base(argv[0])
	args := argv[1:]
	if name == MeasureName {
		return measure(args, stdin, stdout, stderr)
	}
	if p := os.Getenv(LogEnv); p != "" {
		if f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			fmt.Fprintln(f, strings.Join(append([]string{name}, args...), " "))
			f.Close()
		}
	}
	var fx Fixture
	if p := os.Getenv(FixtureEnv); p != "" {
		data, err := os.ReadFile(p)
		if err == nil {
			err = json.Unmarshal(data, &fx)
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: cannot read fixture: %v\n", name, err)
			return 2
		}
	}
	if slices.Contains(SlurmCommands, name) {
		return fx.command(name, args, stdout, stderr)
	}
	out, code, msg := fx.tool(name, args, stdin, os.Getenv("JUJU_UNIT_NAME"), os.Getenv(WritesEnv))
	if msg != "" {
		fmt.Fprintln(stderr, "ERROR "+msg)
	}
	if raw, ok := out.(rawOut); ok {
		fmt.Fprintln(stdout, string(raw))
	} else if out != nil {
		data, _ := json.Marshal(out)
		fmt.Fprintln(stdout, string(data))
	}
	return code
}

func (fx *Fixture) command(name string, args []string, stdout, stderr io.Writer) int {
	argv := append([]string{name}, args...)
	for _, c := range fx.Commands {
		if len(c.Argv) <= len(argv) && slices.Equal(c.Argv, argv[:len(c.Argv)]) {
			io.WriteString(stdout, c.Stdout)
			io.WriteString(stderr, c.Stderr)
			if c.Block {
				ch := make(chan os.Signal, 1)
				signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
				<-ch
			}
			return c.Exit
		}
	}
	return 0
}

// flagValue returns the value of flag (e.g. "-r") in args and args without it.
func flagValue(args []string, flag string) (string, []string) {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1], append(append([]string(nil), args[:i]...), args[i+2:]...)
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, append(append([]string(nil), args[:i]...), args[i+1:]...)
		}
	}
	return "", args
}

// positional returns the arguments that are not flags (a lone "-" counts as positional).
func positional(args []string) []string {
	var out []string
	for _, a := range args {
		if a == "-" || !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

// rawOut is tool output printed as is rather than as JSON.
type rawOut string

func (fx *Fixture) relation(id string) *Relation {
	for i := range fx.Relations {
		if fx.Relations[i].ID == id {
			return &fx.Relations[i]
		}
	}
	return nil
}

// write is one pending relation-set: bag is a unit or application name.
type write struct {
	Relation string            `json:"relation"`
	Bag      string            `json:"bag"`
	Settings map[string]string `json:"settings"`
}

// pending returns the writes recorded in path ("" or missing: none).
func pending(path string) []write {
	var out []write
	data, _ := os.ReadFile(path)
	for _, l := range strings.Split(string(data), "\n") {
		var w write
		if json.Unmarshal([]byte(l), &w) == nil {
			out = append(out, w)
		}
	}
	return out
}

// settings parses relation-set's key=value arguments and --file content (JSON or YAML
// "key: value" lines, "-" for stdin).
func settings(args []string, stdin io.Reader) map[string]string {
	file, rest := flagValue(args, "--file")
	kv := map[string]string{}
	if file != "" {
		var data []byte
		if file == "-" {
			data, _ = io.ReadAll(stdin)
		} else {
			data, _ = os.ReadFile(file)
		}
		if json.Unmarshal(data, &kv) != nil {
			for _, l := range strings.Split(string(data), "\n") {
				if k, v, ok := strings.Cut(l, ":"); ok {
					kv[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
				}
			}
		}
	}
	for _, a := range positional(rest) {
		if k, v, ok := strings.Cut(a, "="); ok {
			kv[k] = v
		}
	}
	return kv
}

func (fx *Fixture) tool(name string, args []string, stdin io.Reader, unit, writes string) (out any, code int, msg string) {
	app, _, _ := strings.Cut(unit, "/")
	switch name {
	case "relation-ids":
		ids := []string{}
		for _, r := range fx.Relations {
			if slices.Contains(positional(args), r.Endpoint) {
				ids = append(ids, r.ID)
			}
		}
		return ids, 0, ""
	case "relation-list":
		id, rest := flagValue(args, "-r")
		r := fx.relation(id)
		if r == nil {
			return nil, 2, fmt.Sprintf("invalid value %q for option -r: relation not found", id)
		}
		if slices.Contains(rest, "--app") {
			return r.RemoteApp, 0, ""
		}
		return r.Units, 0, ""
	case "relation-get":
		id, rest := flagValue(args, "-r")
		r := fx.relation(id)
		if r == nil {
			return nil, 2, fmt.Sprintf("invalid value %q for option -r: relation not found", id)
		}
		pos := positional(rest)
		data := map[string]string{}
		if len(pos) >= 2 {
			who := pos[1]
			isApp := slices.Contains(rest, "--app")
			switch {
			case isApp && who == app && !fx.Leader:
				return nil, 1, "permission denied (unit is not the leader)"
			case isApp && who != app && who != r.RemoteApp:
				return nil, 1, fmt.Sprintf("application %q: settings not found", who)
			case !isApp && who != unit && !slices.Contains(r.Units, who):
				return nil, 1, fmt.Sprintf("unit %q: settings not found", who)
			}
			for k, v := range r.Data[who] {
				data[k] = v
			}
			for _, w := range pending(writes) {
				if w.Relation == id && w.Bag == who {
					for k, v := range w.Settings {
						data[k] = v
						if v == "" {
							delete(data, k)
						}
					}
				}
			}
		}
		return data, 0, ""
	case "relation-set":
		id, rest := flagValue(args, "-r")
		isApp := slices.Contains(rest, "--app")
		if isApp && !fx.Leader {
			io.Copy(io.Discard, stdin)
			return nil, 1, "cannot write relation settings"
		}
		kv := settings(rest, stdin)
		if writes != "" {
			bag := unit
			if isApp {
				bag = app
			}
			line, _ := json.Marshal(write{Relation: id, Bag: bag, Settings: kv})
			if f, err := os.OpenFile(writes, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
				fmt.Fprintln(f, string(line))
				f.Close()
			}
		}
		return nil, 0, ""
	case "leader-set":
		io.Copy(io.Discard, stdin)
		return nil, 0, ""
	case "status-set":
		if slices.Contains(args, "--application") && !fx.Leader {
			return nil, 1, "this unit is not the leader"
		}
		return nil, 0, ""
	case "config-get":
		cfg := fx.Config
		if cfg == nil {
			cfg = map[string]any{}
		}
		return cfg, 0, ""
	case "is-leader":
		return fx.Leader, 0, ""
	case "status-get":
		return map[string]any{"status": "active", "message": "", "status-data": map[string]any{}}, 0, ""
	case "opened-ports", "secret-ids":
		return []string{}, 0, ""
	case "action-get", "leader-get":
		return map[string]any{}, 0, ""
	case "secret-add":
		return rawOut("secret:d3b5s2fmp25c7abcdef0"), 0, ""
	case "secret-get", "secret-info-get":
		id := ""
		label, rest := flagValue(args, "--label")
		if label != "" {
			id = fx.Labels[label]
			if id == "" {
				id = label
			}
		}
		if pos := positional(rest); len(pos) > 0 {
			id = pos[0]
		}
		content, ok := fx.Secrets[id]
		switch {
		case ok && slices.Contains(fx.Hidden, id) && name == "secret-get":
			return nil, 1, "permission denied" // it exists, not granted to this unit
		case !ok || slices.Contains(fx.Hidden, id):
			return nil, 1, fmt.Sprintf("secret %q not found", id)
		}
		if name == "secret-info-get" {
			bare := strings.TrimPrefix(id, "secret:")
			return map[string]any{bare: map[string]any{"revision": 1, "owner": "application"}}, 0, ""
		}
		return content, 0, ""
	case "network-get":
		if slices.Contains(args, "--ingress-address") {
			return fx.Ingress, 0, ""
		}
		return map[string]any{
			"bind-addresses":    []any{map[string]any{"interface-name": "eth0", "addresses": []any{map[string]any{"value": fx.Ingress, "cidr": fx.Ingress + "/24"}}}},
			"egress-subnets":    []string{fx.Ingress + "/32"},
			"ingress-addresses": []string{fx.Ingress},
		}, 0, ""
	case "unit-get":
		return fx.Ingress, 0, ""
	default: // writes: status-set, juju-log, ports, action-*, secret writes, application-version-set
		return nil, 0, ""
	}
}
