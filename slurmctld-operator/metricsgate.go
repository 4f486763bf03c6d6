package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/sackd"
	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// The metrics keys and the daemons that read the configuration. slurmctld serves slurm.conf
// to every slurmd and sackd (configless), and each parses it at start: a key of a later
// release is fatal there (24.11 on 26.05's MetricsType: "Parsing error at unrecognized key",
// the node never registers). So slurm.conf carries the OpenMetrics keys only while every
// slurmd and sackd known to the controller runs 25.11 or later; a unit that does not say
// which release it runs (an older charm) counts as one that cannot. The controller publishes
// conf_min_version (25.11) while it serves them, and a slurmd or sackd unit of an older
// release waits before it starts until it is gone: the unit publishes its release on its
// first relation hook, the controller leaves the keys out (one reconfigure), and only then
// does the unit start its daemon, which fetches a configuration it can read.

// metricsKeys are the slurm.conf keys Slurm 25.11 brought for OpenMetrics, which no earlier
// parser reads.
var metricsKeys = []string{"MetricsType", "MetricsParameters", "MetricsAuthUsers"}

// metricsRelease is the first release that reads metricsKeys (Features.OpenMetrics).
var metricsRelease = slurm.Version{Major: 25, Minor: 11}

// nodeRelease is what a slurmd application (its leader's ComputeData) or unit (its unit
// databag) said of the Slurm it runs, as charmState.SlurmdReleases keeps it.
type nodeRelease struct {
	Relation juju.RelationID `json:"relation"`
	// Version is the release ("24.11.5"); "" when the application or unit published data
	// without one (an older charm).
	Version string `json:"version,omitempty"`
}

// metricsGate decides whether slurm.conf may carry metricsKeys and brings the live files to
// that decision.
type metricsGate struct{ h *hook }

// recordSlurmd records what the slurmd relation's hook (its event ev) tells of the releases:
// the application's from its ComputeData, a unit's from its unit databag on its
// relation-changed; a departed unit and a broken relation are forgotten. Every controller
// unit keeps the record, so that a new leader has it.
func (g metricsGate) recordSlurmd(ctx context.Context, ev slurmd.Event) {
	h := g.h
	hev := h.hc.Event
	switch ev := ev.(type) {
	case slurmd.SlurmdReady:
		g.set(ev.App, nodeRelease{Relation: ev.Relation, Version: versionString(ev.Data.SlurmVersion)})
	case slurmd.SlurmdDeparted:
		delete(h.st.SlurmdReleases, ev.Unit)
	case slurmd.SlurmdDisconnected:
		maps.DeleteFunc(h.st.SlurmdReleases, func(_ string, r nodeRelease) bool { return r.Relation == ev.Relation })
	}
	if hev.Kind == juju.RelationChanged && hev.RemoteUnit != "" {
		g.recordUnit(ctx, hev.Relation, hev.RemoteUnit)
	}
}

// recordUnit records unit's release from its databag on relation rel: nothing while it has
// published nothing; a version that does not decode counts as none.
func (g metricsGate) recordUnit(ctx context.Context, rel juju.RelationID, unit string) {
	h := g.h
	u, err := slurmd.Requirer{HookContext: h.hc}.Unit(ctx, rel, unit)
	var de *slurmd.DataError
	switch {
	case errors.Is(err, slurmd.ErrNotReady):
		return
	case errors.As(err, &de):
		h.logf(ctx, juju.LevelWarning, "slurmd unit %s: %v (taken for a release without OpenMetrics)", unit, err)
	case err != nil:
		h.logf(ctx, juju.LevelWarning, "cannot read the Slurm release of %s: %v", unit, err)
		return
	}
	g.set(unit, nodeRelease{Relation: rel, Version: versionString(u.SlurmVersion)})
}

// set records r under name (an application or a unit).
func (g metricsGate) set(name string, r nodeRelease) {
	st := g.h.st
	if st.SlurmdReleases == nil {
		st.SlurmdReleases = map[string]nodeRelease{}
	}
	st.SlurmdReleases[name] = r
}

// rescan reads every slurmd application's and unit's release again (upgrade-charm: the state
// may predate the record, and the record may predate units that publish).
func (g metricsGate) rescan(ctx context.Context) error {
	h := g.h
	rels, err := h.hc.Relations.IDs(ctx, slurmd.RequirerEndpoint)
	if err != nil {
		return fmt.Errorf("cannot list slurmd relations: %w", err)
	}
	h.st.SlurmdReleases = nil
	for _, rel := range rels {
		app, data, err := slurmd.Requirer{HookContext: h.hc, Keys: charm.ConfKeys(h.st.SlurmVersion)}.Compute(ctx, rel)
		var de *slurmd.DataError
		switch {
		case err == nil:
			g.set(app, nodeRelease{Relation: rel, Version: versionString(data.SlurmVersion)})
		case errors.Is(err, slurmd.ErrNotReady):
		case errors.As(err, &de):
			g.set(app, nodeRelease{Relation: rel})
		default:
			return err
		}
		units, err := h.hc.Relations.Units(ctx, rel)
		if err != nil {
			return fmt.Errorf("cannot list the units of %s: %w", rel, err)
		}
		for _, u := range units {
			g.recordUnit(ctx, rel, u)
		}
	}
	return nil
}

// blocker says why slurm.conf must not carry metricsKeys although this Slurm serves
// OpenMetrics: the first slurmd application or unit, then login unit, that runs an older
// release or does not say which (by name); "" when there is none.
func (g metricsGate) blocker() string {
	return metricsBlocker(g.h.st)
}

// metricsBlocker is metricsGate.blocker for state st.
func metricsBlocker(st *charmState) string {
	why := func(kind, name, version string) string {
		app, _, _ := strings.Cut(name, "/")
		if version == "" {
			return fmt.Sprintf("%s application %s does not say which Slurm it runs (an older charm)", kind, app)
		}
		v, err := slurm.ParseVersion(version)
		if err != nil || !v.AtLeast(metricsRelease.Major, metricsRelease.Minor) {
			return fmt.Sprintf("%s application %s runs Slurm %s", kind, app, majorMinor(v, version))
		}
		return ""
	}
	for _, name := range sortedKeys(st.SlurmdReleases) {
		if w := why("slurmd", name, st.SlurmdReleases[name].Version); w != "" {
			return w
		}
	}
	for _, name := range sortedKeys(st.LoginHosts) {
		if w := why("login", name, st.LoginHosts[name].Version); w != "" {
			return w
		}
	}
	return ""
}

// metricsStatus is the unit status's note on metrics kept off by an older node (status.go
// appends it): "" when none is.
func metricsStatus(st *charmState) string {
	if !openMetrics(st.SlurmVersion) {
		return ""
	}
	if w := metricsBlocker(st); w != "" {
		return fmt.Sprintf("; metrics off: %s; metrics need %d.%02d on every node", w, metricsRelease.Major, metricsRelease.Minor)
	}
	return ""
}

// edit leaves metricsKeys out of slurm.conf d (slurmConf.write runs it last) while a node
// cannot read them, whether the charm's default or slurm-conf-parameters set them.
func (g metricsGate) edit(d *slurmconf.Doc) {
	if g.blocker() == "" {
		return
	}
	for _, k := range metricsKeys {
		d.Delete(k)
	}
}

// sync brings the live slurm.conf to the decision when it differs (a node's release came or
// went): slurm.conf written, slurmctld reconfigured, then the new conf_min_version published
// to the slurmd applications (the login applications follow in loginNodes.sync) and the
// scrape jobs to cos-agent. Only the leader that runs the controller does it.
func (g metricsGate) sync(ctx context.Context) error {
	h := g.h
	switch h.hc.Event.Kind {
	case juju.Install, juju.Action:
		return nil
	}
	if !h.leader || h.st.ClusterName == "" || h.configProblem() != nil || !openMetrics(h.st.SlurmVersion) {
		return nil
	}
	want := g.blocker() == ""
	served, err := g.served(ctx)
	if err != nil || served == want {
		return err
	}
	if want {
		h.logf(ctx, juju.LevelInfo, "every node runs Slurm %d.%02d or later: metrics on", metricsRelease.Major, metricsRelease.Minor)
	} else {
		h.logf(ctx, juju.LevelInfo, "metrics off (%s left out of slurm.conf): %s", strings.Join(metricsKeys, ", "), g.blocker())
	}
	if refused, err := (slurmConf{h}).rewrite(ctx); err != nil || refused != nil {
		return err
	}
	if err := (publisher{h}).all(ctx); err != nil {
		return err
	}
	if err := (cosAgent{h}).publish(ctx); err != nil {
		return err
	}
	// The status the handler set said "reconfiguring" meanwhile, or nothing of this.
	return h.report(ctx)
}

// served reports whether the live slurm.conf carries a metrics key.
func (g metricsGate) served(ctx context.Context) (bool, error) {
	data, err := os.ReadFile(g.h.c.Path(confPath))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cannot read %s: %w", confPath, err)
	}
	return confHasMetrics(data)
}

// confMinVersion is the conf_min_version the controller publishes: metricsRelease while the
// live slurm.conf carries a metrics key, else zero (none).
func (g metricsGate) confMinVersion(ctx context.Context) (slurm.Version, error) {
	served, err := g.served(ctx)
	if err != nil || !served {
		return slurm.Version{}, err
	}
	return metricsRelease, nil
}

// confHasMetrics reports whether slurm.conf content data sets a metrics key.
func confHasMetrics(data []byte) (bool, error) {
	d, err := slurmconf.Parse(data)
	if err != nil {
		return false, fmt.Errorf("cannot read %s: %w", confPath, err)
	}
	for _, k := range metricsKeys {
		if _, ok := d.Get(k); ok {
			return true, nil
		}
	}
	return false, nil
}

// loginVersion is the release a login unit published, as loginHost keeps it.
func loginVersion(h sackd.LoginHost) string { return versionString(h.SlurmVersion) }

// versionString is v as the state keeps it: "" for none.
func versionString(v slurm.Version) string {
	if v.IsZero() {
		return ""
	}
	return v.String()
}

// majorMinor is v's release ("24.11"), or raw when it did not parse.
func majorMinor(v slurm.Version, raw string) string {
	if v.IsZero() {
		return raw
	}
	return fmt.Sprintf("%d.%02d", v.Major, v.Minor)
}
