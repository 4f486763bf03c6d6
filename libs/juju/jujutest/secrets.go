package jujutest

import (
	"fmt"
	"maps"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/libs/juju"
)

var secretKey = regexp.MustCompile(`^([a-z](?:-?[a-z0-9]){2,})$`)

// ownerApp is the application owning sec.
func ownerApp(sec *Secret) string {
	if app, err := juju.UnitApp(sec.Owner); err == nil {
		return app
	}
	return sec.Owner
}

// owns reports whether the local unit owns sec (for reading: every unit of
// an owning application does).
func (s *State) owns(sec *Secret) bool {
	return sec.Owner == s.app() || sec.Owner == s.Unit
}

// manages reports whether the local unit may change sec: the leader for an
// application-owned secret, the owning unit for a unit-owned one.
func (s *State) manages(sec *Secret) bool {
	return sec.Owner == s.app() && s.Leader || sec.Owner == s.Unit
}

// granted reports whether sec was granted to the local unit over a
// relation with the owner's application.
func (s *State) granted(sec *Secret) bool {
	for _, g := range sec.Grants {
		_, num, err := g.Relation.Parse()
		if err != nil {
			continue
		}
		rel := s.relation(num)
		if rel != nil && rel.RemoteApp == ownerApp(sec) && (g.Unit == "" || g.Unit == s.Unit) {
			return true
		}
	}
	return false
}

func bareID(id juju.SecretID) string {
	s := string(id)
	if i := strings.LastIndexAny(s, ":/"); i >= 0 {
		return s[i+1:]
	}
	return s
}

func secretContent(a *args) (map[string]string, *toolError) {
	if _, ok := a.flags["file"]; ok {
		return nil, usagef("jujutest does not model secret --file")
	}
	content := map[string]string{}
	for _, kv := range a.pos {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, usagef("expected \"key=value\", got %q", kv)
		}
		if strings.ContainsRune(k, '#') {
			return nil, usagef("jujutest does not model secret key suffixes (%q)", k)
		}
		if !secretKey.MatchString(k) {
			return nil, usagef("key %q not valid", k).breaks("secret keys are lowercase letters, digits and '-', at least 3 characters")
		}
		content[k] = v
	}
	return content, nil
}

// findSecret resolves a secret argument (or --label) to a secret the
// local unit owns or was granted.
func (m *model) findSecret(id juju.SecretID, label string) (*Secret, *toolError) {
	st := m.work
	if id == "" {
		for i := range st.Secrets {
			sec := &st.Secrets[i]
			if sec.Label == label && (st.owns(sec) || st.granted(sec)) {
				return sec, nil
			}
		}
		return nil, failf("secret %q not found", label)
	}
	sec := st.secret(id)
	if sec == nil {
		return nil, failf("secret %q not found", bareID(id))
	}
	return sec, nil
}

func (m *model) managed(a *args) (*Secret, *toolError) {
	if len(a.pos) == 0 {
		return nil, usagef("missing secret URI")
	}
	sec, terr := m.findSecret(juju.NormalizeSecretID(a.pos[0]), "")
	if terr != nil {
		return nil, terr
	}
	if !m.work.manages(sec) {
		rule := fmt.Sprintf("only the owner of secret %s (%s; the leader for an application-owned secret) may change it", sec.ID, sec.Owner)
		return nil, failf("permission denied").breaks(rule)
	}
	return sec, nil
}

func (m *model) secretAdd(a *args) ([]byte, *toolError) {
	st := m.work
	content, terr := secretContent(a)
	if terr != nil {
		return nil, terr
	}
	if len(content) == 0 {
		return nil, usagef("missing secret value or filename")
	}
	owner := st.app()
	switch a.flags["owner"] {
	case "", "application":
		if !st.Leader {
			return nil, failf("this unit is not the leader").breaks("only the leader may create application-owned secrets")
		}
	case "unit":
		owner = st.Unit
	default:
		return nil, usagef("secret owner %q not valid", a.flags["owner"])
	}
	label := a.flags["label"]
	if label != "" {
		for i := range st.Secrets {
			if o := &st.Secrets[i]; o.Owner == owner && o.Label == label {
				return nil, failf("secret with label %q already exists", label)
			}
		}
	}
	var id juju.SecretID
	for n := len(st.Secrets) + 1; ; n++ {
		id = juju.SecretID(fmt.Sprintf("secret:jujutest%05d", n))
		if st.secret(id) == nil {
			break
		}
	}
	st.Secrets = append(st.Secrets, Secret{
		ID: id, Owner: owner, Label: label, Description: a.flags["description"],
		Revisions: []map[string]string{content},
	})
	return []byte(string(id) + "\n"), nil
}

func (m *model) secretGet(a *args) ([]byte, *toolError) {
	st := m.work
	var id juju.SecretID
	key := ""
	switch len(a.pos) {
	case 0:
	case 1:
		id = juju.NormalizeSecretID(a.pos[0])
	case 2:
		id, key = juju.NormalizeSecretID(a.pos[0]), a.pos[1]
	default:
		return nil, usagef("unrecognized args: %q", a.pos[2:])
	}
	label := a.flags["label"]
	if id == "" && label == "" {
		return nil, usagef("require either a secret URI or label")
	}
	if a.has("peek") && a.has("refresh") {
		return nil, usagef("specify one of --peek or --refresh but not both")
	}
	sec, terr := m.findSecret(id, label)
	if terr != nil {
		return nil, terr
	}
	owner := st.owns(sec)
	if !owner && !st.granted(sec) {
		return nil, failf("permission denied")
	}
	latest := len(sec.Revisions)
	rev := latest
	if !owner {
		switch {
		case a.has("peek"):
		case a.has("refresh") || sec.Tracked == 0:
			sec.Tracked = latest
		default:
			rev = sec.Tracked
		}
	}
	if id != "" && label != "" {
		sec.Label = label
	}
	content := sec.Revisions[rev-1]
	if content == nil {
		return nil, failf("secret %q revision %d not found", bareID(sec.ID), rev)
	}
	if key != "" {
		v, ok := content[key]
		if !ok {
			return nil, failf("secret key %q not found", key)
		}
		return jsonOut(v)
	}
	return jsonOut(content)
}

func (m *model) secretSet(a *args) ([]byte, *toolError) {
	sec, terr := m.managed(a)
	if terr != nil {
		return nil, terr
	}
	a.pos = a.pos[1:]
	content, terr := secretContent(a)
	if terr != nil {
		return nil, terr
	}
	if _, ok := a.flags["owner"]; ok {
		return nil, usagef("--owner cannot be changed")
	}
	if len(content) == 0 && !a.has("label") && !a.has("description") {
		return nil, usagef("require either a secret value, label or description to update")
	}
	if label, ok := a.flags["label"]; ok {
		sec.Label = label
	}
	if desc, ok := a.flags["description"]; ok {
		sec.Description = desc
	}
	if len(content) > 0 && !maps.Equal(content, sec.Revisions[len(sec.Revisions)-1]) {
		sec.Revisions = append(sec.Revisions, content)
	}
	return nil, nil
}

func (m *model) secretGrant(a *args) ([]byte, *toolError) {
	sec, terr := m.managed(a)
	if terr != nil {
		return nil, terr
	}
	if len(a.pos) > 1 {
		return nil, usagef("unrecognized args: %q", a.pos[1:])
	}
	if !a.has("r") && !a.has("relation") {
		return nil, usagef("no relation id specified")
	}
	rel, terr := m.relationArg(a)
	if terr != nil {
		return nil, terr
	}
	unit := a.flags["unit"]
	if unit != "" {
		if app, err := juju.UnitApp(unit); err != nil || app != rel.RemoteApp {
			return nil, usagef("cannot specify unit %q in relation to application %q", unit, rel.RemoteApp)
		}
	}
	g := Grant{Relation: rel.ID, Unit: unit}
	for _, have := range sec.Grants {
		if have == g {
			return nil, nil
		}
	}
	sec.Grants = append(sec.Grants, g)
	return nil, nil
}

func (m *model) secretRevoke(a *args) ([]byte, *toolError) {
	sec, terr := m.managed(a)
	if terr != nil {
		return nil, terr
	}
	if len(a.pos) > 1 {
		return nil, usagef("unrecognized args: %q", a.pos[1:])
	}
	app := a.flags["app"]
	if v, ok := a.flags["application"]; ok {
		app = v
	}
	unit := a.flags["unit"]
	if a.has("r") || a.has("relation") {
		if app != "" {
			return nil, usagef("do not specify both relation and app")
		}
		rel, terr := m.relationArg(a)
		if terr != nil {
			return nil, terr
		}
		app = rel.RemoteApp
	}
	if app == "" && unit == "" {
		return nil, usagef("missing relation or application or unit")
	}
	kept := sec.Grants[:0:0]
	for _, g := range sec.Grants {
		_, num, _ := g.Relation.Parse()
		rel := m.work.relation(num)
		gone := g.Unit != "" && g.Unit == unit ||
			app != "" && rel != nil && rel.RemoteApp == app && (unit == "" || g.Unit == unit)
		if !gone {
			kept = append(kept, g)
		}
	}
	sec.Grants = kept
	return nil, nil
}

func (m *model) secretRemove(a *args) ([]byte, *toolError) {
	sec, terr := m.managed(a)
	if terr != nil {
		return nil, terr
	}
	if len(a.pos) > 1 {
		return nil, usagef("unrecognized args: %q", a.pos[1:])
	}
	if v, ok := a.flags["revision"]; ok {
		rev, err := strconv.Atoi(v)
		if err != nil || rev < 1 {
			return nil, usagef("invalid value %q for flag --revision", v)
		}
		if rev > len(sec.Revisions) || sec.Revisions[rev-1] == nil {
			return nil, failf("secret %q revision %d not found", bareID(sec.ID), rev)
		}
		sec.Revisions[rev-1] = nil
		return nil, nil
	}
	st := m.work
	for i := range st.Secrets {
		if st.Secrets[i].ID == sec.ID {
			st.Secrets = append(st.Secrets[:i:i], st.Secrets[i+1:]...)
			break
		}
	}
	return nil, nil
}

type secretMeta struct {
	Revision    int                 `json:"revision"`
	Label       string              `json:"label"`
	Owner       string              `json:"owner"`
	Description string              `json:"description,omitempty"`
	Access      []juju.SecretAccess `json:"access,omitempty"`
}

func (m *model) meta(sec *Secret) secretMeta {
	owner := "application"
	if strings.Contains(sec.Owner, "/") {
		owner = "unit"
	}
	md := secretMeta{Revision: len(sec.Revisions), Label: sec.Label, Owner: owner, Description: sec.Description}
	for _, g := range sec.Grants {
		_, num, _ := g.Relation.Parse()
		target := ""
		if g.Unit != "" {
			target = "unit-" + strings.ReplaceAll(g.Unit, "/", "-")
		} else if rel := m.work.relation(num); rel != nil {
			target = "application-" + rel.RemoteApp
		}
		md.Access = append(md.Access, juju.SecretAccess{Target: target, Scope: "relation-" + strconv.Itoa(num), Role: "view"})
	}
	return md
}

func (m *model) secretInfoGet(a *args) ([]byte, *toolError) {
	st := m.work
	label := a.flags["label"]
	var id juju.SecretID
	switch len(a.pos) {
	case 0:
	case 1:
		id = juju.NormalizeSecretID(a.pos[0])
	default:
		return nil, usagef("unrecognized args: %q", a.pos[1:])
	}
	if (id == "") == (label == "") {
		return nil, usagef("specify either a secret URI or label but not both")
	}
	for i := range st.Secrets {
		sec := &st.Secrets[i]
		if !st.owns(sec) || (id != "" && sec.ID != id) || (label != "" && sec.Label != label) {
			continue
		}
		return jsonOut(map[string]secretMeta{bareID(sec.ID): m.meta(sec)})
	}
	want := label
	if id != "" {
		want = bareID(id)
	}
	return nil, failf("secret %q not found", want)
}

func (m *model) secretIDs(a *args) ([]byte, *toolError) {
	if e := noArgs(a); e != nil {
		return nil, e
	}
	ids := []string{}
	for i := range m.work.Secrets {
		if sec := &m.work.Secrets[i]; m.work.owns(sec) {
			ids = append(ids, bareID(sec.ID))
		}
	}
	sort.Strings(ids)
	return jsonOut(ids)
}
