#!/usr/bin/env bash
# Builds the Debian machine images the tests boot with systemd-nspawn (tests/hosts machines),
# from the Debian archive this machine's apt already uses, with mmdebstrap.
#
#   scripts/images.sh [SUITE...]      # default: bookworm trixie forky
#
# Each image is a root directory build/images/<suite>-<key>/root, where <key> hashes the suite,
# the package list and the customisation (scripts/image-customize.sh), so a changed list builds
# a new image and an unchanged one is reused. build/images/<suite> is a symlink to the current one; older builds of
# the same suite are removed. Slurm and munge are preinstalled as on a prepared cloud image, with
# their services disabled: the charms decide what runs.
# Installs mmdebstrap and systemd-container from apt when missing. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."

suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(bookworm trixie forky)

# Packages of every image (minbase plus these). dbus: the charms' systemd backend talks D-Bus.
common=(systemd systemd-sysv dbus slurmd slurmctld slurm-client munge iproute2 procps)
# Accounting: slurmdbd with its MySQL plugin, and MariaDB for the test database charm
# (tests/charms/mariadb); installed disabled like the rest. All machines of a suite share one
# image (an overlay each), so this costs disk once per suite, not per machine.
accounting=(slurmdbd slurm-wlm-mysql-plugin mariadb-server)
# Open MPI's runtime for MPI jobs launched by srun --mpi=pmix (TestMPITrixie): libopenmpi40
# brings PMIx 5 (libpmix2t64), which Slurm's mpi/pmix plugin loads on every node, and (through
# libucx0) AMD's ROCm libraries, most of its 250 MB; openmpi-common holds the texts of Open
# MPI's error messages. No mpirun (openmpi-bin) and no compiler: the test's program is built on
# the test machine.
mpi=(libopenmpi40 openmpi-common)
# Debian's Prometheus (3.5 in Debian 14, with promtool) for the observability tests
# (tests/e2e TestObservabilityMachines): the test runs it on a machine of the cluster's own
# release, with the scrape jobs and rule files the slurmctld charm publishes on cos-agent.
# Slurm serves OpenMetrics from 25.11, so only forky's image needs it.
prom=(prometheus)
# Shared storage for controller high availability (docs/ha.md): the filesystem-client stand-in
# (tests/charms/filesystem-client) mounts the controllers' StateSaveLocation with sshfs (FUSE;
# it brings fuse3's fusermount3, with which the stand-in unmounts). The machine needs
# /dev/fuse too, which tests/hosts binds into every machine. The storage host is a Pebble host
# of the test machine's own Debian (OpenSSH's sftp-server), so no image needs a server.
ha=(sshfs)
# Run in the image root once the packages are in; its content is part of the key.
customize=scripts/image-customize.sh

packages() {
  case "$1" in
    bookworm) echo "${common[*]} ${accounting[*]}" ;;
    trixie) echo "${common[*]} sackd ${mpi[*]} ${accounting[*]} ${ha[*]}" ;;
    forky) echo "${common[*]} sackd ${accounting[*]} ${prom[*]} ${ha[*]}" ;;
    *) echo "images: unknown suite $1 (bookworm, trixie, forky)" >&2; return 1 ;;
  esac
}

# Options for apt inside mmdebstrap. forky is Debian's testing suite: its Release file may
# carry a Valid-Until already past (2026-11-06 when first built), which apt refuses by default.
aptopts() {
  case "$1" in
    forky) echo "Acquire::Check-Valid-Until \"false\"" ;;
  esac
}

need=()
command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
command -v systemd-nspawn >/dev/null 2>&1 || need+=(systemd-container)
if [ ${#need[@]} -gt 0 ]; then
  echo "images: installing ${need[*]} from apt"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${need[@]}"
fi

mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian

mkdir -p build/images
# One build at a time (test binaries may call this concurrently); the others then reuse it.
exec 9>build/images/.lock
flock 9
for suite in "${suites[@]}"; do
  pkgs=$(packages "$suite")
  aptopt=$(aptopts "$suite")
  # (an image built with no apt option keeps the key it had before options existed)
  key=$( (printf '%s\n%s\n' "$suite" "$pkgs"; [ -z "$aptopt" ] || printf '%s\n' "$aptopt"; cat "$customize") | sha256sum | cut -c1-12)
  dir=build/images/$suite-$key
  if [ -f "$dir/ok" ]; then
    echo "images: $suite cached ($dir)"
  else
    echo "images: building $suite ($pkgs)"
    # A killed build can leave mmdebstrap's /proc, /sys and /dev mounts behind, under a root
    # that is itself no mount point (so `umount -R` of the root misses them): unmount every
    # mount below the build directory, deepest first, and never descend into one while removing.
    awk -v p="$PWD/$dir.tmp/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r |
      while read -r m; do umount -l "$m" || true; done
    rm -rf --one-file-system "$dir" "$dir.tmp"
    mkdir -p "$dir.tmp"
    start=$(date +%s)
    opts=()
    [ -z "$aptopt" ] || opts+=("--aptopt=$aptopt")
    mmdebstrap --quiet --variant=minbase --include="${pkgs// /,}" "${opts[@]}" \
      --customize-hook="$PWD/$customize" "$suite" "$dir.tmp/root" "$mirror"
    printf '%s\n' $pkgs >"$dir.tmp/packages"
    chroot "$dir.tmp/root" dpkg-query -W -f '${Package} ${Version}\n' >"$dir.tmp/versions"
    mv "$dir.tmp" "$dir"
    touch "$dir/ok"
    echo "images: built $suite in $(( $(date +%s) - start ))s ($(du -sh "$dir/root" | cut -f1))"
  fi
  ln -sfn "$suite-$key" "build/images/$suite"
  for old in build/images/"$suite"-*; do
    [ "$old" = "$dir" ] || [ ! -d "$old" ] || rm -rf --one-file-system "$old"
  done
done
