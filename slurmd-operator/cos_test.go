package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

func TestCOSAgentLogs(t *testing.T) {
	e := newEnv(t)
	e.state.Relations = []jujutest.Relation{{ID: "cos-agent:4", RemoteApp: "grafana-agent", RemoteUnits: map[string]map[string]string{"grafana-agent/0": {}}}}
	if err := e.run(jujutest.RelationHook(juju.RelationJoined, "cos-agent:4", "grafana-agent/0")); err != nil {
		t.Fatal(err)
	}
	d, err := cosagent.Decode(e.state.Relations[0].LocalUnitData)
	if err != nil {
		t.Fatal(err)
	}
	want := cosagent.Data{LogFiles: []string{SlurmdLog}, ScrapeJobs: []cosagent.ScrapeJob{}, Dashboards: []string{}, LogSlots: []string{}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("cos_agent data (-want +got):\n%s", diff)
	}
}
