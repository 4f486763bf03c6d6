package main

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// TestShippedRulesAndDashboards checks the rule files and dashboards the charm ships: they
// parse strictly, every expression carries the topology placeholder, and every dashboard has
// queries. promtool and Prometheus check them for real in tests/e2e (TestObservabilityMachines).
func TestShippedRulesAndDashboards(t *testing.T) {
	rules, err := loadAlertRules(cosFiles, cosagent.Topology{Model: "m", ModelUUID: "0123456789", Application: "slurmctld"}, alertThresholds)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules.Groups) == 0 {
		t.Fatal("no alert rules")
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if !strings.Contains(r.Expr, `juju_application="slurmctld"`) || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %s: want topology matchers, a severity and a summary: %+v", r.Alert, r)
			}
		}
	}
	dashboards, err := loadDashboards(cosFiles)
	if err != nil {
		t.Fatal(err)
	}
	for _, enc := range dashboards {
		raw, err := cosagent.DecodeDashboard(enc)
		if err != nil {
			t.Fatal(err)
		}
		db, _ := cosagent.ParseDashboard(raw)
		if len(db.Queries()) == 0 || db.UID == "" {
			t.Errorf("dashboard %q: no query or no uid", db.Title)
		}
	}
}

// cosState is a started controller's state with a cos-agent relation.
func cosState(e *env) jujutest.State {
	st := e.started()
	st.Relations = append(st.Relations, jujutest.Relation{ID: "cos-agent:9", RemoteApp: "grafana-agent", RemoteUnits: map[string]map[string]string{"grafana-agent/0": {}}})
	return st
}

func TestCOSAgentOpenMetrics(t *testing.T) {
	e := newEnv(t)
	e.slurm.version = "slurm-wlm 26.05.5"
	st := e.run(cosState(e), jujutest.RelationHook(juju.RelationJoined, "cos-agent:9", "grafana-agent/0"))
	if conf := e.read(confPath); !strings.Contains(conf, "MetricsType=metrics/openmetrics\n") {
		t.Errorf("slurm.conf lacks MetricsType:\n%s", conf)
	}
	d, err := cosagent.Decode(st.Relations[len(st.Relations)-1].LocalUnitData)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, j := range d.ScrapeJobs {
		paths = append(paths, j.MetricsPath)
		want := []cosagent.StaticConfig{{Targets: []string{"10.0.0.1:6817"}, Labels: map[string]string{"slurm_cluster": "charmed-slurm"}}}
		if diff := cmp.Diff(want, j.StaticConfigs); diff != "" {
			t.Errorf("job %s (-want +got):\n%s", j.JobName, diff)
		}
	}
	if diff := cmp.Diff([]string{"/metrics/nodes", "/metrics/jobs", "/metrics/partitions", "/metrics/scheduler", "/metrics/jobs-users-accts"}, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if len(d.AlertRules.Groups) == 0 || len(d.Dashboards) == 0 || !cmp.Equal(d.LogFiles, []string{slurmctldLog}) {
		t.Errorf("rules, dashboards or log files missing: %+v", d)
	}
	if strings.Contains(st.UnitStatus.Message, "no metrics") {
		t.Errorf("status %q", st.UnitStatus.Message)
	}
	// An admin's MetricsType wins (slurm-conf-parameters), and the default returns without it.
	st.Config["slurm-conf-parameters"] = "MetricsType=metrics/none"
	st = e.run(st, jujutest.Hook(juju.ConfigChanged))
	if conf := e.read(confPath); !strings.Contains(conf, "MetricsType=metrics/none\n") {
		t.Errorf("slurm-conf-parameters' MetricsType not applied:\n%s", conf)
	}
	st.Config["slurm-conf-parameters"] = ""
	e.run(st, jujutest.Hook(juju.ConfigChanged))
	if conf := e.read(confPath); !strings.Contains(conf, "MetricsType=metrics/openmetrics\n") {
		t.Errorf("MetricsType default not restored:\n%s", conf)
	}
}

func TestCOSAgentOldSlurm(t *testing.T) {
	e := newEnv(t)
	e.slurm.version = "slurm-wlm 24.11.5"
	st := e.run(cosState(e), jujutest.RelationHook(juju.RelationJoined, "cos-agent:9", "grafana-agent/0"))
	if conf := e.read(confPath); strings.Contains(conf, "MetricsType") {
		t.Errorf("MetricsType on Slurm 24.11:\n%s", conf)
	}
	raw := st.Relations[len(st.Relations)-1].LocalUnitData[cosagent.Key]
	d, err := cosagent.Decode(map[string]string{cosagent.Key: raw})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.ScrapeJobs) != 0 || len(d.AlertRules.Groups) == 0 {
		t.Errorf("on 24.11: %d scrape jobs, %d rule groups", len(d.ScrapeJobs), len(d.AlertRules.Groups))
	}
	// The requirer's model needs the list even when empty.
	var w map[string]json.RawMessage
	_ = json.Unmarshal([]byte(raw), &w)
	if string(w["metrics_scrape_jobs"]) != "[]" {
		t.Errorf("metrics_scrape_jobs = %s, want []", w["metrics_scrape_jobs"])
	}
	want := "; no metrics for cos-agent: Slurm 24.11.5 serves none (25.11 or later does)"
	if st.UnitStatus.Code != juju.StatusActive || !strings.HasSuffix(st.UnitStatus.Message, want) {
		t.Errorf("status %+v, want active ending %q", st.UnitStatus, want)
	}
	// Once the relation is gone, so is the note.
	st = e.run(st, jujutest.RelationHook(juju.RelationBroken, "cos-agent:9", ""))
	if strings.Contains(st.UnitStatus.Message, "cos-agent") {
		t.Errorf("status after relation-broken: %q", st.UnitStatus.Message)
	}
}

func TestAlertThresholds(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]string // overrides of the defaults
		wantErr string
	}{
		{in: "", want: map[string]string{}},
		{in: "node-down=10m  draining=4h", want: map[string]string{"node-down": "10m", "draining": "4h"}},
		{in: "pending=1h30m controller-down=90s dbd-queue=2d", want: map[string]string{"pending": "1h30m", "controller-down": "90s", "dbd-queue": "2d"}},
		{in: "node-down=5 minutes", wantErr: "not a duration"},
		{in: "draining", wantErr: `"draining" is not name=duration`},
		{in: "node-down=5", wantErr: "not a duration"},
		{in: "node-down=", wantErr: "not a duration"},
		{in: "nodes-down=5m", wantErr: "controller-down, dbd-queue, draining, node-down, pending"},
		{in: "node-down=5m node-down=6m", wantErr: "given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseAlertThresholds(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := maps.Clone(alertThresholds)
			maps.Copy(want, tt.want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// The option reaches the published rules; a bad one blocks the charm, naming it.
	e := newEnv(t)
	e.slurm.version = "slurm-wlm 26.05.5"
	st := e.run(cosState(e), jujutest.RelationHook(juju.RelationJoined, "cos-agent:9", "grafana-agent/0"))
	st.Config["alert-thresholds"] = "node-down=42s"
	st = e.run(st, jujutest.Hook(juju.ConfigChanged))
	d, err := cosagent.Decode(st.Relations[len(st.Relations)-1].LocalUnitData)
	if err != nil {
		t.Fatal(err)
	}
	fors := map[string]string{}
	for _, g := range d.AlertRules.Groups {
		for _, r := range g.Rules {
			fors[r.Alert] = r.For
		}
	}
	if fors["SlurmNodesDown"] != "42s" || fors["SlurmNodesDraining"] != alertThresholds["draining"] {
		t.Errorf("rule durations %v", fors)
	}
	st.Config["alert-thresholds"] = "node-down=soon"
	st = e.run(st, jujutest.Hook(juju.ConfigChanged))
	if st.UnitStatus.Code != juju.StatusBlocked || !strings.HasPrefix(st.UnitStatus.Message, "alert-thresholds: ") {
		t.Errorf("status %+v, want blocked naming alert-thresholds", st.UnitStatus)
	}
}

// TestCOSAgentUnchangedWritesNothing: a configure hook with the same data runs no cos-agent
// tool; upgrade-charm lists the relations again and writes what changed (a state with no
// record of them too); config-changed with new thresholds writes.
func TestCOSAgentUnchangedWritesNothing(t *testing.T) {
	e := newEnv(t)
	e.slurm.version = "slurm-wlm 26.05.5"
	st := e.run(cosState(e), jujutest.RelationHook(juju.RelationJoined, "cos-agent:9", "grafana-agent/0"))
	first := st.Relations[len(st.Relations)-1].LocalUnitData[cosagent.Key]
	if first == "" {
		t.Fatal("nothing published on relation-joined")
	}
	st.Relations[len(st.Relations)-1].LocalUnitData = map[string]string{} // as if written by no one
	st = e.run(st, jujutest.Hook(juju.ConfigChanged))
	if got := st.Relations[len(st.Relations)-1].LocalUnitData[cosagent.Key]; got != "" {
		t.Errorf("config-changed with unchanged data wrote it again")
	}
	// A state with no record of the relation: upgrade-charm finds it and writes.
	state, err := e.c.loadState()
	if err != nil {
		t.Fatal(err)
	}
	state.COS = cosRecord{}
	data, err := json.Marshal(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.c.StateFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	st = e.run(st, jujutest.Hook(juju.UpgradeCharm))
	if got := st.Relations[len(st.Relations)-1].LocalUnitData[cosagent.Key]; got != first {
		t.Errorf("upgrade-charm wrote %q, want the data of relation-joined", got)
	}
}

// TestCOSAgentJobsStayWhileSlurmctldIsDown: the scrape jobs of a controller whose slurmctld is
// stopped stay (the scrapes fail and SlurmControllerDown fires); a standby unit, which runs no
// slurmctld, publishes rules and dashboards but no scrape job.
func TestCOSAgentJobsStayWhileSlurmctldIsDown(t *testing.T) {
	e := newEnv(t)
	e.slurm.version = "slurm-wlm 26.05.5"
	st := cosState(e)
	if err := e.svc.Stop(context.Background(), svcSlurmctld); err != nil {
		t.Fatal(err)
	}
	st = e.run(st, jujutest.RelationHook(juju.RelationJoined, "cos-agent:9", "grafana-agent/0"))
	d, err := cosagent.Decode(st.Relations[len(st.Relations)-1].LocalUnitData)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.ScrapeJobs) != len(metricsPaths) {
		t.Errorf("%d scrape jobs with slurmctld stopped, want %d", len(d.ScrapeJobs), len(metricsPaths))
	}

	standby := newEnv(t)
	standby.slurm.version = "slurm-wlm 26.05.5"
	in := baseState()
	in.Unit, in.Leader = "slurmctld/1", false
	in.Relations = []jujutest.Relation{{ID: "cos-agent:9", RemoteApp: "grafana-agent", RemoteUnits: map[string]map[string]string{"grafana-agent/1": {}}}}
	out := standby.run(in, jujutest.RelationHook(juju.RelationJoined, "cos-agent:9", "grafana-agent/1"))
	d, err = cosagent.Decode(out.Relations[0].LocalUnitData)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.ScrapeJobs) != 0 || len(d.AlertRules.Groups) == 0 || len(d.Dashboards) == 0 {
		t.Errorf("standby publishes %d scrape jobs, %d rule groups, %d dashboards; want 0, some, some", len(d.ScrapeJobs), len(d.AlertRules.Groups), len(d.Dashboards))
	}
}

func TestMetricsRefused(t *testing.T) {
	for _, tt := range []struct {
		params string
		want   bool
	}{
		{"", false},
		{"PrivateData=accounts,users", false},
		{"PrivateData=accounts,jobs", true},
		{"PrivateData=ALL", true},
		{"PrivateData=jobs MetricsParameters=ignore_private_data", false},
		{"PrivateData=jobs MetricsAuthUsers=root", false},
		{"PrivateData=jobs MetricsParameters=other", true},
	} {
		p, err := slurmconf.ParseParams(tt.params)
		if err != nil {
			t.Fatal(err)
		}
		if got := metricsRefused(p); got != tt.want {
			t.Errorf("metricsRefused(%q) = %v, want %v", tt.params, got, tt.want)
		}
	}
	e := newEnv(t)
	e.slurm.version = "slurm-wlm 26.05.5"
	st := cosState(e)
	st.Config["slurm-conf-parameters"] = "PrivateData=jobs"
	st = e.run(st, jujutest.RelationHook(juju.RelationJoined, "cos-agent:9", "grafana-agent/0"))
	st = e.run(st, jujutest.Hook(juju.ConfigChanged))
	if want := "set MetricsParameters=ignore_private_data in slurm-conf-parameters"; !strings.HasSuffix(st.UnitStatus.Message, want) {
		t.Errorf("status %q, want it to end %q", st.UnitStatus.Message, want)
	}
}

// TestCOSAgentScrapesEveryController: each controller unit's scrape jobs name its own
// address, so that with two controllers (high availability: every unit that runs slurmctld
// has a slurm.conf) both are scraped, and a collector's juju_unit label keeps them apart; a
// unit without slurm.conf (a standby that runs no slurmctld) offers none.
func TestCOSAgentScrapesEveryController(t *testing.T) {
	targets := func(d cosagent.Data) []string {
		var out []string
		for _, j := range d.ScrapeJobs {
			for _, sc := range j.StaticConfigs {
				out = append(out, sc.Targets...)
			}
		}
		return out
	}
	primary := newEnv(t)
	primary.slurm.version = "slurm-wlm 26.05.5"
	st := primary.run(cosState(primary), jujutest.RelationHook(juju.RelationJoined, "cos-agent:9", "grafana-agent/0"))
	d0, err := cosagent.Decode(st.Relations[len(st.Relations)-1].LocalUnitData)
	if err != nil {
		t.Fatal(err)
	}

	// The second unit runs slurmctld with the same slurm.conf (as a backup controller does).
	second := newEnv(t)
	second.slurm.version = "slurm-wlm 26.05.5"
	if err := os.MkdirAll(second.c.Path(confDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(second.c.Path(confPath), []byte(primary.read(confPath)), 0o644); err != nil {
		t.Fatal(err)
	}
	in := baseState()
	in.Unit, in.Leader, in.PrivateAddress = "slurmctld/1", false, "10.0.0.2"
	in.Relations = []jujutest.Relation{{ID: "cos-agent:9", RemoteApp: "grafana-agent", RemoteUnits: map[string]map[string]string{"grafana-agent/1": {}}}}
	out := second.run(in, jujutest.RelationHook(juju.RelationJoined, "cos-agent:9", "grafana-agent/1"))
	d1, err := cosagent.Decode(out.Relations[0].LocalUnitData)
	if err != nil {
		t.Fatal(err)
	}
	want0 := slices.Repeat([]string{"10.0.0.1:6817"}, len(metricsPaths))
	want1 := slices.Repeat([]string{"10.0.0.2:6817"}, len(metricsPaths))
	if diff := cmp.Diff(want0, targets(d0)); diff != "" {
		t.Errorf("slurmctld/0's targets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want1, targets(d1)); diff != "" {
		t.Errorf("slurmctld/1's targets (-want +got):\n%s", diff)
	}
	// Same job names from both units: each unit's collector (a subordinate) reads its own
	// unit's jobs and labels them with juju_unit, and the rules' max by (slurm_cluster) of
	// up counts the cluster as up while either answers.
	if len(d0.ScrapeJobs) != len(d1.ScrapeJobs) || d0.ScrapeJobs[0].JobName != d1.ScrapeJobs[0].JobName {
		t.Errorf("job names differ: %s, %s", d0.ScrapeJobs[0].JobName, d1.ScrapeJobs[0].JobName)
	}
}
