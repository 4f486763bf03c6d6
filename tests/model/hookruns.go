package model

import (
	"strings"
	"time"
)

// TimedLine is one of the model's progress lines (Options.Log) with the time it was logged.
type TimedLine struct {
	At   time.Time
	Text string
}

// HookRun is one operation a unit's agent ran under its machine lock, from the model's
// progress lines: a hook, or the commands of a juju-exec (Hook "juju-exec").
type HookRun struct {
	Unit, Hook string
	Start, End time.Time // End is zero while it runs
	// Failed: the hook failed (or was cut off by its machine's shutdown).
	Failed bool
}

// Duration is how long the run held the lock (zero while it runs).
func (r HookRun) Duration() time.Duration {
	if r.End.IsZero() {
		return 0
	}
	return r.End.Sub(r.Start)
}

// HookRuns pairs each unit's start lines ("<unit>: running <hook> hook", "<unit>: running
// commands") with the end line that follows for that unit (`<unit>: ran "<hook>" hook ...`,
// "<unit>: ran commands ...", "<unit>: hook failed: ...", a cut-off hook or commands that
// could not run), in the order the runs started. Actions are left out.
func HookRuns(lines []TimedLine) []HookRun {
	var runs []HookRun
	open := map[string]int{} // unit → index in runs of its running hook
	for _, l := range lines {
		unit, rest, ok := strings.Cut(l.Text, ": ")
		if !ok || unit == "" || strings.Contains(unit, " ") {
			continue
		}
		hook, start := startedHook(rest)
		if start {
			open[unit] = len(runs)
			runs = append(runs, HookRun{Unit: unit, Hook: hook, Start: l.At})
			continue
		}
		i, running := open[unit]
		if !running {
			continue
		}
		switch {
		case strings.HasPrefix(rest, "ran "):
		case strings.HasPrefix(rest, "hook failed: "), strings.HasPrefix(rest, "cannot run commands: "),
			strings.HasPrefix(rest, "hook ") && strings.Contains(rest, " cut off by the machine's shutdown"):
			runs[i].Failed = true
		default:
			continue
		}
		runs[i].End = l.At
		delete(open, unit)
	}
	return runs
}

// startedHook reads a start line's text after "<unit>: ": the hook's name, or "juju-exec".
func startedHook(rest string) (string, bool) {
	if rest == "running commands" {
		return JujuExec, true
	}
	name, ok := strings.CutPrefix(rest, "running ")
	if !ok || strings.HasPrefix(name, "action ") {
		return "", false
	}
	name, ok = strings.CutSuffix(name, " hook")
	if !ok || name == "" || strings.Contains(name, " ") {
		return "", false
	}
	return name, true
}
