package model

// secret-add, secret-get, secret-set, secret-grant, secret-revoke, secret-remove,
// secret-ids, secret-info-get.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Secrets.

var secretKey = regexp.MustCompile(`^([a-z](?:-?[a-z0-9]){2,})$`)

// parseSecretContent parses key=value, key#base64=value and key#file=path (the client turns
// #file into a plain value) arguments.
func parseSecretContent(args []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return nil, &usageError{fmt.Sprintf("expected \"key=value\", got %q", a)}
		}
		name, enc, _ := strings.Cut(k, "#")
		if !secretKey.MatchString(name) {
			return nil, &usageError{fmt.Sprintf("key %q not valid", name)}
		}
		switch enc {
		case "":
		case "base64":
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return nil, fmt.Errorf("secret value for %q is not base64: %w", name, err)
			}
			v = string(b)
		default:
			return nil, fmt.Errorf("secret key %q: unknown encoding %q", name, enc)
		}
		out[name] = v
	}
	return out, nil
}

// findSecret resolves a secret id (secret:xid, secret://uuid/xid or xid) or label.
func (t *toolCall) findSecret(id, label string) (*Secret, error) {
	if id != "" {
		x := id
		x = strings.TrimPrefix(x, "secret:")
		x = strings.TrimPrefix(x, "//")
		if i := strings.LastIndex(x, "/"); i >= 0 {
			x = x[i+1:]
		}
		if sec := t.hc.view.Secrets["secret:"+x]; sec != nil {
			return sec, nil
		}
		return nil, fmt.Errorf("secret %q not found", id)
	}
	if label == "" {
		return nil, &usageError{"secret URI or label must be specified"}
	}
	if sec := t.hc.view.secretByLabel(t.hc.unit, label); sec != nil {
		return sec, nil
	}
	return nil, fmt.Errorf("secret with label %q not found", label)
}

// managedSecret finds the secret id names and checks that this unit may change it.
func (t *toolCall) managedSecret(id string) (*Secret, error) {
	sec, err := t.findSecret(id, "")
	if err != nil {
		return nil, err
	}
	if err := t.mayManage(sec); err != nil {
		return nil, err
	}
	return sec, nil
}

// mayManage reports whether this unit may change sec (owner; app secrets only by the leader).
func (t *toolCall) mayManage(sec *Secret) error {
	if !sec.ownedBy(t.hc.unit, t.hc.app) {
		return errors.New("permission denied")
	}
	if sec.OwnerApp != "" && !t.isLeaderNow() {
		return errors.New("this unit is not the leader") // runner/context ErrIsNotLeader
	}
	return nil
}

func (t *toolCall) secretAdd() error {
	label := t.fs.String("label", "", "a label")
	desc := t.fs.String("description", "", "a description")
	owner := t.fs.String("owner", "application", "application or unit")
	expire := t.fs.String("expire", "", "expiry: a duration (24h) or an RFC 3339 time")
	rotate := t.fs.String("rotate", "", "rotation policy: never, hourly, daily, weekly, monthly, quarterly, yearly")
	file := t.fs.String("file", "", "YAML file of content")
	args, err := t.parse(0, -1)
	if err != nil {
		return err
	}
	content, err := t.secretContent(args, *file != "")
	if err != nil {
		return err
	}
	if len(content) == 0 {
		return errors.New("missing secret value")
	}
	var ownerApp, ownerUnit string
	switch *owner {
	case "application":
		if !t.isLeaderNow() {
			return errors.New("this unit is not the leader") // runner/context ErrIsNotLeader
		}
		ownerApp = t.hc.app
	case "unit":
		ownerUnit = t.hc.unit
	default:
		return &usageError{fmt.Sprintf("invalid value %q for option --owner", *owner)}
	}
	if *label != "" && t.hc.view.secretByLabel(t.hc.unit, *label) != nil {
		return fmt.Errorf("secret with label %q already exists", *label)
	}
	pol, err := parseSecretPolicy(*expire, *rotate, time.Now())
	if err != nil {
		return err
	}
	id := newSecretID()
	lbl, d := *label, *desc
	if err := t.hc.do(func(s *State) error {
		s.Secrets[id] = &Secret{
			ID: id, OwnerApp: ownerApp, OwnerUnit: ownerUnit, Label: lbl, Description: d,
			Revisions:    []SecretRevision{{Revision: 1, Content: content, Expire: pol.expire}},
			Consumers:    map[string]*SecretConsumer{},
			RotatePolicy: pol.rotate, NextRotate: pol.nextRotate,
		}
		return nil
	}); err != nil {
		return err
	}
	_, err = fmt.Fprintln(t.stdout, id)
	return err
}

// secretContent parses the key=value arguments of secret-add and secret-set and, with
// --file, the YAML content the client sent on stdin.
func (t *toolCall) secretContent(args []string, file bool) (map[string]string, error) {
	content, err := parseSecretContent(args)
	if err != nil || !file {
		return content, err
	}
	var raw map[string]string
	if err := yaml.Unmarshal(t.stdin, &raw); err != nil {
		return nil, fmt.Errorf("cannot parse secret file: %w", err)
	}
	fc, err := parseSecretContent(settingsArgs(raw))
	if err != nil {
		return nil, err
	}
	for k, v := range fc {
		content[k] = v
	}
	return content, nil
}

func settingsArgs(m map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, k+"="+m[k])
	}
	return out
}

func (t *toolCall) secretGet() error {
	t.withFormat()
	label := t.fs.String("label", "", "a label")
	peek := t.fs.Bool("peek", false, "get the latest revision, keep tracking the current one")
	refresh := t.fs.Bool("refresh", false, "track the latest revision and get it")
	args, err := t.parse(0, 2)
	if err != nil {
		return err
	}
	if *peek && *refresh {
		return &usageError{"specify one of --peek or --refresh but not both"}
	}
	id, key := "", ""
	if len(args) > 0 {
		id = args[0]
	}
	if len(args) > 1 {
		key = args[1]
	}
	sec, err := t.findSecret(id, *label)
	if err != nil {
		return err
	}
	var content map[string]string
	if sec.ownedBy(t.hc.unit, t.hc.app) {
		if sec.OwnerApp != "" && !t.isLeaderNow() && !sec.grantedTo(t.hc.unit, t.hc.app) {
			// Non-leader units of the owning application may read it, as in Juju.
		}
		if id != "" && *label != "" && *label != sec.Label {
			lbl := *label
			secID := sec.ID
			if err := t.hc.do(func(s *State) error {
				if x := s.Secrets[secID]; x != nil {
					x.Label = lbl
				}
				return nil
			}); err != nil {
				return err
			}
		}
		content = sec.latest().Content
	} else {
		if !sec.grantedTo(t.hc.unit, t.hc.app) {
			return errors.New("permission denied")
		}
		c := sec.Consumers[t.hc.unit]
		tracked := 0
		if c != nil {
			tracked = c.Tracked
		}
		latest := sec.latest().Revision
		rev := tracked
		newTracked := tracked
		switch {
		case *peek:
			rev = latest
		case *refresh || tracked == 0:
			rev, newTracked = latest, latest
		}
		r, ok := sec.revision(rev)
		if !ok {
			return fmt.Errorf("secret %q revision %d not found", sec.ID, rev)
		}
		content = r.Content
		newLabel := ""
		if c != nil {
			newLabel = c.Label
		}
		if *label != "" && id != "" {
			newLabel = *label
		}
		if c == nil || newTracked != tracked || newLabel != c.Label {
			unit, secID := t.hc.unit, sec.ID
			if err := t.hc.do(func(s *State) error {
				x := s.Secrets[secID]
				if x == nil {
					return fmt.Errorf("secret %s is gone", secID)
				}
				if x.Consumers == nil {
					x.Consumers = map[string]*SecretConsumer{}
				}
				x.Consumers[unit] = &SecretConsumer{Label: newLabel, Tracked: newTracked}
				return nil
			}); err != nil {
				return err
			}
		}
	}
	if key != "" {
		name, enc, _ := strings.Cut(key, "#")
		v, ok := content[name]
		if !ok {
			return fmt.Errorf("secret %q has no key %q", sec.ID, name)
		}
		if enc == "base64" {
			v = base64.StdEncoding.EncodeToString([]byte(v))
		}
		return t.out(v)
	}
	return t.out(content)
}

func (t *toolCall) secretSet() error {
	label := t.fs.String("label", "", "a label")
	desc := t.fs.String("description", "", "a description")
	expire := t.fs.String("expire", "", "expiry: a duration (24h) or an RFC 3339 time")
	rotate := t.fs.String("rotate", "", "rotation policy: never, hourly, daily, weekly, monthly, quarterly, yearly")
	t.fs.String("owner", "", "owner")
	file := t.fs.String("file", "", "YAML file of content")
	args, err := t.parse(1, -1)
	if err != nil {
		return err
	}
	sec, err := t.managedSecret(args[0])
	if err != nil {
		return err
	}
	content, err := t.secretContent(args[1:], *file != "")
	if err != nil {
		return err
	}
	pol, err := parseSecretPolicy(*expire, *rotate, time.Now())
	if err != nil {
		return err
	}
	secID, lbl, d := sec.ID, *label, *desc
	return t.hc.do(func(s *State) error {
		x := s.Secrets[secID]
		if x == nil {
			return fmt.Errorf("secret %s is gone", secID)
		}
		if lbl != "" {
			x.Label = lbl
		}
		if d != "" {
			x.Description = d
		}
		if len(content) > 0 && fmt.Sprint(content) != fmt.Sprint(x.latest().Content) {
			x.Revisions = append(x.Revisions, SecretRevision{Revision: x.latest().Revision + 1, Content: content})
		}
		if pol.hasExpire {
			x.Revisions[len(x.Revisions)-1].Expire = pol.expire
		}
		if pol.hasRotate {
			x.RotatePolicy, x.NextRotate = pol.rotate, pol.nextRotate
		}
		return nil
	})
}

// secretPolicy is the parsed --expire and --rotate of secret-add and secret-set.
type secretPolicy struct {
	hasExpire, hasRotate bool
	expire               time.Time
	rotate               string // empty for never
	nextRotate           time.Time
}

// parseSecretPolicy parses --expire (a duration from now or an RFC 3339 time) and --rotate (a
// rotation policy), as Juju's secret-add and secret-set do.
func parseSecretPolicy(expire, rotate string, now time.Time) (secretPolicy, error) {
	var p secretPolicy
	if expire != "" {
		p.hasExpire = true
		if d, err := time.ParseDuration(expire); err == nil {
			p.expire = now.Add(d)
		} else if t, err := time.Parse(time.RFC3339, expire); err == nil {
			p.expire = t
		} else {
			return p, &usageError{fmt.Sprintf("invalid value %q for option --expire: want a duration or an RFC 3339 time", expire)}
		}
	}
	if rotate != "" {
		p.hasRotate = true
		if period, ok := rotatePeriods[rotate]; ok {
			p.rotate, p.nextRotate = rotate, now.Add(period)
		} else if rotate != "never" {
			return p, &usageError{fmt.Sprintf("invalid value %q for option --rotate: secret rotate policy %q not valid", rotate, rotate)}
		}
	}
	return p, nil
}

func (t *toolCall) secretGrant() error {
	rel := t.fs.StringP("relation", "r", "", "relation id")
	unitFlag := t.fs.String("unit", "", "grant to this unit only")
	args, err := t.parse(1, 1)
	if err != nil {
		return err
	}
	if *rel == "" {
		return &usageError{"missing relation"}
	}
	sec, err := t.managedSecret(args[0])
	if err != nil {
		return err
	}
	r, err := t.relation(*rel)
	if err != nil {
		return err
	}
	remote := r.remoteApp(t.hc.app)
	if *unitFlag != "" && !strings.HasPrefix(*unitFlag, remote+"/") {
		return fmt.Errorf("cannot grant secret to unit %q: not a unit of %q", *unitFlag, remote)
	}
	secID, id, unit := sec.ID, r.ID, *unitFlag
	return t.hc.do(func(s *State) error {
		x := s.Secrets[secID]
		if x == nil {
			return fmt.Errorf("secret %s is gone", secID)
		}
		if s.Relations[id] == nil {
			return fmt.Errorf("relation %d is gone", id)
		}
		for _, g := range x.Grants {
			if g.RelationID == id && g.App == remote && g.Unit == unit {
				return nil
			}
		}
		x.Grants = append(x.Grants, SecretGrant{RelationID: id, App: remote, Unit: unit})
		return nil
	})
}

func (t *toolCall) secretRevoke() error {
	rel := t.fs.StringP("relation", "r", "", "relation id")
	appFlag := t.fs.String("app", "", "revoke from this application")
	unitFlag := t.fs.String("unit", "", "revoke from this unit")
	args, err := t.parse(1, 1)
	if err != nil {
		return err
	}
	sec, err := t.managedSecret(args[0])
	if err != nil {
		return err
	}
	relID := -1
	if *rel != "" {
		r, err := t.relation(*rel)
		if err != nil {
			return err
		}
		relID = r.ID
	}
	secID, app, unit := sec.ID, *appFlag, *unitFlag
	return t.hc.do(func(s *State) error {
		x := s.Secrets[secID]
		if x == nil {
			return fmt.Errorf("secret %s is gone", secID)
		}
		var keep []SecretGrant
		for _, g := range x.Grants {
			match := (relID < 0 || g.RelationID == relID) && (app == "" || g.App == app) && (unit == "" || g.Unit == unit)
			if !match {
				keep = append(keep, g)
			}
		}
		x.Grants = keep
		for cu := range x.Consumers {
			capp, _, _ := strings.Cut(cu, "/")
			if !x.grantedTo(cu, capp) {
				delete(x.Consumers, cu)
			}
		}
		return nil
	})
}

func (t *toolCall) secretRemove() error {
	revision := t.fs.Int("revision", 0, "remove only this revision")
	args, err := t.parse(1, 1)
	if err != nil {
		return err
	}
	sec, err := t.managedSecret(args[0])
	if err != nil {
		return err
	}
	secID, rev := sec.ID, *revision
	if rev != 0 {
		if _, ok := sec.revision(rev); !ok {
			return fmt.Errorf("secret %q revision %d not found", sec.ID, rev)
		}
	}
	return t.hc.do(func(s *State) error {
		x := s.Secrets[secID]
		if x == nil {
			return nil
		}
		if rev == 0 || len(x.Revisions) == 1 {
			delete(s.Secrets, secID)
			return nil
		}
		var keep []SecretRevision
		for _, r := range x.Revisions {
			if r.Revision != rev {
				keep = append(keep, r)
			}
		}
		x.Revisions = keep
		return nil
	})
}

func (t *toolCall) secretIDs() error {
	t.withFormat()
	if _, err := t.parse(0, 0); err != nil {
		return err
	}
	ids := []string{}
	for _, id := range sortedKeys(t.hc.view.Secrets) {
		if t.hc.view.Secrets[id].ownedBy(t.hc.unit, t.hc.app) {
			ids = append(ids, strings.TrimPrefix(id, "secret:")) // Juju lists the ids bare
		}
	}
	return t.out(ids)
}

func (t *toolCall) secretInfoGet() error {
	t.withFormat()
	label := t.fs.String("label", "", "a label")
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	id := ""
	if len(args) == 1 {
		id = args[0]
	}
	if id == "" && *label == "" {
		return &usageError{"require either a secret URI or label"}
	}
	// Juju looks the secret up among those the unit owns, by id or by the owner's label, and
	// names what it looked for when none matches (jujuc/secret-info-get.go).
	want := *label
	if id != "" {
		want = id
		want = strings.TrimPrefix(want, "secret:")
		want = strings.TrimPrefix(want, "//")
		if i := strings.LastIndex(want, "/"); i >= 0 {
			want = want[i+1:]
		}
	}
	var sec *Secret
	for _, sid := range sortedKeys(t.hc.view.Secrets) {
		x := t.hc.view.Secrets[sid]
		if x.ownedBy(t.hc.unit, t.hc.app) && (id != "" && sid == "secret:"+want || id == "" && x.Label == want) {
			sec = x
			break
		}
	}
	if sec == nil {
		return fmt.Errorf("secret %q not found", want)
	}
	owner := "application"
	if sec.OwnerUnit != "" {
		owner = "unit"
	}
	// Juju's fields, in its order (jujuc/secret-info-get.go, metadataDisplay).
	type display struct {
		Revision    int        `json:"revision" yaml:"revision"`
		Label       string     `json:"label" yaml:"label"`
		Owner       string     `json:"owner" yaml:"owner"`
		Description string     `json:"description,omitempty" yaml:"description,omitempty"`
		Rotation    string     `json:"rotation,omitempty" yaml:"rotation,omitempty"`
		Expiry      *time.Time `json:"expiry,omitempty" yaml:"expiry,omitempty"`
		Rotates     *time.Time `json:"rotates,omitempty" yaml:"rotates,omitempty"`
	}
	info := display{Revision: sec.latest().Revision, Label: sec.Label, Owner: owner, Description: sec.Description, Rotation: "never"}
	if sec.RotatePolicy != "" {
		info.Rotation = sec.RotatePolicy
	}
	if e := sec.latest().Expire; !e.IsZero() {
		info.Expiry = &e
	}
	if !sec.NextRotate.IsZero() {
		r := sec.NextRotate
		info.Rotates = &r
	}
	return t.out(map[string]display{strings.TrimPrefix(sec.ID, "secret:"): info})
}
