package juju_test

import (
	"context"
	"fmt"
	"log"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// publishControllers is a tiny controller-side handler: the leader shares
// an auth key through a secret granted to the relation and publishes the
// secret's id and the controller address in its application databag;
// other units only report that they wait.
func publishControllers(ctx context.Context, hc *juju.HookContext) error {
	leader, err := hc.Leadership.IsLeader(ctx)
	if err != nil {
		return err
	}
	if !leader {
		return hc.Status.SetUnit(ctx, juju.StatusActive, "standby")
	}
	rel := hc.Event.Relation
	id, err := hc.Secrets.Add(ctx, map[string]string{"key": "c2VjcmV0", "keyid": "1"},
		juju.SecretAddOptions{Label: "auth-key"})
	if err != nil {
		return fmt.Errorf("cannot create auth key secret: %w", err)
	}
	if err := hc.Secrets.Grant(ctx, id, rel, ""); err != nil {
		return fmt.Errorf("cannot grant auth key secret: %w", err)
	}
	addr, err := hc.Network.IngressAddress(ctx, hc.Event.Endpoint)
	if err != nil {
		return err
	}
	return hc.Relations.SetAppData(ctx, rel, map[string]string{
		"auth_secret_id": string(id),
		"controllers":    fmt.Sprintf(`["%s:6817"]`, addr),
	})
}

// exampleT stands in for the *testing.T a real test passes to jujutest.
type exampleT struct{}

func (exampleT) Helper()                      {}
func (exampleT) Errorf(f string, args ...any) { log.Printf(f, args...) }
func (exampleT) Fatalf(f string, args ...any) { log.Fatalf(f, args...) }

// A charm routes its events and runs them in main with juju.Main; its unit
// tests run the same router against jujutest.
func Example() {
	r := juju.NewRouter()
	r.HandleRelation("slurmd", juju.RelationCreated, publishControllers)

	// In the charm's main:
	//
	//	ev, err := juju.ReadEvent(os.LookupEnv)
	//	...
	//	hc := juju.NewHookContext(ev, juju.ExecRunner{})
	//	os.Exit(juju.Main(ctx, hc, r.Dispatch, os.Stderr))
	//
	// In its unit test (t is the *testing.T):
	t := exampleT{}
	in := jujutest.State{
		Unit:           "slurmctld/0",
		Leader:         true,
		PrivateAddress: "10.0.0.1",
		Relations: []jujutest.Relation{{
			ID: "slurmd:3", RemoteApp: "slurmd",
			RemoteUnits: map[string]map[string]string{"slurmd/0": {}},
		}},
	}
	out, err := jujutest.Run(t, in, jujutest.RelationHook(juju.RelationCreated, "slurmd:3", ""), r.Dispatch)
	if err != nil {
		fmt.Println(err)
	}
	fmt.Println(out.Relations[0].LocalAppData)
	fmt.Println(out.Secrets[0].Label, out.Secrets[0].Grants)

	// A follower must not publish: jujutest would fail the test if it did.
	in.Unit, in.Leader = "slurmctld/1", false
	out, _ = jujutest.Run(t, in, jujutest.RelationHook(juju.RelationCreated, "slurmd:3", ""), r.Dispatch)
	fmt.Println(out.UnitStatus.Code, out.Relations[0].LocalAppData == nil)

	// Output:
	// map[auth_secret_id:secret:jujutest00001 controllers:["10.0.0.1:6817"]]
	// auth-key [{slurmd:3 }]
	// active true
}
