package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service/servicetest"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

const (
	unit     = "slurmd/3"
	node     = "slurmd-3"
	relID    = juju.RelationID("slurmctld:5")
	secretID = juju.SecretID("secret:cvq0auth")
)

var (
	key1 = bytes.Repeat([]byte{1}, 1024)
	key2 = bytes.Repeat([]byte{2}, 1024)
)

// env is one unit's test world: the charm with fakes, and the Juju state between hooks.
type env struct {
	t     *testing.T
	charm *Charm
	slurm *host
	svc   *servicetest.Manager
	root  string
	state jujutest.State
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	h := newHost(root)
	svc := h.services()
	h.mungeUp = func() bool { return svc.Active("munged") }
	t.Cleanup(func() { h.mungedListens(false) })
	c := &Charm{
		Settings: charm.Settings{
			Root:               root,
			PollInterval:       time.Millisecond,
			UnreachableTimeout: 20 * time.Millisecond,
			LookupUser:         func(name string) (int, int, error) { return os.Getuid(), os.Getgid(), nil },
		},
		Slurm:           h,
		Services:        svc,
		StateFile:       filepath.Join(root, "charm", StateName),
		RegisterTimeout: 5 * time.Second,
		LookPath:        func(string) (string, error) { return "/usr/sbin/x", nil },
	}
	return &env{t: t, charm: c, slurm: h, svc: svc, root: root, state: jujutest.State{
		Unit:   unit,
		Leader: true,
		Config: map[string]any{"default-node-state": "idle", "default-node-reason": "", "partition-config": ""},
	}}
}

// related adds the slurmctld relation with the controller's data and key secret.
func (e *env) related(controllers ...string) {
	if len(controllers) == 0 {
		controllers = []string{"10.0.0.1:6817"}
	}
	bag, err := slurmd.ControllerBag{Controllers: controllers, AuthSecretID: string(secretID), ClusterName: "test"}.Encode()
	if err != nil {
		e.t.Fatal(err)
	}
	e.state.Relations = []jujutest.Relation{{
		ID: relID, RemoteApp: "slurmctld", RemoteAppData: bag,
		RemoteUnits: map[string]map[string]string{"slurmctld/0": {}},
	}}
	e.state.Secrets = []jujutest.Secret{{
		ID: secretID, Owner: "slurmctld",
		Revisions: []map[string]string{slurmd.EncodeAuthSecret(key1, "1")},
		Grants:    []jujutest.Grant{{Relation: "slurmd:5"}},
	}}
}

// run runs ev and keeps the resulting state.
func (e *env) run(ev juju.Event) error {
	e.t.Helper()
	out, err := jujutest.Run(e.t, e.state, ev, e.charm.Router().Dispatch)
	e.state = out
	e.state.Action = jujutest.ActionState{}
	return err
}

// joinHooks runs the hooks of joining the controller as related set it up.
func (e *env) joinHooks() {
	e.t.Helper()
	for _, ev := range []juju.Event{
		jujutest.RelationHook(juju.RelationCreated, relID, ""),
		jujutest.RelationHook(juju.RelationJoined, relID, "slurmctld/0"),
		jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"),
	} {
		if err := e.run(ev); err != nil {
			e.t.Fatalf("%s: %v", ev.Name, err)
		}
	}
}

// action runs the node-config action and returns its action state.
func (e *env) action(params map[string]any) jujutest.ActionState {
	e.t.Helper()
	return e.runAction("node-config", params)
}

// runAction runs action name and returns its action state.
func (e *env) runAction(name string, params map[string]any) jujutest.ActionState {
	e.t.Helper()
	in := e.state
	in.Action = jujutest.ActionState{Params: params}
	out, err := jujutest.Run(e.t, in, jujutest.ActionEvent(name), e.charm.Router().Dispatch)
	if err != nil {
		e.t.Fatalf("%s action: %v", name, err)
	}
	a := out.Action
	out.Action = jujutest.ActionState{}
	e.state = out
	return a
}

// join runs the hooks of joining a controller and checks the node came up.
func (e *env) join() {
	e.t.Helper()
	e.related()
	e.joinHooks()
	if !e.slurm.hasNode(node) {
		e.t.Fatalf("node %s did not register", node)
	}
}

func (e *env) status() juju.WorkloadStatus {
	return juju.WorkloadStatus{Code: e.state.UnitStatus.Code, Message: e.state.UnitStatus.Message}
}

func (e *env) savedState() State {
	e.t.Helper()
	var st State
	data, err := os.ReadFile(e.charm.StateFile)
	if errors.Is(err, os.ErrNotExist) {
		return st
	}
	if err != nil {
		e.t.Fatal(err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		e.t.Fatal(err)
	}
	return st
}

// saveState writes st as the unit's saved state (as a hook interrupted by a kill leaves it).
func (e *env) saveState(st State) {
	e.t.Helper()
	data, err := json.Marshal(st)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(e.charm.StateFile, data, 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// stateUnchanged checks the saved state is before's; the status the unit last set is a cache
// of Juju's, not the node's state, and is not compared.
func (e *env) stateUnchanged(before State) {
	e.t.Helper()
	after := e.savedState()
	before.Unit, after.Unit = "", ""
	if d := cmp.Diff(before, after); d != "" {
		e.t.Errorf("saved state changed (-want +got):\n%s", d)
	}
}

// slurmCalls are the controller-facing commands run (no slurmd -C/-V).
func (e *env) slurmCalls() []string {
	var out []string
	for _, c := range e.slurm.callLog() {
		if strings.HasPrefix(c, "scontrol update") || strings.HasPrefix(c, "scontrol delete") {
			out = append(out, c)
		}
	}
	return out
}

func (e *env) svcCalls(name string) []string {
	var out []string
	for _, c := range e.svc.Calls() {
		if strings.HasSuffix(c, " "+name) {
			out = append(out, strings.TrimSuffix(c, " "+name))
		}
	}
	return out
}

func active(msg string) juju.WorkloadStatus {
	return juju.WorkloadStatus{Code: juju.StatusActive, Message: msg}
}

func TestInstall(t *testing.T) {
	tests := []struct {
		name      string
		missing   []string
		failApt   bool
		wantApt   []string
		wantErr   bool
		wantState juju.WorkloadStatus
	}{{
		name:      "present",
		wantState: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmctld relation"},
	}, {
		name:      "missing",
		missing:   []string{"slurmd", "munged"},
		wantApt:   []string{"apt-get update", "apt-get install -y --no-install-recommends slurmd munge"},
		wantState: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmctld relation"},
	}, {
		name:      "apt fails",
		missing:   []string{"slurmd"},
		failApt:   true,
		wantApt:   []string{"apt-get update"},
		wantErr:   true,
		wantState: juju.WorkloadStatus{Code: juju.StatusMaintenance, Message: "installing slurmd"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.slurm.failApt = tt.failApt
			e.charm.LookPath = func(p string) (string, error) {
				if slices.Contains(tt.missing, p) {
					return "", errors.New("not found")
				}
				return "/usr/sbin/" + p, nil
			}
			err := e.run(jujutest.Hook(juju.Install))
			if (err != nil) != tt.wantErr {
				t.Fatalf("install error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "cannot install slurmd") {
				t.Errorf("error %q does not name the package", err)
			}
			var apt []string
			for _, c := range e.slurm.callLog() {
				if strings.HasPrefix(c, "apt-get") {
					apt = append(apt, c)
				}
			}
			if d := cmp.Diff(tt.wantApt, apt); d != "" {
				t.Errorf("apt calls (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantState, e.status()); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
		})
	}
}

func TestPublishPartition(t *testing.T) {
	old := map[string]string{"version": "1", "nodeset": "NodeSet=slurmd Feature=slurmd", "partition": "PartitionName=slurmd Nodes=slurmd MaxTime=5:00"}
	tests := []struct {
		name       string
		config     string
		leader     bool
		event      juju.Event
		wantBag    map[string]string
		wantStatus juju.WorkloadStatus
		wantApp    juju.WorkloadStatus
	}{{
		name:       "valid on config-changed",
		config:     "MaxTime=1:00:00 DefaultTime=10:00",
		leader:     true,
		event:      jujutest.Hook(juju.ConfigChanged),
		wantBag:    map[string]string{"version": "1", "nodeset": "NodeSet=slurmd Feature=slurmd", "partition": "PartitionName=slurmd Nodes=slurmd MaxTime=1:00:00 DefaultTime=10:00", "slurm_version": "22.05.8"},
		wantStatus: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmctld data"},
		wantApp:    juju.WorkloadStatus{Code: juju.StatusActive, Message: "partition slurmd: MaxTime=1:00:00 DefaultTime=10:00"},
	}, {
		name:       "empty on leader-elected",
		leader:     true,
		event:      jujutest.Hook(juju.LeaderElected),
		wantBag:    map[string]string{"version": "1", "nodeset": "NodeSet=slurmd Feature=slurmd", "partition": "PartitionName=slurmd Nodes=slurmd", "slurm_version": "22.05.8"},
		wantStatus: juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmctld data"},
		wantApp:    juju.WorkloadStatus{Code: juju.StatusActive, Message: "partition slurmd"},
	}, {
		name:       "unknown key",
		config:     "MaxTme=1:00:00",
		leader:     true,
		event:      jujutest.Hook(juju.ConfigChanged),
		wantBag:    old,
		wantStatus: juju.WorkloadStatus{Code: juju.StatusBlocked, Message: `partition-config: unknown partition key "MaxTme" (did you mean "MaxTime"?)`},
		wantApp:    juju.WorkloadStatus{Code: juju.StatusBlocked, Message: `partition-config: unknown partition key "MaxTme" (did you mean "MaxTime"?)`},
	}, {
		name:       "value Slurm cannot read",
		config:     "MaxTime=abc",
		leader:     true,
		event:      jujutest.Hook(juju.ConfigChanged),
		wantBag:    old,
		wantStatus: juju.WorkloadStatus{Code: juju.StatusBlocked, Message: `partition-config: bad value "abc" for MaxTime: want minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED`},
		wantApp:    juju.WorkloadStatus{Code: juju.StatusBlocked, Message: `partition-config: bad value "abc" for MaxTime: want minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED`},
	}, {
		name:    "partition state is not the operator's",
		config:  "State=DOWN",
		leader:  true,
		event:   jujutest.Hook(juju.ConfigChanged),
		wantBag: old,
	}, {
		name:    "managed key",
		config:  "Nodes=other",
		leader:  true,
		event:   jujutest.RelationHook(juju.RelationJoined, relID, "slurmctld/0"),
		wantBag: old,
	}, {
		name:    "syntax error",
		config:  `MaxTime="1:00`,
		leader:  true,
		event:   jujutest.RelationHook(juju.RelationCreated, relID, ""),
		wantBag: old,
	}, {
		name:    "not leader",
		config:  "MaxTime=1:00:00",
		event:   jujutest.Hook(juju.ConfigChanged),
		wantBag: old,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.state.Leader = tt.leader
			e.state.Config["partition-config"] = tt.config
			e.state.Relations = []jujutest.Relation{{ID: relID, RemoteApp: "slurmctld", LocalAppData: old,
				RemoteUnits: map[string]map[string]string{"slurmctld/0": {}}}}
			if err := e.run(tt.event); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.wantBag, e.state.Relations[0].LocalAppData); d != "" {
				t.Errorf("application databag (-want +got):\n%s", d)
			}
			if tt.wantStatus.Code != "" {
				if d := cmp.Diff(tt.wantStatus, e.status()); d != "" {
					t.Errorf("unit status (-want +got):\n%s", d)
				}
			}
			if tt.wantApp.Code != "" {
				got := juju.WorkloadStatus{Code: e.state.AppStatus.Code, Message: e.state.AppStatus.Message}
				if d := cmp.Diff(tt.wantApp, got); d != "" {
					t.Errorf("application status (-want +got):\n%s", d)
				}
			}
			if strings.Contains(tt.name, "key") || strings.Contains(tt.name, "syntax") {
				if e.state.UnitStatus.Code != juju.StatusBlocked || !strings.Contains(e.state.UnitStatus.Message, "partition-config") {
					t.Errorf("status %+v does not block on partition-config", e.state.UnitStatus)
				}
			}
		})
	}
}

func TestJoin(t *testing.T) {
	e := newEnv(t)
	e.join()
	key, err := os.ReadFile(filepath.Join(e.root, "/etc/munge/munge.key"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(key, key1) {
		t.Errorf("munge key not written")
	}
	if fi, _ := os.Stat(filepath.Join(e.root, "/etc/munge/munge.key")); fi.Mode().Perm() != 0o400 {
		t.Errorf("munge key mode %v, want 0400", fi.Mode().Perm())
	}
	wantCmd := []string{SlurmdPath, "-D", "-Z", "-N", node, "--conf-server", "10.0.0.1:6817", "--conf",
		"CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105 Feature=slurmd"}
	if d := cmp.Diff(wantCmd, e.svc.Command(SlurmdService)); d != "" {
		t.Errorf("slurmd command (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"/usr/sbin/munged", "--foreground"}, e.svc.Command("munged")); d != "" {
		t.Errorf("munged command (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"configure", "enable", "spawn"}, e.svcCalls("munged")); d != "" {
		t.Errorf("munged calls (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"configure", "enable", "spawn"}, e.svcCalls(SlurmdService)); d != "" {
		t.Errorf("slurmd calls (-want +got):\n%s", d)
	}
	if d := cmp.Diff(active("node slurmd-3 idle"), e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	// munged's readiness was checked by its socket, with no process (munge -n).
	calls := e.slurm.callLog()
	if i := slices.Index(calls, munge.ClientPath+" -n"); i >= 0 {
		t.Errorf("munge -n ran on the join's path: %q", calls)
	}
	if len(e.slurmCalls()) != 0 {
		t.Errorf("idle default state changed the node: %q", e.slurmCalls())
	}
	if st := e.savedState(); st.Applied == nil || st.DefaultPending {
		t.Errorf("saved state %+v, want applied and no default pending", st)
	}
	// Nothing changed: the next relation-changed restarts nothing.
	before := len(e.svc.Calls())
	if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
		t.Fatal(err)
	}
	for _, c := range e.svc.Calls()[before:] {
		if !strings.HasPrefix(c, "status") {
			t.Errorf("unchanged data ran %q", c)
		}
	}
}

func TestJoinDefaultDown(t *testing.T) {
	e := newEnv(t)
	e.state.Config["default-node-state"] = "down"
	e.state.Config["default-node-reason"] = "burn-in"
	e.join()
	if d := cmp.Diff([]string{"scontrol update nodename=slurmd-3 state=down reason=burn-in"}, e.slurmCalls()); d != "" {
		t.Errorf("slurm calls (-want +got):\n%s", d)
	}
	if d := cmp.Diff(active("node slurmd-3 down: burn-in"), e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	// Applied once: a later hook leaves an admin's resume alone.
	e.slurm.update(node, "state=resume")
	if err := e.run(jujutest.Hook(juju.UpdateStatus)); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(active("node slurmd-3 idle"), e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
}

func TestBadDefaultNodeState(t *testing.T) {
	e := newEnv(t)
	e.state.Config["default-node-state"] = "drain"
	if err := e.run(jujutest.Hook(juju.ConfigChanged)); err != nil {
		t.Fatal(err)
	}
	want := juju.WorkloadStatus{Code: juju.StatusBlocked, Message: `default-node-state: invalid value "drain" (want idle or down)`}
	if d := cmp.Diff(want, e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
}

func TestControllerData(t *testing.T) {
	tests := []struct {
		name string
		bag  map[string]string
		want juju.WorkloadStatus
	}{
		{"not published", map[string]string{}, juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmctld data"}},
		{"bad version", map[string]string{"version": "9", "controllers": `["10.0.0.1:6817"]`, "auth_secret_id": string(secretID)},
			juju.WorkloadStatus{Code: juju.StatusBlocked}},
		{"bad controllers", map[string]string{"version": "1", "controllers": `10.0.0.1`, "auth_secret_id": string(secretID)},
			juju.WorkloadStatus{Code: juju.StatusBlocked}},
		{"unknown secret", map[string]string{"version": "1", "controllers": `["10.0.0.1:6817"]`, "auth_secret_id": "secret:nope"},
			juju.WorkloadStatus{Code: juju.StatusBlocked}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.related()
			e.state.Relations[0].RemoteAppData = tt.bag
			if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
				t.Fatal(err)
			}
			got := e.status()
			if got.Code != tt.want.Code || (tt.want.Message != "" && got.Message != tt.want.Message) {
				t.Errorf("status %+v, want %+v", got, tt.want)
			}
			if tt.want.Code == juju.StatusBlocked && !strings.HasPrefix(got.Message, "slurmctld relation: ") {
				t.Errorf("status %q does not name the relation", got.Message)
			}
			if e.svc.Active(SlurmdService) || e.slurm.hasNode(node) {
				t.Errorf("slurmd started on bad data")
			}
		})
	}
}

func TestKeyRotation(t *testing.T) {
	e := newEnv(t)
	e.join()
	e.state.Secrets[0].Revisions = append(e.state.Secrets[0].Revisions, slurmd.EncodeAuthSecret(key2, "2"))
	before := len(e.svc.Calls())
	if err := e.run(jujutest.SecretHook(juju.SecretChanged, secretID, 0)); err != nil {
		t.Fatal(err)
	}
	key, _ := os.ReadFile(filepath.Join(e.root, "/etc/munge/munge.key"))
	if !bytes.Equal(key, key2) {
		t.Errorf("munge key not rotated")
	}
	var got []string
	for _, c := range e.svc.Calls()[before:] {
		if strings.HasPrefix(c, "respawn") || strings.HasPrefix(c, "spawn") || strings.HasPrefix(c, "stop") {
			got = append(got, c)
		}
	}
	if d := cmp.Diff([]string{"respawn munged", "respawn slurmd"}, got); d != "" {
		t.Errorf("service calls (-want +got):\n%s", d)
	}
	if len(e.slurmCalls()) != 0 {
		t.Errorf("rotation touched the node record: %q", e.slurmCalls())
	}
	if st := e.savedState(); st.Applied.KeyID != "2" {
		t.Errorf("saved key id %q, want 2", st.Applied.KeyID)
	}
}

func TestControllersChanged(t *testing.T) {
	e := newEnv(t)
	e.join()
	bag, _ := slurmd.ControllerBag{Controllers: []string{"10.0.0.9:6817", "10.0.0.1:6817"}, AuthSecretID: string(secretID)}.Encode()
	e.state.Relations[0].RemoteAppData = bag
	before := len(e.svc.Calls())
	if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
		t.Fatal(err)
	}
	if got := e.svc.Calls()[before:]; !slices.Contains(got, "respawn slurmd") || slices.Contains(got, "respawn munged") {
		t.Errorf("service calls %q, want slurmd restarted and munged not", got)
	}
	if cmd := strings.Join(e.svc.Command(SlurmdService), " "); !strings.Contains(cmd, "--conf-server 10.0.0.9:6817,10.0.0.1:6817") {
		t.Errorf("slurmd command %q lacks the new controllers", cmd)
	}
	if len(e.slurmCalls()) != 0 {
		t.Errorf("controller change touched the node record: %q", e.slurmCalls())
	}
}

func TestConfChangedReregisters(t *testing.T) {
	e := newEnv(t)
	e.join()
	// The machine changed (more memory): the record must be replaced, not kept. The
	// machine's facts are cached: a relation hook alone does not re-read them,
	// upgrade-charm does and applies them.
	e.slurm.set(func(h *host) {
		h.machine = strings.Replace(string(slurmtest.Real("slurmd-C").Output.Stdout), "RealMemory=24105", "RealMemory=32000", 1)
	})
	e.slurm.update(node, "state=drain", "reason=admin maintenance")
	if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
		t.Fatal(err)
	}
	if calls := e.slurmCalls(); len(calls) != 0 {
		t.Errorf("relation-changed with cached facts touched the node: %q", calls)
	}
	if err := e.run(jujutest.Hook(juju.UpgradeCharm)); err != nil {
		t.Fatal(err)
	}
	want := []string{"scontrol delete nodename=slurmd-3", "scontrol update nodename=slurmd-3 state=drain reason=admin maintenance"}
	if d := cmp.Diff(want, e.slurmCalls()); d != "" {
		t.Errorf("slurm calls (-want +got):\n%s", d)
	}
	n, _ := e.slurm.Node(node)
	if n.RealMemory != 32000 {
		t.Errorf("node record RealMemory %d, want the new 32000", n.RealMemory)
	}
	if !n.State.Drain() || n.Reason != "admin maintenance" {
		t.Errorf("node state not restored: %v, reason %q", n.State, n.Reason)
	}
	calls := e.svcCalls(SlurmdService)
	if i, j := slices.Index(calls, "stop"), slices.Index(calls, "respawn"); i < 0 || j < i {
		t.Errorf("slurmd calls %q: want stop before the restart", calls)
	}
}

func TestDepart(t *testing.T) {
	tests := []struct {
		name       string
		jobs       int
		endAfter   int
		event      juju.Event
		wantStatus juju.WorkloadStatus
	}{
		{"idle, relation departed", 0, 0, departed(), juju.WorkloadStatus{Code: juju.StatusMaintenance, Message: "node slurmd-3 removed"}},
		{"jobs, relation departed", 2, 5, departed(), juju.WorkloadStatus{Code: juju.StatusMaintenance, Message: "node slurmd-3 removed"}},
		{"idle, broken", 0, 0, jujutest.RelationHook(juju.RelationBroken, relID, ""), juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "waiting for slurmctld relation"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.join()
			e.slurm.startJobs(node, tt.jobs, tt.endAfter)
			if err := e.run(tt.event); err != nil {
				t.Fatal(err)
			}
			if e.slurm.hasNode(node) {
				t.Errorf("node still exists")
			}
			if e.slurm.busyDeletes() != 0 {
				t.Errorf("tried to delete the node %d times while jobs ran", e.slurm.busyDeletes())
			}
			want := []string{"scontrol update nodename=slurmd-3 state=drain reason=unit slurmd/3 removed", "scontrol delete nodename=slurmd-3"}
			if d := cmp.Diff(want, e.slurmCalls()); d != "" {
				t.Errorf("slurm calls (-want +got):\n%s", d)
			}
			if e.svc.Active(SlurmdService) {
				t.Errorf("slurmd still running")
			}
			if d := cmp.Diff(tt.wantStatus, e.status()); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
			// Departure happens once: the following hooks do nothing more.
			for _, ev := range []juju.Event{jujutest.Hook(juju.UpdateStatus), jujutest.Hook(juju.Stop)} {
				if err := e.run(ev); err != nil {
					t.Fatal(err)
				}
			}
			if got := len(e.slurmCalls()); got != 2 {
				t.Errorf("departure repeated: %q", e.slurmCalls())
			}
		})
	}
}

func departed() juju.Event {
	ev := jujutest.RelationHook(juju.RelationDeparted, relID, "slurmctld/0")
	ev.DepartingUnit = unit
	return ev
}

func TestDepartOtherUnitIgnored(t *testing.T) {
	e := newEnv(t)
	e.join()
	ev := jujutest.RelationHook(juju.RelationDeparted, relID, "slurmctld/0") // the controller unit leaves
	if err := e.run(ev); err != nil {
		t.Fatal(err)
	}
	if len(e.slurmCalls()) != 0 || !e.slurm.hasNode(node) {
		t.Errorf("another unit's departure touched the node: %q", e.slurmCalls())
	}
}

func TestDepartControllerUnreachable(t *testing.T) {
	for _, when := range []string{"before drain", "while waiting"} {
		t.Run(when, func(t *testing.T) {
			e := newEnv(t)
			e.join()
			if when == "before drain" {
				e.slurm.SetUnreachable(true)
			} else {
				e.slurm.startJobs(node, 1, -1)
			}
			if when == "while waiting" {
				before := len(e.slurm.callLog())
				go func() {
					// The controller goes away while the job runs: once the departure has
					// checked the node's jobs.
					for !slices.ContainsFunc(e.slurm.callLog()[before:], func(c string) bool { return strings.HasPrefix(c, "squeue") }) {
						time.Sleep(time.Millisecond)
					}
					e.slurm.SetUnreachable(true)
				}()
			}
			if err := e.run(departed()); err != nil {
				t.Fatalf("departure failed instead of leaving the node to the controller: %v", err)
			}
			if e.svc.Active(SlurmdService) {
				t.Errorf("slurmd still running")
			}
			if !e.slurm.hasNode(node) {
				t.Errorf("node deleted although the controller was unreachable")
			}
			want := juju.WorkloadStatus{Code: juju.StatusMaintenance, Message: "node slurmd-3 left drained: controller unreachable"}
			if d := cmp.Diff(want, e.status()); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
			if !e.savedState().Departed {
				t.Errorf("departure not recorded")
			}
		})
	}
}

func TestUpdateStatus(t *testing.T) {
	tests := []struct {
		name  string
		setup func(h *host)
		want  juju.WorkloadStatus
	}{
		{"idle", func(*host) {}, active("node slurmd-3 idle")},
		{"allocated", func(h *host) { h.startJobs(node, 1, -1) }, active("node slurmd-3 allocated")},
		{"draining", func(h *host) { h.startJobs(node, 1, -1); h.update(node, "state=drain", "reason=maint") }, active("node slurmd-3 draining: maint")},
		{"drained", func(h *host) { h.update(node, "state=drain", "reason=maint") }, active("node slurmd-3 drained: maint")},
		{"down", func(h *host) { h.update(node, "state=down", "reason=dead"); h.SetNotResponding(node, true) },
			juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "node slurmd-3 down (not responding): dead"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.join()
			tt.setup(e.slurm)
			if err := e.run(jujutest.Hook(juju.UpdateStatus)); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, e.status()); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
		})
	}
	t.Run("unrelated", func(t *testing.T) {
		e := newEnv(t)
		if err := e.run(jujutest.Hook(juju.UpdateStatus)); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "waiting for slurmctld relation"}, e.status()); d != "" {
			t.Errorf("status (-want +got):\n%s", d)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		e := newEnv(t)
		e.join()
		e.slurm.SetUnreachable(true)
		if err := e.run(jujutest.Hook(juju.UpdateStatus)); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "node slurmd-3: controller unreachable"}, e.status()); d != "" {
			t.Errorf("status (-want +got):\n%s", d)
		}
	})
}

// A controller that never serves the configuration: slurmd runs but cannot fetch slurm.conf.
func TestNoConfiguration(t *testing.T) {
	e := newEnv(t)
	e.charm.RegisterTimeout = 20 * time.Millisecond
	e.related()
	e.slurm.SetUnreachable(true)
	// Real slurmd writes no cache while it cannot reach the controller.
	e.slurm.noCache = true
	if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
		t.Fatal(err)
	}
	want := juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for node slurmd-3 to register"}
	if d := cmp.Diff(want, e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	if err := e.run(jujutest.Hook(juju.UpdateStatus)); err != nil {
		t.Fatal(err)
	}
	want = juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmd on slurmd-3 to fetch its configuration"}
	if d := cmp.Diff(want, e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	for _, c := range e.slurm.callLog() {
		if strings.HasPrefix(c, "scontrol") || strings.HasPrefix(c, "squeue") {
			t.Errorf("ran %q without a slurm.conf (it would retry for a minute)", c)
		}
	}
	if err := e.run(departed()); err != nil {
		t.Fatal(err)
	}
	if e.svc.Active(SlurmdService) || !e.savedState().Departed {
		t.Errorf("departure without configuration: slurmd active %v, departed %v", e.svc.Active(SlurmdService), e.savedState().Departed)
	}
}

func TestMungedNotAnswering(t *testing.T) {
	e := newEnv(t)
	e.charm.MungeTimeout = 20 * time.Millisecond
	e.slurm.set(func(h *host) { h.mungeUp, h.mungeMute = func() bool { return false }, true })
	e.related()
	err := e.run(jujutest.RelationHook(juju.RelationCreated, relID, ""))
	if err == nil || !strings.Contains(err.Error(), "cannot wait for munged to listen") {
		t.Fatalf("got %v, want an error about munged", err)
	}
	if e.svc.Active(SlurmdService) {
		t.Error("slurmd started although munged does not answer")
	}
	// slurmd's definition may run beside munged's start; nothing enables or starts it.
	for _, c := range e.svcCalls(SlurmdService) {
		if c != "configure" {
			t.Errorf("slurmd %s although munged does not answer", c)
		}
	}
}

// TestVersionShown: juju status's Version column shows the machine's Slurm version. install
// reads the version while it sets its status, so the version comes with the next status:
// install keeps one hook-tool call off a new unit's join. slurmd -C is read once, by the
// relation hook that starts slurmd (beside its own work), and kept.
func TestVersionShown(t *testing.T) {
	e := newEnv(t)
	if err := e.run(jujutest.Hook(juju.Install)); err != nil {
		t.Fatal(err)
	}
	if f := e.savedState().Facts; f == nil || f.Version != "22.05.8" || f.hasMachine() {
		t.Errorf("install saved the facts %+v, want version 22.05.8 only", f)
	}
	if e.state.Version != "" {
		t.Errorf("install set the application version %q", e.state.Version)
	}
	e.join()
	if e.state.Version != "22.05.8" {
		t.Errorf("application version %q, want 22.05.8", e.state.Version)
	}
	if f := e.savedState().Facts; !f.hasMachine() {
		t.Errorf("the join saved the facts %+v, want slurmd -C's", f)
	}
	var reads []string
	for _, c := range e.slurm.callLog() {
		if strings.HasPrefix(c, "slurmd -") {
			reads = append(reads, c)
		}
	}
	if d := cmp.Diff([]string{"slurmd -V", "slurmd -C"}, reads); d != "" {
		t.Errorf("slurmd's facts read (-want +got):\n%s", d)
	}
}

// TestFailedHookKeepsHostRecord: a failed hook keeps what it did to the host (slurmd
// started with a configuration, a re-registration under way, the node gone, the machine's
// facts) and drops what it wrote to Juju (Juju discards it, or the next hook writes it
// again) and a node-config it did not apply.
func TestFailedHookKeepsHostRecord(t *testing.T) {
	saved := State{
		NodeConfig:  "Weight=2",
		Applied:     &Applied{Controllers: []string{"10.0.0.1:6817"}, Conf: "CPUs=2", KeyHash: "h1"},
		Published:   &Published{Relation: relID, Data: map[string]string{"version": "1"}},
		StatusCache: charm.StatusCache{Unit: "active: node slurmd-3 idle", App: "active: partition slurmd", Version: "22.05.8"},
	}
	cur := State{
		NodeConfig:     "Weight=3",
		Applied:        &Applied{Controllers: []string{"10.0.0.9:6817"}, Conf: "CPUs=2 Weight=3", KeyHash: "h2"},
		Restore:        &NodeAdmin{Drain: true, Reason: "admin"},
		DefaultPending: true,
		Departed:       true,
		Facts:          &Facts{Version: "24.11.5"},
		Published:      &Published{Relation: relID, Data: map[string]string{"version": "2"}},
		StatusCache:    charm.StatusCache{Unit: "maintenance: restarting slurmd", App: "blocked: partition-config", Version: "24.11.5"},
	}
	want := State{
		NodeConfig:     saved.NodeConfig,
		Applied:        cur.Applied,
		Restore:        cur.Restore,
		DefaultPending: true,
		Departed:       true,
		Facts:          cur.Facts,
		Published:      saved.Published,
		StatusCache:    saved.StatusCache,
	}
	c := &Charm{}
	if d := cmp.Diff(want, c.lifecycle().Failed(saved, cur)); d != "" {
		t.Errorf("state kept after a failed hook (-want +got):\n%s", d)
	}
}

// A hook that fails after slurmd started (the controller went away before the node got its
// default-node-state) keeps the record of it: the retry neither starts slurmd again as new
// nor forgets the default state, and sets the status again.
func TestFailedHookAfterStart(t *testing.T) {
	e := newEnv(t)
	e.state.Config["default-node-state"] = "down"
	e.related()
	e.slurm.Before(func(argv []string) {
		if slices.Contains(argv, "state=down") {
			e.slurm.SetUnreachable(true)
		}
	})
	if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err == nil {
		t.Fatal("relation-changed succeeded with the controller gone")
	}
	st := e.savedState()
	if st.Applied == nil || !st.DefaultPending || !e.svc.Active(SlurmdService) {
		t.Fatalf("after the failed hook: applied %+v, default pending %v, slurmd active %v", st.Applied, st.DefaultPending, e.svc.Active(SlurmdService))
	}
	e.slurm.Before(nil)
	e.slurm.SetUnreachable(false)
	before := len(e.svc.Calls())
	if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
		t.Fatal(err)
	}
	if got := e.svc.Calls()[before:]; len(got) != 0 {
		t.Errorf("the retry ran service calls %q", got)
	}
	if d := cmp.Diff(active("node slurmd-3 down: default-node-state is down"), e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	if st := e.savedState(); st.DefaultPending || st.Unit == "" {
		t.Errorf("after the retry: default pending %v, status cache %q", st.DefaultPending, st.Unit)
	}
}

// TestJoinIdleReadsNodeOnce: with default-node-state idle, the relation hook that starts
// slurmd reports the record its wait for the registration read: no scontrol after it.
// default-node-state down reads the node again after setting it down, for the status.
func TestJoinIdleReadsNodeOnce(t *testing.T) {
	for _, tt := range []struct {
		state string
		want  int
	}{{"idle", 1}, {"down", 2}} {
		t.Run(tt.state, func(t *testing.T) {
			e := newEnv(t)
			e.state.Config["default-node-state"] = tt.state
			e.related()
			if err := e.run(jujutest.RelationHook(juju.RelationCreated, relID, "")); err != nil {
				t.Fatal(err)
			}
			var shows []string
			for _, c := range e.slurm.callLog() {
				if strings.HasPrefix(c, "scontrol show node") {
					shows = append(shows, c)
				}
			}
			if len(shows) != tt.want {
				t.Errorf("%d node reads %q, want %d", len(shows), shows, tt.want)
			}
		})
	}
}
