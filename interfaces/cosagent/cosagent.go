// Package cosagent is the provider side of the `cos_agent` relation interface, as the COS
// collectors that run beside a machine charm read it (the grafana-agent and
// opentelemetry-collector subordinates, through the cos_agent charm library of
// canonical/grafana-agent-operator).
//
// The interface is subordinate: each unit of the principal charm has its own collector, and
// writes one key, "config", in its own unit databag, holding a JSON object:
//
//   - metrics_scrape_jobs: Prometheus scrape_configs (job_name, metrics_path, static_configs
//     with targets and labels) the collector scrapes; the collector adds the juju_model,
//     juju_model_uuid, juju_application and juju_unit labels to every static config;
//   - metrics_alert_rules: a Prometheus rule file ({"groups": [...]}, or {} when none), its
//     group names and labels carrying the unit's Juju topology and its expressions filtered to
//     it (ApplyTopology);
//   - log_alert_rules: the same for Loki ({} when none);
//   - dashboards: Grafana dashboards, each JSON document xz-compressed and base64-encoded
//     (EncodeDashboard);
//   - log_slots: snap slots to read logs from (always present, empty here);
//   - include_log_files: log files the collector tails and forwards to Loki (optional: older
//     collectors ignore it and read /var/log by themselves).
//
// Rules and dashboards are the same on every unit of an application (the collectors keep one
// copy per application); scrape jobs differ per unit (each names its own unit's endpoints).
// Decode is the strict reading of a databag a test (or a requirer written in Go) makes: it
// refuses unknown keys, malformed values and anything Prometheus would refuse to load, with a
// *DataError naming the field.
package cosagent

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/ulikunitz/xz"

	"github.com/charmed-slurm/operators/interfaces/databag"
)

// Endpoint is the relation endpoint's conventional name on the provider side.
const Endpoint = "cos-agent"

// Key is the unit databag key the provider writes.
const Key = "config"

// Limits on what Decode accepts (and Encode writes): Juju keeps relation data in its
// database, and a collector holds all of it in memory.
const (
	maxBag        = 4 << 20 // bytes of the "config" value
	maxDashboard  = 4 << 20 // bytes of one dashboard, decompressed
	maxJobs       = 64
	maxTargets    = 256
	maxRuleGroups = 256
)

// DataError reports a databag that cannot be decoded or data that cannot be encoded. Field
// names the JSON field.
// It is [databag.Error], with relationName as its Relation.
type DataError = databag.Error

// relationName names this relation in its DataErrors.
const relationName = "cos_agent"

// ErrNotReady reports an empty databag: the provider has not published yet.
var ErrNotReady = errors.New("cos_agent relation data not ready")

// ScrapeJob is one Prometheus scrape_config, as far as this interface uses it.
type ScrapeJob struct {
	JobName     string `json:"job_name"`
	MetricsPath string `json:"metrics_path"`
	// Scheme is http (the default, empty) or https.
	Scheme        string         `json:"scheme,omitempty"`
	StaticConfigs []StaticConfig `json:"static_configs"`
}

// StaticConfig is a list of targets (host:port) with the labels every series scraped from
// them gets.
type StaticConfig struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// Data is what one provider unit publishes.
type Data struct {
	ScrapeJobs []ScrapeJob
	AlertRules RuleFile
	LogRules   RuleFile
	Dashboards []string // encoded (EncodeDashboard)
	LogFiles   []string // absolute paths or globs
	LogSlots   []string
}

// wire is Data as the databag's JSON carries it.
type wire struct {
	MetricsAlertRules RuleFile    `json:"metrics_alert_rules"`
	LogAlertRules     RuleFile    `json:"log_alert_rules"`
	Dashboards        []string    `json:"dashboards"`
	MetricsScrapeJobs []ScrapeJob `json:"metrics_scrape_jobs"`
	LogSlots          []string    `json:"log_slots"`
	IncludeLogFiles   []string    `json:"include_log_files,omitempty"`
	// Fields of the library this provider does not use, accepted on Decode.
	Subordinate      *bool    `json:"subordinate,omitempty"`
	TracingProtocols []string `json:"tracing_protocols,omitempty"`
}

// nonNil returns s, or an empty slice for nil: the library's model requires the lists.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Encode checks d and renders the unit databag.
func (d Data) Encode() (map[string]string, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	w := wire{
		MetricsAlertRules: d.AlertRules,
		LogAlertRules:     d.LogRules,
		Dashboards:        nonNil(d.Dashboards),
		MetricsScrapeJobs: nonNil(d.ScrapeJobs),
		LogSlots:          nonNil(d.LogSlots),
		IncludeLogFiles:   d.LogFiles,
	}
	out, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("cannot encode cos_agent data: %w", err)
	}
	if len(out) > maxBag {
		return nil, &DataError{Relation: relationName, Field: Key, Msg: fmt.Sprintf("%d bytes, more than %d", len(out), maxBag)}
	}
	return map[string]string{Key: string(out)}, nil
}

// Decode reads a provider unit's databag strictly.
func Decode(bag map[string]string) (Data, error) {
	raw, ok := bag[Key]
	if !ok || raw == "" {
		return Data{}, ErrNotReady
	}
	if len(raw) > maxBag {
		return Data{}, &DataError{Relation: relationName, Field: Key, Msg: fmt.Sprintf("%d bytes, more than %d", len(raw), maxBag)}
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var w wire
	if err := dec.Decode(&w); err != nil {
		return Data{}, &DataError{Relation: relationName, Field: Key, Msg: "not the cos_agent JSON object", Err: err}
	}
	if dec.More() {
		return Data{}, &DataError{Relation: relationName, Field: Key, Msg: "trailing data after the JSON object"}
	}
	for _, f := range []struct {
		name string
		null bool
	}{
		{"metrics_scrape_jobs", w.MetricsScrapeJobs == nil},
		{"dashboards", w.Dashboards == nil},
		{"log_slots", w.LogSlots == nil},
	} {
		if f.null {
			return Data{}, &DataError{Relation: relationName, Field: f.name, Msg: "missing (want a list)"}
		}
	}
	d := Data{
		ScrapeJobs: w.MetricsScrapeJobs, AlertRules: w.MetricsAlertRules, LogRules: w.LogAlertRules,
		Dashboards: w.Dashboards, LogFiles: w.IncludeLogFiles, LogSlots: w.LogSlots,
	}
	if err := d.check(); err != nil {
		return Data{}, err
	}
	d.AlertRules.normalize()
	d.LogRules.normalize()
	if len(d.LogFiles) == 0 {
		d.LogFiles = nil
	}
	for i := range d.ScrapeJobs {
		for j := range d.ScrapeJobs[i].StaticConfigs {
			if sc := &d.ScrapeJobs[i].StaticConfigs[j]; len(sc.Labels) == 0 {
				sc.Labels = nil
			}
		}
	}
	return d, nil
}

// Names Prometheus accepts for jobs, labels and alerts. Each is compiled on its first use
// (a cos-agent relation hook), not at every hook's start of the operators importing this
// package; a length bound is checked apart from the pattern: a counted repetition such as
// {1,999} compiles into as many copies of its class.
var (
	labelNameRE = newPattern(`^[a-zA-Z_][a-zA-Z0-9_]*$`, 0)
	jobNameRE   = newPattern(`^[a-zA-Z_][a-zA-Z0-9_.-]*$`, 128)
	pathRE      = newPattern(`^/[a-zA-Z0-9/_.~-]*$`, 256)
	logFileRE   = newPattern(`^/[a-zA-Z0-9/_.*?\[\]-]+$`, 1000)
	// targetHostRE is the host of host:port, whose port follows the last colon.
	targetHostRE = newPattern(`^[a-zA-Z0-9.:\[\]_-]+$`, 253)
	targetPortRE = newPattern(`^[0-9]{1,5}$`, 0)
)

// pattern is a regular expression compiled on first use and, unless max is 0, a bound on
// the length of the string it matches (its classes are ASCII: bytes are characters).
type pattern struct {
	re  func() *regexp.Regexp
	max int
}

func newPattern(expr string, max int) pattern {
	return pattern{re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) }), max: max}
}

// MatchString reports whether s is within the bound and matches the pattern.
func (p pattern) MatchString(s string) bool {
	return (p.max == 0 || len(s) <= p.max) && p.re().MatchString(s)
}

// validTarget reports whether t is host:port: 1–253 bytes of host (colons and brackets
// included, for IPv6), a colon, 1–5 digits.
func validTarget(t string) bool {
	i := strings.LastIndexByte(t, ':')
	return i > 0 && targetHostRE.MatchString(t[:i]) && targetPortRE.MatchString(t[i+1:])
}

// check validates d as Decode and Encode both require.
func (d Data) check() error {
	if len(d.ScrapeJobs) > maxJobs {
		return &DataError{Relation: relationName, Field: "metrics_scrape_jobs", Msg: fmt.Sprintf("%d jobs, more than %d", len(d.ScrapeJobs), maxJobs)}
	}
	names := map[string]bool{}
	for i, j := range d.ScrapeJobs {
		field := fmt.Sprintf("metrics_scrape_jobs[%d]", i)
		if err := j.check(); err != nil {
			return &DataError{Relation: relationName, Field: field, Msg: err.Error()}
		}
		if names[j.JobName] {
			return &DataError{Relation: relationName, Field: field, Msg: fmt.Sprintf("job_name %q used twice", j.JobName)}
		}
		names[j.JobName] = true
	}
	if err := d.AlertRules.Check(); err != nil {
		return &DataError{Relation: relationName, Field: "metrics_alert_rules", Msg: err.Error()}
	}
	if err := d.LogRules.Check(); err != nil {
		return &DataError{Relation: relationName, Field: "log_alert_rules", Msg: err.Error()}
	}
	for i, db := range d.Dashboards {
		if _, err := DecodeDashboard(db); err != nil {
			return &DataError{Relation: relationName, Field: fmt.Sprintf("dashboards[%d]", i), Msg: "not a dashboard", Err: err}
		}
	}
	for i, f := range d.LogFiles {
		if !logFileRE.MatchString(f) || strings.Contains(f, "/../") || strings.HasSuffix(f, "/..") {
			return &DataError{Relation: relationName, Field: fmt.Sprintf("include_log_files[%d]", i), Msg: fmt.Sprintf("%q is not an absolute path or glob", f)}
		}
	}
	for i, s := range d.LogSlots {
		if a, b, ok := strings.Cut(s, ":"); !ok || a == "" || b == "" || len(s) > 256 {
			return &DataError{Relation: relationName, Field: fmt.Sprintf("log_slots[%d]", i), Msg: fmt.Sprintf("%q is not snap:slot", s)}
		}
	}
	return nil
}

// check validates one scrape job.
func (j ScrapeJob) check() error {
	if !jobNameRE.MatchString(j.JobName) {
		return fmt.Errorf("bad job_name %q", j.JobName)
	}
	if !pathRE.MatchString(j.MetricsPath) {
		return fmt.Errorf("bad metrics_path %q", j.MetricsPath)
	}
	if j.Scheme != "" && j.Scheme != "http" && j.Scheme != "https" {
		return fmt.Errorf("bad scheme %q (http or https)", j.Scheme)
	}
	if len(j.StaticConfigs) == 0 {
		return errors.New("no static_configs")
	}
	n := 0
	for _, sc := range j.StaticConfigs {
		if len(sc.Targets) == 0 {
			return errors.New("a static config without targets")
		}
		n += len(sc.Targets)
		for _, t := range sc.Targets {
			if !validTarget(t) {
				return fmt.Errorf("bad target %q (want host:port)", t)
			}
		}
		for k, v := range sc.Labels {
			if !labelNameRE.MatchString(k) || strings.HasPrefix(k, "__") {
				return fmt.Errorf("bad label name %q", k)
			}
			if len(v) > 1024 {
				return fmt.Errorf("label %s: value longer than 1024 bytes", k)
			}
		}
	}
	if n > maxTargets {
		return fmt.Errorf("%d targets, more than %d", n, maxTargets)
	}
	return nil
}

// EncodeDashboard checks that raw is a Grafana dashboard (a JSON object with a title and
// panels) and encodes it as the relation carries it: xz-compressed, base64.
func EncodeDashboard(raw []byte) (string, error) {
	if err := checkDashboard(raw); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	w, err := xz.NewWriter(&buf)
	if err != nil {
		return "", fmt.Errorf("cannot compress dashboard: %w", err)
	}
	if _, err := w.Write(raw); err != nil {
		return "", fmt.Errorf("cannot compress dashboard: %w", err)
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("cannot compress dashboard: %w", err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// DecodeDashboard returns the JSON document of an encoded dashboard, checked.
func DecodeDashboard(enc string) ([]byte, error) {
	if len(enc) > maxBag {
		return nil, fmt.Errorf("encoded dashboard of %d bytes, more than %d", len(enc), maxBag)
	}
	comp, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("cannot decode dashboard: %w", err)
	}
	r, err := xz.NewReader(bytes.NewReader(comp))
	if err != nil {
		return nil, fmt.Errorf("cannot decompress dashboard: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxDashboard+1))
	if err != nil {
		return nil, fmt.Errorf("cannot decompress dashboard: %w", err)
	}
	if len(raw) > maxDashboard {
		return nil, fmt.Errorf("dashboard larger than %d bytes", maxDashboard)
	}
	if err := checkDashboard(raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// Dashboard is the part of a Grafana dashboard this package reads: its title, uid and the
// queries of its panels.
type Dashboard struct {
	Title  string  `json:"title"`
	UID    string  `json:"uid"`
	Panels []Panel `json:"panels"`
}

// Panel is a dashboard panel (rows nest panels).
type Panel struct {
	Title   string   `json:"title"`
	Type    string   `json:"type"`
	Targets []Target `json:"targets"`
	Panels  []Panel  `json:"panels"`
}

// Target is a panel's query.
type Target struct {
	Expr  string `json:"expr"`
	RefID string `json:"refId"`
}

// Queries are the PromQL queries of every panel, rows included, in order.
func (d Dashboard) Queries() []string {
	var out []string
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				if t.Expr != "" {
					out = append(out, t.Expr)
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// ParseDashboard reads a dashboard's JSON document.
func ParseDashboard(raw []byte) (Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return Dashboard{}, fmt.Errorf("cannot parse dashboard: %w", err)
	}
	if strings.TrimSpace(d.Title) == "" {
		return Dashboard{}, errors.New("cannot parse dashboard: no title")
	}
	if len(d.Panels) == 0 {
		return Dashboard{}, fmt.Errorf("cannot parse dashboard %q: no panels", d.Title)
	}
	return d, nil
}

// checkDashboard checks raw as ParseDashboard does.
func checkDashboard(raw []byte) error {
	if len(raw) > maxDashboard {
		return fmt.Errorf("dashboard of %d bytes, more than %d", len(raw), maxDashboard)
	}
	_, err := ParseDashboard(raw)
	return err
}
