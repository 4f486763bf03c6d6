// Package conformance is Juju's hook-tool rules written once, as a table that any Juju
// simulator can be run against: jujutest (TestJujuTest here), the local model (tests/model
// TestConformance) and the bench fake (tests/bench/fake TestConformance).
//
// Three simulators play Juju's part in this project: jujutest for unit tests, the local
// model for integration tests and the demo, the bench fake for benchmarks. They share no
// code (the local model runs real charm binaries in other processes and keeps its state on
// disk; jujutest is an in-memory State in → hook → State out), so what keeps them agreeing
// is this table: each [Case] is a unit's world ([jujutest.State], a plain description) and a
// few hooks, each a list of hook-tool command lines with what Juju answers: success with a
// given output, or a refusal. The rules covered:
//
//   - leader-only writes: only the leader writes (and reads) its application's relation
//     databag and sets the application status;
//   - secret visibility: a secret is readable by its owner and by the units of a relation
//     it was granted to, by no one else;
//   - relation-data scoping: a unit writes its own unit databag, reads the remote units of
//     the relation, and nothing outside it;
//   - commit on success: a failed hook's relation writes are discarded, a successful
//     hook's kept.
//
// A simulator runs the table through [Run] with a [Simulator]: a function that starts a
// unit in a case's world and runs hooks on it, the charm's side being a body that makes the
// hook-tool calls through a juju.Runner. [JujuTest] is jujutest's:
//
//	func TestJujuRules(t *testing.T) { conformance.Run(t, conformance.JujuTest) }
//
// The command lines are the ones libs/juju's clients run (docs/contracts.md), so a
// simulator that passes the table answers the charms as Juju does.
//
// A simulator that leaves a rule out by design names the cases it fails, each with the
// reason, as a [Divergence] each: Run then requires those cases to fail (and fails when one starts
// passing, so the list stays true), and docs/fidelity.md says which simulator keeps which case.
// The bench fake commits no hook's writes (every measured run of a hook must see the same
// model), so it names "successful hook's relation writes are kept".
//
// The Unit interface covers simulators whose hooks are other processes: the local model's
// adapter (tests/model) runs the body in the test while the unit's real hook process waits,
// its runner being the real hook tools in that hook's environment.
package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// Call is one hook-tool call and Juju's answer.
type Call struct {
	Args  []string
	Stdin string
	// Fails: Juju refuses the call (non-zero exit); Err, when not empty, is its message
	// (stderr "ERROR <Err>", as Juju's hook tools write it, the text the tool referee checks
	// the local model's against).
	Fails bool
	Err   string
	// Out, when not empty, is the call's standard output as JSON (compared as decoded
	// values).
	Out string
}

// Hook is one hook on the case's unit: the event, the calls the charm makes, and whether
// the charm then fails the hook.
type Hook struct {
	Event juju.Event
	Calls []Call
	Fail  bool
}

// Case is one rule checked on one unit's world.
type Case struct {
	Name string
	// Rule is the Juju rule, in words.
	Rule  string
	World jujutest.State
	Hooks []Hook
}

// Unit is a simulated unit, advanced hook by hook.
type Unit interface {
	// Hook runs ev on the unit. The charm's side is body: its hook-tool calls go through r;
	// the hook fails when body returns an error, and Hook returns that error.
	Hook(ctx context.Context, ev juju.Event, body func(ctx context.Context, r juju.Runner) error) error
}

// Simulator starts a unit in world (the local unit is world.Unit).
type Simulator func(t *testing.T, world jujutest.State) Unit

// errFailHook is the error of a hook the case fails on purpose.
var errFailHook = errors.New("the charm fails this hook")

// Divergence is a case a simulator fails by design, and why.
type Divergence struct {
	Case, Why string
}

// reporter is where a case's broken rules go: the subtest, or a record for a divergence.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// record keeps the broken rules of a case expected to fail.
type record struct {
	*testing.T
	broken []string
}

func (r *record) Errorf(format string, args ...any) {
	r.broken = append(r.broken, fmt.Sprintf(format, args...))
}

// Run runs every case against sim, each as a subtest. A case named in diverges must break its
// rule on sim: the subtest fails if it does not.
func Run(t *testing.T, sim Simulator, diverges ...Divergence) {
	cases := map[string]bool{}
	for _, c := range Cases() {
		cases[c.Name] = true
	}
	why := map[string]string{}
	for _, d := range diverges {
		if !cases[d.Case] {
			t.Fatalf("divergence from unknown case %q", d.Case)
		}
		why[d.Case] = d.Why
	}
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			var rep reporter = t
			rec := &record{T: t}
			if _, ok := why[c.Name]; ok {
				rep = rec
			}
			defer func() {
				w, ok := why[c.Name]
				switch {
				case !ok:
				case len(rec.broken) == 0:
					t.Errorf("keeps %q now (listed as diverging: %s): remove the divergence", c.Rule, w)
				default:
					t.Logf("diverges as documented (%s): %s", w, rec.broken[0])
				}
			}()
			u := sim(t, c.World)
			for i, h := range c.Hooks {
				err := u.Hook(context.Background(), h.Event, func(ctx context.Context, r juju.Runner) error {
					for _, call := range h.Calls {
						check(ctx, rep, c, i, r, call)
					}
					if h.Fail {
						return errFailHook
					}
					return nil
				})
				if (err != nil) != h.Fail {
					rep.Errorf("%s: hook %d (%s) returned %v, want failure %v", c.Rule, i, h.Event.Name, err, h.Fail)
				}
			}
		})
	}
}

func check(ctx context.Context, t reporter, c Case, hook int, r juju.Runner, call Call) {
	t.Helper()
	var stdin []byte
	if call.Stdin != "" {
		stdin = []byte(call.Stdin)
	}
	res, err := r.Run(ctx, juju.Command{Args: call.Args, Stdin: stdin})
	what := fmt.Sprintf("%s: hook %d: %s", c.Rule, hook, strings.Join(call.Args, " "))
	switch {
	case err != nil:
		t.Errorf("%s: cannot run: %v", what, err)
		return
	case call.Fails && res.ExitCode == 0:
		t.Errorf("%s: succeeded (stdout %q), Juju refuses it", what, res.Stdout)
		return
	case !call.Fails && res.ExitCode != 0:
		t.Errorf("%s: exit %d: %s", what, res.ExitCode, bytes.TrimSpace(res.Stderr))
		return
	}
	if call.Fails && call.Err != "" {
		if got := strings.TrimSpace(string(res.Stderr)); got != "ERROR "+call.Err {
			t.Errorf("%s: stderr %q, Juju's is %q", what, got, "ERROR "+call.Err)
		}
	}
	if call.Out == "" || call.Fails {
		return
	}
	var want, got any
	if err := json.Unmarshal([]byte(call.Out), &want); err != nil {
		t.Fatalf("%s: bad Out in the table: %v", what, err)
	}
	if err := json.Unmarshal(res.Stdout, &got); err != nil {
		t.Errorf("%s: output %q is not JSON: %v", what, res.Stdout, err)
		return
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s: output (-juju +simulator):\n%s", what, d)
	}
}

// JujuTest is jujutest's Simulator: each hook is a jujutest.Scenario run (lenient, so a
// broken rule is the tool's refusal the table expects, not a test failure) on the State
// the previous hook left.
func JujuTest(t *testing.T, world jujutest.State) Unit {
	return &jujuTestUnit{t: t, state: world}
}

type jujuTestUnit struct {
	t     *testing.T
	state jujutest.State
}

func (u *jujuTestUnit) Hook(_ context.Context, ev juju.Event, body func(context.Context, juju.Runner) error) error {
	out, err := jujutest.Scenario{T: u.t, Lenient: true}.Run(u.state, ev, func(ctx context.Context, hc *juju.HookContext) error {
		return body(ctx, hc.Runner)
	})
	u.state = out
	return err
}
