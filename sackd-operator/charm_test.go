package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/sackd"
	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

const (
	unit     = "login/0"
	relID    = juju.RelationID("slurmctld:4")
	secretID = juju.SecretID("secret:cvq0auth")
)

var (
	key1 = bytes.Repeat([]byte{1}, 64)
	key2 = bytes.Repeat([]byte{2}, 64)
)

// env is one login unit's test world: the charm with fakes, and the Juju state between hooks.
type env struct {
	t     *testing.T
	charm *Charm
	host  *host
	root  string
	state jujutest.State
	// ctlVersion is the Slurm release the controller publishes (zero: it does not say).
	ctlVersion slurm.Version
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	h := newHost(root)
	c := &Charm{
		Settings: charm.Settings{
			Root:         root,
			PollInterval: time.Millisecond,
			LookupUser:   func(string) (int, int, error) { return os.Getuid(), os.Getgid(), nil },
		},
		Slurm:        h,
		Services:     h.svc,
		StateFile:    filepath.Join(root, "charm", StateName),
		ReadyTimeout: 2 * time.Second,
		LookPath:     h.lookPath,
		Hostname:     func() (string, error) { return "juju-3.lxd", nil },
	}
	return &env{t: t, charm: c, host: h, root: root, state: jujutest.State{Unit: unit, PrivateAddress: "10.0.0.14"}}
}

// bag is the controller's databag for controllers and digest.
func (e *env) bag(digest string, controllers ...string) map[string]string {
	e.t.Helper()
	if len(controllers) == 0 {
		controllers = []string{"10.0.0.1:6817"}
	}
	bag, err := sackd.ControllerBag{Controllers: controllers, AuthSecretID: string(secretID), ClusterName: "test", ConfDigest: digest, SlurmVersion: e.ctlVersion}.Encode()
	if err != nil {
		e.t.Fatal(err)
	}
	return bag
}

// related adds the relation to slurmctld with its data and the key secret, granted.
func (e *env) related() {
	e.state.Relations = []jujutest.Relation{{
		ID: relID, RemoteApp: "slurmctld", RemoteAppData: e.bag(digestOf(e.host.conf)),
		RemoteUnits: map[string]map[string]string{"slurmctld/0": {}},
	}}
	e.state.Secrets = []jujutest.Secret{{
		ID: secretID, Owner: "slurmctld",
		Revisions: []map[string]string{slurmd.EncodeAuthSecret(key1, "1")},
		Grants:    []jujutest.Grant{{Relation: relID}},
	}}
}

func digestOf(conf string) string {
	return sackd.DigestFiles(map[string][]byte{"/etc/slurm/slurm.conf": []byte(conf)})
}

// run runs ev and keeps the resulting state.
func (e *env) run(ev juju.Event) error {
	e.t.Helper()
	out, err := jujutest.Run(e.t, e.state, ev, e.charm.Router().Dispatch)
	e.state = out
	return err
}

// must runs ev and fails the test if the hook fails.
func (e *env) must(ev juju.Event) {
	e.t.Helper()
	if err := e.run(ev); err != nil {
		e.t.Fatalf("%s: %v", ev.Name, err)
	}
}

// join installs the unit and runs the hooks of joining the controller.
func (e *env) join() {
	e.t.Helper()
	e.must(jujutest.Hook(juju.Install))
	e.related()
	for _, ev := range []juju.Event{
		jujutest.RelationHook(juju.RelationCreated, relID, ""),
		jujutest.RelationHook(juju.RelationJoined, relID, "slurmctld/0"),
		jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"),
	} {
		e.must(ev)
	}
}

func (e *env) status() juju.WorkloadStatus {
	return juju.WorkloadStatus{Code: e.state.UnitStatus.Code, Message: e.state.UnitStatus.Message}
}

func (e *env) wantStatus(code juju.StatusCode, msg string) {
	e.t.Helper()
	if d := cmp.Diff(juju.WorkloadStatus{Code: code, Message: msg}, e.status()); d != "" {
		e.t.Errorf("status (-want +got):\n%s", d)
	}
}

func (e *env) exists(p string) bool {
	_, err := os.Stat(filepath.Join(e.root, p))
	return err == nil
}

func TestInstall(t *testing.T) {
	const (
		v2411 = "24.11.5-4+deb13u1"
		v2205 = "22.05.8-4+deb12u3"
	)
	tests := []struct {
		name                  string
		installed, candidates map[string]string
		wantApt               []string
		wantStatus            juju.WorkloadStatus
		wantVersion           string
		wantServices          []string
		packaged              bool // sackd's packaged unit runs, as after apt-get install on Debian
	}{{
		name:         "Debian 13 image: all there",
		installed:    map[string]string{"sackd": v2411, "slurm-client": v2411},
		packaged:     true,
		wantStatus:   juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "waiting for slurmctld relation"},
		wantVersion:  "24.11.5",
		wantServices: []string{"stop sackd", "disable sackd"},
	}, {
		name:         "Slurm 24.11 client, no sackd",
		installed:    map[string]string{"slurm-client": v2411},
		candidates:   map[string]string{"sackd": v2411},
		wantApt:      []string{"apt-get update", "apt-cache policy sackd", "apt-get update", "apt-get install -y --no-install-recommends sackd"},
		wantStatus:   juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "waiting for slurmctld relation"},
		wantVersion:  "24.11.5",
		wantServices: []string{"stop sackd"}, // Pebble: no service until the charm makes one
	}, {
		name:       "fresh machine, apt offers 24.11",
		installed:  map[string]string{},
		candidates: map[string]string{"sackd": v2411, "slurm-client": v2411},
		wantApt: []string{"apt-get update", "apt-cache policy sackd",
			"apt-get update", "apt-get install -y --no-install-recommends sackd slurm-client"},
		wantStatus:   juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "waiting for slurmctld relation"},
		wantVersion:  "24.11.5",
		wantServices: []string{"stop sackd"},
	}, {
		name:        "Debian 12: Slurm 22.05 installed",
		installed:   map[string]string{"slurm-client": v2205},
		wantStatus:  juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "Slurm 22.05.8 (installed here) has no sackd: a login node needs Slurm 23.11 (Debian 13) or later"},
		wantVersion: "22.05.8",
	}, {
		name:        "fresh Debian 12: apt offers 22.05",
		installed:   map[string]string{},
		candidates:  map[string]string{"slurm-client": v2205},
		wantApt:     []string{"apt-get update", "apt-cache policy sackd", "apt-cache policy slurm-client"},
		wantStatus:  juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "Slurm 22.05.8 (offered by apt) has no sackd: a login node needs Slurm 23.11 (Debian 13) or later"},
		wantVersion: "22.05.8",
	}, {
		name:        "Slurm 24.11 client, apt has no sackd",
		installed:   map[string]string{"slurm-client": v2411},
		wantApt:     []string{"apt-get update", "apt-cache policy sackd"},
		wantStatus:  juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "Slurm 24.11.5 is installed here but apt offers no sackd package: a login node needs sackd"},
		wantVersion: "24.11.5",
	}, {
		name:        "fresh machine, apt offers Slurm 24.11 without sackd",
		installed:   map[string]string{},
		candidates:  map[string]string{"slurm-client": v2411},
		wantApt:     []string{"apt-get update", "apt-cache policy sackd", "apt-cache policy slurm-client"},
		wantStatus:  juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "apt offers Slurm 24.11.5 but no sackd package: a login node needs sackd"},
		wantVersion: "24.11.5",
	}, {
		name:       "no Slurm at all",
		installed:  map[string]string{},
		wantApt:    []string{"apt-get update", "apt-cache policy sackd", "apt-cache policy slurm-client"},
		wantStatus: juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "apt offers no Slurm: a login node needs sackd, from Slurm 23.11 (Debian 13) or later"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.host.installed, e.host.candidates = tt.installed, tt.candidates
			if e.host.candidates == nil {
				e.host.candidates = map[string]string{}
			}
			if tt.packaged {
				e.host.packaged()
			}
			e.must(jujutest.Hook(juju.Install))
			if d := cmp.Diff(tt.wantApt, e.host.commands("apt")); d != "" {
				t.Errorf("apt (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantStatus, e.status()); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
			if e.state.Version != tt.wantVersion {
				t.Errorf("version %q, want %q", e.state.Version, tt.wantVersion)
			}
			if d := cmp.Diff(tt.wantServices, e.host.svc.Calls()); d != "" {
				t.Errorf("service calls (-want +got):\n%s", d)
			}
			if st, err := e.host.svc.Status(t.Context(), SackdService); err == nil && (st.State == service.StateActive || st.Enabled) {
				t.Errorf("sackd left %+v", st)
			}
		})
	}
}

// TestOldReleaseConfiguresNothing: on Slurm 22.05 the unit blocks naming the version, and the
// controller's data changes nothing on the machine: no key, no sackd, no runtime directory.
func TestOldReleaseConfiguresNothing(t *testing.T) {
	e := newEnv(t)
	e.host.installed = map[string]string{"slurm-client": "22.05.8-4+deb12u3"}
	e.join()
	e.must(jujutest.SecretHook(juju.SecretChanged, secretID, 0))
	e.must(jujutest.Hook(juju.UpdateStatus))
	e.wantStatus(juju.StatusBlocked, "Slurm 22.05.8 (installed here) has no sackd: a login node needs Slurm 23.11 (Debian 13) or later")
	if calls := e.host.svc.Calls(); len(calls) != 0 {
		t.Errorf("service calls %q", calls)
	}
	for _, p := range []string{KeyFile, RunDir} {
		if e.exists(p) {
			t.Errorf("%s exists", p)
		}
	}
	if c := e.host.commands("apt-get"); len(c) != 0 {
		t.Errorf("apt-get ran: %q", c)
	}
}

// TestUpgradedMachineJoins: a machine refused as a login node that gets sackd (its packages
// upgraded) joins the cluster at the next update-status.
func TestUpgradedMachineJoins(t *testing.T) {
	e := newEnv(t)
	e.host.installed = map[string]string{"slurm-client": "22.05.8-4+deb12u3"}
	e.join()
	e.host.installed = map[string]string{"sackd": "24.11.5-4+deb13u1", "slurm-client": "24.11.5-4+deb13u1"}
	e.must(jujutest.Hook(juju.UpdateStatus))
	e.wantStatus(juju.StatusActive, ReadyMessage)
	if e.state.Version != "24.11.5" {
		t.Errorf("version %q", e.state.Version)
	}
}

func TestJoin(t *testing.T) {
	e := newEnv(t)
	e.join()
	e.wantStatus(juju.StatusActive, ReadyMessage)
	key, err := os.ReadFile(filepath.Join(e.root, KeyFile))
	if err != nil || !bytes.Equal(key, key1) {
		t.Fatalf("key file: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(e.root, KeyFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 0600", fi.Mode().Perm())
	}
	want := []string{"/usr/sbin/sackd", "-D", "--conf-server", "10.0.0.1:6817"}
	if d := cmp.Diff(want, e.host.svc.Command(SackdService)); d != "" {
		t.Errorf("sackd command (-want +got):\n%s", d)
	}
	// Started once, enabled at boot.
	if d := cmp.Diff([]string{"stop sackd", "configure sackd", "enable sackd", "start sackd"}, e.host.svc.Calls()); d != "" {
		t.Errorf("service calls (-want +got):\n%s", d)
	}
	if e.host.fetched() != e.host.conf {
		t.Errorf("sackd fetched %q", e.host.fetched())
	}
	// The status comes from sinfo through sackd, reading what sackd fetched.
	if got := e.host.commands("sinfo"); len(got) == 0 || got[len(got)-1] != "sinfo -h -o %R" {
		t.Errorf("sinfo calls %q", got)
	}
}

func TestSpec(t *testing.T) {
	s := spec(&Applied{Controllers: []string{"a:6817", "b:6817"}})
	if s.User != SlurmUser || !s.KillAll || s.Name != SackdService {
		t.Errorf("spec %+v: want user slurm, KillAll, name sackd", s)
	}
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
	if d := cmp.Diff([]string{"/usr/sbin/sackd", "-D", "--conf-server", "a:6817,b:6817"}, s.Command); d != "" {
		t.Errorf("command (-want +got):\n%s", d)
	}
}

// TestChanges: what sackd is restarted for, and what leaves it alone.
func TestChanges(t *testing.T) {
	tests := []struct {
		name    string
		change  func(e *env) juju.Event
		restart bool
		// wantCmd, when set, is sackd's command after the change.
		wantCmd []string
	}{{
		name:   "nothing changed",
		change: func(e *env) juju.Event { return jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0") },
	}, {
		name: "cluster name changed",
		change: func(e *env) juju.Event {
			e.state.Relations[0].RemoteAppData["cluster_name"] = "other"
			return jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")
		},
	}, {
		name: "key rotation",
		change: func(e *env) juju.Event {
			e.host.rotateKey(key2)
			e.state.Secrets[0].Revisions = append(e.state.Secrets[0].Revisions, slurmd.EncodeAuthSecret(key2, "2"))
			return jujutest.SecretHook(juju.SecretChanged, secretID, 0)
		},
		restart: true,
	}, {
		name: "controllers (HA: a list, primary first)",
		change: func(e *env) juju.Event {
			e.host.controllers = []string{"10.0.0.2:6817", "10.0.0.1:6817"}
			e.state.Relations[0].RemoteAppData = e.bag(digestOf(e.host.conf), "10.0.0.2:6817", "10.0.0.1:6817")
			return jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")
		},
		restart: true,
		wantCmd: []string{"/usr/sbin/sackd", "-D", "--conf-server", "10.0.0.2:6817,10.0.0.1:6817"},
	}, {
		name: "controller restarted with a new configuration",
		change: func(e *env) juju.Event {
			e.host.restartController("ClusterName=test\nGresTypes=gpu,fpga\n")
			e.state.Relations[0].RemoteAppData = e.bag(digestOf(e.host.conf))
			return jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")
		},
		restart: true,
	}, {
		name: "sackd died",
		change: func(e *env) juju.Event {
			e.host.svc.Exit(SackdService)
			return jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")
		},
		restart: true, // started again
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.join()
			keyBefore, _ := os.ReadFile(filepath.Join(e.root, KeyFile))
			e.host.svc.ResetCalls()
			e.must(tt.change(e))
			calls := e.host.svc.Calls()
			restarted := slices.Contains(calls, "restart sackd") || slices.Contains(calls, "start sackd")
			if restarted != tt.restart {
				t.Errorf("service calls %q: restarted %v, want %v", calls, restarted, tt.restart)
			}
			e.wantStatus(juju.StatusActive, ReadyMessage)
			// sackd has what the controller serves now, with the cluster's key.
			if e.host.fetched() != e.host.conf {
				t.Errorf("sackd has %q, the controller serves %q", e.host.fetched(), e.host.conf)
			}
			key, _ := os.ReadFile(filepath.Join(e.root, KeyFile))
			if !bytes.Equal(key, e.host.clusterKey) {
				t.Errorf("key file is not the cluster's (changed: %v)", !bytes.Equal(key, keyBefore))
			}
			if tt.wantCmd != nil {
				if d := cmp.Diff(tt.wantCmd, e.host.svc.Command(SackdService)); d != "" {
					t.Errorf("sackd command (-want +got):\n%s", d)
				}
			}
		})
	}
}

// TestStaleWithoutDigest shows why the digest is there: a controller restarted with a new
// configuration and a databag that does not say so leaves sackd with the old one (as real
// sackd does), and the status still says ready, because sinfo answers.
func TestStaleWithoutDigest(t *testing.T) {
	e := newEnv(t)
	e.join()
	old := e.host.conf
	e.host.restartController("ClusterName=test\nMaxJobCount=5\n")
	e.must(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"))
	if e.host.fetched() != old {
		t.Fatalf("sackd refetched without a reason")
	}
}

func TestLeave(t *testing.T) {
	for _, tt := range []struct {
		name string
		ev   juju.Event
		want juju.WorkloadStatus
	}{{
		name: "unit removed (its relation-departed)",
		ev: func() juju.Event {
			ev := jujutest.RelationHook(juju.RelationDeparted, relID, "slurmctld/0")
			ev.DepartingUnit = unit
			return ev
		}(),
		want: juju.WorkloadStatus{Code: juju.StatusMaintenance, Message: "login node left the cluster"},
	}, {
		name: "controller gone (relation-broken)",
		ev:   jujutest.RelationHook(juju.RelationBroken, relID, ""),
		want: juju.WorkloadStatus{Code: juju.StatusBlocked, Message: "waiting for slurmctld relation"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.join()
			e.host.svc.ResetCalls()
			e.must(tt.ev)
			if d := cmp.Diff(tt.want, e.status()); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
			if d := cmp.Diff([]string{"stop sackd", "disable sackd"}, e.host.svc.Calls()); d != "" {
				t.Errorf("service calls (-want +got):\n%s", d)
			}
			for _, p := range []string{KeyFile, RunConf} {
				if e.exists(p) {
					t.Errorf("%s left behind", p)
				}
			}
			for _, r := range e.state.Relations {
				if r.LocalAppData != nil {
					t.Errorf("the login unit wrote application data")
				}
			}
			// A controller unit leaving while the application stays changes nothing.
			e = newEnv(t)
			e.join()
			e.host.svc.ResetCalls()
			other := jujutest.RelationHook(juju.RelationDeparted, relID, "slurmctld/0")
			other.DepartingUnit = "slurmctld/0"
			e.must(other)
			if calls := e.host.svc.Calls(); len(calls) != 0 {
				t.Errorf("a controller unit's departure: service calls %q", calls)
			}
		})
	}
}

func TestBadControllerData(t *testing.T) {
	e := newEnv(t)
	e.must(jujutest.Hook(juju.Install))
	e.related()
	e.state.Relations[0].RemoteAppData["controllers"] = `["no-port"]`
	e.host.svc.ResetCalls()
	e.must(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"))
	e.wantStatus(juju.StatusBlocked, `slurmctld relation: invalid "controllers" in sackd relation data: "no-port" is not host:port`)
	if calls := e.host.svc.Calls(); len(calls) != 0 || e.exists(KeyFile) {
		t.Errorf("bad data configured something: %q", calls)
	}
}

func TestWaitingStatuses(t *testing.T) {
	t.Run("no data yet", func(t *testing.T) {
		e := newEnv(t)
		e.must(jujutest.Hook(juju.Install))
		e.related()
		e.state.Relations[0].RemoteAppData = nil
		e.must(jujutest.RelationHook(juju.RelationCreated, relID, ""))
		e.wantStatus(juju.StatusWaiting, "waiting for slurmctld data")
	})
	t.Run("controller unreachable", func(t *testing.T) {
		e := newEnv(t)
		e.host.controllers = nil
		e.join()
		e.wantStatus(juju.StatusWaiting, "waiting for sackd to fetch the configuration from 10.0.0.1:6817")
		// It answers later: update-status sees it (sackd retries by itself; here a restart
		// fetches).
		e.host.controllers = []string{"10.0.0.1:6817"}
		e.host.svc.Exit(SackdService)
		e.must(jujutest.Hook(juju.UpdateStatus))
		e.wantStatus(juju.StatusWaiting, "sackd is inactive")
		e.must(jujutest.Hook(juju.Start))
		e.wantStatus(juju.StatusActive, ReadyMessage)
	})
	t.Run("sackd gone", func(t *testing.T) {
		e := newEnv(t)
		e.join()
		os.Remove(filepath.Join(e.root, SackSocket))
		e.must(jujutest.Hook(juju.UpdateStatus))
		e.wantStatus(juju.StatusWaiting, "sinfo does not answer through sackd: slurm_load_partitions: Protocol authentication error")
	})
	t.Run("supervisor gone", func(t *testing.T) {
		e := newEnv(t)
		e.join()
		e.host.svc.Kill(errors.New("cannot connect to pebble"))
		e.must(jujutest.Hook(juju.UpdateStatus))
		e.wantStatus(juju.StatusBlocked, "sackd: service manager unreachable")
	})
}

// TestFailedStartRetried: a start the supervisor refuses fails the hook; Juju retries it and
// the retry starts sackd.
func TestFailedStartRetried(t *testing.T) {
	e := newEnv(t)
	e.must(jujutest.Hook(juju.Install))
	e.related()
	e.host.svc.FailStarts(errors.New("sackd exited"))
	ev := jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")
	if err := e.run(ev); err == nil || !strings.Contains(err.Error(), "cannot start sackd") {
		t.Fatalf("err = %v, want cannot start sackd", err)
	}
	e.host.svc.FailStarts(nil)
	e.must(ev)
	e.wantStatus(juju.StatusActive, ReadyMessage)
}

// TestServiceStates: the fake's states are the ones status reads.
func TestServiceStates(t *testing.T) {
	e := newEnv(t)
	e.join()
	st, err := e.host.svc.Status(t.Context(), SackdService)
	if err != nil || st.State != service.StateActive || !st.Enabled {
		t.Errorf("sackd %+v, %v: want active and enabled", st, err)
	}
}

// TestPublishHost: the unit publishes its short host name (what srun sends) and its address
// once, again when they change (upgrade-charm reads them afresh), and not when refused.
func TestPublishHost(t *testing.T) {
	e := newEnv(t)
	e.join()
	want := map[string]string{"hostname": "juju-3", "address": "10.0.0.14", "slurm_version": "24.11.5"}
	if d := cmp.Diff(want, e.state.Relations[0].LocalUnitData); d != "" {
		t.Errorf("unit data (-want +got):\n%s", d)
	}
	if e.state.Relations[0].LocalAppData != nil {
		t.Errorf("the login unit wrote application data: %v", e.state.Relations[0].LocalAppData)
	}
	e.state.PrivateAddress = "10.0.0.99"
	e.must(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"))
	if got := e.state.Relations[0].LocalUnitData["address"]; got != "10.0.0.14" {
		t.Errorf("a relation hook read the address again: %s", got)
	}
	e.must(jujutest.Hook(juju.UpgradeCharm))
	if got := e.state.Relations[0].LocalUnitData["address"]; got != "10.0.0.99" {
		t.Errorf("after upgrade-charm the address is %s, want 10.0.0.99", got)
	}

	e = newEnv(t)
	e.host.installed = map[string]string{"slurm-client": "22.05.8-4+deb12u3"}
	e.join()
	if d := e.state.Relations[0].LocalUnitData; len(d) != 0 {
		t.Errorf("a refused unit published %v", d)
	}
}

// TestVersionChecked: a sackd the controller's Slurm does not accept (newer than slurmctld, or
// too old for it) is never started and nothing is written, the unit blocked naming both
// versions; once the controller runs a release that accepts it, the unit joins. A refusal
// that comes while sackd runs (the controller's Slurm changed under it) leaves it running.
func TestVersionChecked(t *testing.T) {
	v := func(s string) slurm.Version {
		x, err := slurm.ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, tt := range []struct {
		name, ctl, mine string
		// accepting is a controller release that accepts mine.
		accepting, want string
	}{
		{"newer than the controller", "24.11.5", "26.05.5-1", "26.05.5", "sackd 26.05.5 is newer than slurmctld 24.11.5: Slurm accepts no daemon newer than its controller; upgrade slurmctld first"},
		{"too old for the controller", "26.05.5", "23.11.10-1", "24.05.4", "sackd 23.11.10 is too old for slurmctld 26.05.5 (it accepts sackd of its own release and the 3 before it): upgrade sackd"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.host.installed = map[string]string{"sackd": tt.mine, "slurm-client": tt.mine}
			e.ctlVersion = v(tt.ctl)
			e.join()
			e.must(jujutest.SecretHook(juju.SecretChanged, secretID, 0))
			e.must(jujutest.Hook(juju.UpdateStatus))
			e.wantStatus(juju.StatusBlocked, tt.want)
			if calls := e.host.svc.Calls(); len(calls) != 1 || calls[0] != "stop sackd" {
				t.Errorf("service calls %q, want only install's stop", calls)
			}
			if e.exists(KeyFile) || e.exists(RunDir) {
				t.Errorf("a refused login node has the key or sackd's directory")
			}
			// The controller upgraded (or this machine): the unit joins.
			e.ctlVersion = v(tt.accepting)
			e.state.Relations[0].RemoteAppData = e.bag(digestOf(e.host.conf))
			e.must(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"))
			e.wantStatus(juju.StatusActive, ReadyMessage)
		})
	}
	t.Run("refused while running", func(t *testing.T) {
		e := newEnv(t)
		e.ctlVersion = v("24.11.5")
		e.join()
		e.wantStatus(juju.StatusActive, ReadyMessage)
		e.host.svc.ResetCalls()
		e.ctlVersion = v("23.11.10")
		e.state.Relations[0].RemoteAppData = e.bag(digestOf(e.host.conf))
		e.must(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"))
		e.wantStatus(juju.StatusBlocked, ReadyMessage+"; sackd 24.11.5 is newer than slurmctld 23.11.10: Slurm accepts no daemon newer than its controller; upgrade slurmctld first")
		if calls := e.host.svc.Calls(); len(calls) != 0 {
			t.Errorf("service calls %q: a running sackd is left as it runs", calls)
		}
	})
}

// TestWaitsForReadableConf: while the controller's conf_min_version names a newer release
// than this machine's (slurm.conf carries keys sackd cannot parse: it would exit on them),
// sackd is not started and nothing is written, the unit waiting and saying why, its release
// published beside its host name; once the controller drops conf_min_version, it joins.
func TestWaitsForReadableConf(t *testing.T) {
	e := newEnv(t)
	e.ctlVersion = slurm.Version{Major: 26, Minor: 5, Micro: 5}
	e.must(jujutest.Hook(juju.Install))
	e.related()
	e.state.Relations[0].RemoteAppData[slurmd.KeyConfMinVersion] = "25.11.0"
	for _, ev := range []juju.Event{
		jujutest.RelationHook(juju.RelationCreated, relID, ""),
		jujutest.RelationHook(juju.RelationJoined, relID, "slurmctld/0"),
		jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"),
	} {
		e.must(ev)
	}
	e.wantStatus(juju.StatusWaiting, "sackd 24.11.5 cannot read the configuration slurmctld serves (it needs Slurm 25.11 or later): waiting for slurmctld to leave out the keys sackd 24.11 lacks")
	if got := e.state.Relations[0].LocalUnitData["slurm_version"]; got != "24.11.5" {
		t.Errorf("unit databag slurm_version %q, want 24.11.5", got)
	}
	if e.exists(KeyFile) || e.exists(RunDir) {
		t.Errorf("a waiting login node has the key or sackd's directory")
	}
	delete(e.state.Relations[0].RemoteAppData, slurmd.KeyConfMinVersion)
	e.must(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0"))
	e.wantStatus(juju.StatusActive, ReadyMessage)
}
