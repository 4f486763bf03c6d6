#!/usr/bin/env bash
# make demo: a real Slurm cluster run by our operators under the local model.
# Deploys slurmctld and 3 slurmd units on their own hosts (network namespaces supervised by
# Pebble), integrates them, runs jobs, adds a unit, applies partition-config and node-config,
# removes a unit while a job runs on it, printing `status` at each step; then tears it all down.
set -euo pipefail
cd "$(dirname "$0")/.."

JL=$PWD/build/bin/juju-local
own_dir=
if [ -z "${JUJU_LOCAL_DIR:-}" ]; then
  JUJU_LOCAL_DIR=$(mktemp -d /tmp/juju-local-demo.XXXXXX) own_dir=1
fi
export JUJU_LOCAL_DIR

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
status() { "$JL" status; }
sl() { "$JL" exec slurmctld/0 -- env SLURM_CONF=/etc/slurm/slurm.conf "$@"; }
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
"$JL" bootstrap --update-status-interval 1m

# MinJobAge: finished job records are kept that long, and a partition is removed only once its
# records are gone; a short value keeps the teardown at the end quick.
step "juju-local deploy build/slurmctld.charm --config slurm-conf-parameters=MinJobAge=10; deploy build/slurmd.charm -n 3"
"$JL" deploy build/slurmctld.charm --config slurm-conf-parameters=MinJobAge=10
"$JL" deploy build/slurmd.charm -n 3
status

step "juju-local integrate slurmctld slurmd"
"$JL" integrate slurmctld slurmd
"$JL" wait --for active --timeout 5m
status
sl sinfo -N -o '%N %T %P %f'

step "srun -N3 hostname"
sl srun -p slurmd -N3 hostname

step "sbatch a job"
job=$(sl sbatch --parsable -p slurmd -N2 -o /dev/null --wrap 'srun hostname')
wait_for 60 "job $job to complete" job_is "$job" COMPLETED
echo "job $job: $(jobstate "$job")"

step "juju-local add-unit slurmd (no reconfigure, no controller restart)"
"$JL" add-unit slurmd
"$JL" wait --for active --timeout 5m
status
sl sinfo -N -o '%N %T %P %f'

step "juju-local config slurmd partition-config=\"MaxTime=1:00:00 DefaultTime=10:00\""
"$JL" config slurmd partition-config="MaxTime=1:00:00 DefaultTime=10:00"
"$JL" wait --for active --timeout 5m
sl scontrol show partition slurmd | grep -E 'PartitionName|MaxTime'

step "juju-local run slurmd/0 node-config parameters=\"Weight=10 Features=fast\""
"$JL" run slurmd/0 node-config parameters="Weight=10 Features=fast"
sl sinfo -N -o '%N %T %P %f %w'

step "juju-local remove-unit slurmd/3 while a job runs on it"
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
sl sinfo -N -o '%N %T %P %f'
status

step "demo OK"
