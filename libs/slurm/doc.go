// Package slurm controls a Slurm cluster through Slurm's own commands (scontrol, sinfo,
// squeue, slurmd -C/-V), the way an operator needs it for dynamic nodes.
//
// # Running commands
//
// Every command goes through a [command.Runner] (libs/command): an argv slice plus extra
// environment entries, never a shell string. [command.Exec] runs commands on this host; give
// it a Command function to run them somewhere else, for example inside a test host's
// namespaces:
//
//	c := &slurm.Client{
//		Runner: command.Exec{Command: host.Command}, // func(ctx, argv) *exec.Cmd
//		Conf:   "/etc/slurm/slurm.conf",
//	}
//
// [Client.Conf] is passed to client commands as SLURM_CONF. It is required for every
// command that talks to slurmctld: without it Slurm's clients fall back to DNS SRV lookups,
// which fail (slowly) on hosts without DNS. On a configless compute node point it at the
// cached copy in the spool directory (for example /var/spool/slurmd/conf-cache/slurm.conf).
//
// # Nodes
//
// [Client.ShowNode] and [Client.Nodes] parse `scontrol show node -o` into [Node] values. A
// node's state is a base state plus flags ([NodeState]); [NodeState.Draining] and
// [NodeState.Drained] derive the same DRAINING/DRAINED that sinfo prints.
// [Client.Partitions] lists the partitions sinfo shows: on a login node it tells that
// Slurm's clients reach the controllers through sackd.
//
// # Removing a node
//
// Removing a dynamic node safely is one protocol, [Remover] over a [Removal]: drain the
// node with a reason, wait until no job runs or completes on it (progress reported
// through Remover.Progress), stop its slurmd (Remover.Stop: a running dynamic slurmd
// re-creates its node), delete the record; with Remover.DeleteFirst (auth/slurm, where the
// node's client commands authenticate through its slurmd) the record is deleted before slurmd
// stops, and Remover.Committing runs before either. A node with running jobs is never deleted:
// the jobs are waited for, or, only when asked (CancelJobs), cancelled through
// [Client.CancelJobs]; RefuseJobs fails at once with a *[BusyError].
//
//	m := &slurm.Remover{Client: c, Stop: stopSlurmd, Progress: showJobs}
//	r := &slurm.Removal{Node: "slurmd-1", Reason: "unit slurmd/1 removed"}
//	err := m.Remove(ctx, r) // drain → wait → stop → delete
//
// [Remover.Remove] retries an unreachable controller for UnreachableFor and a delete
// refused as busy for BusyFor, and waits for jobs as long as ctx allows; giving up is a
// *[RemovalError]. [Remover.Step] advances a removal as far as it goes without waiting:
// a controller's reconcile keeps the Removal (plain JSON) in its state and steps it once
// per hook. A re-registration removes the node, starts slurmd again and calls
// [Remover.Restore]; [Remover.Abort] resumes a node whose wait was given up.
//
// On Slurm 22.05 a dynamic node that ran a job during a reconfigure stays ALLOCATED with
// no job once the job ends, and `scontrol delete` refuses it as busy for ever (SchedMD bug
// 16434, fixed in 23.02.3). A removal that sees squeue empty while the node stays busy for
// Remover.StuckFor (10 s by default, measured across Steps in the Removal) stops the
// daemon, sets the node DOWN (no job is there to kill; the reason names the removal) and
// deletes it.
//
// Every command carries a timeout ([Client.Timeout], [DefaultTimeout]); a controller
// command that times out counts as an unreachable controller.
//
// # Errors
//
// Failed commands return a *[CommandError] holding the argv, exit code and stderr. Callers
// branch with errors.Is on [ErrNodeBusy], [ErrUnknownNode], [ErrUnknownPartition],
// [ErrInvalidNodeState] and [ErrControllerUnreachable]; the classification follows the
// messages Slurm 22.05 really prints (recorded in slurmtest/real/).
//
// # Versions
//
// Everything that depends on the Slurm version is decided by [FeaturesOf]: the
// authentication plugin and key file (auth/munge before 23.11, auth/slurm with slurm.key
// from 23.11) and whether `scontrol listjobs` exists (24.05).
package slurm
