#!/usr/bin/env bash
# make demo: a real Slurm cluster run by our operators under the local model.
# Deploys slurmctld and 3 slurmd units on their own hosts (network namespaces supervised by
# Pebble), integrates them, runs jobs, adds a unit, applies partition-config and node-config,
# removes a unit while a job runs on it, printing `status` at each step; then tears it all down.
# Where Slurm has sackd (TARGET=trixie or forky) it also deploys a login node (the sackd charm) and
# submits jobs from it.
# TARGET picks the machines: pebble (the default and quickest: Pebble hosts, Slurm 22.05),
# bookworm (systemd machines, Debian 12, Slurm 22.05), trixie (systemd machines, Debian 13,
# Slurm 24.11 with auth/slurm) or forky (systemd machines, Debian 14, Slurm 26.05 with
# auth/slurm); `make demo TARGET=forky`.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=${TARGET:-pebble}
case $TARGET in
  pebble) base= ;;
  bookworm) base=debian@12 ;;
  trixie) base=debian@13 ;;
  forky) base=debian@14 ;;
  *) echo "demo: unknown TARGET $TARGET (pebble, bookworm, trixie or forky)" >&2; exit 2 ;;
esac
if [ -n "$base" ]; then scripts/images.sh "$TARGET"; fi

JL=$PWD/build/bin/juju-local
own_dir=
if [ -z "${JUJU_LOCAL_DIR:-}" ]; then
  JUJU_LOCAL_DIR=$(mktemp -d /tmp/juju-local-demo.XXXXXX) own_dir=1
fi
export JUJU_LOCAL_DIR

# Bold step titles on a terminal only: a log file or a pipe gets no escape codes.
if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold= plain=; fi
step() { printf '\n%s==> %s%s\n' "$bold" "$*" "$plain"; }
sl() { "$JL" exec slurmctld/0 -- env SLURM_CONF=/etc/slurm/slurm.conf "$@"; }
# status: juju-local status, then every node with the unit and the host it runs on (node
# slurmd-N is unit slurmd/N; the host is the unit's machine in the Machines table).
status() {
  "$JL" status
  echo
  sl sinfo -N -h -o '%N %n %o %T %P %f' | awk '
    BEGIN { printf "%-12s %-12s %-12s %-14s %-10s %-10s %s\n", "Node", "Unit", "Host", "Address", "State", "Partition", "Features" }
    { unit = $1; sub(/-[0-9]+$/, "/" substr($1, match($1, /[0-9]+$/)), unit)
      printf "%-12s %-12s %-12s %-14s %-10s %-10s %s\n", $1, unit, $2, $3, $4, $5, $6 }'
}
# ctl_counts: "RECONFIGURES STARTS PID" read from the controller's own slurmctld.log (counted by
# build/bin/ctlevents: from Slurm 23.11 a reconfigure starts a new process, not a restart) and
# PID file. The charm runs slurmctld attached (-D) under Pebble and systemd alike, so a
# reconfigure keeps its PID on every release: a new PID is a restart.
ctl_counts() {
  local ev pid
  ev=$("$JL" exec slurmctld/0 -- cat /var/log/slurm/slurmctld.log | build/bin/ctlevents)
  pid=$("$JL" exec slurmctld/0 -- cat /run/slurmctld.pid)
  echo "$ev $pid"
}
# ctl_claim BEFORE WANT_RECONFIGURES: prints what slurmctld's log says happened since BEFORE (a
# ctl_counts line) and fails the demo unless it is WANT_RECONFIGURES reconfigures and no restart.
ctl_claim() {
  local r0 s0 p0 r1 s1 p1
  read -r r0 s0 p0 <<<"$1"
  read -r r1 s1 p1 <<<"$(ctl_counts)"
  echo "slurmctld.log: $((r1 - r0)) reconfigure(s) and $((s1 - s0)) restart(s) in this step" \
    "(reconfigures $r0 → $r1, starts $s0 → $s1; PID file $p0 → $p1)"
  if [ $((r1 - r0)) -ne "$2" ] || [ "$s1" -ne "$s0" ] || [ "$p1" != "$p0" ]; then
    echo "demo: claim not backed: want $2 reconfigure(s) and no restart" >&2
    return 1
  fi
}
jobstate() { sl scontrol show job -o "$1" | grep -o 'JobState=[A-Z]*' | cut -d= -f2; }
job_is() { test "$(jobstate "$1")" = "$2"; }     # job_is ID STATE
node_draining() { sl sinfo -h -n "$1" -o %T | grep -q drain; }
node_gone() { ! sl scontrol show node "$1"; }
wait_for() { # wait_for SECONDS DESCRIPTION COMMAND... : poll until COMMAND succeeds
  local limit=$1 what=$2; shift 2
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $end ]; then echo "demo: timed out waiting for $what" >&2; return 1; fi
    sleep 0.2
  done
}

teardown() {
  local rc=$?
  step "juju-local destroy"
  # A destroy that fails (an application that cannot be removed) leaves hosts running: force it.
  "$JL" destroy || "$JL" destroy --force || true
  if [ -n "$own_dir" ]; then rm -rf "$JUJU_LOCAL_DIR"; fi
  if [ $rc -ne 0 ]; then echo "demo FAILED (exit $rc)" >&2; fi
}
trap teardown EXIT

step "juju-local bootstrap (model in $JUJU_LOCAL_DIR)"
"$JL" bootstrap --update-status-interval 1m ${base:+--base "$base"}

# MinJobAge: finished job records are kept that long, and a partition is removed only once its
# records are gone; a short value keeps the teardown at the end quick.
step "juju-local deploy build/slurmctld.charm --config slurm-conf-parameters=MinJobAge=10; deploy build/slurmd.charm -n 3"
"$JL" deploy build/slurmctld.charm --config slurm-conf-parameters=MinJobAge=10
"$JL" deploy build/slurmd.charm -n 3
"$JL" status

step "juju-local integrate slurmctld slurmd"
"$JL" integrate slurmctld slurmd
"$JL" wait --for active --timeout 5m
status

step "srun -N3 hostname (each node prints its host's name)"
sl srun -p slurmd -N3 hostname
status

step "sbatch a job"
job=$(sl sbatch --parsable -p slurmd -N2 -o /dev/null --wrap 'srun hostname')
wait_for 60 "job $job to complete" job_is "$job" COMPLETED
echo "job $job: $(jobstate "$job")"
status

# A login node (the sackd charm) where Slurm has sackd (23.11 and later): users submit from it.
case $TARGET in
  trixie | forky) login=1 ;;
  *) login= ;;
esac
if [ -n "$login" ]; then
  step "juju-local deploy build/sackd.charm; integrate slurmctld sackd (a login node: sackd, no slurmd, no slurm.conf of its own)"
  "$JL" deploy build/sackd.charm
  "$JL" integrate slurmctld sackd
  "$JL" wait --for active --timeout 5m
  "$JL" status
  lg() { "$JL" exec sackd/0 -- "$@"; }
  step "from the login node sackd/0: sinfo, srun -N3 hostname, sbatch, squeue"
  lg sinfo
  lg srun -p slurmd -N3 hostname
  job=$(lg sbatch --parsable -p slurmd -N2 -o /dev/null --wrap 'srun sleep 2')
  lg squeue
  wait_for 60 "job $job (submitted from sackd/0) to complete" job_is "$job" COMPLETED
  echo "job $job, submitted from the login node: $(jobstate "$job") on $(sl scontrol show job -o "$job" | grep -o ' NodeList=[^ ]*' | cut -d= -f2)"
fi

step "juju-local add-unit slurmd (no reconfigure, no controller restart)"
before=$(ctl_counts)
"$JL" add-unit slurmd
"$JL" wait --for active --timeout 5m
status
ctl_claim "$before" 0

step "juju-local config slurmd partition-config=\"MaxTime=1:00:00 DefaultTime=10:00\" (one reconfigure)"
before=$(ctl_counts)
"$JL" config slurmd partition-config="MaxTime=1:00:00 DefaultTime=10:00"
"$JL" wait --for active --timeout 5m
status
echo "The slurmd application's partition file on the controller:"
"$JL" exec slurmctld/0 -- cat /etc/slurm/partition-slurmd.conf
echo "The partition as slurmctld has it:"
sl scontrol show partition slurmd
ctl_claim "$before" 1

step "juju-local run slurmd/0 node-config parameters=\"Weight=10 Features=fast\" (no reconfigure)"
before=$(ctl_counts)
"$JL" run slurmd/0 node-config parameters="Weight=10 Features=fast"
"$JL" wait --for active --timeout 5m
status
sl sinfo -N -o '%N %T %P %f %w'
ctl_claim "$before" 0

step "juju-local remove-unit slurmd/3 while a job runs on it (no reconfigure, no controller restart)"
before=$(ctl_counts)
job=$(sl sbatch --parsable -p slurmd -w slurmd-3 -o /dev/null --wrap 'sleep 5')
wait_for 60 "job $job to run" job_is "$job" RUNNING
"$JL" remove-unit slurmd/3
wait_for 30 "slurmd-3 to drain" node_draining slurmd-3
sl sinfo -N -o '%N %T %P %E'
status
wait_for 60 "job $job to complete" job_is "$job" COMPLETED
echo "job $job: $(jobstate "$job") (it ran to the end on the node being removed)"
wait_for 60 "slurmd-3 to be deleted" node_gone slurmd-3
"$JL" wait --timeout 5m
echo "slurmd-3 is gone:"
status
ctl_claim "$before" 0

step "demo OK"
