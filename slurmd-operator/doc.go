// Command slurmd-operator is the slurmd charm: each unit runs one Slurm dynamic node
// (slurmd -Z) named after the unit (slurmd/3 → slurmd-3).
//
// # What the charm does
//
// install installs slurmd and munge with apt when their binaries are missing. The leader
// publishes its application's NodeSet and partition (ComputeData, built from the
// partition-config option) on the slurmctld relation; an invalid partition-config puts the
// unit in blocked status naming the bad key and leaves the published partition as it was.
//
// When the controller's data is complete (SlurmctldReady: relation-changed, or
// secret-changed when the auth key rotates) the unit writes the auth key (the munge key on
// Slurm 22.05, restarting munged when the key changed), builds the node's --conf from
// `slurmd -C` (without NodeName), Feature=<application> and the node-config set with the
// node-config action, and runs
//
//	slurmd -D -Z -N <node> --conf-server <controllers> --conf "<params>"
//
// through the host's service manager (Pebble or systemd). A new node takes
// default-node-state (idle or down, with default-node-reason). slurmd is restarted only when
// the controllers, the key or the --conf change; a changed --conf re-registers the node
// (drain, wait for its jobs, stop, delete the node record, start, restore its state), because
// Slurm 22.05 keeps a dynamic node's old record otherwise. The node-config action does this
// transactionally: values above the machine's `slurmd -C` facts are refused before anything
// is touched, and a --conf Slurm refuses (slurmd exits, no registration in time, INVALID_REG)
// is replaced by the previous one, the node's state restored, and the action fails with
// Slurm's reason.
//
// update-status checks this host's own daemons (munged answers, slurmd's service is active,
// or its pid file when the service manager is gone) before any Slurm command, so a dead host
// is reported as such and not as an unreachable controller; every Slurm command is bounded by
// CommandTimeout.
//
// When the unit leaves (its own relation-departed, or relation-broken, whichever comes first)
// the node is drained with reason "unit <unit> removed", the hook waits for its jobs with the
// count in the status, stops slurmd and deletes the node. A bare stop is a machine shutdown or
// reboot (Juju >= 2.8), not a removal: the node keeps its record and state, slurmd is enabled
// at boot, and start after the boot repairs what changed and resumes a node Slurm set DOWN for
// its unexpected reboot (an administrator's drain stays). install and start put RebootProgram
// in place, the program slurmctld's RebootProgram names: it reboots the machine through systemd. A node with running jobs is never deleted. If the
// controller cannot be reached, or this host's munged is down, the node is left for the
// controller's reconcile; a dead service manager fails neither hook while slurmd is not running.
//
// # Code layout
//
// Files use one another one way, from the hooks down to the pure parts: no file uses a name
// defined in a file listed above it here (tests aside).
//
//	main.go      builds a Charm from the environment (charm.Main: SIGTERM cancels the hook)
//	hooks.go     Router; the thin hook handlers: install, start, stop, upgrade-charm,
//	             config-changed (and leader-elected), update-status
//	actions.go   node-config and detect-gres
//	relation.go  the slurmctld relation's hooks and secret-changed: the controller's data
//	             (the registrar joins, the removal departs), the partition the leader publishes
//	cos.go       the cos-agent relation's hooks: slurmd's log for the COS collector
//	register.go  registrar: registration in one place: the join (auth key, --conf, slurmd
//	             started), re-registration, the staged node-config applied after a boot
//	depart.go    removal: the node's record removed (slurm.Remover), the departure
//	report.go    refresh: observes what the status needs (relation, daemons, node record) and
//	             reports it, giving a newly registered node its default-node-state
//	gres.go      genericResources: GPU detection, the inputs of the node's configuration,
//	             GresLocalConf
//	hook.go      hook (one event: configuration and state read once), the kit's handlers,
//	             report and progress (the one status-set)
//	slurmd.go    this host's slurmd: service, pid file, log
//	status.go    unitStatus: the unit's status from the state and what the hook observed
//	reboot.go    RebootProgram and the staged node-config's marker
//	nodeconf.go  buildNode: machine facts, node-config and detected GRES in; --conf and
//	             gres.conf lines out; no I/O
//	state.go, config.go, charm.go   the state, the configuration, the Charm's dependencies
//
// Every hook and action is a method of hook (charm.Func), run in the charm kit's lifecycle
// (libs/charm, Charm.handlers): the configuration and the unit's state are read once, the
// work goes through the injected Slurm runner and service Manager and writes files below
// Settings.Root, and the state is saved once, when the hook succeeds (see Charm.lifecycle for
// what a failed hook keeps). The unit status is set in one place, hook.report, from
// unitStatus; hook.progress shows a step under way (draining, reconfiguring, installing).
package main
