package main

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// gatedRunner runs the host's commands, each `scontrol show node` only once gate closes
// (or its context ends), counting them and those still running.
type gatedRunner struct {
	next    command.Runner
	gate    chan struct{}
	mu      sync.Mutex
	lists   int
	running int
}

func (r *gatedRunner) Run(ctx context.Context, argv []string, env []string) (command.Output, error) {
	if len(argv) > 2 && argv[1] == "show" && argv[2] == "node" {
		r.mu.Lock()
		r.lists++
		r.running++
		r.mu.Unlock()
		defer func() { r.mu.Lock(); r.running--; r.mu.Unlock() }()
		select {
		case <-r.gate:
		case <-ctx.Done():
			return command.Output{}, ctx.Err()
		}
	}
	return r.next.Run(ctx, argv, env)
}

func (r *gatedRunner) counts() (lists, running int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lists, r.running
}

func names(nodes []slurm.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

// TestNodeCacheAhead: the list read ahead serves the next list, one read in all; a forget
// (Slurm changed) cancels it and the next list reads the nodes as they are now; the hook's
// end (drop) cancels a read nobody took; with slurmctld not running, list reads in turn; an
// error of the read ahead is the list's, and the next list reads again; nothing runs after
// list, forget or drop return.
func TestNodeCacheAhead(t *testing.T) {
	up := func(context.Context) bool { return true }
	down := func(context.Context) bool { return false }
	for _, tc := range []struct {
		name      string
		running   func(context.Context) bool
		open      bool // the read ahead may answer
		steps     func(ctx context.Context, n *nodeCache, h *host) ([]slurm.Node, error)
		want      []string
		wantErr   bool
		wantLists int
	}{
		{name: "taken", running: up, open: true, want: []string{"a-1"}, wantLists: 1,
			steps: func(ctx context.Context, n *nodeCache, _ *host) ([]slurm.Node, error) { return n.list(ctx) }},
		{name: "forgotten after a change", running: up, open: true, want: []string{"a-1", "a-2"}, wantLists: 2,
			steps: func(ctx context.Context, n *nodeCache, h *host) ([]slurm.Node, error) {
				h.addNode("a-2", "a", false)
				n.forget()
				return n.list(ctx)
			}},
		{name: "forgotten while it runs", running: up, want: []string{"a-1", "a-2"}, wantLists: 2,
			steps: func(ctx context.Context, n *nodeCache, h *host) ([]slurm.Node, error) {
				h.addNode("a-2", "a", false)
				n.forget()
				return nil, nil
			}},
		{name: "dropped at the hook's end", running: up, wantLists: 1,
			steps: func(ctx context.Context, n *nodeCache, _ *host) ([]slurm.Node, error) { n.drop(); return nil, nil }},
		{name: "slurmctld not running", running: down, open: true, want: []string{"a-1"}, wantLists: 1,
			steps: func(ctx context.Context, n *nodeCache, _ *host) ([]slurm.Node, error) { return n.list(ctx) }},
		{name: "hook ends first", running: up, wantErr: true, wantLists: 1,
			steps: func(ctx context.Context, n *nodeCache, _ *host) ([]slurm.Node, error) {
				ctx, cancel := context.WithCancel(ctx)
				cancel()
				return n.list(ctx)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(filepath.Join(t.TempDir(), confDir))
			h.addNode("a-1", "a", false)
			r := &gatedRunner{next: h, gate: make(chan struct{})}
			if tc.open {
				close(r.gate)
			}
			n := &nodeCache{client: func() *slurm.Client { return &slurm.Client{Runner: r, Conf: confPath} }}
			ctx := context.Background()
			n.ahead(ctx, tc.running)
			got, err := tc.steps(ctx, n, h)
			if _, running := r.counts(); running != 0 && n.early == nil {
				t.Errorf("%d reads still running", running)
			}
			if !tc.open && err == nil && tc.want != nil {
				close(r.gate)
				got, err = n.list(ctx)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("list: %v, want error %v", err, tc.wantErr)
			}
			if d := cmp.Diff(tc.want, names(got)); d != "" {
				t.Errorf("nodes (-want +got):\n%s", d)
			}
			n.drop()
			if lists, running := r.counts(); lists != tc.wantLists || running != 0 {
				t.Errorf("scontrol show node ran %d times (%d still running), want %d", lists, running, tc.wantLists)
			}
		})
	}
	t.Run("error passed on, then read again", func(t *testing.T) {
		h := newHost(filepath.Join(t.TempDir(), confDir))
		h.addNode("a-1", "a", false)
		boom := errors.New("cannot run scontrol")
		fails := true
		var mu sync.Mutex
		r := runnerFunc(func(ctx context.Context, argv []string, env []string) (command.Output, error) {
			mu.Lock()
			f := fails
			mu.Unlock()
			if f {
				return command.Output{}, boom
			}
			return h.Run(ctx, argv, env)
		})
		n := &nodeCache{client: func() *slurm.Client { return &slurm.Client{Runner: r, Conf: confPath} }}
		seq, seqErr := (&nodeCache{client: n.client}).list(context.Background())
		n.ahead(context.Background(), up)
		if _, err := n.list(context.Background()); err == nil || seq != nil || err.Error() != seqErr.Error() {
			t.Errorf("list: %v, want %v", err, seqErr)
		}
		mu.Lock()
		fails = false
		mu.Unlock()
		got, err := n.list(context.Background())
		if err != nil || len(got) != 1 {
			t.Errorf("list again: %v, %v", names(got), err)
		}
	})
}

type runnerFunc func(ctx context.Context, argv []string, env []string) (command.Output, error)

func (f runnerFunc) Run(ctx context.Context, argv []string, env []string) (command.Output, error) {
	return f(ctx, argv, env)
}

// TestHookChangesForget: a change to Slurm through the hook's client (hook.client) or its
// services (a start, stop or restart of slurmctld: hook.services) drops the node list read
// before, and the one being read ahead, and the status of a unit still joining reads the
// nodes afresh instead of keeping the counts (hook.keepsCounts), even when Slurm refused the
// change; a read through them, or a change to another service, keeps both.
func TestHookChangesForget(t *testing.T) {
	joined := jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/1")
	joined.Endpoint, joined.RemoteApp = "slurmd", "slurmd"
	for _, tc := range []struct {
		name    string
		act     func(ctx context.Context, h *hook) error
		changes bool
		fails   bool // Slurm refuses the change
	}{
		{name: "drain", changes: true, act: func(ctx context.Context, h *hook) error { return h.client().Drain(ctx, "a-1", "test") }},
		{name: "delete", changes: true, act: func(ctx context.Context, h *hook) error { return h.client().DeleteNode(ctx, "a-1") }},
		{name: "reconfigure", changes: true, act: func(ctx context.Context, h *hook) error { return h.client().Reconfigure(ctx) }},
		{name: "partition state refused", changes: true, fails: true, act: func(ctx context.Context, h *hook) error {
			return h.client().UpdatePartitionState(ctx, "a", slurm.PartitionInactive)
		}},
		{name: "removal step", changes: true, act: func(ctx context.Context, h *hook) error {
			_, err := h.remover().Step(ctx, &slurm.Removal{Node: "a-1", Reason: "test"})
			return err
		}},
		{name: "slurmctld restarted", changes: true, act: func(ctx context.Context, h *hook) error { return h.services().Restart(ctx, svcSlurmctld) }},
		{name: "slurmctld respawned", changes: true, act: func(ctx context.Context, h *hook) error { return h.services().Respawn(ctx, svcSlurmctld) }},
		{name: "slurmctld stopped", changes: true, act: func(ctx context.Context, h *hook) error { return h.services().Stop(ctx, svcSlurmctld) }},
		{name: "slurmctld started", changes: true, act: func(ctx context.Context, h *hook) error { return h.services().Start(ctx, svcSlurmctld) }},
		{name: "slurmctld spawned", changes: true, act: func(ctx context.Context, h *hook) error { return h.services().Spawn(ctx, svcSlurmctld) }},
		{name: "node read", act: func(ctx context.Context, h *hook) error { _, err := h.client().ShowNode(ctx, "a-1"); return err }},
		{name: "jobs read", act: func(ctx context.Context, h *hook) error {
			_, err := h.client().JobsOnNodes(ctx, []string{"a-1"})
			return err
		}},
		{name: "munged restarted", act: func(ctx context.Context, h *hook) error { return h.services().Restart(ctx, "munged") }},
		{name: "slurmctld's status", act: func(ctx context.Context, h *hook) error { _, err := h.services().Status(ctx, svcSlurmctld); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			sl := newHost(filepath.Join(t.TempDir(), confDir))
			sl.addNode("a-1", "a", false)
			r := &gatedRunner{next: sl, gate: make(chan struct{})}
			close(r.gate)
			svc := newFakeServices()
			for _, name := range []string{svcSlurmctld, "munged"} {
				if err := svc.Configure(ctx, service.Spec{Name: name, Command: []string{name}}); err != nil {
					t.Fatal(err)
				}
			}
			c := &Charm{Slurm: r, Services: svc}
			kept := &nodeCounts{Nodes: 1, Idle: 1}
			h := &hook{c: c, hc: &juju.HookContext{Event: joined}, nodes: nodeCache{client: c.client}, st: &charmState{
				SlurmdReleases: map[string]nodeRelease{"slurmd": {Relation: "slurmd:1", Version: "22.05.8"}},
				NodeCounts:     kept,
			}}

			// The list read, then another read ahead; the controller gains a node.
			if _, err := h.nodes.list(ctx); err != nil {
				t.Fatal(err)
			}
			h.nodes.ahead(ctx, func(context.Context) bool { return true })
			sl.addNode("a-2", "a", false)
			if err := tc.act(ctx, h); (err != nil) != tc.fails {
				t.Fatalf("%v, want error %v", err, tc.fails)
			}
			if dropped := h.nodes.early == nil && !h.nodes.read; dropped != tc.changes {
				t.Errorf("list and read ahead dropped: %v, want %v", dropped, tc.changes)
			}
			h.nodes.read = false // as in a hook that read no list before (keepsCounts)
			h.nodes.drop()
			if got := h.keepsCounts(); got != !tc.changes {
				t.Errorf("keepsCounts() = %v, want %v", got, !tc.changes)
			}
			got, err := h.nodeCounts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := *kept
			if tc.changes {
				nodes, err := c.client().Nodes(ctx)
				if err != nil {
					t.Fatal(err)
				}
				want = countNodes(nodes) // the nodes as they are now
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("status counts (-want +got):\n%s", d)
			}
		})
	}
}
