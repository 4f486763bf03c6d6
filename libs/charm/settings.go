package charm

import (
	"path/filepath"
	"time"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service"
)

// Or is v, or def when v is its type's zero value: a setting with its default.
func Or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Settings are the tunables both charms share. The zero value is the production setting
// with each charm's defaults.
type Settings struct {
	// Root is prepended to every host path the charm reads or writes ("/" or empty in
	// production, a temporary directory in tests).
	Root string
	// PollInterval is the pause between checks in waits.
	PollInterval time.Duration
	// MungeTimeout bounds the wait for a (re)started munged to answer.
	MungeTimeout time.Duration
	// UnreachableTimeout is how long an unreachable Slurm controller is retried.
	UnreachableTimeout time.Duration
	// LookupUser returns a user's uid and primary gid; nil means service.UserIDs.
	LookupUser func(name string) (uid, gid int, err error)
	// Clock tells the time; nil means time.Now.
	Clock func() time.Time
}

// Now is the time by Clock (time.Now when nil).
func (s Settings) Now() time.Time {
	if s.Clock != nil {
		return s.Clock()
	}
	return time.Now()
}

// Path is the host path p below Root.
func (s Settings) Path(p string) string {
	return filepath.Join(Or(s.Root, "/"), p)
}

// Poll is PollInterval, or def.
func (s Settings) Poll(def time.Duration) time.Duration { return Or(s.PollInterval, def) }

// UserIDs returns user name's uid and gid through LookupUser (service.UserIDs when nil).
func (s Settings) UserIDs(name string) (uid, gid int, err error) {
	if s.LookupUser != nil {
		return s.LookupUser(name)
	}
	return service.UserIDs(name)
}

// Munge is munged on this host with these settings: Root, LookupUser, MungeTimeout and
// PollInterval (munge's defaults when zero).
func (s Settings) Munge(services service.Manager, name string, r command.Runner) *munge.Daemon {
	return &munge.Daemon{Services: services, Name: name, Runner: r, Root: s.Root, LookupUser: s.LookupUser,
		Timeout: s.MungeTimeout, PollInterval: s.PollInterval}
}
