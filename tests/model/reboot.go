package model

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Rebootable is implemented by machines that reboot as a real machine does (systemd-nspawn
// machines): the model plays Juju's hooks around each reboot and shows the boot id in status.
type Rebootable interface {
	// Reboot asks the machine's own init for a reboot and waits until it has booted again.
	Reboot(ctx context.Context) error
	// Boots counts the boots started so far; it grows on every reboot, from inside or not.
	Boots() int
	// WaitBooted waits until the current boot has finished.
	WaitBooted(ctx context.Context) error
	// BootID is the running machine's boot id (/proc/sys/kernel/random/boot_id).
	BootID(ctx context.Context) (string, error)
	// StartAgent starts, in the running boot, the stand-in for the machine's Juju agent service
	// (jujud-machine-<id>): a service of the machine's systemd, stopped first when the machine
	// goes down, before the hook tools' file systems are unmounted.
	StartAgent(ctx context.Context) error
	// AgentRunning reports whether the agent's stand-in of the current boot runs (a read of
	// /proc): false from the moment a shutdown begins until StartAgent in the next boot.
	AgentRunning() bool
}

// RebootDown is Unit.Reboot while the unit's machine is going down or booting: the unit runs
// no hook.
const RebootDown = "down"

// bootPoll is how often an agent looks for a new boot of its machine.
const bootPoll = 200 * time.Millisecond

// pauseForBoot waits, while an agent's machine is down, until the model changes (changed:
// Model.changed, taken under m.mu; the boot watcher notifies once it has recorded a boot and
// started the agent's service in it) or bootPoll has passed (the agent's service stopped by
// a shutdown notifies nobody); it reports false when ctx ended first. Woken by the change,
// a new machine's first hook starts as its agent does, not up to bootPoll later.
func pauseForBoot(ctx context.Context, changed <-chan struct{}) bool {
	t := time.NewTimer(bootPoll)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-changed:
		return true
	case <-t.C:
		return true
	}
}

// Reboot reboots the machine of target (a machine id or a unit name), as its administrator
// would: the machine goes down at once (a hook under way is cut off, and runs again first
// when the agent is back), and once it has booted the unit agent starts again and runs start
// (the uniter's reboot detection: internal/worker/uniter/reboot). Juju runs no stop hook on
// a machine that reboots: only a unit being removed, or a Kubernetes unit terminated, stops.
// Reboot returns once the machine has booted with a new boot id, without waiting for hooks.
func (m *Model) Reboot(ctx context.Context, target string) error {
	m.mu.Lock()
	unit := target
	if ms := m.state.Machines[target]; ms != nil {
		unit = ms.Unit
	}
	u := m.state.Units[unit]
	ag := m.agents[unit]
	switch {
	case u == nil:
		m.mu.Unlock()
		return fmt.Errorf("cannot reboot %q: no such machine or unit", target)
	case u.Dying:
		m.mu.Unlock()
		return fmt.Errorf("cannot reboot %s: unit %s is being removed", target, unit)
	case u.Reboot != "":
		m.mu.Unlock()
		return fmt.Errorf("cannot reboot %s: its machine is rebooting already", target)
	case ag == nil || ag.machine == nil || !u.Ready:
		m.mu.Unlock()
		return fmt.Errorf("cannot reboot %s: its machine is not provisioned yet", target)
	}
	mach, ok := ag.machine.(Rebootable)
	if !ok {
		m.mu.Unlock()
		return fmt.Errorf("cannot reboot %s: machine %s cannot reboot (only systemd machines do: deploy --base)", target, u.Machine)
	}
	mid := u.Machine
	before := ""
	if ms := m.state.Machines[mid]; ms != nil {
		before = ms.BootID
	}
	u.Reboot = RebootDown
	m.saveLater()
	m.notify()
	m.mu.Unlock()
	m.progress("%s: machine %s rebooting", unit, mid)
	if err := mach.Reboot(ctx); err != nil {
		return fmt.Errorf("cannot reboot %s: %w", target, err)
	}
	// The agent's boot watcher records the new boot and starts the agent again.
	return m.waitUnit(ctx, unit, func(u *Unit) bool {
		ms := m.state.Machines[mid]
		return u.Reboot == "" && ms != nil && ms.BootID != before
	})
}

// waitUnit waits until cond holds for unit (called with m.mu held), or the unit is gone.
func (m *Model) waitUnit(ctx context.Context, unit string, cond func(u *Unit) bool) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		m.mu.Lock()
		u := m.state.Units[unit]
		done := u == nil || cond(u)
		changed := m.changed
		m.mu.Unlock()
		if u == nil {
			return fmt.Errorf("unit %s is gone", unit)
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-tick.C:
		}
	}
}

// watchBoots follows the boots of the agent's machine for as long as ctx lives: it records
// the boot id in the machine's state and, on every new boot (Reboot, or a reboot asked for
// inside the machine, such as Slurm's RebootProgram), holds the unit's hooks while the machine
// boots, then queues start and config-changed as Juju's agent does when it comes back.
// A reboot from inside is seen after the fact, as a crash would be: no stop runs before it.
func (a *agent) watchBoots(ctx context.Context, mach Rebootable) {
	m := a.m
	seen := mach.Boots()
	a.recordBoot(ctx, mach, seen, false)
	tick := time.NewTicker(bootPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		b := mach.Boots()
		if b == seen {
			continue
		}
		seen = b
		m.mu.Lock()
		u := m.state.Units[a.unit]
		if u == nil || u.Dying {
			m.mu.Unlock()
			return
		}
		u.Reboot = RebootDown
		m.notify()
		m.mu.Unlock()
		if err := mach.WaitBooted(ctx); err != nil {
			m.progress("%s: %v", a.unit, err)
			if ctx.Err() != nil {
				return
			}
		}
		if mach.Boots() != seen {
			continue // rebooted again meanwhile
		}
		a.recordBoot(ctx, mach, seen, true)
	}
}

// recordBoot stores the machine's boot id for boot number boot and starts the agent's service
// in it; after a reboot it also lets the unit run hooks again, start first.
func (a *agent) recordBoot(ctx context.Context, mach Rebootable, boot int, rebooted bool) {
	m := a.m
	// The machine has just booted: a first read may still fail (its systemd settling); the
	// status must not keep the old boot's id.
	var id string
	var err error
	for try := 0; try < 50; try++ {
		if id, err = mach.BootID(ctx); err == nil && id != "" || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err != nil {
		m.progress("%s: cannot read the boot id: %v", a.unit, err)
	}
	// The agent's service starts with the boot; without it the unit runs no hook (the machine
	// counts as down) until the next boot. Under Juju it is up before any unit is assigned
	// to the machine: the bench counts a new machine as provisioned at this line.
	if err := mach.StartAgent(ctx); err != nil && ctx.Err() == nil {
		m.progress("%s: %v", a.unit, err)
	} else if err == nil {
		m.progress("%s: agent of machine %s started", a.unit, a.machineID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a.booted = boot
	u := m.state.Units[a.unit]
	if u == nil {
		return
	}
	if ms := m.state.Machines[u.Machine]; ms != nil && id != "" {
		ms.BootID = id
	}
	if rebooted {
		// The unit agent starts again with the machine: the uniter detects the reboot (start
		// runs first) and starts its timers and remote state watcher anew; a hook in error is
		// retried on a new retry timer.
		u.Reboot = ""
		u.Seen.RebootDetected = true
		m.state.agentRestarted(u, a.ticks, a.retries)
		if u.Failed != nil {
			a.retryDelay = 0
			a.startRetry(*u.Failed)
		}
		a.refereeStart(u, true)
		m.progress("%s: machine %s booted (boot id %s)", a.unit, u.Machine, id)
	}
	m.saveLater()
	m.notify()
}

// An nspawnMachine reboots as the tests/hosts machine below it does.
func (m *nspawnMachine) Reboot(ctx context.Context) error           { return m.m.Reboot(ctx) }
func (m *nspawnMachine) Boots() int                                 { return m.m.Boots() }
func (m *nspawnMachine) WaitBooted(ctx context.Context) error       { return m.m.WaitBooted(ctx) }
func (m *nspawnMachine) BootID(ctx context.Context) (string, error) { return m.m.BootID(ctx) }

// StartAgent starts jujud-machine-<id> as a transient service that sleeps: under Juju the unit
// agent runs in the machine agent's service, which the machine's systemd stops (SIGTERM) at
// the start of a shutdown, after which it starts no hook. It is ordered as Juju orders jujud
// (After network.target and systemd-user-sessions.service: stopped before them) and requires the
// mounts of the model's binds (the hook tools, the agent socket): systemd stops it before it
// unmounts them.
func (m *nspawnMachine) StartAgent(ctx context.Context) error {
	props := []string{
		"Description=juju agent for machine-" + m.id + " (local model stand-in)",
		"After=network.target systemd-user-sessions.service",
	}
	if len(m.m.Binds) > 0 {
		props = append(props, "RequiresMountsFor="+strings.Join(m.m.Binds, " "))
	}
	p, err := m.m.StartService(ctx, "jujud-machine-"+m.id, props, "sleep", "infinity")
	if err != nil {
		return fmt.Errorf("cannot start the agent of machine %s: %w", m.id, err)
	}
	m.agent.Store(&p)
	return nil
}

// AgentRunning reads /proc/<pid>/stat of the agent's stand-in.
func (m *nspawnMachine) AgentRunning() bool {
	p := m.agent.Load()
	return p != nil && p.Running()
}

var _ Rebootable = (*nspawnMachine)(nil)

// machineDown reports whether the agent's machine can run no hook now: the boot watcher has
// not recorded its boot yet (booting, start not queued), or the agent's stand-in in it is not
// running (never started, or stopped by a shutdown under way). Juju's agent is down with its
// machine: what is pending waits for the next boot. Callers hold m.mu.
func (a *agent) machineDown() bool {
	r, ok := a.machine.(Rebootable)
	if !ok {
		return false
	}
	return r.Boots() != a.booted || !r.AgentRunning()
}
