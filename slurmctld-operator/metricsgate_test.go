package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// computeOf is app's ComputeData bag as a slurmd charm whose leader runs Slurm version
// publishes it ("" for an older charm, which says none).
func computeOf(t *testing.T, app, version string) map[string]string {
	t.Helper()
	d, err := slurmd.NewComputeData(app, nil)
	if err != nil {
		t.Fatal(err)
	}
	if version != "" {
		if d.SlurmVersion, err = slurm.ParseVersion(version); err != nil {
			t.Fatal(err)
		}
	}
	return d.Encode()
}

// relationOf is state s's relation id.
func relationOf(t *testing.T, s *jujutest.State, id juju.RelationID) *jujutest.Relation {
	t.Helper()
	for i := range s.Relations {
		if s.Relations[i].ID == id {
			return &s.Relations[i]
		}
	}
	t.Fatalf("no relation %s", id)
	return nil
}

// metricsSeen is what the cluster shows of metrics: MetricsType in slurm.conf, the
// conf_min_version published on relation rel, the scrape jobs on cos-agent.
type metricsSeen struct {
	conf       bool
	confMin    string
	scrapeJobs int
}

func (e *env) metricsSeen(s jujutest.State, rel juju.RelationID) metricsSeen {
	e.t.Helper()
	var m metricsSeen
	m.conf = strings.Contains(e.read(confPath), "MetricsType=")
	m.confMin = relationOf(e.t, &s, rel).LocalAppData[slurmd.KeyConfMinVersion]
	d, err := cosagent.Decode(relationOf(e.t, &s, "cos-agent:9").LocalUnitData)
	if err != nil {
		e.t.Fatal(err)
	}
	m.scrapeJobs = len(d.ScrapeJobs)
	return m
}

// TestMetricsGate: on Slurm 26.05 slurm.conf carries MetricsType (and the controller says
// conf_min_version 25.11, and offers scrape jobs) only while every slurmd application and unit
// and every login unit says it runs 25.11 or later. A 24.11 application, a unit of one, an
// older charm that says nothing and a 24.11 login unit each turn metrics off in the hook that
// brings them (slurm.conf rewritten, one reconfigure, conf_min_version gone, no scrape job,
// the status naming why, slurm-conf-parameters' metrics keys left out too); metrics come back
// when they leave. A unit of the same release changes nothing (no reconfigure).
func TestMetricsGate(t *testing.T) {
	on := metricsSeen{conf: true, confMin: "25.11.0", scrapeJobs: 5}
	off := metricsSeen{}
	for _, tt := range []struct {
		name string
		// bring adds the older reader to s and returns the hook that brings it and the
		// status note it gives; gone returns the hooks that take it away (a relation
		// broken goes from the state after its hook).
		bring func(t *testing.T, s *jujutest.State) (juju.Event, string)
		gone  func(t *testing.T, s *jujutest.State) []juju.Event
	}{{
		name: "24.11 application",
		bring: func(t *testing.T, s *jujutest.State) (juju.Event, string) {
			s.Relations = append(s.Relations, relation("slurmd:2", "old", computeOf(t, "old", "24.11.5"), "old/0"))
			return jujutest.RelationHook(juju.RelationChanged, "slurmd:2", ""), "slurmd application old runs Slurm 24.11"
		},
		gone: func(t *testing.T, s *jujutest.State) []juju.Event {
			departs := jujutest.RelationHook(juju.RelationDeparted, "slurmd:2", "old/0")
			departs.DepartingUnit = "old/0"
			delete(relationOf(t, s, "slurmd:2").RemoteUnits, "old/0")
			return []juju.Event{departs, jujutest.RelationHook(juju.RelationBroken, "slurmd:2", "")}
		},
	}, {
		name: "24.11 unit of a 26.05 application",
		bring: func(t *testing.T, s *jujutest.State) (juju.Event, string) {
			relationOf(t, s, "slurmd:1").RemoteUnits["slurmd/1"] = map[string]string{slurmd.KeySlurmVersion: "24.11.5"}
			return jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/1"), "slurmd application slurmd runs Slurm 24.11"
		},
		gone: func(t *testing.T, s *jujutest.State) []juju.Event {
			departs := jujutest.RelationHook(juju.RelationDeparted, "slurmd:1", "slurmd/1")
			departs.DepartingUnit = "slurmd/1"
			delete(relationOf(t, s, "slurmd:1").RemoteUnits, "slurmd/1")
			return []juju.Event{departs}
		},
	}, {
		name: "older charm",
		bring: func(t *testing.T, s *jujutest.State) (juju.Event, string) {
			s.Relations = append(s.Relations, relation("slurmd:2", "old", computeOf(t, "old", ""), "old/0"))
			return jujutest.RelationHook(juju.RelationChanged, "slurmd:2", ""), "slurmd application old does not say which Slurm it runs (an older charm)"
		},
		gone: func(t *testing.T, s *jujutest.State) []juju.Event {
			return []juju.Event{jujutest.RelationHook(juju.RelationBroken, "slurmd:2", "")}
		},
	}, {
		name: "24.11 login unit",
		bring: func(t *testing.T, s *jujutest.State) (juju.Event, string) {
			s.Relations = append(s.Relations, relation(loginRel, "login", nil, "login/0"))
			relationOf(t, s, loginRel).RemoteUnits["login/0"] = map[string]string{"hostname": "juju-3", "address": "10.0.0.14", slurmd.KeySlurmVersion: "24.11.5"}
			return jujutest.RelationHook(juju.RelationChanged, loginRel, "login/0"), "login application login runs Slurm 24.11"
		},
		gone: func(t *testing.T, s *jujutest.State) []juju.Event {
			return []juju.Event{jujutest.RelationHook(juju.RelationBroken, loginRel, "")}
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.slurm.version = "slurm-wlm 26.05.5"
			in := cosState(e)
			in.Config["slurm-conf-parameters"] = "MetricsParameters=ignore_private_data"
			in = e.run(in, jujutest.Hook(juju.ConfigChanged))
			in = e.run(in, jujutest.RelationHook(juju.RelationJoined, "cos-agent:9", "grafana-agent/0"))
			in.Relations = append(in.Relations, relation("slurmd:1", "slurmd", computeOf(t, "slurmd", "26.05.5"), "slurmd/0"))
			relationOf(t, &in, "slurmd:1").RemoteUnits["slurmd/0"] = map[string]string{slurmd.KeySlurmVersion: "26.05.5"}
			for _, ev := range []juju.Event{
				jujutest.RelationHook(juju.RelationCreated, "slurmd:1", ""),
				jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/0"),
				jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"),
			} {
				in = e.run(in, ev)
			}
			if got := e.metricsSeen(in, "slurmd:1"); got != on {
				t.Fatalf("with 26.05 nodes: %+v, want %+v", got, on)
			}
			if !strings.Contains(e.read(confPath), "MetricsParameters=ignore_private_data") {
				t.Errorf("slurm-conf-parameters' MetricsParameters not written with metrics on")
			}
			// A unit of the same release: nothing changes.
			reconfigures := e.slurm.count("scontrol", "reconfigure")
			relationOf(t, &in, "slurmd:1").RemoteUnits["slurmd/2"] = map[string]string{slurmd.KeySlurmVersion: "26.05.5"}
			in = e.run(in, jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/2"))
			in = e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/2"))
			if n := e.slurm.count("scontrol", "reconfigure") - reconfigures; n != 0 {
				t.Errorf("a 26.05 unit's join: %d reconfigures, want none", n)
			}

			ev, why := tt.bring(t, &in)
			reconfigures = e.slurm.count("scontrol", "reconfigure")
			in = e.run(in, ev)
			if got := e.metricsSeen(in, "slurmd:1"); got != off {
				t.Errorf("after %s: %+v, want %+v", ev.Name, got, off)
			}
			if conf := e.read(confPath); strings.Contains(conf, "Metrics") {
				t.Errorf("a metrics key left in slurm.conf:\n%s", conf)
			}
			if e.slurm.count("scontrol", "reconfigure") == reconfigures {
				t.Errorf("slurm.conf changed, no reconfigure")
			}
			want := "; metrics off: " + why + "; metrics need 25.11 on every node"
			if !strings.HasSuffix(in.UnitStatus.Message, want) {
				t.Errorf("status %q, want it to end %q", in.UnitStatus.Message, want)
			}
			// Other hooks keep it so.
			in = e.run(in, jujutest.Hook(juju.ConfigChanged))
			in = e.run(in, jujutest.Hook(juju.UpdateStatus))
			if got := e.metricsSeen(in, "slurmd:1"); got != off {
				t.Errorf("after config-changed and update-status: %+v, want %+v", got, off)
			}

			for _, ev := range tt.gone(t, &in) {
				in = e.run(in, ev)
				if ev.Kind == juju.RelationBroken {
					in.Relations = slices.DeleteFunc(in.Relations, func(r jujutest.Relation) bool { return r.ID == ev.Relation })
				}
			}
			if got := e.metricsSeen(in, "slurmd:1"); got != on {
				t.Errorf("once it left: %+v, want %+v", got, on)
			}
			if strings.Contains(in.UnitStatus.Message, "metrics off") {
				t.Errorf("status %q", in.UnitStatus.Message)
			}
		})
	}
}

// TestMetricsGateUpgrade: a controller whose state predates the record reads every slurmd
// application's and unit's release on upgrade-charm: an older charm's application found there
// turns metrics off.
func TestMetricsGateUpgrade(t *testing.T) {
	e := newEnv(t)
	e.slurm.version = "slurm-wlm 26.05.5"
	in := cosState(e)
	in = e.run(in, jujutest.RelationHook(juju.RelationJoined, "cos-agent:9", "grafana-agent/0"))
	in.Relations = append(in.Relations, relation("slurmd:1", "slurmd", computeOf(t, "slurmd", "26.05.5"), "slurmd/0"))
	in = e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", ""))
	if got := e.metricsSeen(in, "slurmd:1"); !got.conf {
		t.Fatalf("metrics off with a 26.05 application: %+v", got)
	}
	// An older slurmd charm related before the record was kept.
	in.Relations = append(in.Relations, relation("slurmd:2", "old", computeOf(t, "old", ""), "old/0"))
	in = e.run(in, jujutest.Hook(juju.UpgradeCharm))
	if got := e.metricsSeen(in, "slurmd:1"); got != (metricsSeen{}) {
		t.Errorf("after upgrade-charm: %+v, want metrics off", got)
	}
}

func TestMetricsBlocker(t *testing.T) {
	for _, tt := range []struct {
		name string
		st   charmState
		want string
	}{
		{"nobody", charmState{}, ""},
		{"all new", charmState{SlurmdReleases: map[string]nodeRelease{"a": {Version: "26.05.5"}, "a/0": {Version: "25.11.0"}}, LoginHosts: map[string]loginHost{"l/0": {Version: "26.05.5"}}}, ""},
		{"old unit", charmState{SlurmdReleases: map[string]nodeRelease{"a": {Version: "26.05.5"}, "a/3": {Version: "25.05.1"}}}, "slurmd application a runs Slurm 25.05"},
		{"first by name", charmState{SlurmdReleases: map[string]nodeRelease{"b": {Version: "24.11.5"}, "a/1": {}}}, "slurmd application a does not say which Slurm it runs (an older charm)"},
		{"login", charmState{LoginHosts: map[string]loginHost{"l/0": {}}}, "login application l does not say which Slurm it runs (an older charm)"},
		{"garbage", charmState{SlurmdReleases: map[string]nodeRelease{"a/0": {Version: "x"}}}, "slurmd application a runs Slurm x"},
	} {
		if got := metricsBlocker(&tt.st); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
