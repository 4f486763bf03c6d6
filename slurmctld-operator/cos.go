package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
	"github.com/charmed-slurm/operators/libs/juju"
)

// Observability through COS (the cos-agent endpoint, interface cos_agent): on Slurm 25.11 and
// later slurmctld serves OpenMetrics itself (MetricsType=metrics/openmetrics, a default the
// charm writes there); every controller unit publishes scrape jobs for its own endpoints, and
// every unit the alert rules, the Grafana dashboards and slurmctld's log file (cosdata.go). On
// older Slurm the relation carries the rules, dashboards and log file but no scrape job, and
// the unit status says that metrics need Slurm 25.11.

// cosAgent writes this unit's cos_agent data to its cos-agent relations, writing nothing the
// record (charmState.COS) says was written.
type cosAgent struct{ h *hook }

// publish writes this unit's cos_agent data to each cos-agent relation unless it wrote the
// same before. It runs on every cos-agent relation hook and on the configure hooks (after
// slurmctld is started or reconfigured: the scrape jobs, and alert-thresholds, may change);
// the relation hooks and upgrade-charm (whose state may predate the record) list the
// relations again.
func (ca cosAgent) publish(ctx context.Context) error {
	h := ca.h
	rec := &h.st.COS
	if h.hc.Event.Endpoint == cosagent.Endpoint || h.hc.Event.Kind == juju.UpgradeCharm {
		ids, err := (cosagent.Provider{HookContext: h.hc}).Relations(ctx)
		if err != nil {
			return err
		}
		if !slices.Equal(ids, rec.Relations) {
			*rec = cosRecord{Relations: ids}
		}
	}
	if len(rec.Relations) == 0 || h.configProblem() != nil {
		// A refused configuration (blocked, naming the option) changes nothing: the relation
		// keeps what was published before.
		return nil
	}
	data, err := ca.data(ctx)
	if err != nil {
		return err
	}
	bag, err := data.Encode()
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(bag[cosagent.Key]))
	digest := hex.EncodeToString(sum[:])
	if digest == rec.Digest {
		return nil
	}
	for _, id := range rec.Relations {
		if err := h.hc.Relations.SetUnitData(ctx, id, bag); err != nil {
			return fmt.Errorf("cannot publish cos_agent data on %s: %w", id, err)
		}
	}
	rec.Digest = digest
	return nil
}

// data is what this unit publishes: rules and dashboards always, scrape jobs of its own
// address when it is a controller whose Slurm serves OpenMetrics.
func (ca cosAgent) data(ctx context.Context) (cosagent.Data, error) {
	h := ca.h
	ev := h.hc.Event
	thresholds, err := parseAlertThresholds(h.cfg.AlertThresholds)
	if err != nil {
		return cosagent.Data{}, &configError{"alert-thresholds", err.Error()}
	}
	rules, err := loadAlertRules(cosFiles, cosagent.Topology{Model: ev.Model, ModelUUID: ev.ModelUUID, Application: ev.App}, thresholds)
	if err != nil {
		return cosagent.Data{}, err
	}
	dashboards, err := loadDashboards(cosFiles)
	if err != nil {
		return cosagent.Data{}, err
	}
	d := cosagent.Data{AlertRules: rules, Dashboards: dashboards, LogFiles: []string{slurmctldLog}}
	// A controller unit (one with a slurm.conf: the leader once it has started slurmctld;
	// with high availability, every unit that runs one) whose slurm.conf turns OpenMetrics
	// on scrapes itself; a standby, or metrics off (an older node, metricsgate.go), none.
	// The jobs stay while slurmctld is down, so that the scrapes fail and
	// SlurmControllerDown fires.
	served, err := (metricsGate{h}).served(ctx)
	if err != nil || !served {
		return d, err
	}
	feat, err := h.features(ctx)
	if err != nil {
		return cosagent.Data{}, err
	}
	if !feat.OpenMetrics {
		return d, nil
	}
	addr, err := h.ingress(ctx)
	if err != nil {
		return cosagent.Data{}, err
	}
	d.ScrapeJobs = scrapeJobs(ev.App, net.JoinHostPort(addr, strconv.Itoa(SlurmctldPort)), h.cfg.ClusterName)
	return d, nil
}
