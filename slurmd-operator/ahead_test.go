package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/service"
)

// countShows is the host, counting the `scontrol show node` it answers.
type countShows struct {
	*host
	mu    sync.Mutex
	shows int
}

func (r *countShows) Run(ctx context.Context, argv []string, env []string) (command.Output, error) {
	if strings.HasPrefix(strings.Join(argv, " "), "scontrol show node") {
		r.mu.Lock()
		r.shows++
		r.mu.Unlock()
	}
	return r.host.Run(ctx, argv, env)
}

func (r *countShows) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.shows
}

// TestNodeReadAhead: a relation hook that changes nothing in slurmd shows the node's record
// read from the hook's start, one `scontrol show node` in all (as in turn: the first read is
// the one shown); one that restarts slurmd (new controllers) never shows a record read before
// the restart: the read ahead is dropped and the status is the node's after it; a hook with
// the relation's data incomplete drops the read unused. No read is left running after any.
func TestNodeReadAhead(t *testing.T) {
	t.Run("unchanged", func(t *testing.T) {
		e := newEnv(t)
		e.join()
		e.slurm.update(node, "state=drain", "reason=first read")
		r := &countShows{host: e.slurm}
		e.charm.Slurm = r
		for _, ev := range []juju.Event{
			jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"),
			jujutest.RelationHook(juju.RelationJoined, relID, "slurmctld/0"),
			jujutest.SecretHook(juju.SecretChanged, secretID, 1),
		} {
			before := r.count()
			if err := e.run(ev); err != nil {
				t.Fatal(err)
			}
			if got := e.status().Message; !strings.HasPrefix(got, "node slurmd-3 drained: first read") {
				t.Errorf("%s: status %q, want the node drained", ev.Name, got)
			}
			if n := r.count() - before; n != 1 {
				t.Errorf("%s: scontrol show node ran %d times, want 1", ev.Name, n)
			}
		}
	})
	t.Run("slurmd restarted", func(t *testing.T) {
		e := newEnv(t)
		e.join()
		e.slurm.update(node, "state=drain", "reason=before the restart")
		r := &countShows{host: e.slurm}
		e.charm.Slurm = r
		// slurmd's restart waits for the read ahead (up to a second, in case it was
		// cancelled unrun), then the node's record changes: drained before, idle after.
		e.svc.OnStart(func(spec service.Spec) (bool, error) {
			if spec.Name != SlurmdService {
				return true, nil
			}
			for deadline := time.Now().Add(time.Second); r.count() == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			e.slurm.update(node, "state=resume")
			return e.slurm.slurmdStarted(spec.Command)
		})
		bag, _ := slurmd.ControllerBag{Controllers: []string{"10.0.0.9:6817", "10.0.0.1:6817"}, AuthSecretID: string(secretID)}.Encode()
		e.state.Relations[0].RemoteAppData = bag
		restarts := e.svc.Count("respawn slurmd")
		if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
			t.Fatal(err)
		}
		if e.svc.Count("respawn slurmd") != restarts+1 {
			t.Fatalf("slurmd not restarted: %q", e.svc.Calls())
		}
		if got := e.status().Message; !strings.HasPrefix(got, "node slurmd-3 idle") {
			t.Errorf("status %q, want the node's record after the restart (idle)", got)
		}
		if n := r.count(); n < 1 || n > 2 {
			t.Errorf("scontrol show node ran %d times, want 1 or 2 (one ahead, dropped)", n)
		}
	})
	t.Run("data incomplete", func(t *testing.T) {
		e := newEnv(t)
		e.join()
		e.state.Relations[0].RemoteAppData = map[string]string{}
		if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
			t.Fatal(err)
		}
		if got := e.status().Message; !strings.HasPrefix(got, "node slurmd-3 idle") {
			t.Errorf("status %q, want the node idle", got)
		}
	})
}
