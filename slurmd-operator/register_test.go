package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// TestRegistrationFirstCheck: a slurmd started by a join or a re-registration takes tens of
// milliseconds to load its configuration and plugins before it registers; the unit asks the
// controller for its node (scontrol show node) only once slurmd has logged its start, and
// registerGap after that line, when its registration is done, not while slurmd still loads
// or registers on the same cores. A slurmd whose log says nothing of its start (SlurmdDebug
// below info) is still waited for: the checks begin PollInterval after its start.
func TestRegistrationFirstCheck(t *testing.T) {
	for _, tt := range []struct {
		name  string
		quiet bool // slurmd logs nothing at its start
		// reconf: a node-config action re-registers the node (stop, delete, start) after
		// the join, and the checks of that start are counted
		reconf bool
		// lineAhead: slurmd logs its start this long before its node is registered
		lineAhead time.Duration
	}{
		{name: "join"},
		{name: "join, no start line", quiet: true},
		{name: "re-registration", reconf: true},
		{name: "join, registered 5 ms after the start line", lineAhead: 5 * time.Millisecond},
		{name: "re-registration, registered 5 ms after the start line", reconf: true, lineAhead: 5 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.charm.PollInterval = 300 * time.Millisecond
			e.charm.RegisterGap = 200 * time.Millisecond // far above lineAhead: no race
			start := func() {
				e.slurm.set(func(h *host) {
					h.registerAfter, h.quietStart, h.lineAhead, h.earlyShows = 40*time.Millisecond, tt.quiet, tt.lineAhead, 0
				})
			}
			if !tt.reconf {
				start()
			}
			e.related()
			if err := e.run(jujutest.RelationHook(juju.RelationCreated, relID, "")); err != nil {
				t.Fatal(err)
			}
			if tt.reconf {
				start()
				if a := e.action(map[string]any{"parameters": "Weight=10"}); a.Failed {
					t.Fatalf("node-config failed: %s", a.Message)
				}
			}
			e.slurm.set(func(h *host) {
				if h.earlyShows != 0 {
					t.Errorf("%d scontrol show node while slurmd was still loading: %q", h.earlyShows, h.calls)
				}
			})
			if !e.slurm.hasNode(node) {
				t.Fatalf("node %s did not register", node)
			}
			if d := cmp.Diff(active("node slurmd-3 idle"), e.status()); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
		})
	}
}

// TestReadLogAfter: the log is read after the offset, or from its start when it is shorter
// (truncated since); a missing log says nothing.
func TestReadLogAfter(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "slurmd.log")
	old := "[2026-11-27T02:20:00.000] slurmd started on Fri, 27 Nov 2026 02:20:00 +0000\n"
	if err := os.WriteFile(log, []byte(old+"[2026-11-27T02:25:26.800] debug:  Log file re-opened\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		path   string
		offset int64
		want   bool
	}{
		{name: "a start before the offset", path: log, offset: int64(len(old))},
		{name: "a start after the offset", path: log, offset: 0, want: true},
		{name: "truncated since", path: log, offset: 1 << 20, want: true},
		{name: "no log", path: filepath.Join(dir, "none.log")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := bytes.Contains(readLogAfter(tt.path, tt.offset), []byte(slurmdStarted)); got != tt.want {
				t.Errorf("start line after %d: %v, want %v", tt.offset, got, tt.want)
			}
		})
	}
}
