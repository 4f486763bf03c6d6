// Command cosagent is the cos-agent-standin test charm: the requirer side of cos_agent (see
// charmcraft.yaml). On every cos-agent relation hook, update-status and start it decodes the
// data of every related unit and sets its status: active with what it read ("slurmctld/0: 5
// scrape jobs, 7 alert rules, 3 dashboards, 1 log file"), or blocked naming the unit and the
// refused field, as the real collectors report a validation error.
package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
)

func main() {
	charm.Main(func(ev juju.Event) (juju.Handler, func(), error) {
		r := juju.NewRouter()
		for _, k := range []juju.Kind{juju.Install, juju.Start, juju.ConfigChanged, juju.UpdateStatus, juju.LeaderElected, juju.UpgradeCharm} {
			r.Handle(k, report)
		}
		for _, k := range []juju.Kind{juju.RelationCreated, juju.RelationJoined, juju.RelationChanged, juju.RelationDeparted, juju.RelationBroken} {
			r.HandleRelation(cosagent.Endpoint, k, report)
		}
		return r.Dispatch, nil, nil
	})
}

// report reads every related unit's data and sets the status.
func report(ctx context.Context, hc *juju.HookContext) error {
	code, msg, err := summary(ctx, hc)
	if err != nil {
		return err
	}
	return hc.Status.SetUnit(ctx, code, msg)
}

func summary(ctx context.Context, hc *juju.HookContext) (juju.StatusCode, string, error) {
	ids, err := (cosagent.Provider{HookContext: hc}).Relations(ctx)
	if err != nil {
		return "", "", err
	}
	var parts []string
	for _, id := range ids {
		units, err := hc.Relations.Units(ctx, id)
		if err != nil {
			return "", "", fmt.Errorf("cannot list the units of %s: %w", id, err)
		}
		slices.Sort(units)
		for _, u := range units {
			bag, err := hc.Relations.UnitData(ctx, id, u)
			if err != nil {
				return "", "", fmt.Errorf("cannot read the data of %s: %w", u, err)
			}
			d, err := cosagent.Decode(bag)
			switch {
			case errors.Is(err, cosagent.ErrNotReady):
				parts = append(parts, u+": no data yet")
			case err != nil:
				return juju.StatusBlocked, fmt.Sprintf("%s: %v", u, err), nil
			default:
				rules := 0
				for _, g := range d.AlertRules.Groups {
					rules += len(g.Rules)
				}
				parts = append(parts, fmt.Sprintf("%s: %d scrape jobs, %d alert rules, %d dashboards, %d log files", u, len(d.ScrapeJobs), rules, len(d.Dashboards), len(d.LogFiles)))
			}
		}
	}
	if len(parts) == 0 {
		return juju.StatusWaiting, "waiting for a cos-agent relation", nil
	}
	return juju.StatusActive, strings.Join(parts, "; "), nil
}
