package charm_test

import (
	"context"
	"os"
	"time"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/auto"
)

// myState is a charm's state: the status cache plus what the charm must remember.
type myState struct {
	charm.StatusCache
	KeyHash string `json:"key-hash,omitempty"`
}

// myCharm is a charm's dependencies: shared settings and its service manager.
type myCharm struct {
	charm.Settings
	Services service.Manager
	Runner   command.Runner
}

// start is a handler: it runs inside the lifecycle, so its state changes are saved once,
// when it succeeds.
func (c *myCharm) start(ctx context.Context, h *charm.Hook[myState]) error {
	d := c.Munge(c.Services, munge.ServiceName(service.Pebble), c.Runner)
	if err := d.Ensure(ctx, false); err != nil {
		return err
	}
	h.State.KeyHash = "..."
	return h.SetUnitStatus(ctx, juju.StatusActive, "ready")
}

// A charm's main: SIGTERM cancels the hook, the lifecycle loads and commits the state.
func ExampleMain() {
	charm.Main(charm.WithServices(os.LookupEnv, func(_ juju.Event, services *auto.Manager) juju.Handler {
		c := &myCharm{
			Settings: charm.Settings{Root: "/", PollInterval: 100 * time.Millisecond},
			Services: services,
			Runner:   command.Exec{Timeout: 30 * time.Second},
		}
		lc := charm.Lifecycle[myState]{StateName: ".my-charm-state.json"}
		r := juju.NewRouter()
		r.Handle(juju.Start, lc.Handler(c.start))
		return r.Dispatch
	}))
}
