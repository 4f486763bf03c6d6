// Package charm is the kit both Slurm charms are built on: what every hook of a Go charm does
// around its own logic, written once.
//
// # The hook lifecycle
//
// A charm keeps a small JSON state between hooks (what it installed, started and published).
// [Lifecycle] runs every hook the same way:
//
//  1. load the state (a missing file is the zero state);
//  2. run the handler with a [Hook], which holds the state and the juju.HookContext;
//  3. when the handler succeeds, save the state once, atomically, and only if it changed.
//
// A failed hook saves nothing by default: Juju discards a failed hook's relation, secret and
// port writes, so a record of them must not survive, and the next hook (Juju retries it)
// starts again from the last good state. A charm whose state also records host changes that
// a failure does not undo (a daemon started, a partition removed) sets [Lifecycle.Failed] to
// pick what to keep. [Hook.Checkpoint] saves in the middle of a long wait, so that progress
// survives a killed hook.
//
//	type state struct {
//		charm.StatusCache          // the status cache: "unit-status", "app-status"
//		Started bool `json:"started,omitempty"`
//	}
//
//	lc := charm.Lifecycle[state]{StateName: ".my-charm-state.json"}
//	r := juju.NewRouter()
//	r.Handle(juju.Start, lc.Handler(func(ctx context.Context, h *charm.Hook[state]) error {
//		h.State.Started = true
//		return h.SetUnitStatus(ctx, juju.StatusActive, "started")
//	}))
//
// The state file is StateName in the unit's charm directory (JUJU_CHARM_DIR): private to the
// unit, also where several units share a file system, and kept by Juju across hooks and
// upgrades. StateFile overrides it (tests); there is no other rule.
//
// # One handler shape
//
// [Handlers] gives every hook and action of a charm the one shape of a [Func]: a method of
// the charm's hook value (func (h *hook) start(ctx context.Context) error), routed as a
// method expression. Begin builds the hook value from the kit's [Hook] (the configuration
// read with [ReadConfig], what the charm derives from it); After, whatever the handler's
// outcome, hands on what every hook leaves (slurmctld's removals, to its waiter); End records,
// after a success only, what the hook wrote to Juju.
//
//	hs := charm.Handlers[state, *hook]{Lifecycle: lc, Begin: newHook}
//	r.Handle(juju.Start, hs.Handle((*hook).start))
//
// # Configuration and versions
//
// [ReadConfig] keeps the configuration in the state: config-get runs on config-changed,
// upgrade-charm and when no copy is kept, and every other hook uses the copy. [ConfKeys] is
// the slurm.conf key set of the Slurm release a charm found (22.05's while it is unknown), for
// validating what an operator writes into slurm.conf.
//
// # The status cache
//
// Embed [StatusCache] in the state: [Hook.SetUnitStatus] and [Hook.SetAppStatus] then skip a
// status-set whose status this unit set last (hooks run every few minutes; each status-set
// is a round trip to the controller), and [Hook.SetVersion] an application-version-set of
// the version shown last. The cache is saved with the state, so it follows the same commit
// rule: after a failed hook the status is set again.
//
// # Settings and paths
//
// [Settings] holds the tunables both charms share (file system root, poll interval, munged's
// start bound, how long an unreachable controller is retried, user lookup); a zero field means
// the charm's default, given at the call: s.Poll(100*time.Millisecond). [Or] is the same rule
// for any value. [Settings.Path] puts a host path below Root with filepath.Join, so tests run
// a charm against a temporary directory.
//
// # munged
//
// [Settings.Munge] gives the host's munge.Daemon with the charm's settings; its Ensure
// creates /run/munge, (re)starts munged when it is not running or the key changed, and
// waits (bounded by MungeTimeout) until `munge -n` gets a credential. munge.ServiceName
// names the service for the host's service manager.
//
// # Waiting
//
// Every wait selects on the context and a timer: poll.Until(ctx, interval, cond) from
// libs/poll, bounded by a context deadline. Node removal waits are in slurm.Remover, munged's
// start in munge.Daemon.Ensure.
//
// # main
//
// [Main] is a charm binary's main: it cancels the hook's context on SIGTERM or an interrupt
// (Juju stops a hook that way), reads the event, builds the hook context over the real hook
// tools, runs the charm's handler through juju.Main and exits with its code.
package charm
