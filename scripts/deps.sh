#!/usr/bin/env bash
# Installs what the build, the tests and the demo need on a fresh Debian 12 machine.
# Idempotent: every step is skipped when what it provides is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
for pair in slurmctld:slurmctld slurmd:slurmd scontrol:slurm-client munged:munge \
            ip:iproute2 nsenter:util-linux unshare:util-linux curl:curl pgrep:procps; do
  cmd=${pair%%:*} pkg=${pair#*:}
  command -v "$cmd" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "deps: installing ${need_apt[*]} from apt"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends $(printf '%s\n' "${need_apt[@]}" | sort -u)
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
