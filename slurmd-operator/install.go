package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
)

// packages are the apt packages that provide the programs the charm runs.
var packages = []struct{ program, pkg string }{
	{"slurmd", "slurmd"},
	{"munged", "munge"},
}

// install installs the missing packages and waits for the controller.
func (h *hook) install(ctx context.Context) error {
	look := h.c.LookPath
	if look == nil {
		look = exec.LookPath
	}
	var missing []string
	for _, p := range packages {
		if _, err := look(p.program); err != nil {
			missing = append(missing, p.pkg)
		}
	}
	if len(missing) > 0 {
		if err := h.hc.Status.SetUnit(ctx, juju.StatusMaintenance, "installing "+strings.Join(missing, ", ")); err != nil {
			return err
		}
		env := []string{"DEBIAN_FRONTEND=noninteractive"}
		for _, argv := range [][]string{
			{"apt-get", "update", "-q"},
			append([]string{"apt-get", "install", "-y", "-q", "--no-install-recommends"}, missing...),
		} {
			out, err := h.c.Runner.Run(ctx, argv, env)
			if err != nil {
				return fmt.Errorf("cannot install %s: %w", strings.Join(missing, ", "), err)
			}
			if out.ExitCode != 0 {
				return fmt.Errorf("cannot install %s: %s exited %d: %s", strings.Join(missing, ", "),
					strings.Join(argv[:2], " "), out.ExitCode, strings.TrimSpace(string(out.Stderr)))
			}
		}
	}
	return h.setStatus(ctx, juju.StatusWaiting, "waiting for slurmctld relation")
}

// configChanged (also leader-elected): the leader publishes the partition; a new
// default-node-state applies to nodes that join later.
func (h *hook) configChanged(ctx context.Context) error {
	if err := h.publish(ctx); err != nil {
		return err
	}
	return h.updateStatus(ctx)
}

// publish writes the application's ComputeData when this unit leads and the partition-config
// is valid. An invalid one leaves the databag untouched and sets the application status to
// blocked (the unit status follows from cfgErr).
func (h *hook) publish(ctx context.Context) error {
	leader, err := h.hc.Leadership.IsLeader(ctx)
	if err != nil || !leader {
		return err
	}
	id, err := slurmd.Provider{HookContext: h.hc}.Relation(ctx)
	if err != nil {
		return fmt.Errorf("cannot find the slurmctld relation: %w", err)
	}
	data, cerr := h.cfg.computeData(h.hc.Event.App)
	if cerr != nil {
		h.logf(ctx, juju.LevelWarning, "not publishing the partition: %v", cerr)
		return h.hc.Status.SetApp(ctx, juju.StatusBlocked, cerr.Error())
	}
	if id != "" {
		if err := (slurmd.Provider{HookContext: h.hc}).PublishCompute(ctx, id, data); err != nil {
			return fmt.Errorf("cannot publish partition %s: %w", h.hc.Event.App, err)
		}
	}
	if h.cfgErr != nil {
		return h.hc.Status.SetApp(ctx, juju.StatusBlocked, h.cfgErr.Error())
	}
	return h.hc.Status.SetApp(ctx, juju.StatusActive, "")
}

// relation handles the slurmctld relation's hooks and secret-changed.
func (h *hook) relation(ctx context.Context) error {
	ev := h.hc.Event
	switch ev.Kind {
	case juju.RelationCreated, juju.RelationJoined, juju.RelationChanged:
		if ev.Kind == juju.RelationCreated && h.st.Departed {
			h.st.Departed = false
			if err := h.saveState(ctx); err != nil {
				return err
			}
		}
		if err := h.publish(ctx); err != nil {
			return err
		}
	}
	pev, err := slurmd.Provider{HookContext: h.hc}.Event(ctx)
	switch pev := pev.(type) {
	case slurmd.SlurmctldConnected:
		if err != nil {
			var de *slurmd.DataError
			if !errors.As(err, &de) {
				return err
			}
			h.logf(ctx, juju.LevelWarning, "bad controller data: %v", err)
			return h.setStatus(ctx, juju.StatusBlocked, "slurmctld relation: "+err.Error())
		}
		if h.st.Applied != nil {
			return h.updateStatus(ctx)
		}
		return h.setStatus(ctx, juju.StatusWaiting, "waiting for slurmctld data")
	case slurmd.SlurmctldReady:
		return h.ready(ctx, pev.Data)
	case slurmd.SlurmctldDeparted:
		return h.depart(ctx)
	case slurmd.SlurmctldDisconnected:
		return h.disconnected(ctx)
	}
	return err
}
