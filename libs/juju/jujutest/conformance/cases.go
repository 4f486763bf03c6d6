package conformance

import (
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// rel is relation slurmctld:1 seen from a slurmctld unit: slurmd/0 has joined and written
// its unit data; slurmd's leader has written the application data.
func rel() jujutest.Relation {
	return jujutest.Relation{
		ID: "slurmctld:1", RemoteApp: "slurmd",
		RemoteAppData: map[string]string{"partition": "PartitionName=slurmd"},
		RemoteUnits:   map[string]map[string]string{"slurmd/0": {"hostname": "node0"}},
	}
}

func world(unit string, leader bool) jujutest.State {
	return jujutest.State{Unit: unit, Leader: leader, Relations: []jujutest.Relation{rel()}}
}

var (
	changed = jujutest.RelationHook(juju.RelationChanged, "slurmctld:1", "slurmd/0")
	update  = jujutest.Hook(juju.UpdateStatus)
)

func relationSet(app bool, data string) Call {
	args := []string{"relation-set", "-r", "slurmctld:1", "--file", "-"}
	if app {
		args = []string{"relation-set", "--app", "-r", "slurmctld:1", "--file", "-"}
	}
	return Call{Args: args, Stdin: data}
}

func relationGet(app bool, name string) []string {
	if app {
		return []string{"relation-get", "--app", "--format=json", "-r", "slurmctld:1", "-", name}
	}
	return []string{"relation-get", "--format=json", "-r", "slurmctld:1", "-", name}
}

// secretWorld is a slurmd unit with the relation to slurmctld and a secret owned by
// slurmctld, granted to the relation when granted is set.
func secretWorld(granted bool) jujutest.State {
	s := jujutest.Secret{ID: "secret:cvh7kruupa1s46bqvuig", Owner: "slurmctld", Revisions: []map[string]string{{"key": "a2V5"}}}
	if granted {
		s.Grants = []jujutest.Grant{{Relation: "slurmctld:1"}}
	}
	// slurmd/0 alone leads its application, as Juju makes a lone unit the leader.
	return jujutest.State{Unit: "slurmd/0", Leader: true, Relations: []jujutest.Relation{{ID: "slurmd:1", RemoteApp: "slurmctld",
		RemoteUnits: map[string]map[string]string{"slurmctld/0": {}}}}, Secrets: []jujutest.Secret{s}}
}

// Cases is the table: every rule a simulator of Juju must keep.
func Cases() []Case {
	return []Case{{
		Name: "leader writes its application databag", Rule: "leader-only writes",
		World: world("slurmctld/0", true),
		Hooks: []Hook{{Event: changed, Calls: []Call{
			relationSet(true, `{"controllers":"[\"10.0.0.1:6817\"]"}`),
			{Args: relationGet(true, "slurmctld"), Out: `{"controllers":"[\"10.0.0.1:6817\"]"}`},
		}}},
	}, {
		Name: "non-leader cannot write its application databag", Rule: "leader-only writes",
		World: world("slurmctld/1", false),
		Hooks: []Hook{{Event: changed, Calls: []Call{relationSet(true, `{"controllers":"x"}`).refused("cannot write relation settings")}}},
	}, {
		Name: "non-leader cannot read its application databag", Rule: "leader-only writes",
		World: world("slurmctld/1", false),
		Hooks: []Hook{{Event: changed, Calls: []Call{{Args: relationGet(true, "slurmctld"), Fails: true, Err: "permission denied (unit is not the leader)"}}}},
	}, {
		Name: "non-leader cannot set the application status", Rule: "leader-only writes",
		World: world("slurmctld/1", false),
		Hooks: []Hook{{Event: update, Calls: []Call{
			{Args: []string{"status-set", "--application", "active", "ready"}, Fails: true, Err: "this unit is not the leader"},
			{Args: []string{"status-set", "active", "ready"}},
		}}},
	}, {
		Name: "unit writes and reads its own unit databag", Rule: "relation-data scoping",
		World: world("slurmctld/1", false),
		Hooks: []Hook{{Event: changed, Calls: []Call{
			relationSet(false, `{"addr":"10.0.0.2"}`),
			{Args: relationGet(false, "slurmctld/1"), Out: `{"addr":"10.0.0.2"}`},
		}}},
	}, {
		Name: "unit reads the remote side of its relation only", Rule: "relation-data scoping",
		World: world("slurmctld/1", false),
		Hooks: []Hook{{Event: changed, Calls: []Call{
			{Args: relationGet(false, "slurmd/0"), Out: `{"hostname":"node0"}`},
			{Args: relationGet(true, "slurmd"), Out: `{"partition":"PartitionName=slurmd"}`},
			{Args: relationGet(false, "slurmd/9"), Fails: true},
			{Args: relationGet(true, "other"), Fails: true},
		}}},
	}, {
		Name: "granted secret is readable", Rule: "secret visibility",
		World: secretWorld(true),
		Hooks: []Hook{{Event: jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmctld/0"), Calls: []Call{
			{Args: []string{"secret-get", "secret:cvh7kruupa1s46bqvuig", "--format=json"}, Out: `{"key":"a2V5"}`},
		}}},
	}, {
		Name: "secret not granted is not readable", Rule: "secret visibility",
		World: secretWorld(false),
		Hooks: []Hook{{Event: jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmctld/0"), Calls: []Call{
			{Args: []string{"secret-get", "secret:cvh7kruupa1s46bqvuig", "--format=json"}, Fails: true, Err: "permission denied"},
		}}},
	}, {
		Name: "failed hook's relation writes are discarded", Rule: "commit on success",
		World: world("slurmctld/0", true),
		Hooks: []Hook{
			{Event: changed, Fail: true, Calls: []Call{
				relationSet(true, `{"controllers":"x"}`),
				relationSet(false, `{"addr":"10.0.0.1"}`),
			}},
			{Event: update, Calls: []Call{
				{Args: relationGet(true, "slurmctld"), Out: `{}`},
				{Args: relationGet(false, "slurmctld/0"), Out: `{}`},
			}},
		},
	}, {
		Name: "successful hook's relation writes are kept", Rule: "commit on success",
		World: world("slurmctld/0", true),
		Hooks: []Hook{
			{Event: changed, Calls: []Call{relationSet(true, `{"controllers":"x"}`)}},
			{Event: update, Calls: []Call{{Args: relationGet(true, "slurmctld"), Out: `{"controllers":"x"}`}}},
		},
	}}
}

// refused is c expected to fail.
func (c Call) refused(msg string) Call {
	c.Fails, c.Err = true, msg
	return c
}
