#!/bin/sh
# mmdebstrap --customize-hook for scripts/images.sh, run with the image root as $1: Slurm and
# munge stay installed but disabled (the charms decide what runs), no login prompt on the
# console (machines are driven from outside), and no hostname or machine id of the builder.
set -eu
root=$1
for u in munge.service slurmd.service slurmctld.service sackd.service slurmdbd.service mariadb.service prometheus.service prometheus-node-exporter.service; do
  chroot "$root" systemctl disable "$u" >/dev/null 2>&1 || true
done
chroot "$root" systemctl mask console-getty.service getty@.service >/dev/null 2>&1
rm -f "$root/etc/hostname"
: >"$root/etc/machine-id"
mkdir -p "$root/var/lib/juju"
