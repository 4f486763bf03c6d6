package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/charmed-slurm/operators/interfaces/sackd"
	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/etchosts"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// The sackd relation: login applications (the sackd charm). What the leader publishes to each
// is the controllers, the auth key secret (granted to the relation), the Slurm version and the
// digest of the configuration slurmctld serves (sackd.ControllerBag). loginNodes decides it, once at the
// end of every successful leader hook but install and actions (hook.finish): whatever the
// hook changed (a new key secret, a controller list, slurm.conf, a new leadership term that
// trusts no earlier record), every login application has it when the hook ends, and a hook
// that changed none of it writes nothing. The relation's own hooks only keep the record of
// which login relations exist.

// hostsPath is the host's name table.
const hostsPath = "/etc/hosts"

// servedConf are the files of confDir slurmctld serves to configless clients (sackd and
// slurmd fetch them), besides slurm.conf's includes: Slurm's configless list.
var servedConf = []string{
	"slurm.conf", "acct_gather.conf", "cgroup.conf", "cli_filter.lua", "gres.conf", "helpers.conf",
	"job_container.conf", "knl_cray.conf", "knl_generic.conf", "mpi.conf", "oci.conf",
	"plugstack.conf", "scrun.lua", "topology.conf", "topology.yaml",
}

// hostsOwner names the block of /etc/hosts where every controller unit lists the login
// units: srun sends slurmctld its short host name, which slurmctld must resolve to reach srun
// (to tell it that its step ended, or to signal it), and nothing else may tell it where a
// login node is (the cluster needs no DNS: nodes register their addresses, slurm.conf gives
// the controller's).
const hostsOwner = "slurmctld charm: login nodes"

// sackdRelation handles the hooks of the sackd endpoint: every unit records the login units'
// host names and addresses; the leader records the login relations as they come and go.
// hook.end then applies both (loginNodes.sync).
func (h *hook) sackdRelation(ctx context.Context) error {
	ev, err := sackd.Requirer{HookContext: h.hc}.Event(ctx)
	var de *sackd.DataError
	switch {
	case errors.As(err, &de):
		// The unit's previous entry, if any, stays: a bad update changes nothing.
		h.logf(ctx, juju.LevelWarning, "ignoring the host data of a login unit: %v", err)
	case err != nil:
		return err
	}
	switch ev := ev.(type) {
	case sackd.SackdHost:
		if err == nil {
			if h.st.LoginHosts == nil {
				h.st.LoginHosts = map[string]loginHost{}
			}
			h.st.LoginHosts[ev.Unit] = loginHost{Relation: ev.Relation, Hostname: ev.Host.Hostname, Address: ev.Host.Address.String(), Version: loginVersion(ev.Host)}
		}
	case sackd.SackdDeparted:
		delete(h.st.LoginHosts, ev.Unit)
	case sackd.SackdDisconnected:
		maps.DeleteFunc(h.st.LoginHosts, func(_ string, l loginHost) bool { return l.Relation == ev.Relation })
	}
	if h.leader {
		switch ev := ev.(type) {
		case sackd.SackdJoined:
			if _, known := h.pub.Login[ev.Relation]; !known {
				h.logf(ctx, juju.LevelInfo, "login application %s related: publishing the controllers and the auth key to it", ev.App)
			}
			loginRelation(h.pub, ev.Relation)
		case sackd.SackdDisconnected:
			delete(h.pub.Login, ev.Relation)
			h.logf(ctx, juju.LevelInfo, "login application %s gone", ev.App)
		}
	}
	return h.report(ctx)
}

// loginNodes is what one hook does for the login applications.
type loginNodes struct{ h *hook }

// sync makes this host resolve every login unit (all units) and publishes the controller's
// data to every login application (the leader). It runs at the end of every successful
// hook but install and actions.
func (l loginNodes) sync(ctx context.Context) error {
	switch l.h.hc.Event.Kind {
	case juju.Install, juju.Action:
		return nil
	}
	if err := l.hosts(ctx); err != nil {
		return err
	}
	return l.publish(ctx)
}

// hosts writes the login units of the record into /etc/hosts (hostsOwner's block), where it
// differs. An entry that no longer validates is left out and logged.
func (l loginNodes) hosts(ctx context.Context) error {
	h := l.h
	var entries []etchosts.Entry
	for _, unit := range sortedKeys(h.st.LoginHosts) {
		lh := h.st.LoginHosts[unit]
		addr, err := netip.ParseAddr(lh.Address)
		e := etchosts.Entry{Addr: addr, Names: []string{lh.Hostname}}
		if err == nil {
			err = e.Validate()
		}
		if err != nil {
			h.logf(ctx, juju.LevelWarning, "login unit %s: %v", unit, err)
			continue
		}
		entries = append(entries, e)
	}
	changed, err := etchosts.Update(ctx, h.c.Path(hostsPath), hostsOwner, entries)
	if err != nil {
		return err
	}
	if changed {
		h.logf(ctx, juju.LevelInfo, "%s lists %d login node(s) for slurmctld to reach their sruns", hostsPath, len(entries))
	}
	return nil
}

// publish grants the auth key secret to every login relation and writes the controller's
// data there, where the record says it is not so already. It does nothing on a unit that is
// not the leader, while the configuration is refused (the running controller keeps the
// previous one, as the slurmd relation does), before the auth key secret and slurm.conf
// exist, in install and actions, and while slurmctld restarts (a login unit would fetch the
// configuration from a slurmctld that does not answer yet; the pass that finishes the restart
// publishes).
func (l loginNodes) publish(ctx context.Context) error {
	h := l.h
	if !h.leader || h.configProblem() != nil || h.st.SecretID == "" || h.st.Restart != nil {
		return nil
	}
	rels, err := l.relations(ctx)
	if err != nil || len(rels) == 0 {
		return err
	}
	bag, err := l.bag(ctx)
	if err != nil || bag == nil {
		return err
	}
	for _, rel := range rels {
		r := loginRelation(h.pub, rel)
		if err := r.grant(ctx, h.hc.Secrets, juju.SecretID(h.st.SecretID), rel); err != nil {
			return err
		}
		if r.Data != nil && maps.Equal(r.Data, bag) {
			continue
		}
		if err := h.hc.Relations.SetAppData(ctx, rel, slurmd.ForRelationSet(bag)); err != nil {
			return fmt.Errorf("cannot publish the controller's data on %s: %w", rel, err)
		}
		r.Data = bag
	}
	return nil
}

// bag is the databag every login application gets now; nil before slurm.conf exists.
func (l loginNodes) bag(ctx context.Context) (map[string]string, error) {
	h := l.h
	files, err := l.served()
	if err != nil || files == nil {
		return nil, err
	}
	ctls, err := h.controllers(ctx)
	if err != nil {
		return nil, err
	}
	cb := sackd.ControllerBag{
		Controllers:  ctls,
		AuthSecretID: h.st.SecretID,
		ClusterName:  h.cfg.ClusterName,
		ConfDigest:   sackd.DigestFiles(files),
	}
	// The version login units check theirs against (none while unknown), as slurmd units do,
	// and the release the configuration needs (metricsgate.go).
	cb.SlurmVersion, _ = slurm.ParseVersion(h.st.SlurmVersion)
	if metrics, err := confHasMetrics(files[confPath]); err != nil {
		return nil, err
	} else if metrics {
		cb.ConfMinVersion = metricsRelease
	}
	bag, err := cb.Encode()
	if err != nil {
		return nil, fmt.Errorf("cannot publish the controller's data to login nodes: %w", err)
	}
	return bag, nil
}

// served reads the configuration files slurmctld serves from the live confDir: slurm.conf,
// the files it includes and the others of servedConf that exist. nil when there is no
// slurm.conf yet.
func (l loginNodes) served() (map[string][]byte, error) {
	c := l.h.c
	conf, err := os.ReadFile(c.Path(confPath))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", confPath, err)
	}
	doc, err := slurmconf.Parse(conf)
	if err != nil {
		return nil, fmt.Errorf("cannot parse %s: %w", confPath, err)
	}
	paths := make([]string, 0, len(servedConf))
	for _, n := range servedConf {
		paths = append(paths, filepath.Join(confDir, n))
	}
	for _, inc := range doc.Includes() {
		if !filepath.IsAbs(inc) {
			inc = filepath.Join(confDir, inc)
		}
		paths = append(paths, inc)
	}
	files := map[string][]byte{confPath: conf}
	for _, p := range paths {
		if p == confPath {
			continue
		}
		data, err := os.ReadFile(c.Path(p))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, fmt.Errorf("cannot read %s: %w", p, err)
		}
		files[p] = data
	}
	return files, nil
}

// relations lists the login relations: from the record when it has them all, else with
// relation-ids (then the record follows them). A relation being broken is not one.
func (l loginNodes) relations(ctx context.Context) ([]juju.RelationID, error) {
	h := l.h
	if _, err := (publisher{h}).known(ctx, sackd.RequirerEndpoint, &h.pub.Login, &h.pub.LoginKnown); err != nil {
		return nil, err
	}
	if ev := h.hc.Event; ev.Kind == juju.RelationBroken && ev.Endpoint == sackd.RequirerEndpoint {
		delete(h.pub.Login, ev.Relation)
	}
	return sortedKeys(h.pub.Login), nil
}

// loginRelation returns p's record of login relation id, adding an empty one.
func loginRelation(p *published, id juju.RelationID) *publishedRel { return record(&p.Login, id) }
