package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/charmed-slurm/operators/interfaces/sackd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// The sackd relation: login applications (the sackd charm). What the leader publishes to each
// is the controllers, the auth key secret (granted to the relation) and the digest of the
// configuration slurmctld serves (sackd.ControllerBag). loginNodes decides it, once at the
// end of every successful leader hook but install and actions (Charm.handle): whatever the
// hook changed (a new key secret, a controller list, slurm.conf, a new leadership term that
// trusts no earlier record), every login application has it when the hook ends, and a hook
// that changed none of it writes nothing. The relation's own hooks only keep the record of
// which login relations exist.

// servedConf are the files of confDir slurmctld serves to configless clients (sackd and
// slurmd fetch them), besides slurm.conf's includes: Slurm's configless list.
var servedConf = []string{
	"slurm.conf", "acct_gather.conf", "cgroup.conf", "cli_filter.lua", "gres.conf", "helpers.conf",
	"job_container.conf", "knl_cray.conf", "knl_generic.conf", "mpi.conf", "oci.conf",
	"plugstack.conf", "scrun.lua", "topology.conf", "topology.yaml",
}

// sackdRelation handles the hooks of the sackd endpoint: the leader records the login
// relations as they come and go; Charm.handle then publishes to them (loginNodes.publish).
func (c *Charm) sackdRelation(ctx context.Context, h *hook) error {
	ev, err := sackd.Requirer{HookContext: h.hc}.Event(ctx)
	if err != nil {
		return err
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
	return h.setStatus(ctx)
}

// loginNodes publishes the controller's data to the login applications of one hook.
type loginNodes struct{ h *hook }

// publish grants the auth key secret to every login relation and writes the controller's
// data there, where the record says it is not so already. It does nothing on a unit that is
// not the leader, while the configuration is refused (the running controller keeps the
// previous one, as the slurmd relation does), before the auth key secret and slurm.conf
// exist, and in install and actions.
func (l loginNodes) publish(ctx context.Context) error {
	h := l.h
	switch h.hc.Event.Kind {
	case juju.Install, juju.Action:
		return nil
	}
	if !h.leader || h.cfgErr != nil || h.clusterNameError() != nil || h.st.SecretID == "" {
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
		if err := h.hc.Relations.SetAppData(ctx, rel, bag); err != nil {
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
	bag, err := sackd.ControllerBag{
		Controllers:  ctls,
		AuthSecretID: h.st.SecretID,
		ClusterName:  h.cfg.ClusterName,
		ConfDigest:   sackd.DigestFiles(files),
	}.Encode()
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
	if !h.pub.LoginKnown {
		ids, err := h.hc.Relations.IDs(ctx, sackd.RequirerEndpoint)
		if err != nil {
			return nil, fmt.Errorf("cannot list the sackd relations: %w", err)
		}
		for id := range h.pub.Login {
			if !slices.Contains(ids, id) {
				delete(h.pub.Login, id)
			}
		}
		for _, id := range ids {
			loginRelation(h.pub, id)
		}
		h.pub.LoginKnown = true
	}
	if ev := h.hc.Event; ev.Kind == juju.RelationBroken && ev.Endpoint == sackd.RequirerEndpoint {
		delete(h.pub.Login, ev.Relation)
	}
	return sortedKeys(h.pub.Login), nil
}

// loginRelation returns p's record of login relation id, adding an empty one.
func loginRelation(p *published, id juju.RelationID) *publishedRel {
	if p.Login == nil {
		p.Login = map[juju.RelationID]*publishedRel{}
	}
	r := p.Login[id]
	if r == nil {
		r = &publishedRel{}
		p.Login[id] = r
	}
	return r
}
