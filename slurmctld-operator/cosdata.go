package main

import (
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// What the cos-agent relation carries (cos.go publishes it): the alert rules
// (cos/prometheus_alert_rules, each `for` set by alert-thresholds), the Grafana dashboards
// (cos/grafana_dashboards), the scrape jobs of slurmctld's OpenMetrics endpoints, and the
// slurm.conf default that turns them on.

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

// openMetrics reports whether Slurm version (as the state records it) serves OpenMetrics;
// false while the version is unknown.
func openMetrics(version string) bool {
	v, err := slurm.ParseVersion(version)
	return err == nil && slurm.FeaturesOf(v).OpenMetrics
}
