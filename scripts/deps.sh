#!/usr/bin/env bash
# Installs what the build, the tests and the demo need on a fresh Debian 12 machine.
# Idempotent: every step is skipped when what it provides is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
# mpicc (libopenmpi-dev, which also brings Open MPI 4.1, PMIx and mpirun) builds the MPI
# program of tests/e2e TestMPI with gcc; Slurm 22.05's mpi/pmix plugin loads the unversioned
# libpmix.so, which only libpmix-dev ships (a dependency of libopenmpi-dev, checked on its own).
for pair in slurmctld:slurmctld slurmd:slurmd scontrol:slurm-client munged:munge \
            slurmdbd:slurmdbd mariadbd:mariadb-server mariadb:mariadb-client \
            ip:iproute2 nsenter:util-linux unshare:util-linux curl:curl pgrep:procps \
            gcc:gcc mpicc:libopenmpi-dev sshfs:sshfs socat:socat; do
  cmd=${pair%%:*} pkg=${pair#*:}
  command -v "$cmd" >/dev/null 2>&1 || need_apt+=("$pkg")
done
# slurmdbd's MySQL storage plugin is a package of its own, with no program to look for.
ls /usr/lib/*/slurm-wlm/accounting_storage_mysql.so >/dev/null 2>&1 || need_apt+=(slurm-wlm-mysql-plugin)
# apt_get runs apt-get, waiting (bounded) while another apt or dpkg run holds one of apt's locks
# instead of failing at once: apt itself waits for dpkg's frontend lock (DPkg::Lock::Timeout);
# a lock apt does not wait for (the lists lock of `apt-get update`) is retried here.
APT_LOCK_WAIT=${APT_LOCK_WAIT:-600} # seconds
apt_get() {
  local deadline=$((SECONDS + APT_LOCK_WAIT)) out rc
  while :; do
    rc=0
    out=$(apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT" "$@" 2>&1) || rc=$?
    printf '%s\n' "$out"
    if [ "$rc" -eq 0 ]; then return 0; fi
    if ! grep -qE 'Could not get lock|Unable to lock|is another process using it' <<<"$out"; then
      return "$rc"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "deps: apt is still locked by another run after ${APT_LOCK_WAIT}s; giving up" >&2
      return "$rc"
    fi
    echo "deps: another apt run holds apt's lock; waiting (up to ${APT_LOCK_WAIT}s in all)" >&2
    sleep 5
  done
}

# The controller HA tests' storage host serves a directory with OpenSSH's sftp-server (no sshd).
[ -x /usr/lib/openssh/sftp-server ] || need_apt+=(openssh-sftp-server)
dpkg-query -W -f '${Status}' libpmix-dev 2>/dev/null | grep -q 'install ok installed' || need_apt+=(libpmix-dev)

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "deps: installing ${need_apt[*]} from apt"
  export DEBIAN_FRONTEND=noninteractive
  apt_get update -q
  apt_get install -y -q --no-install-recommends $(printf '%s\n' "${need_apt[@]}" | sort -u)
fi

# Pinned Go tools, built from the versions in tests/go.mod (the module proxy refuses @latest).
mkdir -p build/bin
for tool in github.com/canonical/pebble/cmd/pebble honnef.co/go/tools/cmd/staticcheck; do
  out=build/bin/$(basename "$tool")
  if [ ! -x "$out" ] || [ tests/go.mod -nt "$out" ]; then
    echo "deps: building $out"
    (cd tests && go build -o "../$out" "$tool")
  fi
done
