// Command sackd-operator is the sackd charm: each unit is a Slurm login node, a machine users
// log in to and submit jobs from, which runs no slurmd and holds no slurm.conf of its own.
//
// # What the charm does
//
// install checks the machine's Slurm release before it changes anything: sackd exists from
// Slurm 23.11 (Debian 13). On an older release (Debian 12's 22.05) the unit blocks naming the
// version and what a login node needs, and stays so: no package, key or service is touched.
// Otherwise it installs sackd and slurm-client with apt when their programs are missing and
// leaves the packaged sackd service stopped until a controller is related.
//
// When the controller's data is complete (sackd.SlurmctldReady: relation-changed, or
// secret-changed when the auth key rotates) the unit checks its Slurm release against the
// controller's (slurm_version; slurm.CheckLoginVersion: Slurm accepts no client newer than its
// controller, nor one older than the two releases before the controller's, three from 24.11):
// a sackd refused is never
// started and nothing is written, the unit blocked naming both versions. Otherwise it writes the key to /etc/slurm/slurm.key
// (slurm, 0600) and runs, through the host's service manager (Pebble or systemd), as user
// slurm:
//
//	sackd -D --conf-server <controllers, primary first>
//
// sackd fetches the cluster's configuration from the controllers into /run/slurm/conf and
// serves /run/slurm/sack.socket, through which Slurm's clients (sinfo, squeue, sbatch, srun)
// authenticate. sackd is restarted when the controllers, the key or the configuration the
// controller serves (its conf_digest) change: sackd fetches the configuration again when
// slurmctld pushes it on `scontrol reconfigure`, not when slurmctld restarts with a new one.
// The unit says "login node ready" once `sinfo` answers through sackd; every hook that
// (re)starts sackd waits for it at most ReadyTimeout and leaves the rest to update-status.
//
// When the unit leaves the relation (its own relation-departed) or the relation goes
// (relation-broken) sackd is stopped and disabled and the key and the cached configuration
// are removed: a login node that left holds nothing of the cluster. No job is touched: jobs
// submitted from a login node run on the compute nodes.
//
// # Code layout
//
// Files use one another one way, from the hooks down to the pure parts: no file uses a name
// defined in a file listed above it here (tests aside).
//
//	main.go      builds a Charm from the environment (charm.Main: SIGTERM cancels the hook)
//	hooks.go     Router; the thin hook handlers: install, upgrade-charm, start, update-status
//	relation.go  the slurmctld relation's hooks and secret-changed through the interface's
//	             events (interfaces/sackd): this unit's host data, the controller's data
//	join.go      join (the version check, the key, sackd (re)started for what changed) and
//	             leave (sackd stopped, the key and the fetched configuration removed)
//	install.go   the machine's Slurm release (refused without sackd) and its packages
//	report.go    refresh: observes what the status needs (relation, sackd) and reports it
//	hook.go      hook (one event: the state read once), the kit's handlers, report and
//	             progress (the one status-set)
//	sackd.go     sackdDaemon: this host's sackd: service, runtime directory, readiness
//	status.go    unitStatus: the unit's status from the state and what the hook observed
//	state.go, charm.go   the state, the Charm's dependencies
//
// Every hook is a method of hook (charm.Func), run in the charm kit's lifecycle (libs/charm,
// Charm.handlers): the unit's state is read once, the work goes through the injected runner
// and service Manager and writes files below Settings.Root, and the state is saved once, when
// the hook succeeds (see Charm.lifecycle for what a failed hook keeps). The charm has no
// configuration options (nothing for charm.ReadConfig) and writes no slurm.conf (nothing for
// charm.ConfKeys): sackd fetches the controller's.
package main
