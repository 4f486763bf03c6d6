package cosagent_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
)

const dashboard = `{"title":"Slurm","uid":"x","panels":[{"title":"Nodes","type":"stat","targets":[{"expr":"slurm_nodes","refId":"A"}]},{"type":"row","panels":[{"title":"Jobs","targets":[{"expr":"slurm_jobs","refId":"A"}]}]}]}`

func sample(t *testing.T) cosagent.Data {
	t.Helper()
	db, err := cosagent.EncodeDashboard([]byte(dashboard))
	if err != nil {
		t.Fatal(err)
	}
	return cosagent.Data{
		ScrapeJobs: []cosagent.ScrapeJob{{
			JobName: "slurmctld_nodes", MetricsPath: "/metrics/nodes",
			StaticConfigs: []cosagent.StaticConfig{{Targets: []string{"10.0.0.1:6817"}, Labels: map[string]string{"cluster": "c"}}},
		}},
		AlertRules: cosagent.RuleFile{Groups: []cosagent.RuleGroup{{Name: "g", Rules: []cosagent.Rule{{Alert: "A", Expr: "up == 0", For: "1m"}}}}},
		Dashboards: []string{db},
		LogFiles:   []string{"/var/log/slurm/slurmctld.log"},
	}
}

func TestEncodeDecode(t *testing.T) {
	d := sample(t)
	bag, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// The fields the cos_agent library's model requires are all there, lists never null.
	var raw map[string]any
	if err := json.Unmarshal([]byte(bag[cosagent.Key]), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"metrics_alert_rules", "log_alert_rules", "dashboards", "metrics_scrape_jobs", "log_slots"} {
		if raw[k] == nil {
			t.Errorf("%s missing or null in %s", k, bag[cosagent.Key])
		}
	}
	if got := raw["log_alert_rules"]; !cmp.Equal(got, map[string]any{}) {
		t.Errorf("log_alert_rules = %v, want {}", got)
	}
	back, err := cosagent.Decode(bag)
	if err != nil {
		t.Fatal(err)
	}
	d.LogSlots = []string{}
	if diff := cmp.Diff(d, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	raw2, err := cosagent.DecodeDashboard(back.Dashboards[0])
	if err != nil {
		t.Fatal(err)
	}
	if string(raw2) != dashboard {
		t.Errorf("dashboard = %s", raw2)
	}
	db, _ := cosagent.ParseDashboard(raw2)
	if diff := cmp.Diff([]string{"slurm_nodes", "slurm_jobs"}, db.Queries()); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}
}

func TestDecodeRefuses(t *testing.T) {
	good := sample(t)
	bag, _ := good.Encode()
	valid := bag[cosagent.Key]
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		_ = json.Unmarshal([]byte(valid), &m)
		f(m)
		out, _ := json.Marshal(m)
		return string(out)
	}
	job := func(j map[string]any) string {
		return edit(func(m map[string]any) { m["metrics_scrape_jobs"] = []any{j} })
	}
	sc := []any{map[string]any{"targets": []any{"h:1"}}}
	tests := []struct{ name, raw, field string }{
		{"not json", "{", "config"},
		{"unknown field", edit(func(m map[string]any) { m["extra"] = 1 }), "config"},
		{"trailing", valid + "{}", "config"},
		{"null jobs", edit(func(m map[string]any) { m["metrics_scrape_jobs"] = nil }), "metrics_scrape_jobs"},
		{"no log_slots", edit(func(m map[string]any) { delete(m, "log_slots") }), "log_slots"},
		{"bad job name", job(map[string]any{"job_name": "a b", "metrics_path": "/m", "static_configs": sc}), "metrics_scrape_jobs[0]"},
		{"bad path", job(map[string]any{"job_name": "a", "metrics_path": "m", "static_configs": sc}), "metrics_scrape_jobs[0]"},
		{"bad target", job(map[string]any{"job_name": "a", "metrics_path": "/m", "static_configs": []any{map[string]any{"targets": []any{"h"}}}}), "metrics_scrape_jobs[0]"},
		{"no targets", job(map[string]any{"job_name": "a", "metrics_path": "/m", "static_configs": []any{}}), "metrics_scrape_jobs[0]"},
		{"reserved label", job(map[string]any{"job_name": "a", "metrics_path": "/m", "static_configs": []any{map[string]any{"targets": []any{"h:1"}, "labels": map[string]any{"__x": "y"}}}}), "metrics_scrape_jobs[0]"},
		{"bad scheme", job(map[string]any{"job_name": "a", "metrics_path": "/m", "scheme": "ftp", "static_configs": sc}), "metrics_scrape_jobs[0]"},
		{"bad for", edit(func(m map[string]any) {
			m["metrics_alert_rules"] = map[string]any{"groups": []any{map[string]any{"name": "g", "rules": []any{map[string]any{"alert": "A", "expr": "up", "for": "5 minutes"}}}}}
		}), "metrics_alert_rules"},
		{"empty group", edit(func(m map[string]any) {
			m["metrics_alert_rules"] = map[string]any{"groups": []any{map[string]any{"name": "g", "rules": []any{}}}}
		}), "metrics_alert_rules"},
		{"bad dashboard", edit(func(m map[string]any) { m["dashboards"] = []any{"eyJ0aXRsZSI6IngifQ=="} }), "dashboards[0]"},
		{"relative log file", edit(func(m map[string]any) { m["include_log_files"] = []any{"var/log/x"} }), "include_log_files[0]"},
		{"log file up", edit(func(m map[string]any) { m["include_log_files"] = []any{"/var/../etc/shadow"} }), "include_log_files[0]"},
		{"bad slot", edit(func(m map[string]any) { m["log_slots"] = []any{"snap"} }), "log_slots[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cosagent.Decode(map[string]string{cosagent.Key: tt.raw})
			var de *cosagent.DataError
			if !errors.As(err, &de) {
				t.Fatalf("Decode = %v, want a *DataError", err)
			}
			if de.Field != tt.field {
				t.Errorf("field = %q, want %q (%v)", de.Field, tt.field, err)
			}
		})
	}
	if _, err := cosagent.Decode(map[string]string{}); !errors.Is(err, cosagent.ErrNotReady) {
		t.Errorf("empty bag: %v, want ErrNotReady", err)
	}
	dup := good
	dup.ScrapeJobs = append(dup.ScrapeJobs, dup.ScrapeJobs[0])
	if _, err := dup.Encode(); err == nil || !strings.Contains(err.Error(), "used twice") {
		t.Errorf("Encode with a job twice: %v", err)
	}
}

func TestDashboardRefused(t *testing.T) {
	for _, raw := range []string{`[]`, `{"panels":[{}]}`, `{"title":"x"}`, `{"title":"x","panels":[]}`, `nope`} {
		if _, err := cosagent.EncodeDashboard([]byte(raw)); err == nil {
			t.Errorf("EncodeDashboard(%s) accepted", raw)
		}
	}
	for _, enc := range []string{"!!", "aGVsbG8="} {
		if _, err := cosagent.DecodeDashboard(enc); err == nil {
			t.Errorf("DecodeDashboard(%q) accepted", enc)
		}
	}
}

func FuzzDecode(f *testing.F) {
	d := cosagent.Data{ScrapeJobs: []cosagent.ScrapeJob{{JobName: "a", MetricsPath: "/m", StaticConfigs: []cosagent.StaticConfig{{Targets: []string{"h:1"}}}}}}
	bag, _ := d.Encode()
	f.Add(bag[cosagent.Key])
	f.Add(`{"metrics_alert_rules":{"groups":[{"name":"g","rules":[{"alert":"A","expr":"up","for":"1m"}]}]},"log_alert_rules":{},"dashboards":[],"metrics_scrape_jobs":[],"log_slots":[]}`)
	f.Add(`{"metrics_alert_rules":{},"log_alert_rules":{},"dashboards":["/Td6WFoAAATm"],"metrics_scrape_jobs":[],"log_slots":["a:b"],"include_log_files":["/x/*.log"]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		d, err := cosagent.Decode(map[string]string{cosagent.Key: raw})
		if err != nil {
			return
		}
		bag, err := d.Encode()
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", raw, err)
		}
		again, err := cosagent.Decode(bag)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if diff := cmp.Diff(d, again); diff != "" {
			t.Fatalf("re-decode differs:\n%s", diff)
		}
	})
}
