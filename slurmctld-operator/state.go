package main

import (
	"cmp"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// charmState is what the charm remembers between hooks. It is written atomically once, at
// the end of every hook that changed it (Charm.lifecycle).
type charmState struct {
	// Config is the configuration as config-get last gave it (config-changed reads it, and
	// upgrade-charm, or any hook when there is none yet); other hooks validate this copy
	// instead of reading it again (Juju runs config-changed after every change).
	Config *config `json:"config,omitempty"`
	// ClusterName is the ClusterName slurmctld was first started with; it cannot change.
	ClusterName string `json:"cluster-name,omitempty"`
	// SecretID is the auth key secret (leader only).
	SecretID string `json:"secret-id,omitempty"`
	// SlurmVersion caches `slurmctld -V` (read again on upgrade-charm).
	SlurmVersion string `json:"slurm-version,omitempty"`
	// StatusCache is the unit status this unit last set ("unit-status": "code: message")
	// and the version last given to application-version-set ("version-shown"): neither is
	// set again unchanged.
	charm.StatusCache
	// KeyID is the id of the auth key written to this host.
	KeyID string `json:"key-id,omitempty"`
	// ExtraKeys are the global keys last applied from slurm-conf-parameters.
	ExtraKeys []string `json:"extra-keys,omitempty"`
	// ConfRefused says why Slurm's parser refused slurm.conf with the current
	// slurm-conf-parameters (the live file keeps the previous ones); empty once accepted.
	ConfRefused string `json:"conf-refused,omitempty"`
	// GresTypes are the generic resource names slurmd applications declared (gpu, always in
	// slurm.conf's GresTypes, aside), sorted; a name is never removed.
	GresTypes []string `json:"gres-types,omitempty"`
	// GresRunning is the GresTypes value slurmctld was last started or restarted with:
	// the names the controller publishes as managed.
	GresRunning string `json:"gres-running,omitempty"`
	// Apps are the slurmd applications with a partition include, in order of arrival
	// (the first is the default partition unless default-partition says otherwise).
	Apps []string `json:"apps,omitempty"`
	// Problems holds, per slurmd application, why its relation data was refused.
	Problems map[string]string `json:"problems,omitempty"`
	// Pending are nodes of departed units waiting to be drained and deleted.
	Pending map[string]pendingNode `json:"pending,omitempty"`
	// Removing are slurmd applications whose partition is being removed (relation broken).
	Removing map[string]removal `json:"removing,omitempty"`
	// Accounting is the slurmdbd relation's state (accounting.go), or nil.
	Accounting *accounting `json:"accounting,omitempty"`
	// AccountingRunning is the accounting storage (host:port, "" for none) slurmctld was last
	// started or restarted with.
	AccountingRunning string `json:"accounting-running,omitempty"`
	// Restart is the slurmctld restart under way (slurmctld.go: no hook waits for it), or nil.
	Restart *pendingRestart `json:"restart,omitempty"`
	// Reboots is the rolling reboot under way (reboot action), or nil.
	Reboots *rebootPlan `json:"reboots,omitempty"`
	// COS records the cos-agent relations and what this unit last wrote to them (cos.go);
	// like Published, it is dropped when a hook fails.
	COS cosRecord `json:"cos,omitzero"`
	// Published is what this unit, as leader, last wrote to Juju in hooks that succeeded;
	// see published.
	Published *published `json:"published,omitempty"`
	// LoginHosts are the login units (sackd relations) by unit name, which /etc/hosts lists.
	LoginHosts map[string]loginHost `json:"login-hosts,omitempty"`
	// StateShared: StateSaveLocation is on the shared storage (sharedStateDir); the leader
	// moved the state there once (moveState).
	StateShared bool `json:"state-shared,omitempty"`
	// RunningHosts are the SlurmctldHost values slurmctld was last started with (it reads
	// them only at start); nil: this unit alone.
	RunningHosts []string `json:"running-hosts,omitempty"`
	// Controllers are the controllers as the last configure hook planned or read them, for
	// the status of the hooks that do not read them again.
	Controllers []controller `json:"controllers,omitempty"`
	// AppliedConf is the hash of the leader's configuration a backup controller runs with.
	AppliedConf string `json:"applied-conf,omitempty"`
	// Turn is the restart turn (rolling.go) this unit, as leader, last planned ("" for
	// none), TurnDeadline when it runs out (the waiter wakes the leader then), and TurnNote
	// the part of the status about the turns (any unit). RunsWith is the report this unit
	// last wrote in its peer unit bag (rolling.report).
	Turn         string    `json:"turn,omitempty"`
	TurnDeadline time.Time `json:"turn-deadline,omitzero"`
	TurnNote     string    `json:"turn-note,omitempty"`
	RunsWith     string    `json:"runs-with,omitempty"`
	// Leaving: this unit leaves the application (departure); its slurmctld was stopped and
	// is never started again. HandedTo is the controller it asked to take control ("" when
	// it was not in control or had no backup).
	Leaving  bool   `json:"leaving,omitempty"`
	HandedTo string `json:"handed-to,omitempty"`
	// Led: this unit led in its last hook and holds the leader's records (Pending, Removing,
	// Reboots, Accounting, Problems); a unit that does not lead holds none (leadership.go).
	// AdoptNodes: as a new leader it could not read Slurm's nodes yet to take over the
	// removals of departed units' nodes; the next hook that can does.
	Led        bool `json:"led,omitempty"`
	AdoptNodes bool `json:"adopt-nodes,omitempty"`
	// StoodDown: this unit's controller gave up control to another unit's takeover action
	// and stays stopped until takeover is run on this unit (standby.go); TookBack are the
	// ids of the takeover records this unit took control back from.
	StoodDown *stoodDown `json:"stood-down,omitempty"`
	TookBack  []string   `json:"took-back,omitempty"`
	// SlurmdReleases are the Slurm releases slurmd applications and units said they run, by
	// application or unit name (metricsgate.go).
	SlurmdReleases map[string]nodeRelease `json:"slurmd-releases,omitempty"`
	// NodeCounts are the node list's counts as this unit's status last read them (leader),
	// which the status of a slurmd unit's joining hooks shows again (hook.keepsCounts); nil
	// when that status showed none, or a hook failed.
	NodeCounts *nodeCounts `json:"node-counts,omitempty"`
}

// stoodDown is why this unit's controller stands down: the unit whose takeover action took
// control (By) and its record's id.
type stoodDown struct {
	By     string `json:"by"`
	Record string `json:"record"`
}

// restartKind is what a restart of slurmctld applies.
type restartKind string

const (
	// restartAccountingOn and restartAccountingOff load (or drop) the accounting storage
	// slurm.conf names: Slurm loads its accounting plugin at start only.
	restartAccountingOn  restartKind = "accounting-on"
	restartAccountingOff restartKind = "accounting-off"
	// restartGres applies a GresTypes change, which a reconfigure ignores.
	restartGres restartKind = "gres"
	// restartRollback turns accounting off again: slurmctld did not answer with it.
	restartRollback restartKind = "accounting-rollback"
	// restartControllers applies a change of the controllers (SlurmctldHost, read at start
	// only) on the leader, or the move of its state to the shared storage.
	restartControllers restartKind = "controllers"
	// restartShared applies the leader's configuration on a backup controller.
	restartShared restartKind = "shared-conf"
)

// pendingRestart is a restart of slurmctld that no hook waited for: the hook that restarted
// slurmctld returned at once, and a later pass (the waiter's wake, the leader's next hook,
// update-status) finishes it once slurmctld answers, or fails it once Deadline has passed
// without an answer (slurmctldDaemon.settle).
type pendingRestart struct {
	For restartKind `json:"for"`
	// What is what the restart does, in words for the log and the status ("turn accounting
	// on (slurmdbd at 10.0.0.9:6819)").
	What string `json:"what"`
	// Host is this unit's SlurmctldHost name: its slurmctld must answer (answers), not
	// another controller's.
	Host string `json:"host,omitempty"`
	// At is when slurmctld was restarted; Deadline when a restart it has not answered fails.
	At       time.Time `json:"at"`
	Deadline time.Time `json:"deadline"`
	// GresBefore is the GresTypes value slurmctld ran with before the restart: the names
	// published as managed until it answers (gresRunning).
	GresBefore string `json:"gres-before,omitempty"`
	// Reconfigure: slurm.conf changed again after the restart, which may have read the older
	// file: slurmctld reconfigures once it answers.
	Reconfigure bool `json:"reconfigure,omitempty"`
	// Failed says how the restart failed (no answer by Deadline), for the blocked status; a
	// later pass that finds slurmctld answering still finishes it.
	Failed string `json:"failed,omitempty"`
}

// published records what the leader wrote to Juju (ports, relation data, secret grants) and
// which auth key revision it installed, so that a hook whose outcome is the same writes
// nothing and reads no secret. It is updated only when the hook that wrote it succeeds: Juju
// discards a failed hook's relation data, secret and port changes, so a record of them would
// then be wrong and the retry must write again. A unit that is not the leader keeps none; a
// new leader (leader-elected) and upgrade-charm start from an empty record, because another
// unit may have led (and rotated the key or written the databags) in between. PortOpen is
// the exception: the port is this unit's own, and stays open across leadership changes and
// upgrades.
type published struct {
	// PortOpen: SlurmctldPort was opened.
	PortOpen bool `json:"port-open,omitempty"`
	// Peers is the peer application bag the leader last wrote (publisher.peers).
	Peers map[string]string `json:"peers,omitempty"`
	// SecretID, KeyID and KeyHash are the auth key secret, the key id of the revision whose
	// key was written to this host and the SHA-256 of that key file. While the file still
	// has that hash, the secret is not read again.
	SecretID string `json:"secret-id,omitempty"`
	KeyID    string `json:"key-id,omitempty"`
	KeyHash  string `json:"key-hash,omitempty"`
	// Addr is the ingress address last read with network-get on a configure hook; relation
	// hooks use it (an address change fires config-changed, which reads it again).
	Addr string `json:"addr,omitempty"`
	// RelationsKnown: Relations holds every slurmd relation (read with relation-ids, then
	// kept up to date by the relation hooks), so configure hooks need not list them.
	RelationsKnown bool `json:"relations-known,omitempty"`
	// Relations are the slurmd relations with what was written to each.
	Relations map[juju.RelationID]*publishedRel `json:"relations,omitempty"`
	// LoginKnown and Login are the same for the sackd relations (login applications).
	LoginKnown bool                              `json:"login-known,omitempty"`
	Login      map[juju.RelationID]*publishedRel `json:"login,omitempty"`
	// Dbd is what was written to the slurmdbd relation (accounting.go).
	Dbd *publishedDbd `json:"dbd,omitempty"`
}

// publishedRel is what was written to one relation (slurmd or sackd).
type publishedRel struct {
	// Data is the ControllerData databag written; nil when none yet.
	Data map[string]string `json:"data,omitempty"`
	// Granted is the auth key secret granted to the relation, or "".
	Granted string `json:"granted,omitempty"`
}

// publishedDbd is what was written to the slurmdbd relation (published.Dbd): the secret
// granted and the databag, as for a slurmd relation.
type publishedDbd struct {
	Relation juju.RelationID `json:"relation"`
	publishedRel
}

// accounting is what the controller knows of its slurmdbd (the slurmdbd relation,
// accounting.go).
type accounting struct {
	// Relation and App are the slurmdbd relation and application.
	Relation juju.RelationID `json:"relation"`
	App      string          `json:"app,omitempty"`
	// Host, Port and Version are slurmdbd's data, once published.
	Host    string `json:"host,omitempty"`
	Port    int    `json:"port,omitempty"`
	Version string `json:"version,omitempty"`
	// Refused says why accounting stays off with this slurmdbd ("" when it is on).
	Refused string `json:"refused,omitempty"`
}

// storage is the AccountingStorageHost:Port slurm.conf should name, "" for no accounting.
func (a *accounting) storage() string {
	if a == nil || a.Host == "" || a.Refused != "" {
		return ""
	}
	return a.Host + ":" + strconv.Itoa(a.Port)
}

// joined is a with the relation id and application, keeping slurmdbd's data of the same
// relation.
func (a *accounting) joined(rel juju.RelationID, app string) *accounting {
	if a == nil || a.Relation != rel {
		return &accounting{Relation: rel, App: app}
	}
	if app != "" {
		a.App = app
	}
	return a
}

// accountingRestartNeeded reports whether slurmctld runs with another accounting storage than
// slurm.conf names (Slurm reads it at start only).
func (s *charmState) accountingRestartNeeded() bool {
	return s.AccountingRunning != s.Accounting.storage()
}

// clone is a deep copy of p (nil gives an empty record).
func (p *published) clone() *published {
	if p == nil {
		return &published{}
	}
	q := *p
	q.Relations, q.Login = cloneRels(p.Relations), cloneRels(p.Login)
	if p.Dbd != nil {
		d := *p.Dbd
		d.Data = maps.Clone(p.Dbd.Data)
		q.Dbd = &d
	}
	return &q
}

// cloneRels is a deep copy of rels; nil when there are none.
func cloneRels(rels map[juju.RelationID]*publishedRel) map[juju.RelationID]*publishedRel {
	if len(rels) == 0 {
		return nil
	}
	q := make(map[juju.RelationID]*publishedRel, len(rels))
	for id, r := range rels {
		rc := *r
		rc.Data = maps.Clone(r.Data)
		q[id] = &rc
	}
	return q
}

// relation returns the record of slurmd relation id, adding an empty one.
func (p *published) relation(id juju.RelationID) *publishedRel { return record(&p.Relations, id) }

// record returns the record of relation id in *rels, adding an empty one.
func record(rels *map[juju.RelationID]*publishedRel, id juju.RelationID) *publishedRel {
	if *rels == nil {
		*rels = map[juju.RelationID]*publishedRel{}
	}
	r := (*rels)[id]
	if r == nil {
		r = &publishedRel{}
		(*rels)[id] = r
	}
	return r
}

// empty reports whether p records nothing.
func (p *published) empty() bool {
	return p == nil || reflect.DeepEqual(*p, published{}) || reflect.DeepEqual(*p, published{Relations: map[juju.RelationID]*publishedRel{}})
}

// loginHost is a login unit's host name and address, as its unit databag gave them.
type loginHost struct {
	Relation juju.RelationID `json:"relation"`
	Hostname string          `json:"hostname"`
	Address  string          `json:"address"`
	// Version is the Slurm release the unit said its sackd runs; "" when it said none (an
	// older charm): metricsgate.go.
	Version string `json:"version,omitempty"`
}

// pendingNode is a node whose unit departed, with its removal as far as it went.
type pendingNode struct {
	Unit string `json:"unit"`
	App  string `json:"app"`
	// Removal is the node's removal (drain → wait for its jobs → delete), advanced one
	// Step per pass; zero before the first.
	Removal slurm.Removal `json:"removal,omitzero"`
}

// removal is a partition being removed; Jobs is the number of job records last seen in it
// (-1 before the first count).
type removal struct {
	Jobs int `json:"jobs"`
	// Pending are the ids of the partition's pending jobs: they can never run there (the
	// partition is inactive and its nodes go) and wait for the settle-jobs action.
	Pending []string `json:"pending,omitempty"`
}

// cosRecord is what a unit knows of its cos-agent relations: their ids (as the last
// cos-agent relation hook listed them) and a digest of the data it last wrote to them, so
// that a hook whose data is unchanged writes nothing and runs no hook tool for it.
type cosRecord struct {
	Relations []juju.RelationID `json:"relations,omitempty"`
	Digest    string            `json:"digest,omitempty"`
}

// rebootPlan is a rolling reboot under way: Slurm has been asked to reboot the Asked nodes
// (scontrol reboot ASAP nextstate=resume) and the Queued ones wait until fewer than Max
// nodes of the plan are unavailable. update-status (and every reboot action) moves it on.
type rebootPlan struct {
	Reason string   `json:"reason"`
	Max    int      `json:"max-unavailable"`
	Queued []string `json:"queued,omitempty"`
	// Asked maps each node asked to reboot to its BootTime when asked: the node is back once
	// Slurm shows a new boot time and neither a reboot under way nor DOWN.
	Asked map[string]string `json:"asked,omitempty"`
	// Done counts the nodes back after their reboot.
	Done int `json:"done,omitempty"`
	// Since is when the reboot action made the plan: a queued node Slurm shows booted since
	// then was rebooted by it already (under a leader whose record of it was lost) and is
	// not asked again.
	Since time.Time `json:"since,omitzero"`
}

// drop takes node out of the plan: its unit left (a node Slurm does not know while it
// reboots is away, not gone: with a staged node-config its record is deleted before the
// reboot and created anew after it).
func (r *rebootPlan) drop(node string) {
	if r == nil {
		return
	}
	delete(r.Asked, node)
	r.Queued = slices.DeleteFunc(r.Queued, func(n string) bool { return n == node })
}

func (s *charmState) addApp(app string) {
	if !slices.Contains(s.Apps, app) {
		s.Apps = append(s.Apps, app)
	}
}

func (s *charmState) dropApp(app string) {
	s.Apps = slices.DeleteFunc(s.Apps, func(a string) bool { return a == app })
	delete(s.Problems, app)
	delete(s.Removing, app)
}

func (s *charmState) setProblem(app, msg string) {
	if s.Problems == nil {
		s.Problems = map[string]string{}
	}
	s.Problems[app] = msg
}

// sortedKeys returns m's keys in order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

// stateSaveLocation is StateSaveLocation: on the shared storage once the state moved there.
func (st *charmState) stateSaveLocation() string {
	if st.StateShared {
		return sharedStateDir
	}
	return stateSaveDir
}

// firstLine is s up to its first new line (a status line from a longer error).
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
