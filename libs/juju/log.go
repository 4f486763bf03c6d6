package juju

import (
	"context"
	"fmt"
)

// LogLevel is a juju-log level.
type LogLevel string

// juju-log's levels.
const (
	LevelDebug   LogLevel = "DEBUG"
	LevelInfo    LogLevel = "INFO"
	LevelWarning LogLevel = "WARNING"
	LevelError   LogLevel = "ERROR"
)

// Logger runs juju-log, the charm's way to write to the unit's log. Only
// the charm's edge (its handlers, Main) logs; libraries return errors.
type Logger struct{ Runner Runner }

// Log writes msg at level: juju-log -l <LEVEL> <msg>.
func (c Logger) Log(ctx context.Context, level LogLevel, msg string) error {
	switch level {
	case LevelDebug, LevelInfo, LevelWarning, LevelError:
	default:
		return fmt.Errorf("cannot log: invalid level %q", level)
	}
	_, err := run(ctx, c.Runner, nil, textArgs([]string{"juju-log", "-l", string(level)}, msg)...)
	return err
}

// Logf formats and writes a message at level.
func (c Logger) Logf(ctx context.Context, level LogLevel, format string, args ...any) error {
	return c.Log(ctx, level, fmt.Sprintf(format, args...))
}
