package main

import (
	"context"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
)

// cosAgentRelation handles every hook of the cos-agent endpoint: the unit's slurmd log goes
// to the COS collector beside it (a grafana-agent or opentelemetry-collector subordinate),
// which forwards it to Loki. Metrics and alert rules come from the slurmctld charm (slurmctld
// serves the nodes' metrics); this charm publishes no scrape job, rule or dashboard.
func (h *hook) cosAgentRelation(ctx context.Context) error {
	_, err := cosagent.Provider{HookContext: h.hc}.Publish(ctx, cosagent.Data{LogFiles: []string{SlurmdLog}})
	return err
}
