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
//     ([CountControllerLog]) and the slurmctld PID.
//   - leave_idle_s, leave_after_job_s: remove-unit until the node record is gone.
//   - hook_ms, hook_cpu_ms, hook_rss_kib: each operator binary run for its common hooks with
//     the hook tools answered by a fast fake ([FakeTool]) and Slurm's commands replaced by
//     trivial stubs, and interpreter_floor_ms (python3) run the same way ([HookBench]).
//
// A [Report] holds the figures, the machine they came from and the join-latency series;
// it renders as `name=value unit` lines, JSON, a Markdown table and a hand-written SVG chart.
// Benchmarks are not tests: nothing here asserts a time; targets are recorded next to the
// figures and the report says which were met.
package bench
