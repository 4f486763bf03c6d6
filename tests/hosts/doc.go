// Package hosts gives tests real hosts on one machine: each host is a Linux
// network namespace plus its own UTS (hostname), IPC, mount and PID namespaces,
// with Pebble running inside as the host's service supervisor. A process in a
// host sees only that host's processes (its /proc is the host's own: `pgrep
// slurmd` lists the host's slurmd only) and its working directory is the
// host's private /root.
//
// A Network is a private layer-2 segment: a "switch" network namespace holds a
// bridge, and every host gets a veth pair whose inner end (eth0) carries the
// host's only address in a private /24 chosen per network. Nothing is ever
// added to the root namespace: no address, no route, no default route and no
// DNS server, so nothing a host does can leave the segment.
//
// Inside a host these paths are private (bind-mounted from a per-host
// directory under the network's Dir, seeded with the owner and mode of the
// real directory): /etc/slurm, /etc/munge, /etc/default, /var/spool/slurmd,
// /var/spool/slurmctld, /var/lib/slurm, /var/log/slurm, /var/lib/munge,
// /var/log/munge, /var/lib/juju, /var/lib/pebble, /root, /tmp and /var/tmp. /etc/hosts
// (localhost and the host's own name and address) and /etc/resolv.conf (no nameserver)
// are the host's own files, /run is a private tmpfs (mode 0755) holding
// /run/munge (owned by the munge user when it exists), /dev/shm a private tmpfs
// (mode 1777), SysV IPC and POSIX message queues are the host's own (IPC
// namespace), and the hostname is the host's name. (*Host).Path maps a path
// inside the host to the host-side file, so a test can read and write a host's
// files directly. Paths of the test machine that lie in a private directory
// (the local model's directory under /tmp, say) are out of a host's sight unless
// HostOptions.Binds names them. What hosts still share, and why, is in
// docs/hosts.md of the repository.
//
// Usage:
//
//	n, err := hosts.NewNetwork(ctx, hosts.NetworkOptions{Dir: dir, PebbleBin: pebble})
//	if err != nil { ... }
//	defer n.Close()
//	ctl, err := n.AddHost(ctx, hosts.HostOptions{Name: "ctl"})
//	out, err := ctl.Run(ctx, "hostname")          // "ctl\n"
//	cmd := ctl.Command(ctx, []string{"slurmctld", "-D"}) // an *exec.Cmd inside ctl
//
// Pebble runs inside each host with PEBBLE=/var/lib/pebble/default
// (`pebble run --hold`), so its socket is reachable from the test process at
// (*Host).PebbleSocket. StartMunge starts munged on a host through a Pebble
// layer, the way the operators do.
//
// Every process started by this package is recorded by PID. Close (and
// RemoveHost) stop them with SIGTERM, then SIGKILL after a grace period, then
// kill every process still inside the host's network namespace (daemons that
// Pebble or a test started there), and delete the namespaces and directories.
// The host's PID 1 is a shell that reaps orphans; when it exits, the kernel
// kills every process left in the host's PID namespace.
// If the test process dies without cleaning up, its hosts' holder and Pebble
// processes are killed by the kernel (parent-death signal); the namespaces it
// left behind, and any process still inside them, are swept by the next
// NewNetwork using the same registry (DefaultRegistryDir), which records every
// network's namespaces next to an flock-held subnet lease.
//
// A Machine (AddMachine, machine.go) is the other kind of member: a Debian image booted by
// systemd-nspawn with systemd as PID 1, plugged into the network as a host is, with an
// overlay root of its own; it reboots (systemd-nspawn exits 133 and the machine boots again
// with a new boot id) and powers off, and the crash sweep covers it through its namespace.
//
// Requirements: root, the ip (iproute2), nsenter, unshare and mount commands,
// and a pebble binary. Package hoststest wraps all this for tests, skipping
// with a clear reason where root or network namespaces are unavailable.
package hosts
