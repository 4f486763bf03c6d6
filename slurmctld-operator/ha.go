package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/interfaces/mountinfo"
	"github.com/charmed-slurm/operators/libs/juju"
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

// peerRelation is the peer relation's id ("" while Juju has not created it); relation-ids
// runs once per hook (juju.Relations remembers it).
func (h *hook) peerRelation(ctx context.Context) (juju.RelationID, error) {
	return h.hc.Relations.First(ctx, peerEndpoint)
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
	ctls := h.retire(ctx, prev, nextControllers(prev, cands))
	if err := checkControllers(ctls); err != nil {
		return nil, fmt.Errorf("cannot list the controllers: %w", err)
	}
	return ctls, nil
}

// retire is next, the controller list after a change of the peers, unless only backups
// listed after every remaining controller left and this unit's slurmctld, in control, runs
// with prev: then the backups that left stay at the end of the list, marked Gone, so that
// SlurmctldHost (read at start only) keeps its value and the controller in control is
// neither restarted nor reconfigured for a backup's removal. They go at the next change that
// restarts slurmctld anyway (a controller added), and are never published as controllers.
// Backups marked Gone by an earlier hook stay without the heartbeat being read again: it
// said then that this unit was in control, their slurmctld is stopped, and the file is
// briefly absent while the controller in control replaces it (Slurm's own reader,
// get_last_heartbeat, retries its open for that), which must not restart slurmctld in any
// later hook.
func (h *hook) retire(ctx context.Context, prev, next []controller) []controller {
	if len(next) == 0 || len(next) >= len(prev) {
		return next
	}
	marked := !slices.ContainsFunc(prev[len(next):], func(c controller) bool { return !c.Gone })
	act, known := controller{Unit: h.hc.Event.Unit}, true
	if !marked {
		saved := h.ctls
		h.ctls = prev
		act, known = h.activeController()
		h.ctls = saved
	}
	why := ""
	switch {
	case !slices.Equal(h.st.RunningHosts, hostsOf(prev)):
		why = fmt.Sprintf("slurmctld runs with %v, not %v", h.st.RunningHosts, hostsOf(prev))
	case !slices.Equal(next, prev[:len(next)]):
		why = "a controller listed before the last one left"
	case !known:
		why = "no fresh heartbeat says which controller is in control"
	case act.Unit != h.hc.Event.Unit:
		why = act.Unit + " is in control"
	case !h.c.running(ctx):
		why = "slurmctld is not running here"
	}
	if why != "" {
		h.logf(ctx, juju.LevelInfo, "controllers left: SlurmctldHost changes (%s)", why)
		return next
	}
	out := slices.Clone(next)
	for _, p := range prev[len(next):] {
		if !p.Gone {
			h.logf(ctx, juju.LevelInfo, "%s left: it stays in SlurmctldHost until slurmctld next starts (no restart for a backup's removal)", p.Unit)
		}
		p.Gone = true
		out = append(out, p)
	}
	return out
}

func unitNumber(u string) int {
	i, _ := strconv.Atoi(u[strings.LastIndex(u, "/")+1:])
	return i
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

// heartbeatTries and heartbeatPause: the controller in control replaces its heartbeat by
// unlink, then link (Slurm 22.05), so for a moment there is none, and a hook reading it then
// took the controller in control for unknown (and changed SlurmctldHost for a backup's
// removal). Slurm's own reader (get_last_heartbeat in heartbeat.c) tries its open 3 times for
// that. The gap lasts microseconds: 10 ms apart is plenty, and costs 20 ms where there is no
// heartbeat at all.
const (
	heartbeatTries = 3
	heartbeatPause = 10 * time.Millisecond
)

// readRetrying is read, tried up to tries times with pause between while it finds no file.
func readRetrying(read func() ([]byte, error), tries int, pause func()) ([]byte, error) {
	for try := 1; ; try++ {
		data, err := read()
		if !errors.Is(err, fs.ErrNotExist) || try >= tries {
			return data, err
		}
		pause()
	}
}

// activeController reads the heartbeat slurmctld's controller in control writes in
// StateSaveLocation (time and SlurmctldHost index, two big-endian 64-bit words, every
// SlurmctldTimeout/4 at most 30 s apart; only with a backup) and returns that controller, if
// the heartbeat is fresh (under a minute old).
func (h *hook) activeController() (controller, bool) {
	if len(h.ctls) < 2 || !h.st.StateShared && h.leader {
		return controller{}, false
	}
	path := h.c.Path(filepath.Join(sharedStateDir, "heartbeat"))
	data, err := readRetrying(func() ([]byte, error) { return os.ReadFile(path) }, heartbeatTries, func() { time.Sleep(heartbeatPause) })
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
	n := len(live(h.ctls))
	if n < 2 {
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
		return fmt.Sprintf("%s of %d controllers, active one unknown (no fresh heartbeat)", role, n)
	case act.Unit == unit:
		return fmt.Sprintf("active controller (%s of %d)", role, n)
	}
	return fmt.Sprintf("%s controller standing by (active: %s)", role, act.Unit)
}
