package mysqlclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/mysqlclient"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

const (
	db       = "slurm_acct_db"
	secretID = "secret:user0001"
	password = "s3cr3t-pa55"
)

func goodResponse() map[string]string {
	return map[string]string{
		"database": db, "endpoints": "10.1.0.5:3306", "version": "10.11.19-MariaDB",
		"secret-user": secretID,
	}
}

func TestRequestRoundTrip(t *testing.T) {
	t.Parallel()
	bag, err := mysqlclient.Request{Database: db}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"database": db, "requested-secrets": `["username","password","tls","tls-ca","uris","read-only-uris"]`}
	if d := cmp.Diff(want, bag); d != "" {
		t.Errorf("bag (-want +got):\n%s", d)
	}
	got, err := mysqlclient.DecodeRequest(bag)
	if err != nil || got.Database != db {
		t.Errorf("decoded %+v, %v", got, err)
	}
}

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		bag       map[string]string
		wantField string // "" with notReady false: success
		notReady  bool
	}{
		{name: "empty", bag: nil, notReady: true},
		{name: "only secrets asked so far", bag: map[string]string{"requested-secrets": `["username","password"]`}, notReady: true},
		{name: "no secrets asked", bag: map[string]string{"database": db}, wantField: "requested-secrets"},
		{name: "password not asked in a secret", bag: map[string]string{"database": db, "requested-secrets": `["username"]`}, wantField: "requested-secrets"},
		{name: "secrets not a list", bag: map[string]string{"database": db, "requested-secrets": `username`}, wantField: "requested-secrets"},
		{name: "name with a quote", bag: map[string]string{"database": "x';drop", "requested-secrets": `["username","password"]`}, wantField: "database"},
		{name: "name too long", bag: map[string]string{"database": strings.Repeat("a", 65), "requested-secrets": `["username","password"]`}, wantField: "database"},
		{name: "good", bag: map[string]string{"database": db, "requested-secrets": `["username","password"]`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := mysqlclient.DecodeRequest(tt.bag)
			checkErr(t, err, tt.wantField, tt.notReady)
		})
	}
}

func checkErr(t *testing.T, err error, field string, notReady bool) {
	t.Helper()
	if notReady {
		if !errors.Is(err, mysqlclient.ErrNotReady) {
			t.Errorf("error %v, want ErrNotReady", err)
		}
		return
	}
	if field == "" {
		if err != nil {
			t.Errorf("error %v", err)
		}
		return
	}
	var de *mysqlclient.DataError
	if !errors.As(err, &de) || de.Field != field {
		t.Errorf("error %v, want a DataError naming %q", err, field)
	}
}

func TestDecodeResponse(t *testing.T) {
	t.Parallel()
	with := func(k, v string) map[string]string {
		b := goodResponse()
		if v == "" {
			delete(b, k)
		} else {
			b[k] = v
		}
		return b
	}
	for _, tt := range []struct {
		name      string
		bag       map[string]string
		wantField string
		notReady  bool
	}{
		{name: "nothing yet", bag: nil, notReady: true},
		{name: "endpoints before the database", bag: map[string]string{"endpoints": "10.1.0.5:3306"}, notReady: true},
		{name: "no credentials", bag: with("secret-user", ""), wantField: "secret-user"},
		{name: "plain password", bag: with("password", "hunter2"), wantField: "password"},
		{name: "plain uris", bag: with("uris", "mysql://u:p@h/db"), wantField: "uris"},
		{name: "other database", bag: with("database", "other"), wantField: "database"},
		{name: "no endpoints", bag: with("endpoints", ""), wantField: "endpoints"},
		{name: "endpoint without port", bag: with("endpoints", "10.1.0.5"), wantField: "endpoints"},
		{name: "endpoint bad port", bag: with("endpoints", "10.1.0.5:0"), wantField: "endpoints"},
		{name: "unix socket", bag: with("endpoints", "file:///run/mysqld/mysqld.sock"), wantField: "endpoints"},
		{name: "bad read-only endpoint", bag: with("read-only-endpoints", "x:y"), wantField: "read-only-endpoints"},
		{name: "bad secret id", bag: with("secret-user", "not a secret"), wantField: "secret-user"},
		{name: "multiline version", bag: with("version", "1\n2"), wantField: "version"},
		{name: "good", bag: goodResponse()},
		{name: "good, several endpoints and IPv6", bag: with("endpoints", "10.1.0.5:3306, [fd00::1]:3307")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := mysqlclient.DecodeResponse(db, tt.bag)
			checkErr(t, err, tt.wantField, tt.notReady)
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q shows the plain password", err)
			}
		})
	}
}

func TestResponseRoundTrip(t *testing.T) {
	t.Parallel()
	r := mysqlclient.Response{
		Database: db, Endpoints: []mysqlclient.Endpoint{{Host: "10.1.0.5", Port: 3306}, {Host: "fd00::1", Port: 3306}},
		Version: "11.8.3-MariaDB", UserSecretID: secretID,
	}
	bag, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got := bag["endpoints"]; got != "10.1.0.5:3306,[fd00::1]:3306" {
		t.Errorf("endpoints %q", got)
	}
	got, err := mysqlclient.DecodeResponse(db, bag)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(r, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if _, err := (mysqlclient.Response{Database: db, Endpoints: r.Endpoints}).Encode(); err == nil {
		t.Error("a response without a user secret encodes")
	}
}

func TestDecodeCredentials(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		content map[string]string
		ok      bool
	}{
		{name: "good", content: map[string]string{"username": "relation-4", "password": password}, ok: true},
		{name: "no password", content: map[string]string{"username": "relation-4"}},
		{name: "no username", content: map[string]string{"password": password}},
		{name: "username with a quote", content: map[string]string{"username": "a'b", "password": password}},
		{name: "password with a newline", content: map[string]string{"username": "u", "password": "a\nb"}},
		{name: "password too long", content: map[string]string{"username": "u", "password": strings.Repeat("p", 1025)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := mysqlclient.DecodeCredentials(tt.content)
			if (err == nil) != tt.ok {
				t.Fatalf("error %v", err)
			}
			if err != nil && strings.Contains(err.Error(), tt.content["password"]) && tt.content["password"] != "" {
				t.Errorf("error %q shows the password", err)
			}
			if tt.ok && c.Password.Reveal() != tt.content["password"] {
				t.Errorf("password not kept")
			}
		})
	}
}

// TestPasswordNeverPrints: fmt's verbs, JSON and errors wrapping credentials show no password.
func TestPasswordNeverPrints(t *testing.T) {
	t.Parallel()
	c := mysqlclient.Credentials{Username: "relation-4", Password: password}
	j, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c.Password), string(j),
		fmt.Errorf("cannot connect as %v: %w", c, errors.New("boom")).Error(),
	} {
		if strings.Contains(s, password) {
			t.Errorf("%q shows the password", s)
		}
	}
}

func TestParseEndpointsBounded(t *testing.T) {
	t.Parallel()
	many := strings.Repeat("10.0.0.1:3306,", 65)
	if _, err := mysqlclient.ParseEndpoints(many); err == nil {
		t.Error("65 endpoints accepted")
	}
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add(db, "10.1.0.5:3306", secretID, "10.11", "")
	f.Add(db, "[::1]:1,x:2", "secret:x", "", "pw")
	f.Fuzz(func(t *testing.T, name, eps, sec, ver, pw string) {
		bag := map[string]string{"database": name, "endpoints": eps, "secret-user": sec, "version": ver}
		if pw != "" {
			bag["password"] = pw
		}
		r, err := mysqlclient.DecodeResponse(db, bag)
		if err != nil {
			if pw != "" && len(pw) > 3 && strings.Contains(err.Error(), pw) && !strings.Contains(name+eps+sec+ver, pw) {
				t.Errorf("error shows the plain password: %v", err)
			}
			return
		}
		again, err := r.Encode()
		if err != nil {
			t.Fatalf("decoded response %+v does not encode: %v", r, err)
		}
		r2, err := mysqlclient.DecodeResponse(db, again)
		if err != nil {
			t.Fatalf("re-encoded response does not decode: %v", err)
		}
		if d := cmp.Diff(r, r2); d != "" {
			t.Errorf("round trip (-first +second):\n%s", d)
		}
	})
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add(db, `["username","password"]`)
	f.Fuzz(func(t *testing.T, name, asked string) {
		r, err := mysqlclient.DecodeRequest(map[string]string{"database": name, "requested-secrets": asked})
		if err != nil {
			return
		}
		if mysqlclient.CheckDatabaseName(r.Database) != nil {
			t.Errorf("accepted database name %q", r.Database)
		}
	})
}

// requirerState is a slurmdbd leader related to a database provider that answered.
func requirerState() jujutest.State {
	return jujutest.State{
		Unit: "slurmdbd/0", Leader: true,
		Relations: []jujutest.Relation{{
			ID: "database:3", RemoteApp: "mariadb", RemoteAppData: goodResponse(),
			RemoteUnits: map[string]map[string]string{"mariadb/0": {}},
		}},
		Secrets: []jujutest.Secret{{
			ID: secretID, Owner: "mariadb",
			Revisions: []map[string]string{
				{"username": "relation-3", "password": "old"},
				{"username": "relation-3", "password": password},
			},
			Grants: []jujutest.Grant{{Relation: "database:3"}},
		}},
	}
}

func requirerEvent(t *testing.T, in jujutest.State, ev juju.Event) (mysqlclient.Event, jujutest.State, error) {
	t.Helper()
	var got mysqlclient.Event
	var gotErr error
	out, err := jujutest.Run(t, in, ev, func(ctx context.Context, hc *juju.HookContext) error {
		r := mysqlclient.Requirer{HookContext: hc, Database: db}
		got, gotErr = r.Event(ctx)
		if _, ok := got.(mysqlclient.DatabaseConnected); ok && gotErr == nil {
			return r.Request(ctx, "database:3")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, out, gotErr
}

func TestRequirerEvents(t *testing.T) {
	t.Parallel()
	ready := mysqlclient.DatabaseReady{Relation: "database:3",
		Response:    mysqlclient.Response{Database: db, Endpoints: []mysqlclient.Endpoint{{Host: "10.1.0.5", Port: 3306}}, Version: "10.11.19-MariaDB", UserSecretID: secretID},
		Credentials: mysqlclient.Credentials{Username: "relation-3", Password: password}}
	noAnswer := requirerState()
	noAnswer.Relations[0].RemoteAppData = nil
	for _, tt := range []struct {
		name string
		in   jujutest.State
		ev   juju.Event
		want mysqlclient.Event
	}{
		{name: "created writes the request", in: noAnswer, ev: jujutest.RelationHook(juju.RelationCreated, "database:3", ""),
			want: mysqlclient.DatabaseConnected{Relation: "database:3"}},
		{name: "changed before the answer", in: noAnswer, ev: jujutest.RelationHook(juju.RelationChanged, "database:3", "mariadb/0"),
			want: mysqlclient.DatabaseConnected{Relation: "database:3"}},
		{name: "changed with the answer", in: requirerState(), ev: jujutest.RelationHook(juju.RelationChanged, "database:3", "mariadb/0"), want: ready},
		{name: "user secret changed", in: requirerState(), ev: jujutest.SecretHook(juju.SecretChanged, secretID, 2), want: ready},
		{name: "another secret changed", in: requirerState(), ev: jujutest.SecretHook(juju.SecretChanged, "secret:other", 1), want: nil},
		{name: "broken", in: requirerState(), ev: jujutest.RelationHook(juju.RelationBroken, "database:3", ""),
			want: mysqlclient.DatabaseDisconnected{Relation: "database:3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, out, err := requirerEvent(t, tt.in, tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("event (-want +got):\n%s", d)
			}
			if _, ok := tt.want.(mysqlclient.DatabaseConnected); ok {
				bag := out.Relations[0].LocalAppData
				if bag["database"] != db || !strings.Contains(bag["requested-secrets"], `"password"`) {
					t.Errorf("request bag %v", bag)
				}
			}
		})
	}
}

func TestRequirerSecretNotGranted(t *testing.T) {
	t.Parallel()
	in := requirerState()
	in.Secrets[0].Grants = nil
	ev, _, err := requirerEvent(t, in, jujutest.RelationHook(juju.RelationChanged, "database:3", "mariadb/0"))
	var de *mysqlclient.DataError
	if !errors.As(err, &de) || de.Field != "secret-user" {
		t.Errorf("error %v, want a DataError on secret-user", err)
	}
	if _, ok := ev.(mysqlclient.DatabaseConnected); !ok {
		t.Errorf("event %#v", ev)
	}
}

func TestProviderEvents(t *testing.T) {
	t.Parallel()
	in := jujutest.State{
		Unit: "mariadb/0", Leader: true,
		Relations: []jujutest.Relation{{
			ID: "database:7", RemoteApp: "slurmdbd",
			RemoteAppData: map[string]string{"database": db, "requested-secrets": `["username","password"]`},
			RemoteUnits:   map[string]map[string]string{"slurmdbd/0": {}},
		}},
	}
	var got mysqlclient.Event
	_, err := jujutest.Run(t, in, jujutest.RelationHook(juju.RelationChanged, "database:7", "slurmdbd/0"), func(ctx context.Context, hc *juju.HookContext) error {
		var err error
		got, err = mysqlclient.Provider{HookContext: hc}.Event(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := mysqlclient.DatabaseRequested{Relation: "database:7", App: "slurmdbd", Request: mysqlclient.Request{Database: db}}
	if d := cmp.Diff(mysqlclient.Event(want), got); d != "" {
		t.Errorf("event (-want +got):\n%s", d)
	}
}
