package mountinfo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/mountinfo"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// principal is slurmctld/1 with its filesystem-client subordinate filesystem-client/1.
func principal(clientBag map[string]string) jujutest.State {
	return jujutest.State{
		Unit:   "slurmctld/1",
		Leader: true,
		Relations: []jujutest.Relation{{
			ID: "mount:7", RemoteApp: "filesystem-client",
			RemoteUnits: map[string]map[string]string{"filesystem-client/1": clientBag},
		}},
	}
}

func requirerEvent(t *testing.T, in jujutest.State, ev juju.Event) (mountinfo.Event, jujutest.State, error) {
	t.Helper()
	var got mountinfo.Event
	var gotErr error
	out, err := jujutest.Run(t, in, ev, func(ctx context.Context, hc *juju.HookContext) error {
		got, gotErr = mountinfo.Requirer{HookContext: hc}.Event(ctx)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, out, gotErr
}

func TestRequirerEvents(t *testing.T) {
	for _, tc := range []struct {
		name string
		bag  map[string]string
		ev   juju.Event
		want mountinfo.Event
	}{
		{name: "created", ev: jujutest.RelationHook(juju.RelationCreated, "mount:7", ""), want: mountinfo.ProviderConnected{Relation: "mount:7"}},
		{name: "mounted", bag: map[string]string{"mounted": "true"}, ev: jujutest.RelationHook(juju.RelationChanged, "mount:7", "filesystem-client/1"),
			want: mountinfo.FilesystemMounted{Relation: "mount:7", Unit: "filesystem-client/1"}},
		{name: "unmounted", bag: map[string]string{"mounted": "false"}, ev: jujutest.RelationHook(juju.RelationChanged, "mount:7", "filesystem-client/1"),
			want: mountinfo.FilesystemUnmounted{Relation: "mount:7", Unit: "filesystem-client/1"}},
		{name: "not said yet", bag: map[string]string{}, ev: jujutest.RelationHook(juju.RelationChanged, "mount:7", "filesystem-client/1")},
		{name: "broken", ev: jujutest.RelationHook(juju.RelationBroken, "mount:7", ""), want: mountinfo.ProviderDisconnected{Relation: "mount:7"}},
		{name: "other hook", ev: jujutest.Hook(juju.UpdateStatus)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := requirerEvent(t, principal(tc.bag), tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("event (-want +got):\n%s", d)
			}
		})
	}
}

func TestRequirerBadMounted(t *testing.T) {
	ev, _, err := requirerEvent(t, principal(map[string]string{"mounted": "yes"}), jujutest.RelationHook(juju.RelationChanged, "mount:7", "filesystem-client/1"))
	var de *mountinfo.DataError
	if !errors.As(err, &de) || de.Field != "mounted" || ev != nil {
		t.Fatalf("got %v, %v; want no event and a DataError on mounted", ev, err)
	}
}

func TestRequirerRequestAndMounted(t *testing.T) {
	var m mountinfo.Mounted
	var unit string
	var rel juju.RelationID
	out, err := jujutest.Run(t, principal(map[string]string{"mounted": "true"}), jujutest.Hook(juju.ConfigChanged), func(ctx context.Context, hc *juju.HookContext) error {
		r := mountinfo.Requirer{HookContext: hc}
		var err error
		if rel, err = r.Relation(ctx); err != nil {
			return err
		}
		if err := r.Request(ctx, rel, mountinfo.Info{Mountpoint: "/srv/state", NoSUID: true}); err != nil {
			return err
		}
		m, unit, err = r.Mounted(ctx, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if rel != "mount:7" || m != mountinfo.IsMounted || unit != "filesystem-client/1" {
		t.Errorf("relation %q, %v by %q", rel, m, unit)
	}
	if d := cmp.Diff(libraryBag, out.Relations[0].LocalAppData); d != "" {
		t.Errorf("app bag (-library +ours):\n%s", d)
	}
}

func TestRequirerRefusesTwoRelations(t *testing.T) {
	in := principal(nil)
	in.Relations = append(in.Relations, jujutest.Relation{ID: "mount:8", RemoteApp: "other-client"})
	_, err := jujutest.Run(t, in, jujutest.Hook(juju.ConfigChanged), func(ctx context.Context, hc *juju.HookContext) error {
		_, err := mountinfo.Requirer{HookContext: hc}.Relation(ctx)
		return err
	})
	if err == nil {
		t.Fatal("two mount relations accepted")
	}
}

// client is filesystem-client/1, subordinate of slurmctld/1.
func client(principalBag map[string]string) jujutest.State {
	return jujutest.State{
		Unit: "filesystem-client/1",
		Relations: []jujutest.Relation{{
			ID: "mount:7", RemoteApp: "slurmctld", RemoteAppData: principalBag,
			RemoteUnits: map[string]map[string]string{"slurmctld/1": {}},
		}},
	}
}

func TestProviderEvents(t *testing.T) {
	changed := jujutest.RelationHook(juju.RelationChanged, "mount:7", "slurmctld/1")
	for _, tc := range []struct {
		name  string
		bag   map[string]string
		ev    juju.Event
		want  mountinfo.Event
		field string
	}{
		{name: "requested", bag: libraryBag, ev: changed,
			want: mountinfo.MountRequested{Relation: "mount:7", App: "slurmctld", Info: mountinfo.Info{Mountpoint: "/srv/state", NoSUID: true}}},
		{name: "no request yet", bag: map[string]string{}, ev: changed, want: mountinfo.MountUnrequested{Relation: "mount:7", App: "slurmctld"}},
		{name: "bad request", bag: map[string]string{"mountpoint": `"../x"`}, ev: changed,
			want: mountinfo.MountRequested{Relation: "mount:7", App: "slurmctld"}, field: "mountpoint"},
		// The library's MountProvides observes relation-changed only: no event when the
		// principal goes.
		{name: "broken", bag: libraryBag, ev: jujutest.RelationHook(juju.RelationBroken, "mount:7", ""), want: nil},
		{name: "joined", bag: libraryBag, ev: jujutest.RelationHook(juju.RelationJoined, "mount:7", "slurmctld/1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got mountinfo.Event
			var gotErr error
			if _, err := jujutest.Run(t, client(tc.bag), tc.ev, func(ctx context.Context, hc *juju.HookContext) error {
				got, gotErr = mountinfo.Provider{HookContext: hc}.Event(ctx)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var de *mountinfo.DataError
			if tc.field != "" && (!errors.As(gotErr, &de) || de.Field != tc.field) {
				t.Errorf("error %v, want a DataError on %q", gotErr, tc.field)
			} else if tc.field == "" && gotErr != nil {
				t.Errorf("error %v", gotErr)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("event (-want +got):\n%s", d)
			}
		})
	}
}

func TestProviderSetMounted(t *testing.T) {
	out, err := jujutest.Run(t, client(libraryBag), jujutest.Hook(juju.UpdateStatus), func(ctx context.Context, hc *juju.HookContext) error {
		p := mountinfo.Provider{HookContext: hc}
		info, err := p.Info(ctx, "mount:7")
		if err != nil || info.Mountpoint != "/srv/state" {
			t.Errorf("Info outside the relation's hook: %+v, %v", info, err)
		}
		return p.SetMounted(ctx, true)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Relations[0].LocalUnitData["mounted"]; got != "true" {
		t.Errorf("mounted = %q, want true", got)
	}
}
