package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/interfaces/mountinfo"
	"github.com/charmed-slurm/operators/libs/atomicfile"
	"github.com/charmed-slurm/operators/libs/juju"
)

// Controller high availability: every unit runs slurmctld, the leader's configuration on each,
// SlurmctldHost listing them in the stable order of the peer relation, StateSaveLocation on
// storage they share through the mount_info relation (a filesystem-client subordinate). A unit
// that is not the leader runs slurmctld only once the shared storage is mounted on it and the
// leader lists it: never two controllers with separate state.
const (
	// sharedMount is where the filesystem-client subordinate mounts the shared storage (the
	// reference charms' mountpoint).
	sharedMount = "/mnt/slurmctld-statefs"
	// sharedStateDir is StateSaveLocation on the shared storage.
	sharedStateDir = sharedMount + "/checkpoint"
)

// storage is this unit's view of the shared storage.
type storage struct {
	Related bool // a mount relation exists
	Mounted bool // its filesystem-client unit on this machine reports it mounted
}

// storage reads the mount relation; the leader (re)writes its request there.
func (h *hook) storage(ctx context.Context) (storage, error) {
	r := mountinfo.Requirer{HookContext: h.hc}
	id, err := r.Relation(ctx)
	if err != nil {
		return storage{}, err
	}
	ev := h.hc.Event
	if id == "" || (ev.Kind == juju.RelationBroken && ev.Relation == id) {
		return storage{}, nil
	}
	if h.leader {
		if err := r.Request(ctx, id, mountinfo.Info{Mountpoint: sharedMount, NoExec: true, NoSUID: true, NoDev: true}); err != nil {
			return storage{}, fmt.Errorf("cannot ask for the shared storage: %w", err)
		}
	}
	m, _, err := r.Mounted(ctx, id)
	if err != nil {
		return storage{Related: true}, err
	}
	return storage{Related: true, Mounted: m == mountinfo.IsMounted}, nil
}

// peerRelation is the peer relation's id ("" while Juju has not created it), listed once
// per hook.
func (h *hook) peerRelation(ctx context.Context) (juju.RelationID, error) {
	if h.peerRead {
		return h.peerRel, nil
	}
	ids, err := h.hc.Relations.IDs(ctx, peerEndpoint)
	if err != nil {
		return "", err
	}
	if len(ids) > 0 {
		h.peerRel = ids[0]
	}
	h.peerRead = true
	return h.peerRel, nil
}

// self is this unit as a controller.
func (h *hook) self(ctx context.Context) (controller, error) {
	host, err := h.c.Hostname()
	if err != nil {
		return controller{}, fmt.Errorf("cannot find the host name: %w", err)
	}
	addr, err := h.ingress(ctx)
	if err != nil {
		return controller{}, err
	}
	return controller{Unit: h.hc.Event.Unit, Host: host, Addr: addr}, nil
}

// publishSelf writes this unit's host name, address and storage in its peer bag.
func (h *hook) publishSelf(ctx context.Context, rel juju.RelationID, me controller, st storage) error {
	bag := map[string]string{peerKeyHost: me.Host, peerKeyAddr: me.Addr, peerKeyStorage: ""}
	if st.Mounted {
		bag[peerKeyStorage] = storageMounted
	}
	if err := h.hc.Relations.SetUnitData(ctx, rel, bag); err != nil {
		return fmt.Errorf("cannot publish this controller to its peers: %w", err)
	}
	return nil
}

// planControllers is the leader's controller list for this hook: itself alone without shared
// storage (or before its state is on it); else the recorded order, kept, with the peers that
// mounted the storage appended and the departed dropped. It also publishes this unit's own
// peer data.
func (h *hook) planControllers(ctx context.Context, st storage) ([]controller, error) {
	me, err := h.self(ctx)
	if err != nil {
		return nil, err
	}
	rel, err := h.peerRelation(ctx)
	if err != nil {
		return nil, err
	}
	if rel == "" {
		return []controller{me}, nil
	}
	if err := h.publishSelf(ctx, rel, me, st); err != nil {
		return nil, err
	}
	if !st.Mounted || !h.st.StateShared {
		return []controller{me}, nil
	}
	app, err := h.hc.Relations.AppData(ctx, rel, h.hc.Event.App)
	if err != nil {
		return nil, err
	}
	prev, err := decodeControllers(app[peerKeyControllers])
	if err != nil {
		h.logf(ctx, juju.LevelWarning, "%v: starting the list again", err)
		prev = nil
	}
	units, err := h.hc.Relations.Units(ctx, rel)
	if err != nil {
		return nil, err
	}
	if h.hc.Event.Kind == juju.RelationDeparted && h.hc.Event.Endpoint == peerEndpoint {
		units = slices.DeleteFunc(units, func(u string) bool { return u == h.hc.Event.RemoteUnit })
	}
	slices.SortFunc(units, func(a, b string) int { return unitNumber(a) - unitNumber(b) })
	cands := []controller{me}
	for _, u := range units {
		bag, err := h.hc.Relations.UnitData(ctx, rel, u)
		if err != nil {
			return nil, err
		}
		c := controller{Unit: u, Host: bag[peerKeyHost], Addr: bag[peerKeyAddr]}
		if bag[peerKeyStorage] != storageMounted {
			continue
		}
		if err := c.check(); err != nil {
			h.logf(ctx, juju.LevelWarning, "not a controller yet: %v", err)
			continue
		}
		cands = append(cands, c)
	}
	ctls := nextControllers(prev, cands)
	if err := checkControllers(ctls); err != nil {
		return nil, fmt.Errorf("cannot list the controllers: %w", err)
	}
	return ctls, nil
}

func unitNumber(u string) int {
	i, _ := strconv.Atoi(u[strings.LastIndex(u, "/")+1:])
	return i
}

// stateSaveLocation is StateSaveLocation: on the shared storage once the state moved there.
func (h *hook) stateSaveLocation() string {
	if h.st.StateShared {
		return sharedStateDir
	}
	return stateSaveDir
}

// moveState moves the controller's state to the shared storage, once, with slurmctld stopped:
// the state directory is copied there when the shared one holds no state yet; a shared
// directory already holding this cluster's state (another controller ran on it) is kept, one
// of another cluster is refused. slurmctld starts again from the shared state when the hook
// has rewritten slurm.conf.
func (h *hook) moveState(ctx context.Context) error {
	c := h.c
	dst := c.Path(sharedStateDir)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("cannot create %s on the shared storage: %w", sharedStateDir, err)
	}
	if data, err := os.ReadFile(filepath.Join(dst, "clustername")); err == nil {
		got, _, _ := strings.Cut(strings.TrimSpace(string(data)), "|")
		if got != "" && got != h.cfg.ClusterName {
			return fmt.Errorf("the shared storage holds the state of cluster %q, not %q: refusing to share it", got, h.cfg.ClusterName)
		}
	}
	entries, err := os.ReadDir(dst)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", sharedStateDir, err)
	}
	if h.running(ctx) {
		if err := h.progress(ctx, "stopping slurmctld to move its state to the shared storage"); err != nil {
			return err
		}
		if err := c.Services.Stop(ctx, svcSlurmctld); err != nil {
			return fmt.Errorf("cannot stop slurmctld: %w", err)
		}
	}
	if len(entries) == 0 {
		if err := copyTree(c.Path(stateSaveDir), dst); err != nil {
			return fmt.Errorf("cannot copy %s to %s: %w", stateSaveDir, sharedStateDir, err)
		}
		h.logf(ctx, juju.LevelInfo, "moved the controller's state from %s to the shared %s", stateSaveDir, sharedStateDir)
	} else {
		h.logf(ctx, juju.LevelInfo, "the shared %s holds this cluster's state already: keeping it", sharedStateDir)
	}
	uid, gid, err := c.UserIDs(slurmUser)
	if err != nil {
		return err
	}
	if err := filepath.WalkDir(dst, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}); err != nil {
		return fmt.Errorf("cannot give %s to %s: %w", sharedStateDir, slurmUser, err)
	}
	h.st.StateShared = true
	return nil
}

// copyTree copies the regular files and directories below src into dst (modes kept, each
// file fsynced: the state must be on the shared storage before slurmctld starts from it).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == src {
				return nil // no state yet
			}
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, info.Mode().Perm())
		case !d.Type().IsRegular():
			return nil // sockets, links: no state of slurmctld's
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
		if err != nil {
			return err
		}
		_, werr := f.Write(data)
		return errors.Join(werr, f.Sync(), f.Close())
	})
}

// sharedConf reads the live configuration files every controller runs with.
func (h *hook) sharedConf() (map[string]string, error) {
	dir := h.c.Path(confDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	for _, e := range entries {
		if !e.Type().IsRegular() || !managedConf(e.Name()) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files[e.Name()] = string(data)
	}
	return files, nil
}

// publishPeers writes the controllers, the configuration and the auth secret's id in the
// peer application bag (leader only), when they changed.
func (h *hook) publishPeers(ctx context.Context) error {
	rel, err := h.peerRelation(ctx)
	if err != nil || rel == "" {
		return err
	}
	ctls, err := encodeControllers(h.ctls)
	if err != nil {
		return err
	}
	files, err := h.sharedConf()
	if err != nil {
		return fmt.Errorf("cannot read the configuration to share: %w", err)
	}
	conf, err := json.Marshal(files)
	if err != nil {
		return err
	}
	bag := map[string]string{peerKeyControllers: ctls, peerKeyConf: string(conf), peerKeySecret: h.st.SecretID}
	if h.pub.Peers != nil && maps.Equal(h.pub.Peers, bag) {
		return nil
	}
	if err := h.hc.Relations.SetAppData(ctx, rel, bag); err != nil {
		return fmt.Errorf("cannot publish the controllers to the peers: %w", err)
	}
	h.pub.Peers = bag
	return nil
}

// hosts are the SlurmctldHost values of the controllers.
func hostsOf(ctls []controller) []string {
	out := make([]string, len(ctls))
	for i, c := range ctls {
		out[i] = c.SlurmctldHost()
	}
	return out
}

// configureBackup brings a unit that is not the leader to its place: a controller running
// the leader's configuration from the shared storage once both are there, else nothing
// running and a status saying what it waits for.
func (h *hook) configureBackup(ctx context.Context) error {
	st, err := h.storage(ctx)
	if err != nil {
		return err
	}
	rel, err := h.peerRelation(ctx)
	if err != nil {
		return err
	}
	if rel != "" {
		me, err := h.self(ctx)
		if err != nil {
			return err
		}
		if err := h.publishSelf(ctx, rel, me, st); err != nil {
			return err
		}
	}
	unit := h.hc.Event.Unit
	h.backupWait = ""
	switch {
	case !st.Related:
		h.backupWait = "blocked:a backup controller needs shared storage: integrate slurmctld with filesystem-client (mount relation)"
	case !st.Mounted:
		h.backupWait = "waiting:waiting for the shared storage to be mounted at " + sharedMount
	case rel == "":
		h.backupWait = "waiting:waiting for the peer relation"
	}
	if h.backupWait != "" {
		// Never a controller with state of its own.
		if h.running(ctx) {
			if err := h.c.Services.Stop(ctx, svcSlurmctld); err != nil {
				return fmt.Errorf("cannot stop slurmctld: %w", err)
			}
		}
		return h.setStatus(ctx)
	}
	app, err := h.hc.Relations.AppData(ctx, rel, h.hc.Event.App)
	if err != nil {
		return err
	}
	ctls, err := decodeControllers(app[peerKeyControllers])
	if err != nil {
		return err
	}
	files, err := decodeConf(app[peerKeyConf])
	if err != nil {
		return err
	}
	h.ctls = ctls
	if !slices.ContainsFunc(ctls, func(c controller) bool { return c.Unit == unit }) || files == nil || app[peerKeySecret] == "" {
		h.backupWait = "waiting:waiting for the leader to add this unit to the controllers"
		return h.setStatus(ctx)
	}
	feat, err := h.features(ctx)
	if err != nil {
		return err
	}
	h.st.SecretID = app[peerKeySecret]
	if err := h.ensureKey(ctx, feat); err != nil {
		return err
	}
	if err := h.ensureGresConf(ctx); err != nil {
		return err
	}
	if _, err := h.ensureCgroupConf(ctx, feat); err != nil {
		return err
	}
	if err := h.writeSharedConf(ctx, files); err != nil {
		return err
	}
	sum := confHash(files)
	switch {
	case !h.running(ctx):
		if err := h.startSlurmctld(ctx); err != nil {
			return err
		}
	case sum != h.st.AppliedConf && h.isActive() && slices.Equal(h.st.RunningHosts, hostsOf(ctls)):
		// In control (the primary is away) and the controllers unchanged: a restart would
		// leave the cluster without a controller for SlurmctldTimeout; reconfigure instead.
		if err := h.reconfigure(ctx); err != nil {
			return err
		}
	case sum != h.st.AppliedConf:
		if err := h.progress(ctx, "restarting slurmctld with the leader's configuration"); err != nil {
			return err
		}
		if err := h.c.restart(ctx, svcSlurmctld); err != nil {
			return err
		}
		if err := h.waitUp(ctx, "restarted"); err != nil {
			return err
		}
	}
	h.st.AppliedConf = sum
	h.st.RunningHosts, h.st.Controllers = hostsOf(ctls), ctls
	if err := h.openPort(ctx); err != nil {
		return err
	}
	return h.setStatus(ctx)
}

// writeSharedConf installs the leader's configuration files and removes managed files it no
// longer has (a removed partition's include).
func (h *hook) writeSharedConf(ctx context.Context, files map[string]string) error {
	dir := h.c.Path(confDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range sortedKeys(files) {
		p := filepath.Join(dir, name)
		if old, err := os.ReadFile(p); err == nil && string(old) == files[name] {
			continue
		}
		if err := atomicfile.Write(ctx, p, []byte(files[name]), atomicfile.Options{Mode: 0o644}); err != nil {
			return fmt.Errorf("cannot write %s: %w", p, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, keep := files[e.Name()]; !keep && e.Type().IsRegular() && managedConf(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func confHash(files map[string]string) string {
	s := sha256.New()
	for _, name := range sortedKeys(files) {
		fmt.Fprintf(s, "%s\x00%d\x00%s", name, len(files[name]), files[name])
	}
	return hex.EncodeToString(s.Sum(nil))
}

// activeController reads the heartbeat slurmctld's controller in control writes in
// StateSaveLocation (time and SlurmctldHost index, two big-endian 64-bit words, every
// SlurmctldTimeout/4 at most 30 s apart; only with a backup) and returns that controller, if
// the heartbeat is fresh (under a minute old).
func (h *hook) activeController() (controller, bool) {
	if len(h.ctls) < 2 || !h.st.StateShared && h.leader {
		return controller{}, false
	}
	data, err := os.ReadFile(h.c.Path(filepath.Join(sharedStateDir, "heartbeat")))
	if err != nil || len(data) < 16 {
		return controller{}, false
	}
	at := time.Unix(int64(binary.BigEndian.Uint64(data[:8])), 0)
	idx := binary.BigEndian.Uint64(data[8:16])
	if h.c.Now().Sub(at) > time.Minute || idx >= uint64(len(h.ctls)) {
		return controller{}, false
	}
	return h.ctls[idx], true
}

// isActive reports whether this unit's slurmctld is the controller in control.
func (h *hook) isActive() bool {
	act, ok := h.activeController()
	return ok && act.Unit == h.hc.Event.Unit
}

// haStatus is the part of the status naming this unit's role: "" with a single controller.
func (h *hook) haStatus(ctx context.Context) string {
	if h.ctls == nil {
		h.ctls = h.st.Controllers
	}
	if len(h.ctls) < 2 {
		return ""
	}
	unit := h.hc.Event.Unit
	i := slices.IndexFunc(h.ctls, func(c controller) bool { return c.Unit == unit })
	if i < 0 {
		return ""
	}
	role := "primary"
	if i > 0 {
		role = fmt.Sprintf("backup %d", i)
	}
	act, ok := h.activeController()
	switch {
	case !ok:
		return fmt.Sprintf("%s of %d controllers, active one unknown (no fresh heartbeat)", role, len(h.ctls))
	case act.Unit == unit:
		return fmt.Sprintf("active controller (%s of %d)", role, len(h.ctls))
	}
	return fmt.Sprintf("%s controller standing by (active: %s)", role, act.Unit)
}

// takeover is the takeover action: this unit's slurmctld, a backup, takes control.
func (h *hook) takeover(ctx context.Context) error {
	hc := h.hc
	rel, err := h.peerRelation(ctx)
	if err != nil {
		return err
	}
	if len(h.ctls) == 0 {
		h.ctls = h.st.Controllers
	}
	if rel != "" && len(h.ctls) == 0 {
		app, err := hc.Relations.AppData(ctx, rel, hc.Event.App)
		if err != nil {
			return err
		}
		if h.ctls, err = decodeControllers(app[peerKeyControllers]); err != nil {
			return err
		}
	}
	i := slices.IndexFunc(h.ctls, func(c controller) bool { return c.Unit == hc.Event.Unit })
	switch {
	case i < 0 || len(h.ctls) < 2:
		return hc.Actions.Fail(ctx, "this unit is not a backup controller (the controllers: "+fmt.Sprint(hostsOf(h.ctls))+")")
	case i == 0:
		return hc.Actions.Fail(ctx, "this unit is the primary controller: run takeover on a backup (the primary takes control back when it restarts)")
	}
	if act, ok := h.activeController(); ok && act.Unit == hc.Event.Unit {
		return hc.Actions.Set(ctx, map[string]string{"result": "this unit is the active controller already"})
	}
	if err := h.c.client().Takeover(ctx, i); err != nil {
		return hc.Actions.Fail(ctx, fmt.Sprintf("scontrol takeover %d: %v", i, err))
	}
	return hc.Actions.Set(ctx, map[string]string{"result": fmt.Sprintf("takeover requested: %s (backup %d) takes control within a few seconds", hc.Event.Unit, i)})
}
