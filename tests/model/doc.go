// Package model is the local model: Juju's part played faithfully on one machine, so that real
// charm binaries run exactly as Juju 3.6 drives them, on real hosts, with no controller.
//
// # What it does
//
// A Model owns the state of one Juju model (state.json in its directory, written atomically
// and synced after every change: a verb returns once its change is on disk; the unit agents'
// changes are written by a writer goroutine, the latest state replacing one not yet written,
// so no hook waits for the disk; Close waits for the last): applications with their charm, config and leader; units and the
// machines they run on; relations with their application and unit databags; secrets with
// their owner, revisions, grants, labels and the revision each consumer tracks; unit and
// application statuses, opened ports, action runs and their results; and the juju-log lines
// (DebugLog). Each unit gets its own machine from a Provisioner: HostMachines makes a real
// host of package tests/hosts (network, UTS and mount namespaces, Pebble as supervisor,
// private /var/lib/juju); LocalMachines makes a plain directory and runs processes on this
// machine, for fast tests of the model itself.
//
// One unit agent (a goroutine) per unit installs the charm in
// /var/lib/juju/agents/unit-<app>-<n>/charm on the unit's machine (from the model's process,
// through Machine.Path: the charm's files are hard links to the model's unpacked copy when on
// the same filesystem, so a charm must not rewrite its shipped files in place), makes
// /var/lib/juju/tools/unit-<app>-<n> a link to the model's hook tools (as Juju links it to the
// agent's tools), and runs hooks one at a time by executing the charm's
// dispatch inside the machine with Juju's environment (internal/worker/uniter/runner/context): the
// common variables (JUJU_DISPATCH_PATH hooks/<hook> or actions/<action>, JUJU_UNIT_NAME,
// JUJU_MODEL_NAME, JUJU_MODEL_UUID, JUJU_CHARM_DIR, JUJU_CONTEXT_ID, JUJU_AGENT_SOCKET_ADDRESS,
// JUJU_VERSION, JUJU_HOOK_NAME, JUJU_MACHINE_ID, ...) always, the empty ones (proxies,
// JUJU_AVAILABILITY_ZONE, JUJU_PRINCIPAL_UNIT, JUJU_HOOK_NAME of an action) exported empty as
// Juju does; the relation variables (JUJU_RELATION, JUJU_RELATION_ID, JUJU_REMOTE_UNIT, empty on
// application-level and broken hooks, JUJU_REMOTE_APP, JUJU_DEPARTING_UNIT); the action ones
// (JUJU_ACTION_NAME, JUJU_ACTION_UUID, JUJU_ACTION_TAG); the secret ones (JUJU_SECRET_ID,
// JUJU_SECRET_LABEL, JUJU_SECRET_REVISION for secret-remove and secret-expired); the tools
// directory first on PATH.
//
// Like Juju's uniter, the agent decides what runs next from two things (decide): the unit's
// remote state, as Juju's remote state watcher would give it (RemoteState: life, charm,
// config, leadership, leader settings, relations with the remote units in their scope and the
// versions of their data, secrets, queued actions, the update-status and hook-retry timers),
// and what the unit has done (Unit.Seen, Unit.Queued, Unit.Failed: Juju's local and operation
// state). It asks, in the order of Juju's uniterResolver (docs/fidelity.md lists each rule with
// the Juju source it follows and the test that checks it):
//
//	reboot: start first once the agent is back after its machine booted
//	created relations: the unit enters the scope of every relation it sees alive (others see it
//	  join from then on), then runs <ep>-relation-created for each (peers included)
//	leadership: leader-elected queued when the unit accepts leadership (only with nothing
//	  queued or failed); leader-settings-changed on the others, at the agent's every start and
//	  after each leader-set that changed the leader data
//	secrets: secret-expired, secret-rotate (owner), secret-changed (consumer told of a revision
//	  it has not seen), secret-remove for each revision no consumer tracks (owner)
//	actions: the oldest queued one, also while the unit is in error
//	a failed hook: replayed as it was, on the retry timer or `juju resolve`
//	a queued hook: start after the first config-changed, config-changed after upgrade-charm,
//	  leader-elected, a hook cut off by its machine's shutdown
//	then: a dying unit's relation hooks, stop, remove; install; upgrade-charm after Refresh;
//	  config-changed; relation hooks (peer relations last); update-status
//	per relation (relation/resolver.go): for each remote unit, in lexical order, joined
//	  immediately followed by that unit's changed; the application-level changed
//	  (JUJU_REMOTE_UNIT empty) comes before any join whenever the remote application's data
//	  changed (in a peer relation the leader that wrote it gets it too), so a unit's first
//	  relation hook may see an empty relation-list; changed when a remote unit's data changes;
//	  departed (per remote unit leaving: JUJU_REMOTE_UNIT and JUJU_DEPARTING_UNIT name it);
//	  broken (relation removed, or the other application gone)
//	unit removal: departed for every remote unit (JUJU_DEPARTING_UNIT = the leaving unit itself)
//	  → broken for every relation except peer relations → stop → remove → machine destroyed
//	leader-elected on the next unit when the leader is removed
//	update-status every Options.UpdateStatusInterval (5m by default, as in Juju), unless another
//	  hook ran since the timer fired
//	machine reboot (Reboot, or asked inside a systemd machine): no hook as it goes down (Juju
//	  runs stop only on a unit being removed), none while the machine is down or booting (the
//	  agent starts none once the machine's systemd stopped the stand-in for its service,
//	  jujud-machine-<id>, which the boot watcher starts at every boot), then start (the agent
//	  restarts); a hook cut off by the shutdown (failed after that service stopped) is not a
//	  hook error: it is queued again and runs first when the machine is back
//	  (operation/runhook.go, runner.ErrTerminated). Wait counts a unit whose machine reboots as
//	  busy.
//
// Juju picks the relation (and the consumed secret) of its next hook in map order; the model
// takes them by id. With Options.Referee, Juju 3.6's own uniter judges every choice (see
// referee.go and hookorder.go).
//
// Remote units see a leaving unit depart as soon as it is dying, while it still runs its own
// departed hooks (Juju's scope handling); relation-ids keeps listing a dying relation to a unit
// until that unit's relation-broken. Integrate refuses a relation beyond an endpoint's limit
// ("would exceed its maximum relation limit", ErrQuotaLimitExceeded). Actions queue behind
// the running hook. Their parameters are parsed as `juju run` parses them
// (each value as YAML 1.1: parameters=10 is an integer) and validated against the action's JSON
// schema (type, enum, required, additionalProperties, properties, minimum, maximum, minLength,
// maxLength) before they are queued; defaults are then inserted.
//
// # Commit on success
//
// Every hook runs against a copy of the model taken when it starts, so remote data read in a
// hook is stable, as Juju caches it. Relation data, secrets (add, set, grant, revoke, remove,
// consumer tracking), ports, leader data and charm state written by the hook are applied to
// the model only when dispatch exits 0. A hook that fails is discarded and puts the unit in
// error (agent status error, shown by Status as workload "error" with message
// `hook failed: "<hook>"`, as juju status shows it); no other hook runs on the unit until the
// failed one succeeds: Juju's automatic retry (automatically-retry-hooks, on by default) runs
// it again after Options.HookRetry (5 s by default), doubling up to 5 minutes, and Resolve runs
// it at once (with retry=false it is skipped). A negative Options.HookRetry turns the automatic
// retry off. status-set, application-version-set, juju-log and action-set/-log/-fail take
// effect at once, as in Juju.
//
// # Hook tools
//
// The hook tools are one thin binary, jujuc (tests/cmd/jujuc), installed under each tool
// name (ToolNames), as Juju's jujuc is: it imports only the standard library and the socket
// protocol (tests/model/wire), so a hook pays little for each tool it runs. The tool sends its argv, with JUJU_CONTEXT_ID and any --file content, to
// the model's unix socket (Dir/agent.sock, a filesystem path, reachable from inside hosts since
// they share the root filesystem), and the model parses and runs it (runTool) with the same
// flags, outputs (--format smart, json or yaml) and exit codes as Juju's: 0 on success, 1 with
// "ERROR <message>" on stderr when a rule is broken, 2 for a usage error. The rules enforced:
// only the leader writes (or, outside peer relations, reads) its application databag, sets
// application status, creates or changes application-owned secrets and uses leader-set; a
// secret is readable by its owner, or by a consumer it was granted to through a relation (the
// grant goes with the relation); action-set keys are lowercase alphanumerics and hyphens,
// dotted for nesting, never stdout/stderr; action tools work only in actions.
//
// # Using it
//
// From Go (integration tests, the demo):
//
//	m, err := model.New(ctx, model.Options{
//		Dir:      dir,                             // keep it short: unix socket paths
//		Tools:    model.ToolsBeside(cli),          // cli from model.BuildBinaries
//		Machines: &model.HostMachines{Network: n, Binds: []string{dir, filepath.Dir(cli)}}, // n from hoststest.New(t); Binds: see HostMachines
//	})
//	defer m.Close()
//	m.Deploy(ctx, model.DeployOptions{Charm: "slurmctld.charm"})
//	m.Deploy(ctx, model.DeployOptions{Charm: "slurmd.charm", Units: 2})
//	m.Integrate(ctx, "slurmctld", "slurmd")
//	err = m.Wait(ctx, model.WaitOptions{Until: model.AllActive})
//	act, err := m.Run(ctx, "slurmd/0", "node-config", map[string]string{"parameters": "Weight=10"})
//	m.RemoveUnit(ctx, "slurmd/1")
//	st := m.Status(ctx) // the shape of juju status --format=json
//
// From the shell, juju-local's CLI verbs (bootstrap, deploy, integrate, add-unit, remove-unit,
// remove-application, remove-relation, config, refresh, run, exec, status, debug-log, wait,
// resolve, actions, destroy) are served by RunCLI on Dir/model.sock; see `juju-local --help`.
//
// # Limits
//
// A model directory belongs to one running Model: hosts do not survive the process, so New
// refuses a directory whose state still lists units. Subordinates are played: a unit beside
// each principal unit related through a container-scoped endpoint, on its machine, its hooks
// under the machine's one lock, decided by its own uniter-like agent, leaving before its
// principal's machine goes (not yet checked across a machine's reboot). Not played: storage,
// containers (Pebble notices), suspended and cross-model relations, the jitter of Juju's
// retry delays, goal-state and credential-get, juju exec of hook tools outside hooks.
package model
