package main

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service"
)

// TestDaemonsDownSideBySide: update-status checks munged (munge -n) beside slurmd's service
// and says the same whichever is down: one munge -n each time; the node's record is read
// only once both are up, never while one is down.
func TestDaemonsDownSideBySide(t *testing.T) {
	for _, tc := range []struct {
		name       string
		slurmdDown bool
		mungedDown bool
		want       string
		wantShows  int
	}{
		{name: "both up", want: "node slurmd-3 idle", wantShows: 1},
		{name: "munged down", mungedDown: true, want: "node slurmd-3: munged down"},
		{name: "slurmd down", slurmdDown: true, want: "node slurmd-3: slurmd down"},
		{name: "both down", slurmdDown: true, mungedDown: true, want: "node slurmd-3: slurmd and munged down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.join()
			if tc.slurmdDown {
				if err := e.svc.Stop(context.Background(), SlurmdService); err != nil && err != service.ErrUnknownService {
					t.Fatal(err)
				}
			}
			if tc.mungedDown {
				e.slurm.set(func(h *host) { h.mungeUp = func() bool { return false } })
			}
			before := len(e.slurm.callLog())
			if err := e.run(jujutest.Hook(juju.UpdateStatus)); err != nil {
				t.Fatal(err)
			}
			if got := e.status().Message; !strings.HasPrefix(got, tc.want) {
				t.Errorf("status %q, want %q", got, tc.want)
			}
			var munges, shows int
			for _, c := range e.slurm.callLog()[before:] {
				switch {
				case strings.HasPrefix(c, munge.ClientPath):
					munges++
				case strings.HasPrefix(c, "scontrol show node"):
					shows++
				}
			}
			if d := cmp.Diff([2]int{1, tc.wantShows}, [2]int{munges, shows}); d != "" {
				t.Errorf("munge -n and scontrol show node runs (-want +got):\n%s", d)
			}
		})
	}
}
