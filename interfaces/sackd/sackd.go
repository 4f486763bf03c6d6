// Package sackd is the `sackd` relation interface between the slurmctld charm (the requirer,
// endpoint "sackd") and the sackd charm (the provider, endpoint "slurmctld"), whose units are
// login nodes: they run sackd, which fetches the cluster's configuration from the controllers
// (configless) and authenticates Slurm's client commands with the cluster's key (auth/slurm).
// The endpoint names and the interface name are those of the reference Slurm charms.
//
// Only the slurmctld leader writes, to its application databag; the sackd side publishes
// nothing. The controller publishes what it publishes to slurmd applications, encoded the
// same way and decoded by the same code (slurmd.ControllerBag: "version", "controllers", a JSON
// list of host:port with the primary first, "cluster_name", "auth_secret_id", the id of the
// Juju secret holding the auth key, {"key": base64, "keyid": "N"}, which the controller grants
// to the relation, and "slurm_version", the release slurmctld runs, which a login unit checks
// its own against: Slurm accepts no client newer than its controller), plus
//
//   - "conf_digest": the hex SHA-256 of the configuration files slurmctld serves to
//     configless clients (DigestFiles), absent when the controller has none yet. sackd
//     fetches those files when it starts and when slurmctld pushes them on `scontrol
//     reconfigure`, but not when slurmctld restarts with new ones: a login unit that sees a
//     new digest restarts sackd, which fetches them again.
//
// Each login unit publishes in its unit databag the short host name srun sends the
// controllers ("hostname", gethostname up to the first dot) and its ingress address
// ("address"): slurmctld reaches srun by that name, and a controller that no DNS tells about
// the login nodes resolves them from this (LoginHost); and the Slurm release its sackd runs
// ("slurm_version", absent from an older charm), before it starts sackd: sackd parses the
// configuration it fetches, so the controller serves none that release cannot read, and the
// unit waits while the controller's "conf_min_version" names a newer release.
//
// The key itself never appears in relation data. Decoding is strict: an unknown version, a
// malformed value or a secret that cannot be read gives a *DataError naming the field, never
// a panic or a partly decoded value; an empty databag is ErrNotReady.
//
// Provider and Requirer turn relation hooks into the interface's events:
//
//	ev, err := sackd.Provider{HookContext: hc}.Event(ctx)
//	switch ev := ev.(type) {
//	case sackd.SlurmctldReady:
//		configure(ev.Data.Controllers, ev.Data.AuthKey, ev.Data.ConfDigest)
//	case sackd.SlurmctldDeparted, sackd.SlurmctldDisconnected:
//		stop()
//	}
package sackd

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/etchosts"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// Databag keys: the controller's configuration digest (application databag), a login unit's
// host name and address (unit databag).
const (
	KeyConfDigest = "conf_digest"
	KeyHostname   = "hostname"
	KeyAddress    = "address"
)

// ErrNotReady reports that the controller has not published its data yet (an empty databag,
// or a secret not granted yet). It is not a fault: wait for the next hook.
var ErrNotReady = slurmd.ErrNotReady

// DataError reports relation data that cannot be decoded. Field names the databag key.
type DataError struct {
	Field string
	Msg   string
	Err   error
}

func (e *DataError) Error() string {
	msg := fmt.Sprintf("invalid %q in sackd relation data: %s", e.Field, e.Msg)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *DataError) Unwrap() error { return e.Err }

// dataError names this relation in a *slurmd.DataError from the shared decoding; other
// errors are returned as they are.
func dataError(err error) error {
	var de *slurmd.DataError
	if errors.As(err, &de) {
		return &DataError{Field: de.Field, Msg: de.Msg, Err: de.Err}
	}
	return err
}

// ControllerBag is what the slurmctld leader publishes, as it travels: the key stays in its
// secret.
type ControllerBag struct {
	// Controllers are host:port addresses of slurmctld, primary first.
	Controllers []string
	// AuthSecretID is the auth key secret, granted to the relation.
	AuthSecretID string
	// ClusterName is slurm.conf's ClusterName.
	ClusterName string
	// ConfDigest is the digest of the configuration slurmctld serves (DigestFiles); "" when
	// it has none yet.
	ConfDigest string
	// SlurmVersion is the Slurm release slurmctld runs; zero when the controller does not say.
	SlurmVersion slurm.Version
	// ConfMinVersion is the oldest Slurm release that reads the configuration slurmctld
	// serves (slurmd.KeyConfMinVersion); zero when the controller names none.
	ConfMinVersion slurm.Version
}

// ControllerData is ControllerBag with the auth key read from its secret.
type ControllerData struct {
	ControllerBag
	// AuthKey is the cluster's slurm.key.
	AuthKey []byte
	// AuthKeyID is the key's revision as the controller numbers it.
	AuthKeyID string
}

// shared is the part of b encoded as the slurmd relation's controller data.
func (b ControllerBag) shared() slurmd.ControllerBag {
	return slurmd.ControllerBag{Controllers: b.Controllers, AuthSecretID: b.AuthSecretID, ClusterName: b.ClusterName, SlurmVersion: b.SlurmVersion, ConfMinVersion: b.ConfMinVersion}
}

// Encode renders the databag.
func (b ControllerBag) Encode() (map[string]string, error) {
	bag, err := b.shared().Encode()
	if err != nil {
		return nil, dataError(err)
	}
	if b.ConfDigest != "" {
		if err := checkDigest(b.ConfDigest); err != nil {
			return nil, err
		}
		bag[KeyConfDigest] = b.ConfDigest
	}
	return bag, nil
}

// DecodeControllerBag reads the slurmctld application databag. An empty bag is ErrNotReady.
func DecodeControllerBag(bag map[string]string) (ControllerBag, error) {
	cb, err := slurmd.DecodeControllerBag(bag)
	if err != nil {
		return ControllerBag{}, dataError(err)
	}
	if len(cb.GresTypes) > 0 {
		return ControllerBag{}, &DataError{Field: slurmd.KeyGresTypes, Msg: "not part of the sackd relation"}
	}
	digest, ok := bag[KeyConfDigest]
	if ok {
		if err := checkDigest(digest); err != nil {
			return ControllerBag{}, err
		}
	}
	return ControllerBag{Controllers: cb.Controllers, AuthSecretID: cb.AuthSecretID, ClusterName: cb.ClusterName, ConfDigest: digest, SlurmVersion: cb.SlurmVersion, ConfMinVersion: cb.ConfMinVersion}, nil
}

// checkDigest accepts a hex SHA-256, as DigestFiles renders it.
func checkDigest(d string) error {
	b, err := hex.DecodeString(d)
	if err != nil || len(b) != sha256.Size || strings.ToLower(d) != d {
		return &DataError{Field: KeyConfDigest, Msg: fmt.Sprintf("not a hex SHA-256: %q", short(d))}
	}
	return nil
}

// DigestFiles is the conf_digest of the configuration files files (base name → content): the
// hex SHA-256 over each name and content, length-prefixed, in name order. Equal sets of
// files give equal digests; any change of a name or a byte gives another.
func DigestFiles(files map[string][]byte) string {
	h := sha256.New()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(h, "%d:%s%d:", len(n), n, len(files[n]))
		h.Write(files[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// LoginHost is what a login unit publishes in its unit databag.
type LoginHost struct {
	// Hostname is the unit's short host name, as srun sends it to the controllers.
	Hostname string
	// Address is the unit's ingress address on the relation.
	Address netip.Addr
	// SlurmVersion is the Slurm release the unit's sackd runs; zero: not written (an older
	// charm's unit, or a local build with no release).
	SlurmVersion slurm.Version
}

// check validates h: a host name with no dot (srun sends the name up to the first dot) and
// an address.
func (h LoginHost) check() error {
	if err := etchosts.CheckName(h.Hostname); err != nil || strings.Contains(h.Hostname, ".") {
		return &DataError{Field: KeyHostname, Msg: fmt.Sprintf("not a short host name: %q", short(h.Hostname))}
	}
	if !h.Address.IsValid() || h.Address.Zone() != "" {
		return &DataError{Field: KeyAddress, Msg: fmt.Sprintf("not an IP address without zone: %q", h.Address)}
	}
	return nil
}

// Encode renders the unit databag.
func (h LoginHost) Encode() (map[string]string, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	bag := map[string]string{KeyHostname: h.Hostname, KeyAddress: h.Address.String()}
	if !h.SlurmVersion.IsZero() {
		bag[slurmd.KeySlurmVersion] = h.SlurmVersion.String()
	}
	return bag, nil
}

// DecodeLoginHost reads a login unit's databag. A bag with neither key is ErrNotReady (the
// unit has not published; Juju's own keys, such as ingress-address, may be there).
func DecodeLoginHost(bag map[string]string) (LoginHost, error) {
	name, okName := bag[KeyHostname]
	addr, okAddr := bag[KeyAddress]
	if !okName && !okAddr {
		return LoginHost{}, ErrNotReady
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return LoginHost{}, &DataError{Field: KeyAddress, Msg: fmt.Sprintf("not an IP address: %q", short(addr))}
	}
	v, err := slurmd.DecodeVersion(bag, slurmd.KeySlurmVersion)
	if err != nil {
		return LoginHost{}, dataError(err)
	}
	h := LoginHost{Hostname: name, Address: a, SlurmVersion: v}
	if err := h.check(); err != nil {
		return LoginHost{}, err
	}
	return h, nil
}

// short is s cut to 80 bytes, for messages.
func short(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
