package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/mysqlclient"
	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/service/servicetest"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

const (
	dbRel    = juju.RelationID("database:3")
	ctlRel   = juju.RelationID("slurmctld:4")
	userSec  = juju.SecretID("secret:user0003")
	authSec  = juju.SecretID("secret:auth0001")
	password = "Zq8r2LwPx0aB7cD9eF1gH3iJ5kL7mN9o"
)

var authKey = bytes.Repeat([]byte{7}, 64)

// runner answers the commands the charm runs: slurmdbd -V through the recorded 22.05 outputs
// (a candidate holding "BogusKey" is refused as slurmdbd refuses an unknown key), munge -n.
type runner struct{ calls [][]string }

func (r *runner) Run(_ context.Context, argv, env []string) (command.Output, error) {
	r.calls = append(r.calls, argv)
	switch {
	case len(argv) == 2 && argv[0] == "slurmdbd" && argv[1] == "-V":
		for _, e := range env {
			if dir, ok := strings.CutPrefix(e, "SLURM_CONF="); ok {
				data, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "slurmdbd.conf"))
				if err != nil {
					return command.Output{}, err
				}
				if bytes.Contains(data, []byte("BogusKey")) {
					c := slurmtest.Real("dbdconf-unknown-key")
					c.Output.Stderr = bytes.ReplaceAll(c.Output.Stderr, []byte("PurgeJobAfte"), []byte("BogusKey"))
					return c.Output, nil
				}
			}
		}
		return slurmtest.Real("dbdconf-ok").Output, nil
	case len(argv) > 0 && filepath.Base(argv[0]) == "munge":
		return command.Output{Stdout: []byte("MUNGE:x\n")}, nil
	}
	return command.Output{ExitCode: 127, Stderr: []byte("unexpected command")}, fmt.Errorf("unexpected command %q", argv)
}

// prober is the database as a test sets it.
type prober struct {
	err    error
	info   DBInfo
	probed []Target
}

func (p *prober) Probe(_ context.Context, t Target) (DBInfo, error) {
	p.probed = append(p.probed, t)
	if p.err != nil {
		return DBInfo{}, p.err
	}
	return p.info, nil
}

type env struct {
	t     *testing.T
	c     *Charm
	svc   *servicetest.Manager
	db    *prober
	root  string
	state jujutest.State
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	svc := servicetest.New()
	db := &prober{info: DBInfo{Version: "10.11.19-MariaDB"}}
	c := &Charm{
		Settings:     charm.Settings{Root: root, PollInterval: time.Millisecond, LookupUser: func(string) (int, int, error) { return os.Getuid(), os.Getgid(), nil }},
		StateFile:    filepath.Join(root, "charm", StateName),
		Slurm:        &runner{},
		Services:     svc,
		Database:     db,
		Hostname:     func() (string, error) { return "juju-7", nil },
		LookPath:     func(string) (string, error) { return "/usr/sbin/x", nil },
		StartTimeout: time.Second,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if !svc.Active(Service) {
				return nil, errors.New("connection refused")
			}
			a, b := net.Pipe()
			b.Close()
			return a, nil
		},
	}
	return &env{t: t, c: c, svc: svc, db: db, root: root, state: jujutest.State{
		Unit: "slurmdbd/0", Leader: true, PrivateAddress: "10.1.0.7",
		Config: map[string]any{"slurmdbd-conf-parameters": ""},
	}}
}

// database adds the database relation, answered by the provider when answered is set.
func (e *env) database(answered bool) {
	r := jujutest.Relation{ID: dbRel, RemoteApp: "mariadb", RemoteUnits: map[string]map[string]string{"mariadb/0": {}}}
	if answered {
		r.RemoteAppData = map[string]string{"database": DatabaseName, "endpoints": "10.1.0.5:3306", "version": "10.11.19-MariaDB", "secret-user": string(userSec)}
		e.state.Secrets = append(e.state.Secrets, jujutest.Secret{ID: userSec, Owner: "mariadb",
			Revisions: []map[string]string{{"username": "relation-3", "password": password}},
			Grants:    []jujutest.Grant{{Relation: dbRel}}})
	}
	e.state.Relations = append(e.state.Relations, r)
}

// controller adds the slurmctld relation with the controller's data at version ver.
func (e *env) controller(ver string) {
	e.state.Relations = append(e.state.Relations, jujutest.Relation{
		ID: ctlRel, RemoteApp: "slurmctld", RemoteUnits: map[string]map[string]string{"slurmctld/0": {}},
		RemoteAppData: map[string]string{"version": "1", "auth_secret_id": string(authSec), "cluster_name": "hpc", "slurm_version": ver},
	})
	e.state.Secrets = append(e.state.Secrets, jujutest.Secret{ID: authSec, Owner: "slurmctld",
		Revisions: []map[string]string{slurmd.EncodeAuthSecret(authKey, "1")},
		Grants:    []jujutest.Grant{{Relation: ctlRel}}})
}

func (e *env) run(ev juju.Event) {
	e.t.Helper()
	out, err := jujutest.Run(e.t, e.state, ev, e.c.Router().Dispatch)
	if err != nil {
		e.t.Fatalf("%s: %v", ev.Name, err)
	}
	e.state = out
}

func (e *env) status() string {
	return string(e.state.UnitStatus.Code) + ": " + e.state.UnitStatus.Message
}

func (e *env) relation(id juju.RelationID) jujutest.Relation {
	for _, r := range e.state.Relations {
		if r.ID == id {
			return r
		}
	}
	e.t.Fatalf("no relation %s", id)
	return jujutest.Relation{}
}

func TestServes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.database(true)
	e.controller("22.05.8")
	e.run(jujutest.RelationHook(juju.RelationChanged, dbRel, "mariadb/0"))

	if want := "active: slurmdbd 22.05.8 serving, storing in 10.1.0.5:3306/slurm_acct_db as relation-3"; e.status() != want {
		t.Errorf("status %q, want %q", e.status(), want)
	}
	if !e.svc.Active(Service) {
		t.Fatal("slurmdbd does not run")
	}
	if d := cmp.Diff([]string{"/usr/sbin/slurmdbd", "-D"}, e.svc.Command(Service)); d != "" {
		t.Errorf("command (-want +got):\n%s", d)
	}
	req := e.relation(dbRel).LocalAppData
	if req["database"] != DatabaseName || !strings.Contains(req["requested-secrets"], `"password"`) {
		t.Errorf("request %v", req)
	}
	pub := e.relation(ctlRel).LocalAppData
	want := map[string]string{"version": "1", "hostname": "10.1.0.7", "port": "6819", "slurm_version": "22.05.8"}
	if d := cmp.Diff(want, pub); d != "" {
		t.Errorf("published (-want +got):\n%s", d)
	}
	conf := filepath.Join(e.root, ConfFile)
	fi, err := os.Stat(conf)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("slurmdbd.conf mode %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(conf)
	for _, line := range []string{"AuthType=auth/munge", "DbdHost=juju-7", "DbdPort=6819", "SlurmUser=slurm", "StorageType=accounting_storage/mysql",
		"StorageHost=10.1.0.5", "StoragePort=3306", "StorageUser=relation-3", "StoragePass=" + password, "StorageLoc=slurm_acct_db", "PidFile=/run/slurmdbd/slurmdbd.pid"} {
		if !strings.Contains(string(data), line+"\n") {
			t.Errorf("slurmdbd.conf lacks %q:\n%s", line, data)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(e.root, "/etc/munge/munge.key")); !bytes.Equal(got, authKey) {
		t.Error("the controller's munge key is not installed")
	}
	e.checkNoPassword()

	// The same hook again changes nothing: no restart.
	e.svc.ResetCalls()
	e.run(jujutest.Hook(juju.UpdateStatus))
	if n := e.svc.Count("restart " + Service); n != 0 {
		t.Errorf("update-status restarted slurmdbd %d times", n)
	}
}

// checkNoPassword fails if the password is in a log line, the status or relation data.
func (e *env) checkNoPassword() {
	e.t.Helper()
	var all []string
	for _, l := range e.state.Logs {
		all = append(all, l.Message)
	}
	all = append(all, e.state.UnitStatus.Message)
	for _, r := range e.state.Relations {
		for k, v := range r.LocalAppData {
			all = append(all, k+"="+v)
		}
		for k, v := range r.LocalUnitData {
			all = append(all, k+"="+v)
		}
	}
	state, _ := os.ReadFile(e.c.StateFile)
	all = append(all, string(state))
	if s := strings.Join(all, "\n"); strings.Contains(s, password) {
		e.t.Errorf("the password leaks into logs, status, relation data or the state:\n%s", s)
	}
}

func TestWaitsAndBlocks(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		setup   func(e *env)
		want    string
		started bool
	}{
		{name: "no database relation", setup: func(e *env) { e.controller("22.05.8") },
			want: "blocked: needs a database: integrate with a mysql_client provider (juju integrate slurmdbd mysql)"},
		{name: "database not answered", setup: func(e *env) { e.database(false); e.controller("22.05.8") },
			want: "waiting: waiting for the database provider to create slurm_acct_db"},
		{name: "no controller", setup: func(e *env) { e.database(true) },
			want: "waiting: waiting for the slurmctld relation"},
		{name: "credentials in plain relation data", setup: func(e *env) {
			e.database(true)
			e.state.Relations[0].RemoteAppData["password"] = "plain"
			e.controller("22.05.8")
		}, want: `blocked: database relation: invalid "password" in database relation data: the provider put a credential in plain relation data; credentials are taken only from a Juju secret (secret-user)`},
		{name: "controller newer than slurmdbd", setup: func(e *env) { e.database(true); e.controller("24.11.5") },
			want: "blocked: slurmdbd 22.05.8 is older than the controller's Slurm 24.11.5: slurmdbd must be the controller's release or newer"},
		{name: "credentials refused", setup: func(e *env) {
			e.database(true)
			e.controller("22.05.8")
			e.db.err = &DBError{Problem: DBCredentials, Err: errors.New("Error 1045 (28000): Access denied for user 'relation-3'@'10.1.0.7' (using password: YES)")}
		}, want: "blocked: the database at 10.1.0.5:3306 refuses the credentials of user relation-3: Error 1045 (28000): Access denied for user 'relation-3'@'10.1.0.7' (using password: YES)"},
		{name: "database unreachable", setup: func(e *env) {
			e.database(true)
			e.controller("22.05.8")
			e.db.err = &DBError{Problem: DBUnreachable, Err: errors.New("dial tcp 10.1.0.5:3306: connect: connection refused")}
		}, want: "blocked: cannot reach the database at 10.1.0.5:3306: dial tcp 10.1.0.5:3306: connect: connection refused"},
		{name: "database missing", setup: func(e *env) {
			e.database(true)
			e.controller("22.05.8")
			e.db.err = &DBError{Problem: DBMissing, Err: errors.New("Error 1049")}
		}, want: "blocked: database slurm_acct_db does not exist at 10.1.0.5:3306"},
		{name: "snapshot isolation", setup: func(e *env) {
			e.database(true)
			e.controller("22.05.8")
			e.db.info.SnapshotIsolation = true
		}, want: "blocked: the database at 10.1.0.5:3306 runs with innodb_snapshot_isolation=ON, which makes slurmdbd fail on write conflicts: set it OFF"},
		{name: "managed key in the parameters", setup: func(e *env) {
			e.database(true)
			e.controller("22.05.8")
			e.state.Config["slurmdbd-conf-parameters"] = "StoragePass=x"
		}, want: "blocked: slurmdbd-conf-parameters: StoragePass is managed by the charm and cannot be set"},
		{name: "parameters slurmdbd refuses", setup: func(e *env) {
			e.database(true)
			e.controller("22.05.8")
			e.state.Config["slurmdbd-conf-parameters"] = "BogusKey=1"
		}, want: "blocked: slurmdbd-conf-parameters: slurmdbd refuses BogusKey: _parse_next_key: Parsing error at unrecognized key: BogusKey"},
		{name: "standby", setup: func(e *env) { e.database(true); e.controller("22.05.8"); e.state.Leader = false },
			want: "blocked: standby unit: only the leader runs slurmdbd (high availability is not supported yet)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tt.setup(e)
			e.run(jujutest.Hook(juju.ConfigChanged))
			if e.status() != tt.want {
				t.Errorf("status %q\nwant   %q", e.status(), tt.want)
			}
			if e.svc.Active(Service) != tt.started {
				t.Errorf("slurmdbd running: %v", e.svc.Active(Service))
			}
			if _, err := os.Stat(filepath.Join(e.root, ConfFile)); err == nil {
				t.Error("slurmdbd.conf written")
			}
			e.checkNoPassword()
		})
	}
}

// TestRefusedParametersKeepTheRunningConfiguration: parameters slurmdbd's parser refuses
// leave the live slurmdbd.conf and the running slurmdbd as they were.
func TestRefusedParametersKeepTheRunningConfiguration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.database(true)
	e.controller("22.05.8")
	e.run(jujutest.Hook(juju.ConfigChanged))
	before, _ := os.ReadFile(filepath.Join(e.root, ConfFile))
	e.state.Config["slurmdbd-conf-parameters"] = "PurgeJobAfter=12months\nBogusKey=1"
	e.svc.ResetCalls()
	e.run(jujutest.Hook(juju.ConfigChanged))
	if !strings.HasPrefix(e.status(), "blocked: slurmdbd-conf-parameters: slurmdbd refuses BogusKey") || !strings.HasSuffix(e.status(), "(slurmdbd keeps running; slurmctld queues the records meanwhile)") {
		t.Errorf("status %q", e.status())
	}
	after, _ := os.ReadFile(filepath.Join(e.root, ConfFile))
	if !bytes.Equal(before, after) {
		t.Errorf("slurmdbd.conf changed:\n%s", after)
	}
	if calls := e.svc.Calls(); len(calls) > 0 {
		t.Errorf("service calls %v", calls)
	}
	// A good value applies with one restart.
	e.state.Config["slurmdbd-conf-parameters"] = "PurgeJobAfter=12months"
	e.run(jujutest.Hook(juju.ConfigChanged))
	if n := e.svc.Count("restart " + Service); n != 1 || !strings.HasPrefix(e.status(), "active: ") {
		t.Errorf("%d restarts, status %q", n, e.status())
	}
	if data, _ := os.ReadFile(filepath.Join(e.root, ConfFile)); !strings.Contains(string(data), "\nPurgeJobAfter=12months\n") {
		t.Errorf("slurmdbd.conf:\n%s", data)
	}
}

func TestStoppedOutsideStaysStopped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.database(true)
	e.controller("22.05.8")
	e.run(jujutest.Hook(juju.ConfigChanged))
	if err := e.svc.Stop(context.Background(), Service); err != nil {
		t.Fatal(err)
	}
	e.run(jujutest.Hook(juju.UpdateStatus))
	if e.svc.Active(Service) {
		t.Error("update-status started a slurmdbd stopped by an operator")
	}
	if want := "blocked: slurmdbd was stopped outside the charm; start it again (systemctl start slurmdbd, or pebble start slurmdbd)"; e.status() != want {
		t.Errorf("status %q", e.status())
	}
}

func TestParseConfParameters(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want []param
		err  string
	}{
		{in: "", want: nil},
		{in: "PurgeJobAfter=12months MessageTimeout=30", want: []param{{Key: "PurgeJobAfter", Value: "12months"}, {Key: "MessageTimeout", Value: "30"}}},
		{in: "# comment\nPurgeJobAfter=12months\n\nDebugLevel=info", want: []param{{Key: "PurgeJobAfter", Value: "12months"}, {Key: "DebugLevel", Value: "info"}}},
		{in: "dbdhost=x", err: "slurmdbd-conf-parameters: DbdHost is managed by the charm and cannot be set"},
		{in: "A=1\na=2", err: "slurmdbd-conf-parameters: a is given twice"},
		{in: "A=", err: "slurmdbd-conf-parameters: line 1: "},
		{in: `A=""`, err: "slurmdbd-conf-parameters: A has no value"},
		{in: "A=" + strings.Repeat("x", 1025), err: "slurmdbd-conf-parameters: the value of A is over 1024 characters"},
		{in: "A=\"unterminated", err: "slurmdbd-conf-parameters: line 1: "},
	} {
		got, err := parseConfParameters(tt.in)
		if tt.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%q (-want +got):\n%s", tt.in, d)
		}
	}
}

func FuzzParseConfParameters(f *testing.F) {
	f.Add("PurgeJobAfter=12months\nMessageTimeout=30")
	f.Add("A=\"b c\" # x")
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := parseConfParameters(s)
		if err != nil {
			return
		}
		for _, p := range ps {
			for _, m := range managedKeys {
				if strings.EqualFold(p.Key, m) {
					t.Errorf("managed key %s accepted", p.Key)
				}
			}
			if p.Value == "" || len(p.Value) > maxValueLen {
				t.Errorf("value of %s accepted: %q", p.Key, p.Value)
			}
		}
	})
}

func TestRenderConfPassword(t *testing.T) {
	t.Parallel()
	tgt := Target{Database: DatabaseName, Credentials: credentials("relation-3", `a "b`)}
	tgt.Endpoint.Host, tgt.Endpoint.Port = "10.1.0.5", 3306
	_, err := renderConf("h", slurm.FeaturesOf(slurm.Version{Major: 22, Minor: 5}), tgt, nil)
	if !errors.Is(err, errBadPassword) || strings.Contains(err.Error(), `a "b`) {
		t.Errorf("error %v", err)
	}
	tgt.Credentials = credentials("relation-3", "with space#hash")
	data, err := renderConf("h", slurm.FeaturesOf(slurm.Version{Major: 24, Minor: 11}), tgt, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`StoragePass="with space\#hash"`, "AuthType=auth/slurm"} {
		if !strings.Contains(string(data), want+"\n") {
			t.Errorf("slurmdbd.conf lacks %s:\n%s", want, data)
		}
	}
}

func credentials(user, pass string) mysqlclient.Credentials {
	return mysqlclient.Credentials{Username: user, Password: mysqlclient.Password(pass)}
}

// TestFailedHookWritesTheRequestAgain: Juju discards a failed hook's relation data, so the
// record of the request goes with it and the next hook writes it again.
func TestFailedHookWritesTheRequestAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.database(true)
	e.controller("22.05.8")
	e.svc.FailStarts(errors.New("supervisor down"))
	out, err := jujutest.Run(e.t, e.state, jujutest.RelationHook(juju.RelationChanged, dbRel, "mariadb/0"), e.c.Router().Dispatch)
	if err == nil {
		t.Fatal("the hook did not fail")
	}
	if bag := out.Relations[0].LocalAppData; len(bag) != 0 {
		t.Fatalf("a failed hook's request kept: %v", bag)
	}
	e.state = out
	e.svc.FailStarts(nil)
	e.run(jujutest.Hook(juju.UpdateStatus))
	if bag := e.relation(dbRel).LocalAppData; bag["database"] != DatabaseName {
		t.Errorf("request not written again: %v", bag)
	}
}
