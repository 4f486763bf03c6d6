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
// a removed partition still holding job records) is watched by the removal waiter
// (waiter.go), which wakes the charm through juju-exec. See README.md for the operator's view.
package main
