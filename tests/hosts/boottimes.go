package hosts

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// BootTimes are the moments systemd inside a machine recorded for its running boot.
type BootTimes struct {
	// Started is when the machine's systemd (PID 1) started: the manager's
	// UserspaceTimestamp. In a machine it is the start of the boot.
	Started time.Time
	// Finished is when the boot finished: the manager's FinishTimestamp, set once the boot's
	// initial transaction (default.target, i.e. multi-user.target and every unit it wants)
	// has completed. It is the moment `systemctl is-system-running` leaves "starting" and
	// systemd logs "Startup finished in ...". Zero while the machine still boots.
	Finished time.Time
}

// Duration is systemd's own boot time (Finished - Started), 0 while the machine boots.
func (b BootTimes) Duration() time.Duration {
	if b.Started.IsZero() || b.Finished.IsZero() {
		return 0
	}
	return b.Finished.Sub(b.Started)
}

// BootTimes reads the running machine's boot times from its systemd. Call it after
// WaitBooted (or Boot, Reboot) for a set Finished.
func (m *Machine) BootTimes(ctx context.Context) (BootTimes, error) {
	// The manager's properties with microsecond UTC timestamps (systemd 248 and later).
	out, err := m.Run(ctx, "systemctl", "show", "--timestamp=us+utc", "--property=UserspaceTimestamp,FinishTimestamp")
	if err != nil {
		return BootTimes{}, fmt.Errorf("cannot read the boot times of machine %q: %w", m.Name, err)
	}
	b, err := ParseBootTimes(string(out))
	if err != nil {
		return BootTimes{}, fmt.Errorf("cannot read the boot times of machine %q: %w", m.Name, err)
	}
	return b, nil
}

// bootTimeLayout is systemd's --timestamp=us+utc format.
const bootTimeLayout = "Mon 2006-01-02 15:04:05.000000 MST"

// ParseBootTimes parses the output of `systemctl show --timestamp=us+utc
// --property=UserspaceTimestamp,FinishTimestamp`: UserspaceTimestamp= and
// FinishTimestamp= lines, an empty value meaning not yet. Other lines are ignored; a
// missing UserspaceTimestamp or a value that is not a timestamp is an error.
func ParseBootTimes(out string) (BootTimes, error) {
	var b BootTimes
	seen := false
	for _, line := range strings.Split(out, "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		var dst *time.Time
		switch key {
		case "UserspaceTimestamp":
			dst, seen = &b.Started, true
		case "FinishTimestamp":
			dst = &b.Finished
		default:
			continue
		}
		if value == "" {
			*dst = time.Time{}
			continue
		}
		t, err := time.Parse(bootTimeLayout, value)
		if err != nil || t.IsZero() {
			return BootTimes{}, fmt.Errorf("cannot parse %s=%q: want a systemd us+utc timestamp", key, value)
		}
		*dst = t
	}
	if !seen {
		return BootTimes{}, fmt.Errorf("no UserspaceTimestamp in %q", out)
	}
	return b, nil
}

// FormatBootTime renders t as systemd's us+utc timestamps (ParseBootTimes reads it).
func FormatBootTime(t time.Time) string {
	return t.UTC().Format(bootTimeLayout)
}
