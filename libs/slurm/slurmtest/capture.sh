#!/bin/bash
# Records real Slurm 22.05 command outputs into slurmtest/real/<case>.{argv,stdout,stderr,rc}.
# Not run by the tests: it needs a running lab cluster (see /work/shared/reference/slurm-lab.md)
# with a controller in netns $CTL and dynamic nodes node1 and node2 in netns $NODE_NS<i>,
# started by its scripts (LAB set, namespaces renamed). The unit tests' fake Runner replays the
# files, so the parsers and error classification are checked against what Slurm really prints.
set -u
L=${LAB:?set LAB}; OUT=${OUT:-$(dirname "$0")/real}; CTL=${CTL:-h3ctl}; NODE_NS=${NODE_NS:-h3node}
mkdir -p "$OUT"
ctl() { "$L"/bin/nsexec.sh "$CTL" slurmctl env SLURM_CONF="$L"/etc/slurm.conf "$@"; }
cap() { # cap <case> <argv...>: run argv on the controller host with SLURM_CONF set
  local name=$1; shift
  printf '%s\n' "$@" > "$OUT/$name.argv"
  ctl "$@" > "$OUT/$name.stdout" 2> "$OUT/$name.stderr"; echo $? > "$OUT/$name.rc"
}
capbad() { # like cap, with a slurm.conf naming a port nobody listens on
  local name=$1; shift
  sed 's/^SlurmctldPort=.*/SlurmctldPort=16999/' "$L"/etc/slurm.conf > "$L"/etc/unreachable.conf
  printf '%s\n' "$@" > "$OUT/$name.argv"
  "$L"/bin/nsexec.sh "$CTL" slurmctl env SLURM_CONF="$L"/etc/unreachable.conf "$@" \
    > "$OUT/$name.stdout" 2> "$OUT/$name.stderr"; echo $? > "$OUT/$name.rc"
}
state() { ctl scontrol show node -o "$1" | grep -o 'State=[^ ]*'; }
Q='%i|%T|%P|%u|%N|%j'; ACTIVE=RUNNING,COMPLETING,CONFIGURING,SUSPENDED

cap scontrol-V scontrol -V
cap slurmd-V slurmd -V
cap slurmctld-V slurmctld -V
printf '%s\n' slurmd -C > "$OUT/slurmd-C.argv"
"$L"/bin/nsexec.sh ${NODE_NS}1 node1 slurmd -C > "$OUT/slurmd-C.stdout" 2> "$OUT/slurmd-C.stderr"; echo $? > "$OUT/slurmd-C.rc"
cap ping-up scontrol ping
cap show-node-idle scontrol show node -o node1
cap reconfigure scontrol reconfigure
J=$(ctl sbatch --parsable -p ns1 -w node1 -o /dev/null -J "sleep|pipe job" --wrap 'sleep 30')
until [ "$(ctl squeue -h -j "$J" -o %T)" = RUNNING ]; do sleep 0.1; done
ctl sbatch --parsable -p ns1 -w node1 -o /dev/null --wrap 'sleep 1' > /dev/null   # stays pending
cap show-node-allocated scontrol show node -o node1
cap squeue-node-running squeue -h -w node1 -t $ACTIVE -o "$Q"
cap squeue-partition squeue -h -p ns1 -o "$Q"
cap partition-records squeue -h -t all -p ns1 -o "$Q"
cap drain-busy scontrol update nodename=node1 state=drain "reason=unit slurmd/1 removed"
cap show-node-draining scontrol show node -o node1
cap delete-busy scontrol delete nodename=node1
cap resume-idle scontrol update nodename=node2 state=resume
ctl scancel -p ns1
for i in $(seq 50); do
  s=$(state node1)
  case $s in *COMPLETING*) cap show-node-completing scontrol show node -o node1; break;; esac
  [ "$s" = State=IDLE+DRAIN+DYNAMIC_NORM ] && break; sleep 0.02
done
until [ "$(state node1)" = State=IDLE+DRAIN+DYNAMIC_NORM ]; do sleep 0.1; done
cap show-node-drained scontrol show node -o node1
cap squeue-node-empty squeue -h -w node1 -t $ACTIVE -o "$Q"
ctl scontrol update nodename=node2 "comment=a comment with=equals" "extra=ex tra"
cap show-node-all scontrol show node -o
cap show-node-unknown scontrol show node -o nodeX
cap delete-unknown scontrol delete nodename=nodeX
cap update-unknown scontrol update nodename=nodeX state=drain reason=x
cap squeue-node-unknown squeue -h -w nodeX -t $ACTIVE -o "$Q"
cap partition-inactive scontrol update partitionname=ns1 state=INACTIVE
ctl scontrol update partitionname=ns1 state=UP
cap partition-unknown scontrol update partitionname=nope state=INACTIVE
cap listjobs scontrol listjobs
cap update-bad-state scontrol update nodename=node2 state=bogus
capbad ping-down scontrol ping
capbad show-node-unreachable scontrol show node -o node1
capbad delete-unreachable scontrol delete nodename=node1
capbad update-unreachable scontrol update nodename=node1 state=resume
capbad squeue-unreachable squeue -h -w node1 -t $ACTIVE -o "$Q"
capbad reconfigure-unreachable scontrol reconfigure
# node1's slurmd stopped; then deleted
kill "$(cat "$L"/nodes/node1/slurmd.pid)"
cap delete-drained scontrol delete nodename=node1
cap show-node-deleted scontrol show node -o node1
# down, then resume: NOT_RESPONDING until the node answers again
ctl scontrol update nodename=node2 state=down "reason=down for test"
cap show-node-down scontrol show node -o node2
ctl scontrol update nodename=node2 state=resume
cap show-node-notresponding scontrol show node -o node2
cap sinfo-notresponding sinfo -h -N -o '%N|%T|%E'
ctl scontrol delete nodename=node2 >/dev/null 2>&1 || true
kill "$(cat "$L"/nodes/node2/slurmd.pid)"
until ctl scontrol delete nodename=node2 2>/dev/null; do sleep 0.2; done
cap show-node-none scontrol show node -o
