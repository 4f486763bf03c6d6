package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/cosagent"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

func TestCOSAgentLogs(t *testing.T) {
	in := jujutest.State{Unit: "slurmd/0", Relations: []jujutest.Relation{{ID: "cos-agent:4", RemoteApp: "grafana-agent", RemoteUnits: map[string]map[string]string{"grafana-agent/0": {}}}}}
	out, err := jujutest.Run(t, in, jujutest.RelationHook(juju.RelationJoined, "cos-agent:4", "grafana-agent/0"), (&Charm{}).Router().Dispatch)
	if err != nil {
		t.Fatal(err)
	}
	d, err := cosagent.Decode(out.Relations[0].LocalUnitData)
	if err != nil {
		t.Fatal(err)
	}
	want := cosagent.Data{LogFiles: []string{SlurmdLog}, ScrapeJobs: []cosagent.ScrapeJob{}, Dashboards: []string{}, LogSlots: []string{}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("cos_agent data (-want +got):\n%s", diff)
	}
}
