// Package slurm controls a Slurm cluster through Slurm's own commands (scontrol, sinfo,
// squeue, slurmd -C/-V), the way an operator needs it for dynamic nodes.
//
// # Running commands
//
// Every command goes through a [Runner]: an argv slice plus extra environment entries,
// never a shell string. [ExecRunner] runs commands on this host; give it a Command
// function to run them somewhere else, for example inside a test host's namespaces:
//
//	c := &slurm.Client{
//		Runner: slurm.ExecRunner{Command: host.Command}, // func(ctx, argv) *exec.Cmd
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
//
// Removing a dynamic node safely is:
//
//	err := c.Drain(ctx, "node1", "unit slurmd/1 removed")
//	err = c.WaitDrained(ctx, "node1")    // no running or completing job left
//	// stop slurmd on the node, then:
//	err = c.DeleteNode(ctx, "node1")     // errors.Is(err, slurm.ErrNodeBusy) → retry later
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
