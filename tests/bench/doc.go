// Package bench measures how fast a Slurm node joins and leaves a cluster through the
// operators, against Slurm's own limit, and what the operators cost per hook.
//
// The figures (see docs/benchmarks.md and `make bench`, which runs tests/cmd/bench):
//
//   - raw_join_s: slurmd -Z started through Pebble on a prepared host (munge key written,
//     slurmctld running) until the node is IDLE: the physical limit ([RawJoin]).
//   - join_s, host_create_s, join_ratio: add-unit until the node is IDLE through the whole
//     operator path on the local model, host creation measured apart ([OperatorBench]).
//   - scale_out_s with reconfigures and slurmctld_restarts counted from slurmctld.log
//     (slurm.ParseControllerLog) and the slurmctld PID.
//   - leave_idle_s, leave_after_job_s: remove-unit until the node record is gone.
//   - hook_ms, hook_cpu_ms, hook_rss_kib: each operator binary run for its common hooks with
//     the hook tools answered by a fast fake ([FakeTool]) and Slurm's commands replaced by
//     trivial stubs, and interpreter_floor_ms (python3) run the same way ([HookBench]).
//
// Part "busy" (figures "busy.<n>.…" and "busy.partition.…", [model.HookRuns] over the model's
// progress lines): n units (32) whose nodes each run a held job are removed at once; the
// controller's hooks and juju-exec runs until the model settles after the jobs' release
// (ctl_hook_max_ms, target ≤ 1 s: the controller never waits in a hook), release → node
// records gone, and the lag of the controller's status (its removal waiter); then
// remove-application of one-unit applications with a held job: the last job record gone → the
// partition gone (removed_after_records_s).
//
// On systemd machines (tests/hosts Machine: Debian images booted by systemd-nspawn), parts
// "trixie" and "bookworm" (figures named "<suite>.…"):
//
//   - <suite>.raw_join_s: on a prepared machine of the suite (booted, auth key in place:
//     slurm.key under auth/slurm from 23.11, munge.key and munged before; slurmd's packaged
//     unit given the drop-in the slurmd charm writes, with -Z --conf-server --conf) the time
//     from `systemctl start slurmd` until the node is IDLE on a raw controller machine running
//     slurmctld under systemd ([MachineRaw]); <suite>.raw_host_prepare_s is the excluded
//     preparation.
//   - <suite>.join_s, <suite>.host_create_s, <suite>.join_total_s, <suite>.join_ratio: add-unit
//     on a model whose units go on machines of the suite → node IDLE, the machine's creation
//     and boot (until systemd reports running) measured apart, interleaved with the raw joins;
//     the ratio is the median over the interleaved pairs. <suite>.leave_idle_s: remove-unit →
//     node record gone.
//
// Part "reboot" (figures "reboot.<suite>.…", on RunOptions.RebootOn machines): the machine of
// slurmd/0 reboots in three ways, interleaved sample after sample ([RebootSample],
// [RebootFigures]): "inside" (`systemctl reboot` in the machine), "juju" (`juju-local
// reboot`: the machine reboots from outside, start hook) and "slurm" (the slurmctld charm's reboot action:
// Slurm drains the node and its slurmd runs the charm's RebootProgram). For each, from the
// request: to_idle_s (the node IDLE again, with a new SlurmdStartTime, responding, not drained,
// no reboot pending), boot_s (the machine's boot finished: systemd's FinishTimestamp inside
// the machine, the moment the boot's initial transaction, multi-user.target and what it
// wants, completed and `systemctl is-system-running` left "starting"; hosts.BootTimes),
// after_boot_s (boot finished → IDLE), start_hook_s (the unit's start hook began after the
// boot) and ratio (to_idle_s / boot_s of the same reboot); and
// systemd_boot_s, the boot alone (PID 1 started → FinishTimestamp). Every reboot includes
// hosts.RebootDelay (2 s down, as a machine's firmware would take).
//
// A [Report] holds the figures, the machine they came from and the join-latency series;
// it renders as `name=value unit` lines, JSON, a Markdown table and a hand-written SVG chart.
// Benchmarks are not tests: nothing here asserts a time; targets are recorded next to the
// figures and the report says which were met.
package bench
