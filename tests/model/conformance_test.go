package model_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/juju/jujutest/conformance"
	"github.com/charmed-slurm/operators/libs/poll"
	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/model"
)

// TestConformance: the local model keeps every rule of the Juju conformance table, the one
// jujutest and the bench fake pass too. Each case's world is built in a real model (local
// machines: the rules are the model's, not the hosts'): the case's application and the remote
// one are deployed with a relay charm whose dispatch hands every hook to this test and exits
// with the code the test answers; the remote units write their databags and the owner adds and
// grants its secret in their own hooks, through the real hook tools. A case's hook is then the
// unit's real hook of that name, its calls the real hook tools (jujuc) run with that hook's
// environment over the model's socket.
func TestConformance(t *testing.T) {
	conformance.Run(t, modelSim)
}

// relayDispatch is the relay charm's dispatch: it hands the hook to the test (its environment
// in <context>.env, its context on the hooks fifo) and exits with the code the test writes to
// the <context>.done fifo.
const relayDispatch = `#!/bin/sh
relay=$(cat "$JUJU_CHARM_DIR/relay")
id=$(printf %s "$JUJU_CONTEXT_ID" | tr / _)
mkfifo "$relay/$id.done" || exit 98
env > "$relay/$id.env"
echo "$id" > "$relay/hooks"
read code < "$relay/$id.done"
rm -f "$relay/$id.done" "$relay/$id.env"
exit "$code"
`

// remoteEndpoint is the remote application's endpoint of the case's relation.
const remoteEndpoint = "remote-end"

// relayCharm writes a charm directory for app: dispatch is relayDispatch, metadata from
// endpoints (a charmcraft.yaml fragment).
func relayCharm(t *testing.T, dir, relay, app, endpoints string) string {
	t.Helper()
	cd := filepath.Join(dir, "charm-"+app)
	yml := "type: charm\nname: " + app + "\nsummary: Conformance relay.\ndescription: Hands each hook to the test.\n" +
		"base: ubuntu@24.04\nplatforms:\n  amd64:\n" + endpoints +
		"config:\n  options:\n    touch:\n      type: string\n      default: \"\"\n      description: Set to rewrite the unit's databag.\n"
	for name, data := range map[string]string{"charmcraft.yaml": yml, "relay": relay, "dispatch": relayDispatch} {
		if err := os.MkdirAll(cd, 0o755); err != nil {
			t.Fatal(err)
		}
		// dispatch and relay run at once while other tests fork: hosts.WriteExecutable.
		if err := hosts.WriteExecutable(filepath.Join(cd, name), []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return cd
}

// hookReq is one hook the relay charm handed over.
type hookReq struct {
	env  []string
	vars map[string]string
	done string // fifo the exit code is written to
}

func (h *hookReq) unit() string { return h.vars["JUJU_UNIT_NAME"] }
func (h *hookReq) name() string { return h.vars["JUJU_HOOK_NAME"] }

// answer ends the hook with exit code, once the dispatch reads its fifo (it may not yet, or
// never when the model is closing: ctx ends the wait).
func (h *hookReq) answer(ctx context.Context, code int) error {
	var f *os.File
	err := poll.Until(ctx, 5*time.Millisecond, func(context.Context) (bool, error) {
		var err error
		f, err = os.OpenFile(h.done, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if errors.Is(err, syscall.ENXIO) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, code)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runner runs the real hook tools in h's environment; world ids in the arguments are replaced
// by the model's.
func (h *hookReq) runner(ids map[string]string) juju.Runner {
	tools, _, _ := strings.Cut(h.vars["PATH"], ":")
	return idRunner{ids: ids, r: juju.ExecRunner{ToolsDir: tools, Env: h.env}}
}

type idRunner struct {
	ids map[string]string
	r   juju.Runner
}

func (r idRunner) Run(ctx context.Context, c juju.Command) (juju.Result, error) {
	args := slices.Clone(c.Args)
	for i, a := range args {
		if v, ok := r.ids[a]; ok {
			args[i] = v
		}
	}
	c.Args = args
	return r.r.Run(ctx, c)
}

// armed is a hook the case waits for: the next hook of that name (and remote unit) on the
// local unit whose view shows the world.
type armed struct {
	name, remote string
	got          chan *hookReq
}

// modelWorld is one case's model, built from its world.
type modelWorld struct {
	t        *testing.T
	m        *model.Model
	world    jujutest.State
	rel      jujutest.Relation
	app      string // the local unit's application
	localRel string // the relation id the local unit sees, "<ep>:<n>"
	ownerRel string // the remote side's id of it
	ids      map[string]string

	mu       sync.Mutex
	settled  bool            // the world is committed to the model
	fresh    map[string]bool // units that had a hook answered since it was settled
	setup    map[string]bool // units whose setup writes are done
	touched  map[string]string
	want     *armed
	failures []string
	broken   chan struct{} // closed at the first failure
	touchOK  chan string
}

// modelSim is the local model's conformance.Simulator.
func modelSim(t *testing.T, world jujutest.State) conformance.Unit {
	app, num, ok := strings.Cut(world.Unit, "/")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || len(world.Relations) != 1 || world.Config != nil ||
		world.Relations[0].LocalAppData != nil || world.Relations[0].LocalUnitData != nil || (world.Leader != (n == 0)) {
		t.Fatalf("the local model's adapter builds one relation, no config nor local data, unit 0 the leader: %+v", world)
	}
	rel := world.Relations[0]
	dir, err := os.MkdirTemp("", "jlc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	relay := filepath.Join(dir, "relay")
	if err := os.Mkdir(relay, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(relay, "hooks"), 0o600); err != nil {
		t.Fatal(err)
	}
	hooksFifo, err := os.OpenFile(filepath.Join(relay, "hooks"), os.O_RDWR, 0) // never EOF
	if err != nil {
		t.Fatal(err)
	}
	w := &modelWorld{t: t, world: world, rel: rel, app: app, ids: map[string]string{},
		fresh: map[string]bool{}, setup: map[string]bool{}, touched: map[string]string{}, touchOK: make(chan string, 16), broken: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.serve(ctx, relay, hooksFifo)
	}()
	// Cleanups run last-in first-out: the model closes (killing held hooks) before the relay stops.
	t.Cleanup(func() {
		cancel()
		hooksFifo.Close()
		wg.Wait()
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, f := range w.failures {
			t.Error(f)
		}
	})
	w.m = newModel(t, modelOptions{updateStatusInterval: 300 * time.Millisecond, hookRetry: -1})
	localEp := rel.ID.Endpoint()
	remoteUnits := slices.Sorted(maps.Keys(rel.RemoteUnits))
	for i, u := range remoteUnits {
		if u != fmt.Sprintf("%s/%d", rel.RemoteApp, i) {
			t.Fatalf("the remote units must be %s/0..%d: %v", rel.RemoteApp, len(remoteUnits)-1, remoteUnits)
		}
	}
	ctx0 := context.Background()
	for _, d := range []struct {
		app, eps string
		units    int
	}{
		{app, "provides:\n  " + localEp + ":\n    interface: conformance\n", n + 1},
		{rel.RemoteApp, "requires:\n  " + remoteEndpoint + ":\n    interface: conformance\n", len(remoteUnits)},
	} {
		if _, err := w.m.Deploy(ctx0, model.DeployOptions{Charm: relayCharm(t, dir, relay, d.app, d.eps), Name: d.app, Units: d.units}); err != nil {
			t.Fatal(err)
		}
	}
	id, err := w.m.Integrate(ctx0, app+":"+localEp, rel.RemoteApp+":"+remoteEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.localRel, w.ownerRel = fmt.Sprintf("%s:%d", localEp, id), fmt.Sprintf("%s:%d", remoteEndpoint, id)
	w.ids[string(rel.ID)] = w.localRel
	w.mu.Unlock()
	// The world is settled once the model holds the remote data and every secret.
	wctx, wcancel := context.WithTimeout(ctx0, time.Minute)
	defer wcancel()
	err = poll.Until(wctx, 20*time.Millisecond, func(context.Context) (bool, error) {
		select {
		case <-w.broken:
			return false, errors.New("the relay failed")
		default:
		}
		st := w.m.State()
		r := st.Relations[id]
		if r == nil || len(st.Secrets) != len(world.Secrets) {
			return false, nil
		}
		for _, u := range remoteUnits {
			if !cmp.Equal(nonNil(r.UnitData[u]), nonNil(rel.RemoteUnits[u])) {
				return false, nil
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.setup) == len(remoteUnits)+n+1 && cmp.Equal(nonNil(r.AppData[rel.RemoteApp]), nonNil(rel.RemoteAppData)), nil
	})
	if err != nil {
		t.Fatalf("the world never settled in the model: %v", err)
	}
	w.mu.Lock()
	w.settled = true
	w.mu.Unlock()
	return w
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// serve answers the relay charm's hooks until ctx ends.
func (w *modelWorld) serve(ctx context.Context, relay string, fifo *os.File) {
	sc := bufio.NewScanner(fifo)
	for sc.Scan() {
		id := strings.TrimSpace(sc.Text())
		data, err := os.ReadFile(filepath.Join(relay, id+".env"))
		h := &hookReq{done: filepath.Join(relay, id+".done"), vars: map[string]string{}}
		if err == nil {
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				if k, v, ok := strings.Cut(l, "="); ok {
					h.env = append(h.env, l)
					h.vars[k] = v
				}
			}
		}
		// EPIPE: the hook was gone before its answer, which happens only when the model closes
		// at the end of a case (it kills held hooks; Juju has no hook timeout), not a rule broken.
		if err := w.handle(ctx, h); err != nil && ctx.Err() == nil && !errors.Is(err, syscall.EPIPE) {
			w.mu.Lock()
			w.failures = append(w.failures, fmt.Sprintf("relay: %s %s: %v", h.unit(), h.name(), err))
			if len(w.failures) == 1 {
				close(w.broken)
			}
			w.mu.Unlock()
			h.answer(ctx, 1)
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// handle answers one hook: a case's hook goes to the waiting case; the remote units' and the
// secret owner's first relation hook makes the world's writes; the remote units rewrite their
// databag on config-changed (touch); every other hook succeeds without a call.
func (w *modelWorld) handle(ctx context.Context, h *hookReq) error {
	w.mu.Lock()
	want, fresh, settled := w.want, w.fresh[h.unit()], w.settled
	done := w.setup[h.unit()]
	w.mu.Unlock()
	unit, app := h.unit(), strings.Split(h.unit(), "/")[0]
	r := h.runner(nil)
	if want != nil && unit == w.world.Unit && fresh && h.name() == want.name && h.vars["JUJU_REMOTE_UNIT"] == want.remote {
		ok, err := w.shows(ctx, r)
		if err != nil {
			return err
		}
		if ok {
			w.mu.Lock()
			w.want = nil
			w.mu.Unlock()
			want.got <- h
			return nil
		}
	}
	if !done && h.vars["JUJU_RELATION_ID"] != "" {
		if err := w.writeWorld(ctx, r, unit, app, h.vars["JUJU_RELATION_ID"]); err != nil {
			return err
		}
		w.mu.Lock()
		w.setup[unit] = true
		w.mu.Unlock()
	}
	if h.name() == "config-changed" && app == w.rel.RemoteApp && done {
		res, err := r.Run(ctx, juju.Command{Args: []string{"config-get", "touch"}})
		if err != nil || res.ExitCode != 0 {
			return fmt.Errorf("config-get: %v %s", err, res.Stderr)
		}
		v := strings.TrimSpace(string(res.Stdout))
		w.mu.Lock()
		prev := w.touched[unit]
		w.touched[unit] = v
		w.mu.Unlock()
		if v != prev {
			if err := tool(ctx, r, "relation-set", "-r", w.ownerRel, "conformance-touch="+v); err != nil {
				return err
			}
			defer func() { w.touchOK <- unit }()
		}
	}
	w.mu.Lock()
	if settled {
		w.fresh[unit] = true
	}
	w.mu.Unlock()
	return h.answer(ctx, 0)
}

// tool runs one hook tool that must succeed.
func tool(ctx context.Context, r juju.Runner, args ...string) error {
	res, err := r.Run(ctx, juju.Command{Args: args})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// writeWorld makes unit's part of the world, in its first hook on relation relID: a remote
// unit's databag, the remote leader's application databag, and the secrets its application
// owns (added, then granted on the relation).
func (w *modelWorld) writeWorld(ctx context.Context, r juju.Runner, unit, app, relID string) error {
	leader := strings.HasSuffix(unit, "/0")
	if app == w.rel.RemoteApp {
		for k, v := range w.rel.RemoteUnits[unit] {
			if err := tool(ctx, r, "relation-set", "-r", relID, k+"="+v); err != nil {
				return err
			}
		}
		if leader {
			for k, v := range w.rel.RemoteAppData {
				if err := tool(ctx, r, "relation-set", "--app", "-r", relID, k+"="+v); err != nil {
					return err
				}
			}
		}
	}
	if !leader {
		return nil
	}
	for _, s := range w.world.Secrets {
		if s.Owner != app || len(s.Revisions) != 1 {
			if s.Owner != app && s.Owner != w.app && s.Owner != w.rel.RemoteApp {
				return fmt.Errorf("secret %s: owner %q is no application of the world", s.ID, s.Owner)
			}
			continue
		}
		args := []string{"secret-add"}
		for k, v := range s.Revisions[0] {
			args = append(args, k+"="+v)
		}
		res, err := r.Run(ctx, juju.Command{Args: args})
		if err != nil || res.ExitCode != 0 {
			return fmt.Errorf("secret-add: %v %s", err, res.Stderr)
		}
		id := strings.TrimSpace(string(res.Stdout))
		w.mu.Lock()
		w.ids[string(s.ID)] = id
		w.mu.Unlock()
		for _, g := range s.Grants {
			_, gn, _ := g.Relation.Parse()
			if _, n, _ := w.rel.ID.Parse(); g.Unit != "" || gn != n {
				return fmt.Errorf("secret %s: only grants on the world's relation are built", s.ID)
			}
			if err := tool(ctx, r, "secret-grant", id, "-r", relID); err != nil {
				return err
			}
		}
	}
	return nil
}

// shows reports whether the hook's view is the world's relation: its remote units and data.
func (w *modelWorld) shows(ctx context.Context, r juju.Runner) (bool, error) {
	read := func(args ...string) (any, error) {
		res, err := r.Run(ctx, juju.Command{Args: args})
		if err != nil || res.ExitCode != 0 {
			return nil, fmt.Errorf("%s: %v %s", strings.Join(args, " "), err, res.Stderr)
		}
		var v any
		return v, json.Unmarshal(res.Stdout, &v)
	}
	want := map[string]any{}
	units := []any{}
	for u, d := range w.rel.RemoteUnits {
		want[u] = toAny(d)
		units = append(units, u)
	}
	slices.SortFunc(units, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
	want["list"] = units
	want[w.rel.RemoteApp] = toAny(w.rel.RemoteAppData)
	got := map[string]any{}
	list, err := read("relation-list", "-r", w.localRel, "--format=json")
	if err != nil {
		return false, err
	}
	got["list"] = list
	for u := range w.rel.RemoteUnits {
		if got[u], err = read("relation-get", "--format=json", "-r", w.localRel, "-", u); err != nil {
			return false, nil // not joined yet in this view
		}
	}
	if got[w.rel.RemoteApp], err = read("relation-get", "--app", "--format=json", "-r", w.localRel, "-", w.rel.RemoteApp); err != nil {
		return false, err
	}
	return cmp.Equal(want, got), nil
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Hook implements conformance.Unit: it makes the model run ev on the local unit and runs body
// in that hook. A relation-changed is brought about by the remote unit rewriting its databag
// (a touch key set, then unset, so the hook sees the world's data); update-status comes every
// 300 ms. A failed hook is then skipped (juju resolve --no-retry), so that the next one runs.
func (w *modelWorld) Hook(ctx context.Context, ev juju.Event, body func(context.Context, juju.Runner) error) error {
	t := w.t
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	a := &armed{name: ev.Name, remote: ev.RemoteUnit, got: make(chan *hookReq, 1)}
	if ev.Relation != "" && ev.Relation != w.rel.ID {
		t.Fatalf("event %s on relation %s, the world has %s", ev.Name, ev.Relation, w.rel.ID)
	}
	w.mu.Lock()
	w.want = a
	w.mu.Unlock()
	switch ev.Kind {
	case juju.RelationChanged:
		if ev.RemoteUnit == "" {
			t.Fatalf("the adapter brings about unit relation-changed hooks only")
		}
		for _, v := range []string{"1", ""} {
			var err error
			if v == "" {
				err = w.m.SetConfig(ctx, w.rel.RemoteApp, nil, []string{"touch"})
			} else {
				err = w.m.SetConfig(ctx, w.rel.RemoteApp, map[string]string{"touch": v}, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			for range w.rel.RemoteUnits {
				select {
				case <-w.touchOK:
				case <-w.broken:
					t.Fatalf("the relay failed")
				case <-ctx.Done():
					t.Fatalf("the remote units never rewrote their databag: %v", ctx.Err())
				}
			}
		}
	case juju.UpdateStatus:
	default:
		t.Fatalf("the adapter brings about relation-changed and update-status only, not %s", ev.Name)
	}
	var h *hookReq
	select {
	case h = <-a.got:
	case <-w.broken:
		t.Fatalf("the relay failed")
	case <-ctx.Done():
		t.Fatalf("%s never ran on %s showing the world: %v", ev.Name, w.world.Unit, ctx.Err())
	}
	w.mu.Lock()
	ids := maps.Clone(w.ids)
	w.mu.Unlock()
	err := body(ctx, h.runner(ids))
	code := 0
	if err != nil {
		code = 1
	}
	if aerr := h.answer(ctx, code); aerr != nil {
		t.Fatalf("cannot end the hook: %v", aerr)
	}
	if err != nil {
		// Juju keeps the unit in error until resolved: skip the hook, as an operator would.
		perr := poll.Until(ctx, 20*time.Millisecond, func(ctx context.Context) (bool, error) {
			u := w.m.State().Units[w.world.Unit]
			return u != nil && u.Failed != nil, nil
		})
		if perr != nil {
			t.Fatalf("the failed hook did not put %s in error: %v", w.world.Unit, perr)
		}
		if rerr := w.m.Resolve(ctx, w.world.Unit, false); rerr != nil {
			t.Fatal(rerr)
		}
	}
	return err
}
