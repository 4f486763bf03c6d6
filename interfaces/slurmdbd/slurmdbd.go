// Package slurmdbd is the `slurmdbd` relation interface between the slurmctld charm (the
// requirer, endpoint "slurmdbd") and the slurmdbd charm (the provider, endpoint "slurmctld"),
// with the reference charms' key names where they carry the same thing (auth_secret_id,
// hostname).
//
// Each side writes only its application databag, and only its leader does:
//
//   - the slurmctld leader publishes ControllerData: the id of the cluster's auth key secret
//     ("auth_secret_id", the secret of the slurmd relation, granted to this relation too;
//     content {"key", "keyid"}), the cluster name ("cluster_name") and the controller's Slurm
//     version ("slurm_version"), which slurmdbd needs to pick the controller's authentication
//     and to check that it is not older than the controller;
//   - the slurmdbd leader publishes DbdData once slurmdbd runs against its database: the
//     address slurmctld reaches it at ("hostname": AccountingStorageHost), its port ("port")
//     and its Slurm version ("slurm_version").
//
// Both bags carry "version" (Version). Decoding is strict: an unknown version, a malformed
// value, a missing field or an auth secret that cannot be read gives a *DataError naming the
// field; an empty databag is ErrNotReady. [CheckVersions] is the one rule for which slurmdbd
// may serve which controller.
package slurmdbd

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/databag"
	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// Version is the databag encoding this package writes and the only one it reads.
const Version = "1"

// Databag keys.
const (
	KeyVersion      = "version"
	KeyAuthSecretID = "auth_secret_id"
	KeyClusterName  = "cluster_name"
	KeySlurmVersion = "slurm_version"
	KeyHostname     = "hostname"
	KeyPort         = "port"
)

// DefaultPort is slurmdbd's default DbdPort.
const DefaultPort = 6819

// ErrNotReady reports that the other side has not published yet.
var ErrNotReady = errors.New("relation data not ready")

// DataError reports relation data that cannot be decoded. Field names the databag key.
// It is [databag.Error], with relationName as its Relation.
type DataError = databag.Error

// relationName names this relation in its DataErrors.
const relationName = "slurmdbd"

// ControllerBag is what the slurmctld leader publishes (the key stays in its secret).
type ControllerBag struct {
	AuthSecretID string
	ClusterName  string
	SlurmVersion slurm.Version
}

// ControllerData is ControllerBag with the auth key resolved from its secret.
type ControllerData struct {
	ControllerBag
	AuthKey   []byte
	AuthKeyID string
}

// clusterNameRE is a cluster name's form; its length, at most maxClusterName, is checked
// apart (a counted repetition {0,39} compiles into 39 copies of its class at every hook's
// start).
var clusterNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

const maxClusterName = 40

// Encode renders the controller's databag.
func (b ControllerBag) Encode() (map[string]string, error) {
	bag := map[string]string{
		KeyVersion:      Version,
		KeyAuthSecretID: b.AuthSecretID,
		KeyClusterName:  b.ClusterName,
		KeySlurmVersion: b.SlurmVersion.String(),
	}
	if _, err := DecodeControllerBag(bag); err != nil {
		return nil, err
	}
	return bag, nil
}

// DecodeControllerBag reads the slurmctld application databag.
func DecodeControllerBag(bag map[string]string) (ControllerBag, error) {
	if len(bag) == 0 {
		return ControllerBag{}, ErrNotReady
	}
	if err := checkVersion(bag); err != nil {
		return ControllerBag{}, err
	}
	id := bag[KeyAuthSecretID]
	if id == "" {
		return ControllerBag{}, &DataError{Relation: relationName, Field: KeyAuthSecretID, Msg: "missing"}
	}
	if !strings.HasPrefix(id, "secret:") || strings.ContainsAny(id, " \t\r\n") || len(id) > 256 {
		return ControllerBag{}, &DataError{Relation: relationName, Field: KeyAuthSecretID, Msg: fmt.Sprintf("not a secret id: %q", truncate(id))}
	}
	name := bag[KeyClusterName]
	if len(name) > maxClusterName || !clusterNameRE.MatchString(name) {
		return ControllerBag{}, &DataError{Relation: relationName, Field: KeyClusterName, Msg: fmt.Sprintf("%q is not a cluster name", truncate(name))}
	}
	v, err := decodeSlurmVersion(bag)
	if err != nil {
		return ControllerBag{}, err
	}
	return ControllerBag{AuthSecretID: id, ClusterName: name, SlurmVersion: v}, nil
}

// DecodeAuthSecret reads the auth key secret's content (the slurmd relation's secret).
func DecodeAuthSecret(content map[string]string) (key []byte, keyID string, err error) {
	key, keyID, err = slurmd.DecodeAuthSecret(content)
	if err != nil {
		return nil, "", databag.Renamed(err, relationName)
	}
	return key, keyID, nil
}

// DbdData is what the slurmdbd leader publishes.
type DbdData struct {
	// Host is the address (or name) slurmctld reaches slurmdbd at: AccountingStorageHost.
	Host string
	// Port is slurmdbd's DbdPort: AccountingStoragePort.
	Port int
	// SlurmVersion is slurmdbd's Slurm release.
	SlurmVersion slurm.Version
}

// hostRE accepts host names as slurm.conf takes them unquoted, of at most maxHostLen bytes
// (checked apart: a counted repetition {0,252} compiles into 252 copies of its class at every
// hook's start).
var hostRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)

const maxHostLen = 254

// Encode renders the slurmdbd databag.
func (d DbdData) Encode() (map[string]string, error) {
	bag := map[string]string{
		KeyVersion:      Version,
		KeyHostname:     d.Host,
		KeyPort:         strconv.Itoa(d.Port),
		KeySlurmVersion: d.SlurmVersion.String(),
	}
	if _, err := DecodeDbdData(bag); err != nil {
		return nil, err
	}
	return bag, nil
}

// DecodeDbdData reads the slurmdbd application databag.
func DecodeDbdData(bag map[string]string) (DbdData, error) {
	if len(bag) == 0 {
		return DbdData{}, ErrNotReady
	}
	if err := checkVersion(bag); err != nil {
		return DbdData{}, err
	}
	host := bag[KeyHostname]
	if host == "" {
		return DbdData{}, &DataError{Relation: relationName, Field: KeyHostname, Msg: "missing"}
	}
	if _, err := netip.ParseAddr(host); err != nil && (len(host) > maxHostLen || !hostRE.MatchString(host)) {
		return DbdData{}, &DataError{Relation: relationName, Field: KeyHostname, Msg: fmt.Sprintf("%q is not an address or host name", truncate(host))}
	}
	raw := bag[KeyPort]
	port, err := strconv.Atoi(raw)
	if err != nil || port <= 0 || port > 65535 {
		return DbdData{}, &DataError{Relation: relationName, Field: KeyPort, Msg: fmt.Sprintf("%q is not a port", truncate(raw))}
	}
	v, err := decodeSlurmVersion(bag)
	if err != nil {
		return DbdData{}, err
	}
	return DbdData{Host: host, Port: port, SlurmVersion: v}, nil
}

func decodeSlurmVersion(bag map[string]string) (slurm.Version, error) {
	raw := bag[KeySlurmVersion]
	if raw == "" {
		return slurm.Version{}, &DataError{Relation: relationName, Field: KeySlurmVersion, Msg: "missing"}
	}
	if strings.ContainsAny(raw, " \t\r\n") || len(raw) > 32 {
		return slurm.Version{}, &DataError{Relation: relationName, Field: KeySlurmVersion, Msg: fmt.Sprintf("not a Slurm version: %q", truncate(raw))}
	}
	v, err := slurm.ParseVersion(raw)
	if err != nil {
		return slurm.Version{}, &DataError{Relation: relationName, Field: KeySlurmVersion, Msg: "not a Slurm version", Err: err}
	}
	return v, nil
}

func checkVersion(bag map[string]string) error {
	v, ok := bag[KeyVersion]
	if !ok {
		return &DataError{Relation: relationName, Field: KeyVersion, Msg: "missing"}
	}
	if v != Version {
		return &DataError{Relation: relationName, Field: KeyVersion, Msg: fmt.Sprintf("unsupported version %q (this charm speaks %q)", truncate(v), Version)}
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// VersionError is a slurmdbd that cannot serve a controller.
type VersionError struct {
	Dbd, Controller slurm.Version
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("slurmdbd %s is older than the controller's Slurm %s: slurmdbd must be the controller's release or newer", e.Dbd, e.Controller)
}

// CheckVersions is Slurm's rule for which slurmdbd serves which controller: slurmdbd must run
// the controller's release (major.minor) or a newer one (its micro release does not matter).
func CheckVersions(dbd, controller slurm.Version) error {
	if !dbd.AtLeast(controller.Major, controller.Minor) {
		return &VersionError{Dbd: dbd, Controller: controller}
	}
	return nil
}
