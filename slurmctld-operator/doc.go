// Command slurmctld-operator is the slurmctld charm: the Slurm controller of a cluster whose
// compute nodes are dynamic nodes (slurmd -Z).
//
// Juju runs the binary as the charm's dispatch program once per hook or action. It installs
// Slurm when missing, owns the cluster's auth key (a Juju secret labelled "auth-key", granted
// to every slurmd relation), writes /etc/slurm/slurm.conf (configless, MaxNodeCount, TreeWidth)
// with one include per related slurmd application (/etc/slurm/partition-<app>.conf, its NodeSet
// and PartitionName), runs munged and slurmctld through the host's service manager (Pebble or
// systemd) and reconfigures slurmctld only when a partition changes. Adding or removing compute
// units never touches slurm.conf: departed nodes are drained and deleted once idle, by the
// departing unit itself and, as a safety net, by this charm's reconcile on relation-departed
// and update-status. No hook waits for Slurm: what one pass leaves (a node still running jobs,
// a removed partition still holding job records, a restarted slurmctld not answering yet) is
// watched by the waiter (waiter.go), which wakes the charm through juju-exec. Every unit
// offers COS its alert rules, dashboards and log on cos-agent, and a controller on Slurm 25.11
// or later its OpenMetrics endpoints as scrape jobs (cos.go). See README.md for the
// operator's view.
//
// # Code layout
//
// Files use one another one way, from the hooks down to the pure parts: no file uses a name
// defined in a file listed above it here (tests aside). Each job has one type, in its own file, holding the hook it works for.
//
//	main.go               builds a Charm from the environment (charm.Main), or runs the removal
//	                      waiter (dispatch slurmctld-removal-waiter)
//	hooks.go              Router and the kit's handlers (finish: login nodes synced, the record
//	                      kept); the hook handlers: install, configure (leader-elected,
//	                      config-changed, start, the peer and mount relations' hooks),
//	                      upgrade-charm, update-status, the slurmd and cos-agent relations'
//	                      hooks, stop and remove
//	actions.go            show-current-config, rotate-auth-key, settle-jobs, reboot, takeover
//	                      (lasting: the units before this one stand down, standby)
//	slurmd_relation.go    slurmdRelation: a slurmd application joins, brings its partition,
//	                      loses units, leaves
//	sackd.go              loginNodes: the login applications (sackd relation): their units in
//	                      /etc/hosts, the controllers, key and configuration digest published
//	accounting.go         dbdRelation: the slurmdbd relation (accounting): the key and version
//	                      published, slurmdbd's address into slurm.conf, turned on or off
//	partition_removal.go  partitionRemovals: a departed application's partition, removed once
//	                      no job record is left
//	backup.go             backup: a unit that is not the leader, a backup controller running
//	                      the leader's configuration once the shared storage is mounted
//	slurmctld.go          slurmctldDaemon: slurmctld configured, started, reconfigured or
//	                      restarted (also when the controllers change; a restart is settled
//	                      by a later pass), its partitions repaired after; the state moved to
//	                      the shared storage once
//	authkey.go            authKey: the auth key secret, the key file, munged
//	slurmconf.go          slurmConf: slurm.conf and the partition files
//	node_actions.go       set-node-state, drain, resume, delete-node
//	node_removal.go       nodeRemovals: departed units' nodes, drained and deleted once idle
//	publish.go            publisher: ControllerData, the controllers list, the secret's grants,
//	                      the port, the peer application bag (controllers, configuration,
//	                      the rolling reboot), shared at the end of every hook that changed it
//	cos.go                cosAgent: this unit's cos_agent data (rules, dashboards, its log
//	                      file, a controller's scrape jobs) on each cos-agent relation
//	reboot.go             rollingReboot: the rolling reboot moved on; RebootProgram
//	handover.go           departure: a leaving unit hands control to a backup with Slurm's
//	                      takeover before its slurmctld stops
//	standby.go            standby: the takeover records in the peer relation read; a unit
//	                      whose controller gave up control stands down (slurmctld held stopped)
//	ha.go                 controller high availability: the shared storage (mount relation),
//	                      the peer relation, the leader's controller plan, the controller in
//	                      control (heartbeat) for the status and takeover
//	leadership.go         leadership: the leader's records dropped by a follower, taken over
//	                      by a new leader (Slurm, the relations, the peer bag's reboot plan)
//	status.go             unitStatus, the one place the status is worded; report (the one
//	                      status-set) and progress
//	hook.go               hook (one event: state, configuration and leadership read once), the
//	                      kit's lifecycle
//	candidate.go          confFiles: every edit made on a candidate copy Slurm's parser reads
//	                      first
//	gres.go               GresTypes and gres.conf
//	waiter.go             the waiter (removals, restarts): the process and the hooks' side of it
//	state.go              the state, and the record of what the leader wrote to Juju
//	peers.go              the peer relation's keys, controller and its checks, the controller
//	                      list's order, the shared configuration decoded
//	cgroup.go             cgroup.conf
//	config.go             the configuration, validated
//	charm.go              the Charm's dependencies; the Waiter it hands removals to
//	future.go             FUTURE records (future-nodes)
//	cosdata.go            what cos-agent carries: the shipped alert rules (alert-thresholds)
//	                      and dashboards, the scrape jobs; MetricsType's default
//	nodes.go              nodeCache: one hook's node list; the hook's Slurm client and services,
//	                      whose changes forget it (hook.client, hook.services)
//
// Every hook and action is a method of hook (charm.Func), run through the charm kit's
// handlers (Charm.handlers: the state loaded, begin, the handler, the removals it leaves under
// way handed to the waiter, end, the state saved once); Charm.stateless runs the
// handlers that read no state (stop, remove, show-current-config). The state file is the kit's
// StateName rule: StateName in the unit's charm directory.
package main
