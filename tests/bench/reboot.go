package bench

import "time"

// RebootSample is one reboot of a slurmd unit's machine, every time from the reboot request
// (t0: the `systemctl reboot`, the `juju-local reboot` or the reboot action).
type RebootSample struct {
	// Kind is how the reboot was asked for: RebootInside, RebootJuju or RebootSlurm.
	Kind string
	// ToIdle is t0 → the node IDLE again (a new slurmd registered: its SlurmdStartTime
	// changed; responding, not drained, no reboot pending).
	ToIdle time.Duration
	// BootDone is t0 → the new boot finished (systemd's FinishTimestamp inside the machine:
	// hosts.BootTimes). It holds the shutdown, hosts.RebootDelay and the boot.
	BootDone time.Duration
	// SystemdBoot is the boot alone: the machine's PID 1 start → FinishTimestamp.
	SystemdBoot time.Duration
	// StartHook is t0 → the unit's start hook began after the boot (0: not seen).
	StartHook time.Duration
}

// RebootFigures renders reboot samples as figures named prefix+kind+"...", one set per kind
// in the order kinds first appear: to_idle_s, boot_s (request → boot finished), after_boot_s
// (boot finished → IDLE: slurmd's registration, negative when the node registered before
// systemd's boot transaction ended), start_hook_s (→ the unit's start hook began, when seen)
// and ratio (to_idle_s / boot_s of the same reboot, median over the reboots); then
// prefix+"systemd_boot_s" over every reboot.
func RebootFigures(prefix string, samples []RebootSample) []Figure {
	var kinds []string
	byKind := map[string][]RebootSample{}
	var systemdBoot []time.Duration
	for _, s := range samples {
		if _, ok := byKind[s.Kind]; !ok {
			kinds = append(kinds, s.Kind)
		}
		byKind[s.Kind] = append(byKind[s.Kind], s)
		systemdBoot = append(systemdBoot, s.SystemdBoot)
	}
	notes := map[string]string{
		RebootInside: "`systemctl reboot` inside the machine",
		RebootJuju:   "`juju-local reboot` (reboot from outside, start hook)",
		RebootSlurm:  "the slurmctld charm's reboot action (scontrol reboot ASAP nextstate=resume, the slurmd charm's RebootProgram)",
	}
	var fs []Figure
	for _, k := range kinds {
		var idle, boot, after, hook []float64
		for _, s := range byKind[k] {
			idle = append(idle, s.ToIdle.Seconds())
			boot = append(boot, s.BootDone.Seconds())
			after = append(after, (s.ToIdle - s.BootDone).Seconds())
			if s.StartHook > 0 {
				hook = append(hook, s.StartHook.Seconds())
			}
		}
		how := notes[k]
		if how == "" {
			how = k
		}
		ratios := PairRatios(idle, boot)
		p := prefix + k + "."
		fs = append(fs,
			Figure{Name: p + "to_idle_s", Value: Median(idle), Unit: "s", Samples: len(idle), Values: idle,
				Note: how + " → node IDLE again"},
			Figure{Name: p + "boot_s", Value: Median(boot), Unit: "s", Samples: len(boot), Values: boot,
				Note: how + " → the machine's systemd reports the boot finished (FinishTimestamp)"},
			Figure{Name: p + "after_boot_s", Value: Median(after), Unit: "s", Samples: len(after), Values: after,
				Note: "boot finished → node IDLE (start hook, slurmd registration)"},
		)
		if len(hook) > 0 {
			fs = append(fs, Figure{Name: p + "start_hook_s", Value: Median(hook), Unit: "s", Samples: len(hook), Values: hook,
				Note: how + " → the unit's start hook began after the boot"})
		}
		fs = append(fs, Figure{Name: p + "ratio", Value: Median(ratios), Unit: "ratio", Samples: len(ratios), Values: ratios,
			Note: "to_idle_s / boot_s of the same reboot (median)"})
	}
	if len(systemdBoot) > 0 {
		fs = append(fs, Figure{Name: prefix + "systemd_boot_s", Value: Median(Seconds(systemdBoot)), Unit: "s",
			Samples: len(systemdBoot), Values: Seconds(systemdBoot),
			Note: "the machine's own boot: its systemd started → boot finished (UserspaceTimestamp → FinishTimestamp), every reboot"})
	}
	return fs
}

// PairRatios returns num[i]/den[i] for each pair with den[i] > 0 (over the shorter of the two).
func PairRatios(num, den []float64) []float64 {
	var out []float64
	for i := range min(len(num), len(den)) {
		if den[i] > 0 {
			out = append(out, num[i]/den[i])
		}
	}
	return out
}
