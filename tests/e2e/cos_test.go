package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
)

// Observability through COS, proven with Debian's Prometheus: the slurmctld charm's cos-agent
// data, as the model holds it, is all the Prometheus of the test knows (its scrape jobs, with
// the labels a COS collector adds, and its rule file); Prometheus runs on the stand-in
// collector's machine (a Debian 14 machine, as the cluster's) and is asked through its HTTP
// API.

// prom is a Prometheus the test runs on a unit's machine.
type prom struct {
	c    *cluster
	unit string
}

// TestObservabilityMachines relates slurmctld (Slurm 26.05) to a cos_agent requirer and runs
// Prometheus with exactly what the relation carries: every target is up, the node and
// partition metrics say what the cluster is, every dashboard query returns data, and each
// alert rule fires when its condition is made on the cluster and resolves when it is undone:
// a drained node, a node whose slurmd stopped, a partition with a pending job and no idle
// node, the controller stopped, and (with accounting: slurmdbd and MariaDB related) slurmdbd
// stopped while jobs finish, whose records then wait in slurmctld's queue.
func TestObservabilityMachines(t *testing.T) {
	t.Parallel()
	// SlurmdTimeout=30: Slurm marks a silent node not responding within 10 s (its ping
	// interval) and DOWN after 30 s instead of 300 s. alert-thresholds: every alert fires
	// 15 s after its condition (and the rules the relation carries say so).
	c := newClusterFrom(t, clusterOptions{base: forky.base, units: 2, ctlConfig: map[string]string{
		"slurm-conf-parameters": "SlurmdTimeout=30",
		"alert-thresholds":      "controller-down=15s node-down=15s draining=15s pending=15s dbd-queue=15s",
	}})
	c.deploy(cosStandinPath, "cos", 1, nil)
	c.integrate("slurmctld", "cos")
	c.waitActive()
	c.waitIdle()
	// The stand-in collector read the data strictly.
	if _, msg := c.unitStatus("cos/0"); !strings.Contains(msg, "slurmctld/0: 5 scrape jobs") {
		t.Errorf("cos/0 status %q, want slurmctld/0's 5 scrape jobs", msg)
	}
	if conf := c.exec("slurmctld/0", "cat", ctlConf); !strings.Contains(conf, "MetricsType=metrics/openmetrics") {
		t.Errorf("slurm.conf lacks MetricsType=metrics/openmetrics:\n%s", conf)
	}
	d := c.cosData("slurmctld/0")
	// The slurmd units send their log; each log named is the daemon's real one.
	c.integrate("slurmd", "cos")
	c.waitIdle()
	for unit, log := range map[string]string{"slurmctld/0": "/var/log/slurm/slurmctld.log", "slurmd/0": "/var/log/slurm/slurmd.log", "slurmd/1": "/var/log/slurm/slurmd.log"} {
		if got := c.cosData(unit).LogFiles; !slices.Equal(got, []string{log}) {
			t.Errorf("%s sends log files %v, want %s", unit, got, log)
		}
		c.exec(unit, "test", "-s", log)
	}
	p := c.startPrometheus("cos/0", map[string]cosagent.Data{"slurmctld/0": d})

	p.eventually(time.Minute, "every target up", func() (bool, string) {
		up := p.query("up")
		ok := len(up) == len(d.ScrapeJobs)
		for _, s := range up {
			ok = ok && s.Value == 1
		}
		return ok, fmt.Sprint(up)
	})
	// Slurm 26.05.5 serves 199 slurm_* gauges (all five endpoints).
	if n := len(p.query(`group by (__name__) ({__name__=~"slurm_.+"})`)); n < 150 {
		t.Errorf("%d slurm_* metric names, want the endpoints' 199", n)
	}

	// The values are the cluster's: two idle nodes in partition slurmd.
	p.eventually(time.Minute, "two idle nodes", func() (bool, string) {
		v := p.query(`slurm_nodes_idle`)
		return len(v) == 1 && v[0].Value == 2, fmt.Sprint(v)
	})
	// Every series carries the labels a collector adds and the cluster's name.
	for _, s := range p.query(`slurm_nodes_idle`) {
		for k, want := range map[string]string{"juju_application": "slurmctld", "juju_unit": "slurmctld/0", "juju_model": "e2e", "slurm_cluster": "charmed-slurm"} {
			if s.Metric[k] != want {
				t.Errorf("slurm_nodes_idle has %s=%q, want %q: %v", k, s.Metric[k], want, s.Metric)
			}
		}
	}

	// Every dashboard query returns data.
	if len(d.Dashboards) == 0 {
		t.Fatal("no dashboard published")
	}
	for _, enc := range d.Dashboards {
		raw, err := cosagent.DecodeDashboard(enc)
		if err != nil {
			t.Fatal(err)
		}
		db, err := cosagent.ParseDashboard(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range db.Queries() {
			if got := p.query(q); len(got) == 0 {
				t.Errorf("dashboard %q: query %q returns no data", db.Title, q)
			}
		}
	}

	for _, r := range d.AlertRules.Groups {
		for _, rule := range r.Rules {
			if rule.For != "15s" {
				t.Errorf("alert %s: for %q, want alert-thresholds' 15s", rule.Alert, rule.For)
			}
		}
	}
	nodes := c.nodeNames()
	if len(nodes) != 2 {
		t.Fatalf("nodes %v, want 2", nodes)
	}
	sinfo := func() string { return c.slurm("sinfo", "-h", "-N", "-o", "%N %T") }

	// A drained node.
	p.fireAndResolve("SlurmNodesDraining", func() {
		c.slurm("scontrol", "update", "nodename="+nodes[0], "state=drain", "reason=cos-test")
	}, func() {
		c.slurm("scontrol", "update", "nodename="+nodes[0], "state=resume")
	}, sinfo)
	// A node whose slurmd stopped (not responding, then DOWN), back when it starts again.
	p.fireAndResolve("SlurmNodesDown", func() {
		c.exec("slurmd/1", "systemctl", "stop", "slurmd.service")
	}, func() {
		c.exec("slurmd/1", "systemctl", "start", "slurmd.service")
	}, sinfo)
	c.waitIdleNodes(2)
	// A partition with a pending job and no idle node: three whole-node jobs on two nodes.
	var jobs []string
	p.fireAndResolve("SlurmPartitionStarved", func() {
		for range 3 {
			jobs = append(jobs, c.sbatch("slurmd", "--exclusive", "--wrap", "sleep 600"))
		}
	}, func() {
		c.slurm(append([]string{"scancel"}, jobs...)...)
	}, func() string { return c.slurm("squeue", "-h", "-o", "%i %T %N") })
	// The controller stopped.
	p.fireAndResolve("SlurmControllerDown", func() {
		c.exec("slurmctld/0", "systemctl", "stop", "slurmctld.service")
	}, func() {
		c.exec("slurmctld/0", "systemctl", "start", "slurmctld.service")
	}, func() string { return fmt.Sprint(p.query("up")) })

	// Accounting, then slurmdbd stopped while jobs finish: their records wait in slurmctld's
	// DBD agent queue (sdiag's "DBD Agent queue size", slurm_slurmdbd_queue_size) until
	// slurmdbd is back and takes them.
	c.deploy(mariadbPath, "mariadb", 1, nil)
	c.deploy(slurmdbdPath, "slurmdbd", 1, nil)
	c.integrate("slurmdbd", "mariadb")
	c.integrate("slurmctld", "slurmdbd")
	c.waitActive()
	c.waitIdle()
	c.waitIdleNodes(2)
	queue := func() string {
		return fmt.Sprint(p.query("slurm_slurmdbd_queue_size"), " ", c.slurm("squeue", "-h", "-o", "%i %T"))
	}
	p.eventually(time.Minute, "slurmdbd's queue empty with accounting on", func() (bool, string) {
		v := p.query("slurm_slurmdbd_queue_size")
		return len(v) == 1 && v[0].Value == 0, queue()
	})
	var recorded []string
	p.fireAndResolve("SlurmdbdMessagesQueued", func() {
		c.serviceCtl("slurmdbd/0", "stop", "slurmdbd")
		for range 4 {
			recorded = append(recorded, c.sbatch("slurmd", "--mem=64", "--wrap", "true"))
		}
		c.waitCompleted(recorded, 2*time.Minute)
	}, func() {
		c.serviceCtl("slurmdbd/0", "start", "slurmdbd")
	}, queue)
	c.waitAccounted(recorded, 2*time.Minute)
}

// fireAndResolve waits (bounded) until alert name is not active, makes its condition (cause),
// waits until it fires with the topology labels of slurmctld, undoes the condition (fix) and
// waits until it is gone. seen describes the cluster in a timeout's message. (The first wait:
// a reconfigure just before, which 26.05 runs as a new slurmctld, leaves a node not
// responding for up to its next ping, and SlurmNodesDown pending meanwhile; seen once when
// the cluster came up fast.)
func (p *prom) fireAndResolve(name string, cause, fix func(), seen func() string) {
	p.c.t.Helper()
	p.eventually(time.Minute, name+" inactive before its condition", func() (bool, string) {
		a := p.alerts(name)
		return len(a) == 0, fmt.Sprint(a, " ", seen())
	})
	cause()
	p.eventually(3*time.Minute, name+" firing", func() (bool, string) {
		for _, a := range p.alerts(name) {
			if a.State == "firing" {
				if a.Labels["juju_application"] != "slurmctld" || a.Labels["severity"] == "" {
					p.c.t.Errorf("%s fires with labels %v, want juju_application=slurmctld and a severity", name, a.Labels)
				}
				return true, ""
			}
		}
		return false, fmt.Sprint(p.alerts(name), " ", seen())
	})
	fix()
	p.eventually(3*time.Minute, name+" resolved", func() (bool, string) {
		a := p.alerts(name)
		return len(a) == 0, fmt.Sprint(a, " ", seen())
	})
}

// cosData decodes the cos_agent data unit wrote in its cos-agent relation, as the model holds
// it.
func (c *cluster) cosData(unit string) cosagent.Data {
	c.t.Helper()
	st := c.m.State()
	for _, rel := range st.Relations {
		for _, ep := range rel.Endpoints {
			if ep.Interface != "cos_agent" || !strings.HasPrefix(unit, ep.App+"/") {
				continue
			}
			d, err := cosagent.Decode(rel.UnitData[unit])
			if err != nil {
				c.t.Fatalf("%s's cos_agent data: %v", unit, err)
			}
			return d
		}
	}
	c.t.Fatalf("%s has no cos_agent relation", unit)
	return cosagent.Data{}
}

// startPrometheus runs Prometheus on unit's machine with the scrape jobs and alert rules of
// data (per provider unit), labelled as a COS collector labels them, after promtool has
// checked the rule files and the configuration. It is stopped when the test ends.
func (c *cluster) startPrometheus(unit string, data map[string]cosagent.Data) *prom {
	c.t.Helper()
	st := c.m.State()
	dir := filepath.Join(c.m.Dir(), "prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	var jobs []promJob
	var rules []string
	for _, u := range slices.Sorted(func(yield func(string) bool) {
		for u := range data {
			if !yield(u) {
				return
			}
		}
	}) {
		d := data[u]
		app, _, _ := strings.Cut(u, "/")
		for _, j := range d.ScrapeJobs {
			for i := range j.StaticConfigs {
				l := map[string]string{}
				for k, v := range j.StaticConfigs[i].Labels {
					l[k] = v
				}
				l["juju_model"], l["juju_model_uuid"], l["juju_application"], l["juju_unit"] = st.Name, st.UUID, app, u
				j.StaticConfigs[i].Labels = l
			}
			jobs = append(jobs, unitJob(u, j))
		}
		y, err := d.AlertRules.YAML()
		if err != nil {
			c.t.Fatal(err)
		}
		path := filepath.Join(dir, strings.ReplaceAll(u, "/", "-")+".rules")
		if err := os.WriteFile(path, y, 0o644); err != nil {
			c.t.Fatal(err)
		}
		c.exec(unit, "promtool", "check", "rules", path)
		rules = append(rules, path)
	}
	cfg, err := json.Marshal(map[string]any{
		"global":         map[string]string{"scrape_interval": "5s", "evaluation_interval": "5s"},
		"rule_files":     rules,
		"scrape_configs": jobs,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.exec(unit, "promtool", "check", "config", cfgPath)
	c.exec(unit, "systemd-run", "--unit=test-prometheus", "--", "/usr/bin/prometheus",
		"--config.file="+cfgPath, "--storage.tsdb.path=/var/lib/prometheus/test",
		"--web.listen-address=127.0.0.1:9090")
	c.t.Cleanup(func() { c.tryExec(unit, "systemctl", "stop", "test-prometheus.service") })
	p := &prom{c: c, unit: unit}
	p.eventually(time.Minute, "Prometheus ready", func() (bool, string) {
		code, body := p.get("/-/ready", nil)
		return code == 200, body
	})
	return p
}

// promJob is a scrape job of Prometheus's configuration: a cos_agent one, and the
// relabelling that keeps its job label.
type promJob struct {
	cosagent.ScrapeJob
	RelabelConfigs []map[string]string `json:"relabel_configs,omitempty"`
}

// unitJob is unit's scrape job j in the one Prometheus of the test: named after the unit too,
// since every unit of an application publishes the same job names (each unit's own collector,
// a subordinate, scrapes its unit alone), with the job label j's name, as the series a COS
// Prometheus receives from each collector carry it (the alert rules match on it).
func unitJob(unit string, j cosagent.ScrapeJob) promJob {
	name := j.JobName
	j.JobName = name + "_" + strings.ReplaceAll(unit, "/", "_")
	return promJob{ScrapeJob: j, RelabelConfigs: []map[string]string{{"target_label": "job", "replacement": name}}}
}

// get asks Prometheus for path with query q over HTTP/1.0 from its own machine (no address is
// reachable from the test's namespace): the status code and body.
func (p *prom) get(path string, q url.Values) (int, string) {
	p.c.t.Helper()
	target := path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	const script = `exec 3<>/dev/tcp/127.0.0.1/9090 || exit 7; printf 'GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n' "$1" >&3; cat <&3`
	out, code, _ := p.c.tryExec(p.unit, "bash", "-c", script, "bash", target)
	if code != 0 {
		return 0, out
	}
	head, body, ok := strings.Cut(out, "\r\n\r\n")
	if !ok {
		return 0, out
	}
	f := strings.Fields(head)
	if len(f) < 2 {
		return 0, out
	}
	status, _ := strconv.Atoi(f[1])
	return status, body
}

// sample is one series of an instant query's result.
type sample struct {
	Metric map[string]string
	Value  float64
}

func (s sample) String() string { return fmt.Sprintf("%v=%g", s.Metric, s.Value) }

// query runs an instant query through /api/v1/query; an error answer fails the test.
func (p *prom) query(expr string) []sample {
	p.c.t.Helper()
	code, body := p.get("/api/v1/query", url.Values{"query": {expr}})
	var resp struct {
		Status string
		Error  string
		Data   struct {
			ResultType string
			Result     []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || code != 200 || resp.Status != "success" {
		p.c.t.Fatalf("query %q: HTTP %d %s (%v)", expr, code, body, err)
	}
	var out []sample
	for _, r := range resp.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			p.c.t.Fatalf("query %q: value %v: %v", expr, r.Value, err)
		}
		out = append(out, sample{Metric: r.Metric, Value: v})
	}
	return out
}

// alert is an active alert: its labels and state (pending, firing).
type alert struct {
	Labels map[string]string
	State  string
}

// alerts are the active alerts named name, from /api/v1/alerts.
func (p *prom) alerts(name string) []alert {
	p.c.t.Helper()
	code, body := p.get("/api/v1/alerts", nil)
	var resp struct {
		Status string
		Data   struct{ Alerts []alert }
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || code != 200 || resp.Status != "success" {
		p.c.t.Fatalf("alerts: HTTP %d %s (%v)", code, body, err)
	}
	var out []alert
	for _, a := range resp.Data.Alerts {
		if a.Labels["alertname"] == name {
			out = append(out, a)
		}
	}
	return out
}

// eventually polls cond every 2 s (each poll runs commands on the machine) until it holds or
// d passes.
func (p *prom) eventually(d time.Duration, what string, cond func() (bool, string)) {
	p.c.t.Helper()
	p.c.eventuallyEvery(d, 2*time.Second, what, cond)
}

// TestObservabilityOldSlurmMachines relates slurmctld on Slurm 24.11 (Debian 13), which
// serves no metrics, to a cos_agent requirer: the relation carries the rules, dashboards and
// log but no scrape job, slurm.conf no MetricsType, and the unit status says why.
func TestObservabilityOldSlurmMachines(t *testing.T) {
	t.Parallel()
	c := newClusterFrom(t, clusterOptions{base: trixie.base})
	c.deploy(cosStandinPath, "cos", 1, nil)
	c.integrate("slurmctld", "cos")
	c.waitActive()
	c.waitIdle()
	d := c.cosData("slurmctld/0")
	if len(d.ScrapeJobs) != 0 || len(d.AlertRules.Groups) == 0 || len(d.Dashboards) != 3 || len(d.LogFiles) != 1 {
		t.Errorf("cos_agent data on 24.11: %d scrape jobs, %d rule groups, %d dashboards, log files %v; want 0, some, 3, slurmctld.log",
			len(d.ScrapeJobs), len(d.AlertRules.Groups), len(d.Dashboards), d.LogFiles)
	}
	if _, msg := c.unitStatus("slurmctld/0"); !strings.Contains(msg, "no metrics for cos-agent: Slurm 24.11.") {
		t.Errorf("slurmctld/0 status %q, want the note that Slurm 24.11 serves no metrics", msg)
	}
	if _, msg := c.unitStatus("cos/0"); !strings.Contains(msg, "slurmctld/0: 0 scrape jobs, 5 alert rules, 3 dashboards, 1 log files") {
		t.Errorf("cos/0 status %q", msg)
	}
	if conf := c.exec("slurmctld/0", "cat", ctlConf); strings.Contains(conf, "MetricsType") {
		t.Errorf("slurm.conf on 24.11 has MetricsType:\n%s", conf)
	}
}
