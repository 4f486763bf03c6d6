package main

import (
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
)

// State is what the charm remembers between hooks. It never holds the database password.
type State struct {
	// Config is the configuration as config-get last gave it (read on config-changed,
	// upgrade-charm, and when none is kept).
	Config *config `json:"config,omitempty"`
	// Version is slurmdbd's version (slurmdbd -V), read at install and upgrade-charm.
	Version string `json:"version,omitempty"`
	// VersionShown is the version last given to application-version-set.
	VersionShown string `json:"version-shown,omitempty"`
	// Applied is what slurmdbd was last (re)started with; nil while it never ran.
	Applied *Applied `json:"applied,omitempty"`
	// Published is what the leader last wrote to the slurmctld relation.
	Published *Published `json:"published,omitempty"`
	// Requested is the database relation the leader wrote its request to.
	Requested juju.RelationID `json:"requested,omitempty"`
	charm.StatusCache
}

// Applied is slurmdbd's running configuration.
type Applied struct {
	// ConfHash is the SHA-256 of the slurmdbd.conf it runs with.
	ConfHash string `json:"conf-hash"`
	// KeyHash is the SHA-256 of the auth key file it runs with, KeyID the key's id.
	KeyHash string `json:"key-hash"`
	KeyID   string `json:"key-id,omitempty"`
	// Database is where it stores: host:port/database as user (no password).
	Database string `json:"database"`
}

// Published is the data written to the slurmctld relation.
type Published struct {
	Relation juju.RelationID   `json:"relation"`
	Data     map[string]string `json:"data"`
}
