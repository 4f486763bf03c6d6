package juju

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// HookContext is everything a handler needs: the event and a client per
// hook tool family, all over one Runner. Build it once in main with
// NewHookContext.
type HookContext struct {
	Event Event
	// Runner runs the hook tools; use it directly only for tools without a
	// client here (application-version-set, goal-state, ...).
	Runner     Runner
	Relations  Relations
	Config     Config
	Actions    Actions
	Status     Status
	Leadership Leadership
	Secrets    Secrets
	Ports      Ports
	Network    Network
	Log        Logger
}

// NewHookContext bundles ev with clients that run hook tools through r. Build one per hook:
// its Relations remembers what the relation tools listed and read for the hook.
func NewHookContext(ev Event, r Runner) *HookContext {
	return &HookContext{
		Event:      ev,
		Runner:     r,
		Relations:  Relations{Runner: r, memo: &readMemo{}},
		Config:     Config{Runner: r},
		Actions:    Actions{Runner: r},
		Status:     Status{Runner: r},
		Leadership: Leadership{Runner: r},
		Secrets:    Secrets{Runner: r},
		Ports:      Ports{Runner: r},
		Network:    Network{Runner: r},
		Log:        Logger{Runner: r},
	}
}

// Main runs h for hc.Event and returns the process exit code for dispatch:
//
//   - success: 0.
//   - no handler (h returned ErrNoHandler) for a hook: a DEBUG juju-log
//     line, 0: Juju sends charms hooks they do not care about.
//   - no handler for an action: action-fail "no handler for action ..."
//     and the same message as an ERROR juju-log line, 0.
//   - any other error: one ERROR juju-log line and the message on stderr;
//     for an action also action-fail with the message; then 1, so that
//     Juju discards the relation, secret and port changes the handler made
//     (for a hook it then puts the unit in error and retries the hook;
//     under Juju a failed action shows "exit status 1" with the message in
//     its stderr).
//
// A panic in h is recovered and treated as an error.
func Main(ctx context.Context, hc *HookContext, h Handler, stderr io.Writer) int {
	what := "hook " + hc.Event.Name
	if hc.Event.Kind == Action {
		what = "action " + hc.Event.Name
	}
	err := safeCall(ctx, hc, h)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrNoHandler) && hc.Event.Kind == Action:
		msg := err.Error()
		if ferr := hc.Actions.Fail(ctx, msg); ferr != nil {
			fmt.Fprintf(stderr, "%s\ncannot fail action: %v\n", msg, ferr)
			return 1
		}
		_ = hc.Log.Log(ctx, LevelError, msg)
		return 0
	case errors.Is(err, ErrNoHandler):
		_ = hc.Log.Log(ctx, LevelDebug, err.Error())
		return 0
	}
	msg := fmt.Sprintf("%s failed: %v", what, err)
	fmt.Fprintln(stderr, msg)
	_ = hc.Log.Log(ctx, LevelError, msg)
	if hc.Event.Kind == Action {
		_ = hc.Actions.Fail(ctx, err.Error())
	}
	return 1
}

func safeCall(ctx context.Context, hc *HookContext, h Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return h(ctx, hc)
}
