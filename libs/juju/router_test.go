package juju_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
)

func TestRouter(t *testing.T) {
	t.Parallel()
	var got []string
	named := func(name string) juju.Handler {
		return func(context.Context, *juju.HookContext) error {
			got = append(got, name)
			return nil
		}
	}
	r := juju.NewRouter()
	r.Handle(juju.Install, named("install"))
	r.Handle(juju.SecretChanged, named("secret-changed"))
	r.HandleRelation("slurmd", juju.RelationJoined, named("slurmd joined"))
	r.HandleRelation("slurmd", juju.RelationBroken, named("slurmd broken"))
	r.HandleAction("node-config", named("node-config action"))

	tests := []struct {
		ev        juju.Event
		want      string
		noHandler string
	}{
		{ev: juju.Event{Kind: juju.Install, Name: "install"}, want: "install"},
		{ev: juju.Event{Kind: juju.SecretChanged, Name: "secret-changed"}, want: "secret-changed"},
		{ev: juju.Event{Kind: juju.RelationJoined, Name: "slurmd-relation-joined", Endpoint: "slurmd"}, want: "slurmd joined"},
		{ev: juju.Event{Kind: juju.RelationBroken, Name: "slurmd-relation-broken", Endpoint: "slurmd"}, want: "slurmd broken"},
		{ev: juju.Event{Kind: juju.OtherHook, Name: "data-storage-attached"}, noHandler: `no handler for hook "data-storage-attached"`},
		{ev: juju.Event{Kind: juju.Action, Name: "node-config"}, want: "node-config action"},
		{ev: juju.Event{Kind: juju.RelationJoined, Name: "other-relation-joined", Endpoint: "other"}, noHandler: `no handler for hook "other-relation-joined"`},
		{ev: juju.Event{Kind: juju.Start, Name: "start"}, noHandler: `no handler for hook "start"`},
		// An action named like a hook is not the hook.
		{ev: juju.Event{Kind: juju.Action, Name: "install"}, noHandler: `no handler for action "install"`},
	}
	for _, tc := range tests {
		got = nil
		err := r.Dispatch(context.Background(), &juju.HookContext{Event: tc.ev})
		if tc.noHandler != "" {
			if !errors.Is(err, juju.ErrNoHandler) || err.Error() != tc.noHandler {
				t.Errorf("%s: got %v, want %q wrapping ErrNoHandler", tc.ev.Name, err, tc.noHandler)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.ev.Name, err)
		}
		if d := cmp.Diff([]string{tc.want}, got); d != "" {
			t.Errorf("%s: handlers run (-want +got):\n%s", tc.ev.Name, d)
		}
	}
}

func TestRouterMisuse(t *testing.T) {
	t.Parallel()
	h := func(context.Context, *juju.HookContext) error { return nil }
	tests := map[string]func(r *juju.Router){
		"relation kind through Handle": func(r *juju.Router) { r.Handle(juju.RelationJoined, h) },
		"action through Handle":        func(r *juju.Router) { r.Handle(juju.Action, h) },
		"non-relation kind":            func(r *juju.Router) { r.HandleRelation("db", juju.Install, h) },
		"empty endpoint":               func(r *juju.Router) { r.HandleRelation("", juju.RelationJoined, h) },
		"empty action":                 func(r *juju.Router) { r.HandleAction("", h) },
		"nil handler":                  func(r *juju.Router) { r.Handle(juju.Install, nil) },
		"twice":                        func(r *juju.Router) { r.Handle(juju.Install, h); r.Handle(juju.Install, h) },
	}
	for name, fn := range tests {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			fn(juju.NewRouter())
		})
	}
}

func TestMainExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		ev        juju.Event
		h         juju.Handler
		wantCode  int
		wantCalls [][]string
		wantErr   string
	}{{
		name:     "success",
		ev:       juju.Event{Kind: juju.Install, Name: "install"},
		h:        func(context.Context, *juju.HookContext) error { return nil },
		wantCode: 0,
	}, {
		name:      "unhandled hook",
		ev:        juju.Event{Kind: juju.Start, Name: "start"},
		h:         juju.NewRouter().Dispatch,
		wantCalls: [][]string{{"juju-log", "-l", "DEBUG", `no handler for hook "start"`}},
	}, {
		name: "unhandled action",
		ev:   juju.Event{Kind: juju.Action, Name: "frobnicate"},
		h:    juju.NewRouter().Dispatch,
		wantCalls: [][]string{
			{"action-fail", `no handler for action "frobnicate"`},
			{"juju-log", "-l", "ERROR", `no handler for action "frobnicate"`},
		},
	}, {
		name:      "failing hook",
		ev:        juju.Event{Kind: juju.ConfigChanged, Name: "config-changed"},
		h:         func(context.Context, *juju.HookContext) error { return errors.New("cannot parse partition-config") },
		wantCode:  1,
		wantCalls: [][]string{{"juju-log", "-l", "ERROR", "hook config-changed failed: cannot parse partition-config"}},
		wantErr:   "hook config-changed failed: cannot parse partition-config\n",
	}, {
		name:     "failing action",
		ev:       juju.Event{Kind: juju.Action, Name: "node-config"},
		h:        func(context.Context, *juju.HookContext) error { return errors.New("NodeName cannot be set") },
		wantCode: 1,
		wantCalls: [][]string{
			{"juju-log", "-l", "ERROR", "action node-config failed: NodeName cannot be set"},
			{"action-fail", "NodeName cannot be set"},
		},
		wantErr: "action node-config failed: NodeName cannot be set\n",
	}, {
		name:      "panicking hook",
		ev:        juju.Event{Kind: juju.Start, Name: "start"},
		h:         func(context.Context, *juju.HookContext) error { panic("oops") },
		wantCode:  1,
		wantCalls: [][]string{{"juju-log", "-l", "ERROR", "hook start failed: panic: oops"}},
		wantErr:   "hook start failed: panic: oops\n",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			var stderr bytes.Buffer
			code := juju.Main(context.Background(), juju.NewHookContext(tc.ev, rec), tc.h, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			var calls [][]string
			for _, c := range rec.calls {
				calls = append(calls, c.Args)
			}
			if d := cmp.Diff(tc.wantCalls, calls); d != "" {
				t.Errorf("tool calls (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantErr, stderr.String()); d != "" {
				t.Errorf("stderr (-want +got):\n%s", d)
			}
		})
	}
}

func TestMainActionFailFails(t *testing.T) {
	t.Parallel()
	rec := &recorder{res: juju.Result{ExitCode: 1, Stderr: []byte("ERROR not in an action")}}
	var stderr bytes.Buffer
	hc := juju.NewHookContext(juju.Event{Kind: juju.Action, Name: "x"}, rec)
	if code := juju.Main(context.Background(), hc, juju.NewRouter().Dispatch, &stderr); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "cannot fail action") {
		t.Errorf("stderr %q does not explain", stderr.String())
	}
}
