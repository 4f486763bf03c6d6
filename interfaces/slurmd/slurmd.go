// Package slurmd is the `slurmd` relation interface between the slurmctld charm (the requirer,
// endpoint "slurmd") and the slurmd charm (the provider, endpoint "slurmctld").
//
// Each side writes only its application databag, and only its leader does:
//
//   - the slurmd leader publishes ComputeData: the NodeSet and PartitionName lines of its
//     application (keys "nodeset" and "partition") and the generic resource names its
//     generic-resources option declares ("gres_types", a JSON list; absent when none);
//   - the slurmctld leader publishes ControllerData: the controllers ("controllers", a JSON list
//     of host:port, primary first), the cluster name ("cluster_name"), the id of a Juju secret
//     it owns and grants to the relation ("auth_secret_id"), whose content is the auth key
//     ({"key": base64, "keyid": "N"}), and the generic resource names the running slurmctld
//     manages ("gres_types", a JSON list: its GresTypes; absent from a controller that manages
//     none), and the Slurm version slurmctld runs ("slurm_version", "26.05.5"; absent from a
//     controller that does not say), which a slurmd unit checks its own against before it
//     starts (slurm.CheckNodeVersion). The key itself never appears in relation data.
//
// No node's own resources travel in the relation: a node's Gres= is in its slurmd --conf and
// its device files in its own gres.conf. gres_types are application-level names only.
//
// Both bags carry "version" (Version). Decoding is strict: an unknown version, a malformed
// value, a missing field or a secret that cannot be read gives a *DataError naming the field,
// never a panic and never a partly decoded value. An empty databag is not an error but
// ErrNotReady: the other side has not published yet.
//
// Provider and Requirer turn relation hooks into the interface's events, so that a charm
// switches on typed events rather than on hook names:
//
//	ev, err := slurmd.Provider{HookContext: hc}.Event(ctx)
//	switch ev := ev.(type) {
//	case slurmd.SlurmctldReady:
//		configure(ev.Data.Controllers, ev.Data.AuthKey)
//	case slurmd.SlurmctldDisconnected:
//		stop()
//	}
package slurmd

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/databag"
	"github.com/charmed-slurm/operators/libs/gres"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// Version is the databag encoding this package writes and the only one it reads.
const Version = "1"

// Databag keys.
const (
	KeyVersion      = "version"
	KeyControllers  = "controllers"
	KeyAuthSecretID = "auth_secret_id"
	KeyClusterName  = "cluster_name"
	KeyNodeSet      = "nodeset"
	KeyPartition    = "partition"
	KeyGresTypes    = "gres_types"
	KeySlurmVersion = "slurm_version"
	// KeyConfMinVersion (controller bag, optional) is the oldest Slurm release whose parser
	// reads the configuration slurmctld serves to configless daemons: "25.11.0" while
	// slurm.conf holds the OpenMetrics keys, absent when no release the version rule
	// (slurm.CheckNodeVersion) admits is excluded.
	KeyConfMinVersion = "conf_min_version"
)

// Secret content keys of the auth key secret.
const (
	SecretKey   = "key"
	SecretKeyID = "keyid"
)

// ErrNotReady reports that the other side has not published its data yet (an empty databag,
// or a controller secret not granted yet). It is not a fault: wait for the next hook.
var ErrNotReady = errors.New("relation data not ready")

// DataError reports relation data that cannot be decoded. Field names the databag key.
// It is [databag.Error], with relationName as its Relation.
type DataError = databag.Error

// relationName names this relation in its DataErrors.
const relationName = "slurmd"

// ControllerData is what the slurmctld leader publishes, with the auth key resolved from its
// secret.
type ControllerData struct {
	// AuthKey is the raw shared key (the munge key on Slurm < 23.11, slurm.key from 23.11).
	AuthKey []byte
	// AuthKeyID is the key's revision as the controller numbers it.
	AuthKeyID string
	// Controllers are host:port addresses of slurmctld, primary first.
	Controllers []string
	// ClusterName is slurm.conf's ClusterName.
	ClusterName string
	// GresTypes are the generic resource names the running slurmctld manages (its
	// GresTypes); a node must not start with a resource of another name.
	GresTypes []string
	// AuthSecretID is the secret the key was read from (the databag's auth_secret_id).
	AuthSecretID string
	// SlurmVersion is the Slurm release slurmctld runs; zero when the controller does not say.
	SlurmVersion slurm.Version
	// ConfMinVersion is the oldest Slurm release that reads the configuration slurmctld
	// serves (conf_min_version); zero when the controller names none.
	ConfMinVersion slurm.Version
}

// Bag is d as it travels in the databag (the key stays in its secret).
func (d ControllerData) Bag() ControllerBag {
	return ControllerBag{Controllers: d.Controllers, AuthSecretID: d.AuthSecretID, ClusterName: d.ClusterName, GresTypes: d.GresTypes, SlurmVersion: d.SlurmVersion, ConfMinVersion: d.ConfMinVersion}
}

// ControllerBag is ControllerData as it travels in the databag: the key stays in the secret.
type ControllerBag struct {
	Controllers  []string
	AuthSecretID string
	ClusterName  string
	// GresTypes: see ControllerData; nil or empty is not written.
	GresTypes []string
	// SlurmVersion: see ControllerData; the zero Version is not written.
	SlurmVersion slurm.Version
	// ConfMinVersion: see ControllerData; the zero Version is not written.
	ConfMinVersion slurm.Version
}

// Encode renders the databag.
func (b ControllerBag) Encode() (map[string]string, error) {
	if err := checkControllers(b.Controllers); err != nil {
		return nil, err
	}
	if b.AuthSecretID == "" {
		return nil, &DataError{Relation: relationName, Field: KeyAuthSecretID, Msg: "empty"}
	}
	ctl, err := json.Marshal(b.Controllers)
	if err != nil {
		return nil, err
	}
	bag := map[string]string{
		KeyVersion:      Version,
		KeyControllers:  string(ctl),
		KeyAuthSecretID: b.AuthSecretID,
		KeyClusterName:  b.ClusterName,
	}
	if err := encodeGresTypes(bag, b.GresTypes); err != nil {
		return nil, err
	}
	encodeVersion(bag, KeySlurmVersion, b.SlurmVersion)
	encodeVersion(bag, KeyConfMinVersion, b.ConfMinVersion)
	return bag, nil
}

// encodeVersion writes v under key, unless v is zero.
func encodeVersion(bag map[string]string, key string, v slurm.Version) {
	if !v.IsZero() {
		bag[key] = v.String()
	}
}

// DecodeVersion reads the Slurm version under key (slurm_version, conf_min_version): zero
// when absent; a bare version as Version.String writes it ("26.05.5"), anything else is a
// *DataError naming key.
func DecodeVersion(bag map[string]string, key string) (slurm.Version, error) {
	raw, ok := bag[key]
	if !ok {
		return slurm.Version{}, nil
	}
	v, err := slurm.ParseVersion(raw)
	if err != nil || strings.ContainsAny(raw, " \t\n") || v.String() != raw {
		return slurm.Version{}, &DataError{Relation: relationName, Field: key, Msg: fmt.Sprintf("not a Slurm version such as 26.05.5: %q", short(raw))}
	}
	return v, nil
}

// CheckGresTypes checks a list of generic resource names as gres_types carries them: each a
// valid name ([gres.CheckName]), none twice.
func CheckGresTypes(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if err := gres.CheckName(n); err != nil {
			return &DataError{Relation: relationName, Field: KeyGresTypes, Msg: err.Error()}
		}
		if seen[n] {
			return &DataError{Relation: relationName, Field: KeyGresTypes, Msg: fmt.Sprintf("%q listed twice", n)}
		}
		seen[n] = true
	}
	return nil
}

// encodeGresTypes writes names into bag, unless there are none.
func encodeGresTypes(bag map[string]string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if err := CheckGresTypes(names); err != nil {
		return err
	}
	data, err := json.Marshal(names)
	if err != nil {
		return err
	}
	bag[KeyGresTypes] = string(data)
	return nil
}

// decodeGresTypes reads gres_types from bag: nil when absent (a charm that manages or
// declares none, or predates the field).
func decodeGresTypes(bag map[string]string) ([]string, error) {
	raw, ok := bag[KeyGresTypes]
	if !ok {
		return nil, nil
	}
	var names []string
	if err := json.Unmarshal([]byte(raw), &names); err != nil {
		return nil, &DataError{Relation: relationName, Field: KeyGresTypes, Msg: "not a JSON list of strings", Err: err}
	}
	if len(names) == 0 {
		return nil, &DataError{Relation: relationName, Field: KeyGresTypes, Msg: "empty list (leave the key out)"}
	}
	if err := CheckGresTypes(names); err != nil {
		return nil, err
	}
	return names, nil
}

// DecodeControllerBag reads the slurmctld application databag. An empty bag is ErrNotReady.
func DecodeControllerBag(bag map[string]string) (ControllerBag, error) {
	if len(bag) == 0 {
		return ControllerBag{}, ErrNotReady
	}
	if err := checkVersion(bag); err != nil {
		return ControllerBag{}, err
	}
	raw, ok := bag[KeyControllers]
	if !ok || raw == "" {
		return ControllerBag{}, &DataError{Relation: relationName, Field: KeyControllers, Msg: "missing"}
	}
	var ctl []string
	if err := json.Unmarshal([]byte(raw), &ctl); err != nil {
		return ControllerBag{}, &DataError{Relation: relationName, Field: KeyControllers, Msg: "not a JSON list of strings", Err: err}
	}
	if err := checkControllers(ctl); err != nil {
		return ControllerBag{}, err
	}
	id := bag[KeyAuthSecretID]
	if id == "" {
		return ControllerBag{}, &DataError{Relation: relationName, Field: KeyAuthSecretID, Msg: "missing"}
	}
	if strings.ContainsAny(id, " \t\r\n") {
		return ControllerBag{}, &DataError{Relation: relationName, Field: KeyAuthSecretID, Msg: fmt.Sprintf("not a secret id: %q", id)}
	}
	gt, err := decodeGresTypes(bag)
	if err != nil {
		return ControllerBag{}, err
	}
	sv, err := DecodeVersion(bag, KeySlurmVersion)
	if err != nil {
		return ControllerBag{}, err
	}
	cmv, err := DecodeVersion(bag, KeyConfMinVersion)
	if err != nil {
		return ControllerBag{}, err
	}
	return ControllerBag{Controllers: ctl, AuthSecretID: id, ClusterName: bag[KeyClusterName], GresTypes: gt, SlurmVersion: sv, ConfMinVersion: cmv}, nil
}

// short is s cut to 40 characters, for messages.
func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// DecodeAuthSecret reads the auth key secret's content.
func DecodeAuthSecret(content map[string]string) (key []byte, keyID string, err error) {
	enc, ok := content[SecretKey]
	if !ok || enc == "" {
		return nil, "", &DataError{Relation: relationName, Field: KeyAuthSecretID, Msg: "secret has no \"key\""}
	}
	key, err = base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, "", &DataError{Relation: relationName, Field: KeyAuthSecretID, Msg: "secret \"key\" is not base64", Err: err}
	}
	if len(key) < 32 {
		return nil, "", &DataError{Relation: relationName, Field: KeyAuthSecretID, Msg: fmt.Sprintf("secret \"key\" is %d bytes, want at least 32", len(key))}
	}
	keyID = content[SecretKeyID]
	if keyID == "" {
		return nil, "", &DataError{Relation: relationName, Field: KeyAuthSecretID, Msg: "secret has no \"keyid\""}
	}
	return key, keyID, nil
}

// EncodeAuthSecret renders the auth key secret's content.
func EncodeAuthSecret(key []byte, keyID string) map[string]string {
	return map[string]string{SecretKey: base64.StdEncoding.EncodeToString(key), SecretKeyID: keyID}
}

func checkControllers(ctl []string) error {
	if len(ctl) == 0 {
		return &DataError{Relation: relationName, Field: KeyControllers, Msg: "empty list"}
	}
	for _, c := range ctl {
		host, port, err := net.SplitHostPort(c)
		if err != nil || host == "" {
			return &DataError{Relation: relationName, Field: KeyControllers, Msg: fmt.Sprintf("%q is not host:port", c)}
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return &DataError{Relation: relationName, Field: KeyControllers, Msg: fmt.Sprintf("%q has an invalid port", c)}
		}
	}
	return nil
}

func checkVersion(bag map[string]string) error {
	v, ok := bag[KeyVersion]
	if !ok {
		return &DataError{Relation: relationName, Field: KeyVersion, Msg: "missing"}
	}
	if v != Version {
		return &DataError{Relation: relationName, Field: KeyVersion, Msg: fmt.Sprintf("unsupported version %q (this charm speaks %q)", v, Version)}
	}
	return nil
}

// ComputeData is what the slurmd leader publishes: its application's NodeSet and partition,
// and the generic resource names its units may have besides detected GPUs.
type ComputeData struct {
	NodeSet   slurmconf.NodeSet
	Partition slurmconf.Partition
	// GresTypes are the names the application's generic-resources option declares (validated
	// with CheckGresTypes by Encode's callers; nil for none). The controller adds them to
	// slurm.conf's GresTypes.
	GresTypes []string
	// SlurmVersion is the Slurm release the leader's slurmd runs ("slurm_version"; zero: not
	// written). A charm that writes it also has every unit publish its own (UnitData); the
	// controller takes a bag without it for an older charm's, whose units say nothing.
	SlurmVersion slurm.Version
}

// NewComputeData builds the ComputeData of application app with the extra partition parameters
// of the partition-config option (already parsed). It refuses the parameters the charms manage
// (PartitionName, Nodes, State, Default) and validates the rest as Slurm partition keys with
// values of the right type ([slurmconf.ValidatePartitionValues]), with Slurm 22.05's key set.
func NewComputeData(app string, extra slurmconf.Params) (ComputeData, error) {
	return NewComputeDataFor(slurmconf.KeysOf(22, 5), app, extra)
}

// NewComputeDataFor is [NewComputeData] with the key set of the running Slurm release
// ([slurmconf.KeysOf]).
func NewComputeDataFor(keys *slurmconf.Keys, app string, extra slurmconf.Params) (ComputeData, error) {
	if app == "" {
		return ComputeData{}, errors.New("empty application name")
	}
	for _, k := range []string{"PartitionName", "Nodes"} {
		if extra.Has(k) {
			return ComputeData{}, &slurmconf.ParseError{Key: k, Msg: fmt.Sprintf("%s is managed by the charm and cannot be set", k)}
		}
	}
	if extra.Has("State") {
		return ComputeData{}, &slurmconf.ParseError{Key: "State", Msg: "State is managed by the charms (slurmctld's drain and resume actions) and cannot be set"}
	}
	if extra.Has("Default") {
		return ComputeData{}, &slurmconf.ParseError{Key: "Default", Msg: "Default is managed by slurmctld's default-partition option and cannot be set"}
	}
	if err := keys.ValidatePartitionParams(extra); err != nil {
		return ComputeData{}, err
	}
	if err := keys.ValidatePartitionValues(extra); err != nil {
		return ComputeData{}, err
	}
	p := slurmconf.Partition{Name: app, Params: slurmconf.Params{{Key: "Nodes", Value: app}}}
	for _, kv := range extra {
		p.Params.Set(kv.Key, kv.Value)
	}
	return ComputeData{
		NodeSet:   slurmconf.NodeSet{Name: app, Params: slurmconf.Params{{Key: "Feature", Value: app}}},
		Partition: p,
	}, nil
}

// WithGresTypes returns d declaring the generic resource names names (CheckGresTypes), sorted;
// none gives nil.
func (d ComputeData) WithGresTypes(names []string) (ComputeData, error) {
	if err := CheckGresTypes(names); err != nil {
		return ComputeData{}, err
	}
	d.GresTypes = nil
	if len(names) > 0 {
		d.GresTypes = slices.Sorted(slices.Values(names))
	}
	return d, nil
}

// Encode renders the databag. GresTypes must pass CheckGresTypes (names from
// gres.ParseDeclaration do); invalid names are left out rather than published.
func (d ComputeData) Encode() map[string]string {
	bag := map[string]string{
		KeyVersion:   Version,
		KeyNodeSet:   d.NodeSet.String(),
		KeyPartition: d.Partition.String(),
	}
	_ = encodeGresTypes(bag, d.GresTypes)
	encodeVersion(bag, KeySlurmVersion, d.SlurmVersion)
	return bag
}

// DecodeComputeData reads the slurmd application databag of application app. Both lines must
// name app: a slurmd application cannot define another application's partition. The partition's
// values are checked as NewComputeData checks them: the controller does not trust its input.
// The keys are Slurm 22.05's.
func DecodeComputeData(app string, bag map[string]string) (ComputeData, error) {
	return DecodeComputeDataFor(slurmconf.KeysOf(22, 5), app, bag)
}

// DecodeComputeDataFor is [DecodeComputeData] with the key set of the controller's Slurm
// release ([slurmconf.KeysOf]).
func DecodeComputeDataFor(keys *slurmconf.Keys, app string, bag map[string]string) (ComputeData, error) {
	if len(bag) == 0 {
		return ComputeData{}, ErrNotReady
	}
	if err := checkVersion(bag); err != nil {
		return ComputeData{}, err
	}
	nsLine, ok := bag[KeyNodeSet]
	if !ok || nsLine == "" {
		return ComputeData{}, &DataError{Relation: relationName, Field: KeyNodeSet, Msg: "missing"}
	}
	ns, err := slurmconf.ParseNodeSet(nsLine)
	if err != nil {
		return ComputeData{}, &DataError{Relation: relationName, Field: KeyNodeSet, Msg: "invalid NodeSet line", Err: err}
	}
	pLine, ok := bag[KeyPartition]
	if !ok || pLine == "" {
		return ComputeData{}, &DataError{Relation: relationName, Field: KeyPartition, Msg: "missing"}
	}
	p, err := keys.ParsePartition(pLine)
	if err != nil {
		return ComputeData{}, &DataError{Relation: relationName, Field: KeyPartition, Msg: "invalid PartitionName line", Err: err}
	}
	if ns.Name != app {
		return ComputeData{}, &DataError{Relation: relationName, Field: KeyNodeSet, Msg: fmt.Sprintf("NodeSet %q is not named after application %q", ns.Name, app)}
	}
	if p.Name != app {
		return ComputeData{}, &DataError{Relation: relationName, Field: KeyPartition, Msg: fmt.Sprintf("partition %q is not named after application %q", p.Name, app)}
	}
	if nodes, _ := p.Params.Get("Nodes"); nodes != app {
		return ComputeData{}, &DataError{Relation: relationName, Field: KeyPartition, Msg: fmt.Sprintf("partition Nodes=%q, want the application's NodeSet %q", nodes, app)}
	}
	extra := p.Params.Clone()
	extra.Delete("Nodes")
	extra.Delete("Default")
	if err := keys.ValidatePartitionValues(extra); err != nil {
		return ComputeData{}, &DataError{Relation: relationName, Field: KeyPartition, Msg: "invalid partition value", Err: err}
	}
	gt, err := decodeGresTypes(bag)
	if err != nil {
		return ComputeData{}, err
	}
	sv, err := DecodeVersion(bag, KeySlurmVersion)
	if err != nil {
		return ComputeData{}, err
	}
	return ComputeData{NodeSet: ns, Partition: p, GresTypes: gt, SlurmVersion: sv}, nil
}

// UnitData is what each slurmd unit publishes in its unit databag: the Slurm release its
// slurmd runs ("slurm_version"), which the controller needs before it serves a configuration
// that release cannot read (conf_min_version). A unit publishes it before it starts slurmd.
type UnitData struct {
	SlurmVersion slurm.Version
}

// Encode renders the unit databag; a zero version is an error (nothing to publish).
func (u UnitData) Encode() (map[string]string, error) {
	if u.SlurmVersion.IsZero() {
		return nil, &DataError{Relation: relationName, Field: KeySlurmVersion, Msg: "no Slurm version"}
	}
	return map[string]string{KeySlurmVersion: u.SlurmVersion.String()}, nil
}

// DecodeUnitData reads a slurmd unit's databag. A bag without slurm_version is ErrNotReady
// (the unit has not published yet, or its charm publishes nothing; Juju's own keys, such as
// ingress-address, may be there).
func DecodeUnitData(bag map[string]string) (UnitData, error) {
	if _, ok := bag[KeySlurmVersion]; !ok {
		return UnitData{}, ErrNotReady
	}
	v, err := DecodeVersion(bag, KeySlurmVersion)
	if err != nil {
		return UnitData{}, err
	}
	return UnitData{SlurmVersion: v}, nil
}

// NodeName is the Slurm node name of a unit: slurmd/3 → slurmd-3.
func NodeName(unit string) string {
	return strings.ReplaceAll(unit, "/", "-")
}

// RemovalReason is the drain reason of a departing unit's node, set by whichever charm drains
// it first (the slurmd unit as it leaves, or the controller's leader): a new leader finds
// the nodes of departed units by it.
func RemovalReason(unit string) string { return "unit " + unit + " removed" }

// NodeApp is the application whose unit a node named by NodeName belongs to:
// slurmd-gpu-12 → slurmd-gpu. ok is false for a name NodeName cannot have made (no "-N" suffix),
// such as a node an administrator added by hand: such nodes belong to no application.
func NodeApp(node string) (app string, ok bool) {
	i := strings.LastIndexByte(node, '-')
	if i <= 0 || i == len(node)-1 {
		return "", false
	}
	for _, r := range node[i+1:] {
		if r < '0' || r > '9' {
			return "", false
		}
	}
	return node[:i], true
}
