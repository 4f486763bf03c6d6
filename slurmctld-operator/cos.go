package main

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// Observability through COS (the cos-agent endpoint, interface cos_agent): on Slurm 25.11 and
// later slurmctld serves OpenMetrics itself (MetricsType=metrics/openmetrics, a default the
// charm writes there); every controller unit publishes scrape jobs for its own endpoints, and every unit the alert rules (cos/prometheus_alert_rules), the
// Grafana dashboards (cos/grafana_dashboards) and slurmctld's log file. On older Slurm the
// relation carries the rules, dashboards and log file but no scrape job, and the unit status
// says that metrics need Slurm 25.11.

// cosFiles are the rule files and dashboards the charm ships.
//
//go:embed cos/prometheus_alert_rules/*.rules cos/grafana_dashboards/*.json
var cosFiles embed.FS

// Where cosFiles keeps them.
const (
	alertRulesDir = "cos/prometheus_alert_rules"
	dashboardsDir = "cos/grafana_dashboards"
)

// metricsPaths are the OpenMetrics endpoints slurmctld serves below /metrics/, one scrape job
// each (job name <application>_<path with '_' for '-'>).
var metricsPaths = []string{"nodes", "jobs", "partitions", "scheduler", "jobs-users-accts"}

// metricsDefaults are slurm.conf defaults of Slurm releases that serve OpenMetrics: written
// when absent, overridable through slurm-conf-parameters like defaultKeys.
func metricsDefaults(feat slurm.Features) slurmconf.Params {
	if !feat.OpenMetrics {
		return nil
	}
	return slurmconf.Params{{Key: "MetricsType", Value: "metrics/openmetrics"}}
}

// alertThresholds are the default `for` durations of the shipped alert rules, by the name
// alert-thresholds gives them; a rule file says %%for:<name>%% where one goes.
var alertThresholds = map[string]string{
	"controller-down": "2m",
	"node-down":       "5m",
	"draining":        "24h",
	"pending":         "1h",
	"dbd-queue":       "10m",
}

// parseAlertThresholds reads alert-thresholds ("node-down=10m draining=4h") over the
// defaults: unknown names, repeated names and durations Prometheus would refuse are errors.
func parseAlertThresholds(s string) (map[string]string, error) {
	out := maps.Clone(alertThresholds)
	seen := map[string]bool{}
	for _, f := range strings.Fields(s) {
		name, d, ok := strings.Cut(f, "=")
		if _, known := alertThresholds[name]; !ok || !known {
			return nil, fmt.Errorf("%q is not name=duration with name one of %s", f, strings.Join(slices.Sorted(maps.Keys(alertThresholds)), ", "))
		}
		if seen[name] {
			return nil, fmt.Errorf("%s is given twice", name)
		}
		seen[name] = true
		if err := cosagent.CheckDuration(d); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = d
	}
	return out, nil
}

// cosAgentRelation handles every hook of the cos-agent endpoint: this unit's data is
// published (again) to every cos-agent relation.
func (c *Charm) cosAgentRelation(ctx context.Context, h *hook) error {
	if err := h.publishCOS(ctx); err != nil {
		return err
	}
	return h.setStatus(ctx)
}

// cosRecord is what a unit knows of its cos-agent relations: their ids (as the last
// cos-agent relation hook listed them) and a digest of the data it last wrote to them, so
// that a hook whose data is unchanged writes nothing and runs no hook tool for it.
type cosRecord struct {
	Relations []juju.RelationID `json:"relations,omitempty"`
	Digest    string            `json:"digest,omitempty"`
}

// publishCOS writes this unit's cos_agent data to each cos-agent relation unless it wrote
// the same before. It runs on every cos-agent relation hook and on the configure hooks (after
// slurmctld is started or reconfigured: the scrape jobs, and alert-thresholds, may change);
// the relation hooks and upgrade-charm (whose state may predate the record) list the
// relations again.
func (h *hook) publishCOS(ctx context.Context) error {
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
	if len(rec.Relations) == 0 || h.cfgErr != nil {
		// A refused configuration (blocked, naming the option) changes nothing: the relation
		// keeps what was published before.
		return nil
	}
	data, err := h.cosData(ctx)
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

// cosData is what this unit publishes: rules and dashboards always, scrape jobs when it is a
// controller whose Slurm serves OpenMetrics.
func (h *hook) cosData(ctx context.Context) (cosagent.Data, error) {
	ev := h.hc.Event
	thresholds, err := parseAlertThresholds(h.cfg.AlertThresholds)
	if err != nil {
		return cosagent.Data{}, &ConfigError{"alert-thresholds", err.Error()}
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
	if !h.openMetrics() || !h.controller() {
		return d, nil
	}
	addr, err := h.ingress(ctx)
	if err != nil {
		return cosagent.Data{}, err
	}
	d.ScrapeJobs = scrapeJobs(ev.App, net.JoinHostPort(addr, strconv.Itoa(SlurmctldPort)), h.cfg.ClusterName)
	return d, nil
}

// controller reports whether this unit is one of the cluster's controllers: the leader, once
// it has started slurmctld (with high availability, every unit that runs one). Its scrape
// jobs stay while slurmctld is down, so that the scrapes fail and SlurmControllerDown fires.
func (h *hook) controller() bool {
	return h.leader && h.st.ClusterName != ""
}

// openMetrics reports whether the installed Slurm serves OpenMetrics; false while the version
// is unknown.
func (h *hook) openMetrics() bool {
	v, err := slurm.ParseVersion(h.st.SlurmVersion)
	return err == nil && slurm.FeaturesOf(v).OpenMetrics
}

// scrapeJobs are the scrape jobs of one controller at target (host:port), each series
// labelled with the cluster's name.
func scrapeJobs(app, target, cluster string) []cosagent.ScrapeJob {
	jobs := make([]cosagent.ScrapeJob, 0, len(metricsPaths))
	for _, p := range metricsPaths {
		jobs = append(jobs, cosagent.ScrapeJob{
			JobName:     app + "_" + strings.ReplaceAll(p, "-", "_"),
			MetricsPath: "/metrics/" + p,
			StaticConfigs: []cosagent.StaticConfig{{
				Targets: []string{target},
				Labels:  map[string]string{"slurm_cluster": cluster},
			}},
		})
	}
	return jobs
}

// cosStatus is the unit status's note on COS with a cos-agent relation: on Slurm older than
// 25.11 that no metrics come; when slurm-conf-parameters hides jobs (PrivateData) and lets no
// scrape through, that Slurm refuses the scrapes.
func (h *hook) cosStatus() string {
	if len(h.st.COS.Relations) == 0 || h.st.SlurmVersion == "" {
		return ""
	}
	if !h.openMetrics() {
		return fmt.Sprintf("; no metrics for cos-agent: Slurm %s serves none (25.11 or later does)", h.st.SlurmVersion)
	}
	if metricsRefused(h.extra) {
		return "; metrics for cos-agent refused: PrivateData hides jobs, set MetricsParameters=ignore_private_data in slurm-conf-parameters"
	}
	return ""
}

// metricsRefused reports whether slurm.conf parameters make slurmctld answer the scrapes 401
// (seen on 26.05.5): PrivateData with jobs (or all) and neither
// MetricsParameters=ignore_private_data nor MetricsAuthUsers.
func metricsRefused(p slurmconf.Params) bool {
	private, _ := p.Get("PrivateData")
	hidden := false
	for _, v := range strings.Split(strings.ToLower(private), ",") {
		hidden = hidden || v == "jobs" || v == "all"
	}
	if !hidden || p.Has("MetricsAuthUsers") {
		return false
	}
	params, _ := p.Get("MetricsParameters")
	return !slices.Contains(strings.Split(strings.ToLower(params), ","), "ignore_private_data")
}

// loadAlertRules reads every rule file of fsys's alert rules directory into one rule file for
// topology t, each %%for:<name>%% replaced by thresholds[name] (a name without a threshold is
// an error).
func loadAlertRules(fsys fs.FS, t cosagent.Topology, thresholds map[string]string) (cosagent.RuleFile, error) {
	names, err := fs.Glob(fsys, path.Join(alertRulesDir, "*.rules"))
	if err != nil {
		return cosagent.RuleFile{}, fmt.Errorf("cannot list alert rules: %w", err)
	}
	var all cosagent.RuleFile
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return cosagent.RuleFile{}, fmt.Errorf("cannot read alert rules: %w", err)
		}
		var missing []string
		data = forRE.ReplaceAllFunc(data, func(m []byte) []byte {
			name := string(forRE.FindSubmatch(m)[1])
			d, ok := thresholds[name]
			if !ok {
				missing = append(missing, name)
			}
			return []byte(d)
		})
		if len(missing) > 0 {
			return cosagent.RuleFile{}, fmt.Errorf("%s: no threshold for %s", name, strings.Join(missing, ", "))
		}
		f, err := cosagent.ParseRules(data)
		if err != nil {
			return cosagent.RuleFile{}, fmt.Errorf("%s: %w", name, err)
		}
		all.Groups = append(all.Groups, f.Groups...)
	}
	return all.ApplyTopology(t)
}

// forRE is a threshold's place in a rule file.
var forRE = regexp.MustCompile(`%%for:([a-z-]+)%%`)

// loadDashboards encodes every dashboard of fsys's dashboards directory.
func loadDashboards(fsys fs.FS) ([]string, error) {
	names, err := fs.Glob(fsys, path.Join(dashboardsDir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("cannot list dashboards: %w", err)
	}
	out := make([]string, 0, len(names))
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("cannot read dashboard: %w", err)
		}
		enc, err := cosagent.EncodeDashboard(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, enc)
	}
	return out, nil
}
