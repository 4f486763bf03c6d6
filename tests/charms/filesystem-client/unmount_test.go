package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/servicetest"
)

// TestNoUnmountOnDeparture: as the real filesystem-client, the stand-in unmounts nothing when
// its principal goes: no handler for the mount relation's departure, for stop or remove, and a
// pass that cannot mount (the request gone) reports "not mounted" but leaves the mount (sshfs
// keeps running). The share stays mounted until the machine goes, after the principal's
// hooks.
func TestNoUnmountOnDeparture(t *testing.T) {
	dir := t.TempDir()
	mp := filepath.Join(dir, "mnt")
	argv := []string{"/usr/bin/sshfs", "-f", "storage:/srv", mp}
	svc := servicetest.New()
	ctx := context.Background()
	if err := svc.Configure(ctx, service.Spec{Name: serviceName, Command: argv}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx, serviceName); err != nil {
		t.Fatal(err)
	}
	stateFile := filepath.Join(dir, "state.json")
	raw, _ := json.Marshal(state{Command: argv, Mountpoint: mp})
	if err := os.WriteFile(stateFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	c := &client{services: svc, mountTable: filepath.Join(dir, "mountinfo")}
	r := c.router(charm.Lifecycle[state]{StateFile: stateFile})

	in := jujutest.State{Unit: "filesystem-client/0", Config: map[string]any{"endpoint": "sftp://10.0.0.5:7022/srv"},
		Relations: []jujutest.Relation{{ID: "mount:3", RemoteApp: "slurmctld", RemoteUnits: map[string]map[string]string{"slurmctld/0": {}}}}}
	for _, ev := range []juju.Event{
		jujutest.RelationHook(juju.RelationDeparted, "mount:3", "slurmctld/0"),
		jujutest.RelationHook(juju.RelationBroken, "mount:3", ""),
		jujutest.Hook(juju.Stop),
		jujutest.Hook(juju.Remove),
	} {
		if _, err := jujutest.Run(t, in, ev, r.Dispatch); !errors.Is(err, juju.ErrNoHandler) {
			t.Errorf("%s: %v, want no handler (the real charm observes none)", ev.Name, err)
		}
	}

	// The request gone (relation-changed with no mountpoint): not mounted, said; sshfs runs on.
	out, err := jujutest.Run(t, in, jujutest.RelationHook(juju.RelationChanged, "mount:3", "slurmctld/0"), r.Dispatch)
	if err != nil {
		t.Fatal(err)
	}
	if out.UnitStatus.Code != juju.StatusWaiting || out.Relations[0].LocalUnitData["mounted"] != "false" {
		t.Errorf("status %+v, unit data %v: want waiting and mounted=false", out.UnitStatus, out.Relations[0].LocalUnitData)
	}
	if !svc.Active(serviceName) || svc.Count("stop "+serviceName) != 0 {
		t.Errorf("sshfs stopped (%v): the mount went with the request", svc.Calls())
	}
}
