package charm

import (
	"context"
	"fmt"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// Func is a charm's handler of one hook or action: a method of the charm's hook value H,
// given as a method expression ((*hook).start), so every handler of a charm has the one
// shape func (h *hook) name(ctx context.Context) error.
type Func[H any] func(h H, ctx context.Context) error

// Handlers runs a charm's handlers in its Lifecycle: the state is loaded, Begin builds the
// charm's hook value H (the configuration read, what the charm derives from it), the handler
// runs, End records what the hook wrote to Juju, and the state is saved once.
type Handlers[S, H any] struct {
	Lifecycle Lifecycle[S]
	// Begin builds the hook value for k before the handler runs. Required.
	Begin func(ctx context.Context, k *Hook[S]) (H, error)
	// End, when set, runs after the handler succeeded, before the state is saved: a record
	// of what the hook wrote to Juju (relation data, secret grants, ports) belongs in the
	// state only then, since Juju discards a failed hook's writes.
	End Func[H]
	// After, when set, runs right after the handler whatever its outcome, before End: what a
	// charm hands on from every hook (slurmctld's removals under way, to its waiter), which
	// must not wait for the handler to succeed. It reports nothing: it logs its own failures.
	After func(h H, ctx context.Context)
	// AskLeader, when set, says whether Begin asks is-leader in the hook of ev: if so, is-leader
	// starts before the state loads (juju.Leadership.Ask), and runs while the hook loads its
	// state and runs its other tools until Begin needs the answer. It must answer true only for
	// hooks whose Begin asks anyway, or the hook runs a tool it did not need. The hook context's
	// Runner must be safe for concurrent use.
	AskLeader func(ev juju.Event) bool
}

// Handle returns the juju.Handler that runs fn as a hook of the lifecycle.
func (hs Handlers[S, H]) Handle(fn Func[H]) juju.Handler {
	run := hs.handle(fn)
	if hs.AskLeader == nil {
		return run
	}
	return func(ctx context.Context, hc *juju.HookContext) error {
		if hs.AskLeader(hc.Event) {
			hc.Leadership.Ask(ctx)
			defer hc.Leadership.Wait()
		}
		return run(ctx, hc)
	}
}

func (hs Handlers[S, H]) handle(fn Func[H]) juju.Handler {
	return hs.Lifecycle.Handler(func(ctx context.Context, k *Hook[S]) error {
		h, err := hs.Begin(ctx, k)
		if err != nil {
			return err
		}
		err = fn(h, ctx)
		if hs.After != nil {
			hs.After(h, ctx)
		}
		if err != nil {
			return err
		}
		if hs.End != nil {
			return hs.End(h, ctx)
		}
		return nil
	})
}

// ReadConfig returns the application's configuration, kept in the charm's state at *kept:
// config-get runs on config-changed (Juju runs it after install, upgrade-charm, every
// change and an agent restart), on upgrade-charm (the kept copy is the previous charm's)
// and when none is kept; every other hook uses the kept copy. defaults are the values of the
// options config-get gives as null.
func ReadConfig[C any](ctx context.Context, hc *juju.HookContext, kept **C, defaults C) (C, error) {
	switch kind := hc.Event.Kind; {
	case *kept == nil, kind == juju.ConfigChanged, kind == juju.UpgradeCharm:
		cfg := defaults
		if err := hc.Config.Decode(ctx, &cfg); err != nil {
			return defaults, fmt.Errorf("cannot read the configuration: %w", err)
		}
		*kept = &cfg
	}
	return **kept, nil
}

// ConfKeys is the slurm.conf key set of the Slurm release version names ("24.11.5"), as a
// charm keeps it in its state; 22.05's while it is unknown (empty or unreadable), as
// slurm.FeaturesOf treats an unknown version.
func ConfKeys(version string) *slurmconf.Keys {
	v, err := slurm.ParseVersion(version)
	if err != nil {
		return slurmconf.KeysOf(22, 5)
	}
	return slurmconf.KeysOf(v.Major, v.Minor)
}
