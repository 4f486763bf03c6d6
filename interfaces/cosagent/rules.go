package cosagent

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// RuleFile is a Prometheus (or Loki) rule file: {"groups": [...]}, or {} without groups.
type RuleFile struct {
	Groups []RuleGroup `json:"groups,omitempty" yaml:"groups"`
}

// RuleGroup is a named group of rules, evaluated together.
type RuleGroup struct {
	Name  string `json:"name" yaml:"name"`
	Rules []Rule `json:"rules" yaml:"rules"`
}

// Rule is one alerting rule.
type Rule struct {
	Alert       string            `json:"alert" yaml:"alert"`
	Expr        string            `json:"expr" yaml:"expr"`
	For         string            `json:"for,omitempty" yaml:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty" yaml:"annotations,omitempty"`
}

// TopologyPlaceholder stands, in a rule's expression, for the label matchers of the
// provider's Juju topology (ApplyTopology): write every selector as
// `metric{%%juju_topology%%}` or `metric{%%juju_topology%%,other="x"}`.
const TopologyPlaceholder = "%%juju_topology%%"

var (
	// durationRE is Prometheus's duration syntax ("5m", "1h30m", "90s").
	durationRE = newPattern(`^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$`, 0)
	// groupNameRE: what ApplyTopology leaves in a group name.
	groupNameRE = newPattern(`^[a-zA-Z0-9_:.-]+$`, 255)
)

// CheckDuration checks a duration in Prometheus's syntax ("5m", "1h30m").
func CheckDuration(d string) error {
	if d == "" || !durationRE.MatchString(d) {
		return fmt.Errorf("%q is not a duration (like 90s, 5m, 1h30m, 2d)", d)
	}
	return nil
}

// ParseRules reads a rule file in Prometheus's YAML format, strictly: unknown fields, a file
// that is not one YAML document and rules that Check refuses are errors.
func ParseRules(data []byte) (RuleFile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f RuleFile
	if err := dec.Decode(&f); err != nil {
		return RuleFile{}, fmt.Errorf("cannot parse rule file: %w", err)
	}
	var extra any
	if err := dec.Decode(&extra); err == nil {
		return RuleFile{}, errors.New("cannot parse rule file: more than one YAML document")
	}
	if err := f.Check(); err != nil {
		return RuleFile{}, err
	}
	f.normalize()
	return f, nil
}

// normalize gives empty lists and maps one form (nil), as a round trip through JSON or YAML
// leaves them.
func (f *RuleFile) normalize() {
	if len(f.Groups) == 0 {
		f.Groups = nil
	}
	for i := range f.Groups {
		for j := range f.Groups[i].Rules {
			r := &f.Groups[i].Rules[j]
			if len(r.Labels) == 0 {
				r.Labels = nil
			}
			if len(r.Annotations) == 0 {
				r.Annotations = nil
			}
		}
	}
}

// YAML renders f as a rule file Prometheus (and promtool check rules) reads.
func (f RuleFile) YAML() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("cannot render rule file: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("cannot render rule file: %w", err)
	}
	return buf.Bytes(), nil
}

// Check validates the rule file's shape: group names unique and valid, every rule named with
// an expression, durations, label and annotation names as Prometheus takes them. Expressions
// are PromQL or LogQL that only Prometheus or Loki parse (promtool check rules in the tests).
func (f RuleFile) Check() error {
	if len(f.Groups) > maxRuleGroups {
		return fmt.Errorf("%d groups, more than %d", len(f.Groups), maxRuleGroups)
	}
	seen := map[string]bool{}
	for _, g := range f.Groups {
		if !groupNameRE.MatchString(g.Name) {
			return fmt.Errorf("bad group name %q", g.Name)
		}
		if seen[g.Name] {
			return fmt.Errorf("group %q twice", g.Name)
		}
		seen[g.Name] = true
		if len(g.Rules) == 0 {
			return fmt.Errorf("group %q has no rules", g.Name)
		}
		for i, r := range g.Rules {
			if err := r.check(); err != nil {
				return fmt.Errorf("group %q, rule %d: %w", g.Name, i, err)
			}
		}
	}
	return nil
}

func (r Rule) check() error {
	if !labelNameRE.MatchString(r.Alert) {
		return fmt.Errorf("bad alert name %q", r.Alert)
	}
	if strings.TrimSpace(r.Expr) == "" || len(r.Expr) > 16<<10 {
		return fmt.Errorf("alert %s: empty or oversized expr", r.Alert)
	}
	if r.For != "" {
		if err := CheckDuration(r.For); err != nil {
			return fmt.Errorf("alert %s: for: %w", r.Alert, err)
		}
	}
	for _, m := range []map[string]string{r.Labels, r.Annotations} {
		for k := range m {
			if !labelNameRE.MatchString(k) {
				return fmt.Errorf("alert %s: bad label or annotation name %q", r.Alert, k)
			}
		}
	}
	return nil
}

// Topology is the Juju topology of a provider's application, which COS labels its series
// and rules with.
type Topology struct {
	Model, ModelUUID, Application, Charm string
}

// Identifier is the topology's short identifier, <model>_<first 8 of the uuid>_<application>,
// which prefixes the provider's rule group names.
func (t Topology) Identifier() string {
	uuid := t.ModelUUID
	if len(uuid) > 8 {
		uuid = uuid[:8]
	}
	return t.Model + "_" + uuid + "_" + t.Application
}

// labels are the juju_* labels of the topology every rule carries and filters on.
func (t Topology) labels() map[string]string {
	return map[string]string{
		"juju_model":       t.Model,
		"juju_model_uuid":  t.ModelUUID,
		"juju_application": t.Application,
	}
}

// matchers renders the topology's labels as PromQL label matchers, sorted.
func (t Topology) matchers() string {
	l := t.labels()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, fmt.Sprintf("%s=%q", k, l[k]))
	}
	return strings.Join(parts, ",")
}

// ApplyTopology returns f for the provider of topology t: each group named
// <identifier>_<name>_alerts (a name already so ending is kept), each rule labelled with the
// juju_* topology labels it lacks, and TopologyPlaceholder in each expression replaced by the
// topology's matchers, so that a rule sees only the series of its own application even when a
// Prometheus holds several deployments. A rule expression without the placeholder is refused:
// it would judge every deployment's series.
func (f RuleFile) ApplyTopology(t Topology) (RuleFile, error) {
	if t.Model == "" || t.ModelUUID == "" || t.Application == "" {
		return RuleFile{}, fmt.Errorf("cannot apply topology %+v: model, model uuid and application are required", t)
	}
	out := RuleFile{}
	prefix := t.Identifier() + "_"
	for _, g := range f.Groups {
		ng := RuleGroup{Name: g.Name}
		if !strings.HasPrefix(g.Name, prefix) {
			ng.Name = sanitize(prefix + g.Name + "_alerts")
		}
		for _, r := range g.Rules {
			if !strings.Contains(r.Expr, TopologyPlaceholder) {
				return RuleFile{}, fmt.Errorf("cannot apply topology to alert %s: its expr has no %s", r.Alert, TopologyPlaceholder)
			}
			nr := r
			nr.Labels = maps.Clone(r.Labels)
			if nr.Labels == nil {
				nr.Labels = map[string]string{}
			}
			for k, v := range t.labels() {
				if _, ok := nr.Labels[k]; !ok {
					nr.Labels[k] = v
				}
			}
			nr.Annotations = maps.Clone(r.Annotations)
			nr.Expr = strings.ReplaceAll(r.Expr, TopologyPlaceholder, t.matchers())
			ng.Rules = append(ng.Rules, nr)
		}
		out.Groups = append(out.Groups, ng)
	}
	if err := out.Check(); err != nil {
		return RuleFile{}, err
	}
	return out, nil
}

// sanitize replaces what Prometheus refuses in a group name as the cos_agent library does.
func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == ':':
			return r
		}
		return '_'
	}, name)
}
