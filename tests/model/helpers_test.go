package model_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
	"github.com/charmed-slurm/operators/tests/model"
)

// Built once by TestMain: the hook tools binary (jujuc) and the test charm's directory.
var (
	toolsBin string
	// refereeBin is Juju 3.6's own code judging every model of these tests (model.Options.Referee).
	refereeBin string
	charmDir   string
)

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	tmp, err := os.MkdirTemp("", "jlbuild")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	_, file, _, _ := runtime.Caller(0)
	testsDir := filepath.Dir(filepath.Dir(file)) // tests/
	cli, err := model.BuildBinaries(context.Background(), testsDir, tmp)
	if err != nil {
		return 0, err
	}
	toolsBin = model.ToolsBeside(cli)
	refereeBin = model.RefereeBeside(cli)
	charmDir = filepath.Join(tmp, "testcharm")
	cmd := exec.Command("go", "build", "-o", filepath.Join(charmDir, "dispatch"), "./testdata/testcharm")
	cmd.Dir = testsDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("cannot build the test charm: %v\n%s", err, out)
	}
	yml, err := os.ReadFile(filepath.Join(testsDir, "testdata/testcharm/charmcraft.yaml"))
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(charmDir, "charmcraft.yaml"), yml, 0o644); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// machineKinds are the provisioners the lifecycle tests run on: real hosts (netns + Pebble, root
// needed; skipped loudly without, failed under CI=true) and local processes. Keep the names of
// tests using real hosts short: the hosts live under t.TempDir, whose path holds the test's
// name, and each host's Pebble socket path must fit a unix socket address (108 bytes).
var machineKinds = []struct {
	name string
	new  func(t *testing.T, dir string) model.Provisioner // dir: the model's
}{
	{"hosts", func(t *testing.T, dir string) model.Provisioner {
		return &model.HostMachines{Network: hoststest.New(t), Binds: []string{dir, filepath.Dir(toolsBin)}}
	}},
	{"local", func(t *testing.T, dir string) model.Provisioner { return nil }},
}

func forEachMachines(t *testing.T, fn func(t *testing.T, prov func(t *testing.T, dir string) model.Provisioner)) {
	for _, k := range machineKinds {
		t.Run(k.name, func(t *testing.T) { fn(t, k.new) })
	}
}

type modelOptions struct {
	prov                 func(t *testing.T) model.Provisioner
	provIn               func(t *testing.T, dir string) model.Provisioner // prov given the model's dir
	updateStatusInterval time.Duration
	hookRetry            time.Duration // model.Options.HookRetry: 0 Juju's default, <0 off
}

// newModel starts a model in a short temporary directory (unix socket paths are limited).
func newModel(t *testing.T, o modelOptions) *model.Model {
	t.Helper()
	dir, err := os.MkdirTemp("", "jlm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) // runs after the model's close below
	var prov model.Provisioner
	if o.prov != nil {
		prov = o.prov(t)
	}
	if o.provIn != nil {
		prov = o.provIn(t, dir)
	}
	interval := o.updateStatusInterval
	if interval == 0 {
		interval = time.Hour
	}
	// The model's progress and debug-log lines, timed, shown when the test fails.
	var logMu sync.Mutex
	var lines []string
	m, err := model.New(context.Background(), model.Options{
		Dir: dir, Name: "test", Tools: toolsBin, Machines: prov, UpdateStatusInterval: interval,
		HookRetry: o.hookRetry, Referee: refereeBin,
		Log: func(l string) {
			logMu.Lock()
			lines = append(lines, time.Now().Format("15:04:05.000 ")+l)
			logMu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("cannot close model: %v", err)
		}
		if t.Failed() {
			t.Log(hoststest.DumpMarker + "the model's log")
			logMu.Lock()
			defer logMu.Unlock()
			for _, l := range lines {
				if !strings.Contains(l, "testcharm-hook") {
					t.Log(l)
				}
			}
		}
	})
	return m
}

func deploy(t *testing.T, m *model.Model, name string, n int, cfg map[string]string) {
	t.Helper()
	if _, err := m.Deploy(context.Background(), model.DeployOptions{Charm: charmDir, Name: name, Units: n, Config: cfg}); err != nil {
		t.Fatal(err)
	}
}

// waitIdle waits for the model to settle; the bound only keeps a broken model from hanging.
func waitIdle(t *testing.T, m *model.Model) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := m.Wait(ctx, model.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
}

// record is one hook the test charm saw.
type record struct {
	Unit string
	Hook string            `json:"hook"`
	Env  map[string]string `json:"env"`
	// WD is the hook's working directory.
	WD string `json:"wd"`
	// Relation hooks: what relation-ids (of the hook's endpoint) and relation-list printed.
	IDs     string `json:"ids"`
	Members string `json:"members"`
	// T is when the hook started (Unix nanoseconds).
	T int64 `json:"t"`
	// On a systemd machine, as the hook started: the state of the agent's service (active,
	// deactivating, inactive, ...), what systemd said of the machine (running, stopping, ...) and
	// the boot id.
	Agent  string `json:"agent"`
	System string `json:"system"`
	Boot   string `json:"boot"`
}

// span is one hook or action as the test charm logged it: its start and end.
type span struct {
	Hook       string
	Start, End time.Time
}

// spans returns, per unit, the hooks and actions with their start and end times, in the order
// they started (from the charm's testcharm-hook and testcharm-done lines; a hook still
// running has no end yet and is left out).
func spans(m *model.Model) map[string][]span {
	out := map[string][]span{}
	open := map[string]record{}
	for _, l := range m.DebugLog() {
		if _, js, ok := strings.Cut(l, "testcharm-hook "); ok {
			var r record
			if json.Unmarshal([]byte(js), &r) == nil {
				open[r.Env["JUJU_UNIT_NAME"]] = r
			}
			continue
		}
		_, js, ok := strings.Cut(l, "testcharm-done ")
		if !ok {
			continue
		}
		var d struct {
			Hook string `json:"hook"`
			Unit string `json:"unit"`
			T    int64  `json:"t"`
		}
		if json.Unmarshal([]byte(js), &d) != nil {
			continue
		}
		r, ok := open[d.Unit]
		if !ok || r.Hook != d.Hook {
			// An end with no start logged before it: two hooks overlapped on the unit.
			out[d.Unit] = append(out[d.Unit], span{Hook: d.Hook + " (no start)", End: time.Unix(0, d.T)})
			continue
		}
		delete(open, d.Unit)
		out[d.Unit] = append(out[d.Unit], span{Hook: d.Hook, Start: time.Unix(0, r.T), End: time.Unix(0, d.T)})
	}
	return out
}

// hooks returns the hooks each unit ran, in order, from the charm's juju-log lines.
func hooks(m *model.Model) map[string][]record {
	out := map[string][]record{}
	for _, l := range m.DebugLog() {
		_, js, ok := strings.Cut(l, "testcharm-hook ")
		if !ok {
			continue
		}
		var r record
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			continue
		}
		r.Unit = r.Env["JUJU_UNIT_NAME"]
		out[r.Unit] = append(out[r.Unit], r)
	}
	return out
}

func names(rs []record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Hook)
	}
	return out
}

// find returns the records of unit's hook name.
func find(rs []record, hook string) []record {
	var out []record
	for _, r := range rs {
		if r.Hook == hook {
			out = append(out, r)
		}
	}
	return out
}

// index is the position of the first record of hook matching env (nil: any), or -1.
func index(rs []record, hook string, env map[string]string) int {
next:
	for i, r := range rs {
		if r.Hook != hook {
			continue
		}
		for k, v := range env {
			if r.Env[k] != v {
				continue next
			}
		}
		return i
	}
	return -1
}

func relationOf(t *testing.T, m *model.Model, app, endpoint string) *model.Relation {
	t.Helper()
	st := m.State()
	for _, r := range st.Relations {
		for _, ep := range r.Endpoints {
			if ep.App == app && ep.Name == endpoint {
				return r
			}
		}
	}
	t.Fatalf("no relation for %s:%s", app, endpoint)
	return nil
}

// runTool runs a hook tool inside an action of the test charm on unit.
func runTool(t *testing.T, m *model.Model, unit string, argv ...string) (stdout, stderr string, code string) {
	t.Helper()
	js, _ := json.Marshal(argv)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// juju run parses values as YAML: the JSON list is quoted to stay a string.
	act, err := m.Run(ctx, unit, "run-tool", map[string]string{"argv": yamlQuote(string(js))})
	if err != nil {
		t.Fatal(err)
	}
	if act.Status != "completed" {
		t.Fatalf("run-tool %v on %s: %s: %s", argv, unit, act.Status, act.Message)
	}
	return fmt.Sprint(act.Results["out"]), fmt.Sprint(act.Results["err"]), fmt.Sprint(act.Results["code"])
}

// yamlQuote quotes s as a single-quoted YAML scalar, so that `juju run` keeps it a string.
func yamlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
