package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
)

// slurmdDaemon is this host's slurmd: its service (configured, started, enabled at boot,
// stopped), its pid file and its log. It knows nothing of the node's record in Slurm.
type slurmdDaemon struct {
	c    *Charm
	node string
	logf func(ctx context.Context, level juju.LogLevel, format string, args ...any)
	// ready, when set, returns once what slurmd needs to start is there (munged answering,
	// when it starts beside slurmd's definition), or why it is not.
	ready func() error
	// defined, when set, reports whether slurmd's service is defined as a spec says
	// already (its definition made ahead, defineAhead): start then does not define it again.
	defined func(service.Spec) bool
}

// spec is the slurmd service running as a says.
func (d slurmdDaemon) spec(a *Applied) service.Spec {
	return service.Spec{
		Name:    SlurmdService,
		Summary: "Slurm compute node " + d.node + " (dynamic)",
		Command: []string{SlurmdPath, "-D", "-Z", "-N", d.node,
			"--conf-server", strings.Join(a.Controllers, ","), "--conf", a.Conf},
	}
}

// start configures slurmd as spec says and starts it (restart restarts a running one),
// enabled at boot unless atBoot is false. It returns once the process runs; callers wait for
// the node's registration. Between the definition and the rest it waits for ready: slurmd is
// neither enabled nor started before munged answers.
func (d slurmdDaemon) start(ctx context.Context, spec service.Spec, restart, atBoot bool) error {
	m := d.c.Services
	if d.defined == nil || !d.defined(spec) {
		if err := m.Configure(ctx, spec); err != nil {
			return fmt.Errorf("cannot configure slurmd: %w", err)
		}
	}
	if d.ready != nil {
		if err := d.ready(); err != nil {
			return err
		}
	}
	if err := d.enableAtBoot(ctx, atBoot); err != nil {
		return err
	}
	do, verb := m.Spawn, "start"
	if restart {
		do, verb = m.Respawn, "restart"
	}
	if err := do(ctx, SlurmdService); err != nil {
		return fmt.Errorf("cannot %s slurmd: %w", verb, err)
	}
	return nil
}

// enableAtBoot makes slurmd start at boot, or not (a node-config is staged: the boot's
// registration is then the start hook's). A slurmd never configured has nothing to enable
// or disable.
func (d slurmdDaemon) enableAtBoot(ctx context.Context, atBoot bool) error {
	m := d.c.Services
	do, what := m.Enable, "enable slurmd"
	if !atBoot {
		do, what = m.Disable, "keep slurmd from starting at boot"
	}
	if err := do(ctx, SlurmdService); err != nil && !errors.Is(err, service.ErrUnknownService) {
		return fmt.Errorf("cannot %s: %w", what, err)
	}
	return nil
}

// stop stops slurmd if it was ever configured. A service manager that cannot be asked (the
// host's supervisor died) is no error when no slurmd runs: what stop wants holds.
func (d slurmdDaemon) stop(ctx context.Context) error {
	err := d.c.Services.Stop(ctx, SlurmdService)
	if err == nil || errors.Is(err, service.ErrUnknownService) {
		return nil
	}
	if !d.running() {
		d.logf(ctx, juju.LevelWarning, "cannot stop slurmd, which is not running: %v", err)
		return nil
	}
	return fmt.Errorf("cannot stop slurmd: %w", err)
}

// status is slurmd's service status.
func (d slurmdDaemon) status(ctx context.Context) (service.Status, error) {
	return d.c.Services.Status(ctx, SlurmdService)
}

// active reports whether the service manager says slurmd is active. It is asked only where
// the answer counts: a first start needs none, and on systemd the question loads the unit
// and scans for its UnitFileState (4-9 ms on a machine's join path).
func (d slurmdDaemon) active(ctx context.Context) bool {
	st, err := d.status(ctx)
	return err == nil && st.State == service.StateActive
}

// running reports whether a slurmd process holds slurmd's pid file on this host.
func (d slurmdDaemon) running() bool {
	data, err := os.ReadFile(d.c.Path(SlurmdPidFile))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return false
	}
	comm, err := os.ReadFile(d.c.Path(fmt.Sprintf("/proc/%d/comm", pid)))
	return err == nil && strings.TrimSpace(string(comm)) == "slurmd"
}

// logSize is the size of slurmd's log now (0 when there is none).
func (d slurmdDaemon) logSize() int64 {
	fi, err := os.Stat(d.c.Path(SlurmdLog))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logErrors returns the last error or fatal lines slurmd logged after offset, joined.
func (d slurmdDaemon) logErrors(offset int64) string {
	data := readLogAfter(d.c.Path(SlurmdLog), offset)
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if i := strings.Index(l, "fatal: "); i >= 0 {
			lines = append(lines, l[i:])
		} else if i := strings.Index(l, "error: "); i >= 0 {
			lines = append(lines, l[i:])
		}
	}
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, "; ")
}
