package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/authkey"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/poll"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// startWait bounds the wait for a freshly started slurmctld to answer `scontrol ping`.
const startWait = 30 * time.Second

// upgradeCharm ends the waiter, which runs the old charm's code (watch starts the new one),
// and configures.
func (h *hook) upgradeCharm(ctx context.Context) error {
	_ = h.stopWaiter(ctx)
	return h.configure(ctx)
}

// configure brings the controller to its configured state: auth key, munged, slurm.conf,
// partitions, slurmctld running, port open, ControllerData published. It runs on
// leader-elected, config-changed, start and upgrade-charm.
func (h *hook) configure(ctx context.Context) error {
	if h.cfgErr != nil || h.clusterNameError() != nil {
		// Nothing is changed: a running slurmctld keeps its configuration.
		return h.setStatus(ctx)
	}
	if !h.leader {
		return h.configureBackup(ctx)
	}
	if err := h.ensureController(ctx); err != nil {
		return err
	}
	if err := h.publishAll(ctx); err != nil {
		return err
	}
	if err := h.publishPeers(ctx); err != nil {
		return err
	}
	return h.setStatus(ctx)
}

// ensureController writes the key, slurm.conf and partitions and makes sure munged and
// slurmctld run, reconfiguring a running slurmctld once if its configuration changed.
func (h *hook) ensureController(ctx context.Context) error {
	feat, err := h.features(ctx)
	if err != nil {
		return err
	}
	if err := h.ensureKey(ctx, feat); err != nil {
		return err
	}
	if err := h.ensureGresConf(ctx); err != nil {
		return err
	}
	cgroupChanged, err := h.ensureCgroupConf(ctx, feat)
	if err != nil {
		return err
	}
	st, err := h.storage(ctx)
	if err != nil {
		return err
	}
	switch {
	case st.Mounted && !h.st.StateShared && h.st.AppliedConf != "":
		// A backup becoming the leader: it runs on the shared state already.
		h.st.StateShared = true
	case st.Mounted && !h.st.StateShared:
		if err := h.moveState(ctx); err != nil {
			return err
		}
	}
	if h.ctls, err = h.planControllers(ctx, st); err != nil {
		return err
	}
	prevExtra := h.st.ExtraKeys
	changed, err := h.changeConf(ctx, func(ctx context.Context) (bool, error) {
		confChanged, err := h.writeSlurmConf(ctx, feat)
		if err != nil {
			return false, err
		}
		partsChanged, err := h.syncPartitions(ctx, nil)
		return confChanged || partsChanged, err
	})
	var ce *slurm.ConfigError
	switch {
	case errors.As(err, &ce) && len(h.extra) > 0:
		// Slurm cannot read slurm.conf with these parameters: the live file, and a running
		// slurmctld, keep the previous ones; a controller that is not running yet stays so.
		h.st.ExtraKeys = prevExtra
		h.st.ConfRefused = "slurm-conf-parameters: " + refusal(ce)
		h.logf(ctx, juju.LevelWarning, "slurm.conf left as it was: %v", err)
		return nil
	case err != nil:
		return err
	}
	h.st.ConfRefused = ""
	hosts := hostsOf(h.ctls)
	running := h.running(ctx)
	switch {
	case running && len(h.st.RunningHosts) > 0 && !slices.Equal(h.st.RunningHosts, hosts),
		running && len(h.st.RunningHosts) == 0 && len(hosts) > 1:
		// SlurmctldHost is read at start only.
		if err := h.progress(ctx, "restarting slurmctld: the controllers changed"); err != nil {
			return err
		}
		if err := h.c.restart(ctx, svcSlurmctld); err != nil {
			return err
		}
		h.st.GresRunning = h.gresTypes()
		h.forgetNodes()
		if err := h.waitUp(ctx, "restarted"); err != nil {
			return err
		}
		h.logf(ctx, juju.LevelInfo, "restarted slurmctld with the controllers %v", hosts)
	case running:
		if err := h.apply(ctx, changed || cgroupChanged); err != nil {
			return err
		}
	default:
		if err := h.startSlurmctld(ctx); err != nil {
			return err
		}
	}
	h.st.RunningHosts, h.st.Controllers = hosts, h.ctls
	h.st.ClusterName = h.cfg.ClusterName
	// The Slurm version in juju status's Version column, once per version.
	if err := h.k.SetVersion(ctx, h.st.SlurmVersion); err != nil {
		return err
	}
	return h.openPort(ctx)
}

// openPort opens SlurmctldPort unless a successful hook of this leadership term did.
func (h *hook) openPort(ctx context.Context) error {
	if h.pub.PortOpen {
		return nil
	}
	if err := h.hc.Ports.Open(ctx, juju.Port{Number: SlurmctldPort, Protocol: "tcp"}); err != nil {
		return fmt.Errorf("cannot open port %d: %w", SlurmctldPort, err)
	}
	h.pub.PortOpen = true
	return nil
}

// ensureKey installs the auth key of the secret on this host and makes sure munged runs.
// The secret is read only when the record of the key installed from it does not match the
// key file any more (or there is no record: a new leadership term, upgrade-charm).
func (h *hook) ensureKey(ctx context.Context, feat slurm.Features) error {
	if h.keyInstalled(feat) {
		return h.ensureKeyService(ctx, feat, false)
	}
	key, keyID, err := h.ensureAuthSecret(ctx)
	if err != nil {
		return err
	}
	return h.installKey(ctx, feat, key, keyID)
}

// keyInstalled reports whether the key file is the one recorded as installed from the
// current auth key secret.
func (h *hook) keyInstalled(feat slurm.Features) bool {
	p := h.pub
	if p.SecretID == "" || p.KeyHash == "" || p.SecretID != h.st.SecretID {
		return false
	}
	data, err := os.ReadFile(h.c.Path(feat.AuthKeyFile))
	return err == nil && authkey.Hash(data) == p.KeyHash
}

// authSecret makes sure the auth key secret exists (creating it when there is none) and
// returns its id, without reading it when the record has it.
func (h *hook) authSecret(ctx context.Context) (juju.SecretID, error) {
	if h.pub.SecretID != "" && h.pub.SecretID == h.st.SecretID {
		return juju.SecretID(h.st.SecretID), nil
	}
	if _, _, err := h.ensureAuthSecret(ctx); err != nil {
		return "", err
	}
	h.pub.SecretID = h.st.SecretID
	return juju.SecretID(h.st.SecretID), nil
}

// grant grants the auth key secret to relation rel unless the record says it was.
func (h *hook) grant(ctx context.Context, id juju.SecretID, rel juju.RelationID) error {
	r := h.pub.relation(rel)
	if r.Granted == string(id) {
		return nil
	}
	if err := h.hc.Secrets.Grant(ctx, id, rel, ""); err != nil {
		return fmt.Errorf("cannot grant auth key secret to %s: %w", rel, err)
	}
	r.Granted = string(id)
	return nil
}

// features are the version-dependent choices for the installed Slurm. The version
// (`slurmctld -V`, which needs no slurm.conf) is cached in the state and read again on
// upgrade-charm.
func (h *hook) features(ctx context.Context) (slurm.Features, error) {
	if h.st.SlurmVersion != "" && h.hc.Event.Kind != juju.UpgradeCharm {
		if v, err := slurm.ParseVersion(h.st.SlurmVersion); err == nil {
			return slurm.FeaturesOf(v), nil
		}
	}
	v, err := (&slurm.Client{Runner: h.c.Slurm}).SlurmctldVersion(ctx)
	if err != nil {
		return slurm.Features{}, fmt.Errorf("cannot find the Slurm version: %w", err)
	}
	h.st.SlurmVersion = v.String()
	return slurm.FeaturesOf(v), nil
}

// ensureAuthSecret returns the auth key, creating the secret (leader only) when there is none.
func (h *hook) ensureAuthSecret(ctx context.Context) ([]byte, string, error) {
	hc := h.hc
	id, content, err := h.readAuthSecret(ctx)
	if err == nil {
		key, keyID, err := slurmd.DecodeAuthSecret(content)
		if err != nil {
			return nil, "", fmt.Errorf("cannot read auth key secret %s: %w", id, err)
		}
		h.st.SecretID = string(id)
		return key, keyID, nil
	}
	if !h.leader {
		return nil, "", fmt.Errorf("cannot read auth key secret: %w", err)
	}
	key, err := h.c.newKey()
	if err != nil {
		return nil, "", err
	}
	id, err = hc.Secrets.Add(ctx, slurmd.EncodeAuthSecret(key, "1"), juju.SecretAddOptions{
		Label: authSecretName, Description: "Slurm cluster auth key (munge key before Slurm 23.11, slurm.key after)",
	})
	if err != nil {
		return nil, "", fmt.Errorf("cannot create auth key secret: %w", err)
	}
	h.st.SecretID = string(id)
	h.logf(ctx, juju.LevelInfo, "created auth key secret %s", id)
	// Relations that joined before the secret existed get it now.
	rels, err := h.relations(ctx)
	if err != nil {
		return nil, "", err
	}
	for _, rel := range rels {
		if err := h.grant(ctx, id, rel); err != nil {
			return nil, "", err
		}
	}
	return key, "1", nil
}

// readAuthSecret reads the auth key secret by its remembered id, else by label.
func (h *hook) readAuthSecret(ctx context.Context) (juju.SecretID, map[string]string, error) {
	sec := h.hc.Secrets
	if h.st.SecretID != "" {
		id := juju.SecretID(h.st.SecretID)
		content, err := sec.Get(ctx, id, juju.SecretGetOptions{})
		if err == nil {
			return id, content, nil
		}
	}
	if h.leader {
		info, err := sec.InfoByLabel(ctx, authSecretName)
		if err != nil {
			return "", nil, err
		}
		content, err := sec.Get(ctx, info.ID, juju.SecretGetOptions{})
		return info.ID, content, err
	}
	content, err := sec.Get(ctx, "", juju.SecretGetOptions{Label: authSecretName})
	return "", content, err
}

// newKey returns keySize random bytes.
func (c *Charm) newKey() ([]byte, error) {
	key := make([]byte, keySize)
	if _, err := io.ReadFull(c.Rand, key); err != nil {
		return nil, fmt.Errorf("cannot generate auth key: %w", err)
	}
	return key, nil
}

// installKey writes the auth key file and (re)starts munged when it changed (auth/munge), or
// restarts a running slurmctld (auth/slurm, 23.11 and later).
func (h *hook) installKey(ctx context.Context, feat slurm.Features, key []byte, keyID string) error {
	c := h.c
	owner := mungeUser
	mode := fs.FileMode(0o400)
	if !feat.Munge {
		owner, mode = slurmUser, 0o600
	}
	uid, gid, err := c.UserIDs(owner)
	if err != nil {
		return err
	}
	changed, err := authkey.Write(ctx, c.Path(feat.AuthKeyFile), key, authkey.Options{Mode: mode, UID: uid, GID: gid})
	if err != nil {
		return err
	}
	if changed {
		h.logf(ctx, juju.LevelInfo, "wrote auth key %s (key id %s)", feat.AuthKeyFile, keyID)
	}
	h.st.KeyID = keyID
	h.pub.SecretID, h.pub.KeyID, h.pub.KeyHash = h.st.SecretID, keyID, authkey.Hash(key)
	return h.ensureKeyService(ctx, feat, changed)
}

// ensureKeyService makes sure the service using the auth key runs with it: munged before
// Slurm 23.11 ((re)started when changed or not running); from 23.11 slurmctld itself,
// restarted when the key changed.
func (h *hook) ensureKeyService(ctx context.Context, feat slurm.Features, changed bool) error {
	c := h.c
	if !feat.Munge {
		if changed && h.running(ctx) {
			return c.restart(ctx, svcSlurmctld)
		}
		return nil
	}
	return h.ensureMunged(ctx, changed)
}

// ensureMunged makes sure munged runs, (re)starting it when restart is set (the key changed)
// or it is not running, then waits (bounded by MungeTimeout) until it answers. A running
// munged with an unchanged key is left alone.
func (h *hook) ensureMunged(ctx context.Context, restart bool) error {
	c := h.c
	return c.Munge(c.Services, c.MungeService, c.Slurm).Ensure(ctx, restart)
}

func (c *Charm) restart(ctx context.Context, name string) error {
	if err := c.Services.Restart(ctx, name); err != nil {
		return fmt.Errorf("cannot restart %s: %w", name, err)
	}
	return nil
}

// startSlurmctld defines, enables and starts slurmctld and waits (bounded) until it answers.
func (h *hook) startSlurmctld(ctx context.Context) error {
	c := h.c
	if err := h.progress(ctx, "starting slurmctld"); err != nil {
		return err
	}
	spec := service.Spec{Name: svcSlurmctld, Summary: "Slurm controller", Command: []string{"/usr/sbin/slurmctld", "-D", "-f", confPath}}
	if err := c.Services.Configure(ctx, spec); err != nil {
		return fmt.Errorf("cannot configure slurmctld: %w", err)
	}
	if err := c.Services.Enable(ctx, svcSlurmctld); err != nil {
		return fmt.Errorf("cannot enable slurmctld: %w", err)
	}
	if err := c.Services.Start(ctx, svcSlurmctld); err != nil {
		return fmt.Errorf("cannot start slurmctld (see %s): %w", slurmctldLog, err)
	}
	// slurm.conf as written is what slurmctld now runs with.
	h.st.GresRunning = h.gresTypes()
	if err := h.waitUp(ctx, "started"); err != nil {
		return err
	}
	h.logf(ctx, juju.LevelInfo, "slurmctld started")
	return nil
}

// waitUp waits (bounded by startWait) until a slurmctld just started or restarted answers.
func (h *hook) waitUp(ctx context.Context, what string) error {
	c := h.c
	wctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	var last error
	err := poll.Until(wctx, c.poll(), func(ctx context.Context) (bool, error) {
		_, last = c.client().Ping(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("slurmctld %s but does not answer (see %s): %w", what, slurmctldLog, errors.Join(last, err))
	}
	return nil
}

// apply makes a running slurmctld read its configuration files after they changed: one
// restart when GresTypes differs from what it runs with (Slurm ignores a GresTypes change
// on reconfigure), else one `scontrol reconfigure` when changed is set.
func (h *hook) apply(ctx context.Context, changed bool) error {
	if h.gresRestartNeeded() {
		return h.restartForGres(ctx)
	}
	if changed {
		return h.reconfigure(ctx)
	}
	return nil
}

// restartForGres restarts slurmctld so that it manages the GresTypes slurm.conf lists (a
// restart keeps the dynamic nodes and the jobs, from the saved state), waits until it
// answers, then checks partition membership as after a reconfigure.
func (h *hook) restartForGres(ctx context.Context) error {
	want := h.gresTypes()
	if err := h.progress(ctx, "restarting slurmctld for GresTypes="+want); err != nil {
		return err
	}
	if err := h.c.restart(ctx, svcSlurmctld); err != nil {
		return err
	}
	prev := h.st.GresRunning
	h.st.GresRunning = want
	h.forgetNodes()
	if err := h.waitUp(ctx, "restarted"); err != nil {
		return err
	}
	h.logf(ctx, juju.LevelInfo, "restarted slurmctld: GresTypes %q → %q (a GresTypes change needs a restart)", prev, want)
	h.repairPartitions(ctx)
	return nil
}

// reconfigure runs one `scontrol reconfigure`.
func (h *hook) reconfigure(ctx context.Context) error {
	if err := h.progress(ctx, "reconfiguring"); err != nil {
		return err
	}
	err := h.c.client().Reconfigure(ctx)
	h.forgetNodes()
	if err != nil {
		return fmt.Errorf("cannot reconfigure slurmctld: %w", err)
	}
	h.logf(ctx, juju.LevelInfo, "reconfigured slurmctld")
	h.repairPartitions(ctx)
	return nil
}

// repairPartitions checks that every partition holds exactly the registered nodes of its
// NodeSet and repairs one that does not. Slurm before 23.02.2 rebuilds NodeSet partitions
// from stale feature bitmaps on `scontrol reconfigure` when the node table has holes
// (deleted nodes), dropping registered nodes from their partition until the next
// registration (SchedMD bug 16295; libs/slurm's RepairPartitionMembership). It runs after
// every reconfigure and on update-status; a failure is logged, not fatal: the next run
// tries again.
// The hook's node list serves every partition: each node record names the partitions that
// hold it (Partitions=, from the same bitmaps as the partition's Nodes=; real 22.05 shows
// the loss there too, slurmtest's show-node-moved). Only a partition found wrong is
// repaired, which reads the nodes and the partition again.
func (h *hook) repairPartitions(ctx context.Context) {
	cl := h.c.client()
	nodes, err := h.nodeList(ctx)
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "cannot check the nodes of the partitions: %v", err)
		return
	}
	for _, app := range h.st.Apps {
		if _, rm := h.st.Removing[app]; rm {
			continue
		}
		if membersOf(app, nodes).OK() {
			continue
		}
		repaired, err := cl.RepairPartitionMembership(ctx, app, app)
		if err != nil {
			h.logf(ctx, juju.LevelWarning, "cannot check the nodes of partition %s: %v", app, err)
			continue
		}
		if len(repaired) > 0 {
			h.forgetNodes()
			h.logf(ctx, juju.LevelWarning, "partition %s had lost or gained nodes after a reconfigure (Slurm bug 16295): repaired %s", app, strings.Join(repaired, ","))
		}
	}
}

// membersOf compares partition app (its NodeSet's feature is app too) with the nodes
// carrying the feature, from the node records alone: the partition holds the nodes whose
// Partitions= name it.
func membersOf(app string, nodes []slurm.Node) slurm.Membership {
	p := slurm.Partition{Name: app, NodeSets: []string{app}}
	for _, n := range nodes {
		if slices.Contains(n.Partitions, app) {
			p.Nodes = append(p.Nodes, n.Name)
		}
	}
	return slurm.MembershipOf(p, nodes, app)
}

// publishAll publishes ControllerData on every slurmd relation.
func (h *hook) publishAll(ctx context.Context) error {
	rels, err := h.relations(ctx)
	if err != nil {
		return err
	}
	for _, rel := range rels {
		if err := h.publish(ctx, rel); err != nil {
			return err
		}
	}
	return nil
}

// relations lists the slurmd relations: from the record when it has them all, else with
// relation-ids (relations the record has but Juju no longer lists are dropped from it).
func (h *hook) relations(ctx context.Context) ([]juju.RelationID, error) {
	if h.pub.RelationsKnown {
		return sortedKeys(h.pub.Relations), nil
	}
	rels, err := h.hc.Relations.IDs(ctx, slurmd.RequirerEndpoint)
	if err != nil {
		return nil, fmt.Errorf("cannot list slurmd relations: %w", err)
	}
	for id := range h.pub.Relations {
		if !slices.Contains(rels, id) {
			delete(h.pub.Relations, id)
		}
	}
	for _, rel := range rels {
		h.pub.relation(rel)
	}
	h.pub.RelationsKnown = true
	return rels, nil
}

// publish writes ControllerData to relation rel (leader only) unless the record says the
// same data was written there.
func (h *hook) publish(ctx context.Context, rel juju.RelationID) error {
	addr, err := h.ingress(ctx)
	if err != nil {
		return err
	}
	ctls := []string{net.JoinHostPort(addr, strconv.Itoa(SlurmctldPort))}
	if h.ctls == nil {
		h.ctls = h.st.Controllers // a hook that did not plan them: the last plan
	}
	if len(h.ctls) > 0 {
		ctls = ctls[:0]
		for _, c := range h.ctls {
			ctls = append(ctls, net.JoinHostPort(c.Addr, strconv.Itoa(SlurmctldPort)))
		}
	}
	bag := slurmd.ControllerBag{
		Controllers:  ctls,
		AuthSecretID: h.st.SecretID,
		ClusterName:  h.cfg.ClusterName,
		GresTypes:    h.gresRunning(),
	}
	// The version slurmd units check theirs against (none while unknown).
	bag.SlurmVersion, _ = slurm.ParseVersion(h.st.SlurmVersion)
	data, err := bag.Encode()
	if err != nil {
		return fmt.Errorf("cannot publish controller data on %s: %w", rel, err)
	}
	r := h.pub.relation(rel)
	if r.Data != nil && maps.Equal(r.Data, data) {
		return nil
	}
	if err := (slurmd.Requirer{HookContext: h.hc}).PublishController(ctx, rel, bag); err != nil {
		return fmt.Errorf("cannot publish controller data on %s: %w", rel, err)
	}
	r.Data = data
	return nil
}
