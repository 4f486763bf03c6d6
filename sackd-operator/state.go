package main

import (
	"slices"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
)

// State is what the charm remembers between hooks on this unit, saved by the kit's lifecycle
// (Charm.lifecycle).
type State struct {
	// Release is what install (and upgrade-charm) found of this machine's Slurm; nil before.
	Release *Release `json:"release,omitempty"`
	// Applied is what sackd was last started with; nil when it is not running for a
	// controller (never started, or stopped when the unit left).
	Applied *Applied `json:"applied,omitempty"`
	// Host is what this unit last published as its host name and address, and where; nil
	// before and after the relation.
	Host *PublishedHost `json:"host,omitempty"`
	// VersionRefused says why the controller's Slurm does not accept this machine's sackd
	// (slurm.CheckLoginVersion): sackd was not (re)started for it.
	VersionRefused string `json:"version-refused,omitempty"`
	// ConfWaiting says why this machine's sackd waits for the controller's configuration
	// (slurm.CheckConfVersion against conf_min_version): sackd was not (re)started for it.
	ConfWaiting string `json:"conf-waiting,omitempty"`
	// StatusCache holds the status and the version this unit last set; the same is not set
	// again.
	charm.StatusCache
}

// refused is why this machine cannot be a login node, "" when it can.
func (st *State) refused() string {
	if r := st.Release; r != nil {
		return r.Refused
	}
	return ""
}

// Release is this machine's Slurm as the charm found it.
type Release struct {
	// Version is the Slurm release ("24.11.5"); "" when no package says.
	Version string `json:"version,omitempty"`
	// Refused says why this machine cannot be a login node (a Slurm without sackd); ""
	// when it can.
	Refused string `json:"refused,omitempty"`
}

// PublishedHost is this unit's host data on the relation.
type PublishedHost struct {
	Relation juju.RelationID `json:"relation"`
	Hostname string          `json:"hostname"`
	Address  string          `json:"address"`
	// SlurmVersion is the release published beside them ("" for none).
	SlurmVersion string `json:"slurm-version,omitempty"`
}

// Applied is what sackd runs with.
type Applied struct {
	Relation    juju.RelationID `json:"relation"`
	Controllers []string        `json:"controllers"`
	// KeyHash is the SHA-256 of the key written (authkey.Hash), KeyID its id.
	KeyHash string `json:"key-hash"`
	KeyID   string `json:"key-id,omitempty"`
	// ConfDigest is the controller's configuration digest when sackd last started.
	ConfDigest string `json:"conf-digest,omitempty"`
}

// restartFor says why sackd, running as a, must restart to run as b ("" when it need not).
func (a *Applied) restartFor(b *Applied) string {
	switch {
	case !slices.Equal(a.Controllers, b.Controllers):
		return "the controllers changed"
	case a.KeyHash != b.KeyHash:
		return "the auth key changed (key id " + b.KeyID + ")"
	case a.ConfDigest != b.ConfDigest:
		return "the controller's configuration changed"
	}
	return ""
}
