package main

import (
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/gres"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// State is what the charm remembers between hooks on this unit (StateName in the charm
// directory), saved by the kit's lifecycle (Charm.lifecycle).
type State struct {
	// Config is the configuration as config-get last gave it: read on config-changed (Juju
	// runs it after install, upgrade-charm, every change and an agent restart), on
	// upgrade-charm and when none is kept; other hooks validate this copy.
	Config *config `json:"config,omitempty"`
	// Controller is the controller's data as the last relation hook read it (relation and
	// databag, not the key): secret-changed reads only the secret with it.
	Controller *LastController `json:"controller,omitempty"`
	// NodeConfig is the node-config set with the action (slurm.conf node parameters).
	NodeConfig string `json:"node-config,omitempty"`
	// StagedNodeConfig is a node-config given with on-reboot=true: the running node keeps
	// NodeConfig, slurmd is not started at boot, and the start after the next boot registers
	// the node with this one (applyStaged).
	StagedNodeConfig string `json:"staged-node-config,omitempty"`
	// Applied is what slurmd was last started with; nil when it was never started or stopped
	// for good.
	Applied *Applied `json:"applied,omitempty"`
	// Restore is the node's administrative state from before a re-registration still under
	// way (or interrupted): the state to give back to the node whatever the new --conf gives.
	Restore *NodeAdmin `json:"restore,omitempty"`
	// DefaultPending is set while default-node-state still has to be applied to a new node.
	DefaultPending bool `json:"default-pending,omitempty"`
	// Departed is set once the node left the cluster (departure done); cleared when the unit
	// joins a controller again.
	Departed bool `json:"departed,omitempty"`
	// Facts caches this machine's Slurm facts (`slurmd -V`, `slurmd -C`): the version read on
	// install, `slurmd -C` from the start of the first hook that needs it (on a join the
	// relation hook that starts slurmd), both again on upgrade-charm.
	Facts *Facts `json:"facts,omitempty"`
	// Gres caches the generic resources detected on this machine (GPUs): read on install,
	// upgrade-charm and by the detect-gres action, or when missing.
	Gres *GresFacts `json:"gres,omitempty"`
	// GresWaiting are the GRES names the node should run with that the controller does not
	// manage yet: slurmd was not (re)started with them.
	GresWaiting []string `json:"gres-waiting,omitempty"`
	// VersionRefused says why the controller's Slurm does not accept this machine's
	// (slurm.CheckNodeVersion): slurmd was not (re)started for it.
	VersionRefused string `json:"version-refused,omitempty"`
	// ConfWaiting says why this machine's slurmd waits for the controller's configuration
	// (slurm.CheckConfVersion against conf_min_version): slurmd was not (re)started for it.
	ConfWaiting string `json:"conf-waiting,omitempty"`
	// UnitPublished is the relation and the Slurm version this unit last published in its
	// unit databag ("slurmctld:3 24.11.5"); dropped with a failed hook.
	UnitPublished string `json:"unit-published,omitempty"`
	// Published is the ComputeData this unit last published as leader, and where; a hook
	// whose data is the same skips the write.
	Published *Published `json:"published,omitempty"`
	// StatusCache holds the statuses this unit last set ("unit-status", "app-status":
	// "code: message") and the version it showed ("version-shown"); the same is not set
	// again.
	charm.StatusCache
}

// Facts are this machine's Slurm facts: the version (install) and `slurmd -C`'s (the first
// hook that needs them).
type Facts struct {
	Version string            `json:"version"`
	Machine slurm.MachineInfo `json:"machine"`
}

// hasMachine reports whether f holds `slurmd -C`'s facts.
func (f *Facts) hasMachine() bool { return f != nil && len(f.Machine.Params) > 0 }

// NodeAdmin is a node's administrative state: drained or down, and why.
type NodeAdmin struct {
	Drain  bool   `json:"drain,omitempty"`
	Down   bool   `json:"down,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Published is what the leader last wrote to the relation's application databag.
type Published struct {
	Relation juju.RelationID   `json:"relation"`
	Data     map[string]string `json:"data"`
}

// Applied is slurmd's running configuration.
type Applied struct {
	Controllers []string `json:"controllers"`
	Conf        string   `json:"conf"`
	KeyHash     string   `json:"key-hash"`
	KeyID       string   `json:"key-id,omitempty"`
	// GresConf is the content of GresLocalConf slurmd was started with: a change of the
	// lines alone re-registers the node too.
	GresConf string `json:"gres-conf,omitempty"`
	// SecretID is the auth key secret the key was read from: while the relation names the
	// same secret and the key file still has KeyHash, relation hooks read no secret.
	SecretID string `json:"secret-id,omitempty"`
}

// LastController is the controller's relation data as the last relation hook read it.
type LastController struct {
	Relation     juju.RelationID `json:"relation"`
	Controllers  []string        `json:"controllers"`
	AuthSecretID string          `json:"auth-secret-id"`
	ClusterName  string          `json:"cluster-name,omitempty"`
	GresTypes    []string        `json:"gres-types,omitempty"`
}

// GresFacts are the generic resources detected on this machine (State.Gres).
type GresFacts struct {
	// Detected are the GPUs found, grouped by model (gres.Detection.Resources).
	Detected gres.Set `json:"detected,omitempty"`
	// Notes say what detection left out or could not tell (no nvidia-smi: GPUs untyped).
	Notes []string `json:"notes,omitempty"`
}
