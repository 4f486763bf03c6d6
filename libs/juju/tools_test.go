package juju_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/juju"
)

// recorder is a Runner that records each command and answers with a canned
// result.
type recorder struct {
	calls []juju.Command
	res   juju.Result
	err   error
}

func (r *recorder) Run(_ context.Context, c juju.Command) (juju.Result, error) {
	r.calls = append(r.calls, juju.Command{Args: append([]string(nil), c.Args...), Stdin: c.Stdin})
	return r.res, r.err
}

func TestTools(t *testing.T) {
	t.Parallel()
	expiry := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	type config struct {
		Partition string `json:"partition-config"`
		Weight    int    `json:"weight"`
		Debug     bool   `json:"debug"`
	}
	type params struct {
		Parameters string `json:"parameters"`
		Reset      bool   `json:"reset"`
	}
	tests := []struct {
		name      string
		call      func(ctx context.Context, hc *juju.HookContext) (any, error)
		stdout    string
		want      any
		wantArgs  []string
		wantStdin string
	}{{
		name: "relation-ids",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Relations.IDs(ctx, "slurmd")
		},
		stdout:   `["slurmd:3","slurmd:7"]` + "\n",
		want:     []juju.RelationID{"slurmd:3", "slurmd:7"},
		wantArgs: []string{"relation-ids", "slurmd", "--format=json"},
	}, {
		name: "relation-list",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Relations.Units(ctx, "slurmd:3")
		},
		stdout:   `["slurmd/0","slurmd/2"]`,
		want:     []string{"slurmd/0", "slurmd/2"},
		wantArgs: []string{"relation-list", "-r", "slurmd:3", "--format=json"},
	}, {
		name: "relation-list empty",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Relations.Units(ctx, "slurmd:3")
		},
		stdout:   `[]`,
		want:     []string{},
		wantArgs: []string{"relation-list", "-r", "slurmd:3", "--format=json"},
	}, {
		name: "relation-list --app",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Relations.RemoteApp(ctx, "slurmd:3")
		},
		stdout:   `"slurmd"`,
		want:     "slurmd",
		wantArgs: []string{"relation-list", "-r", "slurmd:3", "--app", "--format=json"},
	}, {
		name: "relation-get unit",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Relations.UnitData(ctx, "slurmd:3", "slurmd/2")
		},
		stdout:   `{"egress-subnets":"10.0.0.2/32","node":"slurmd-2"}`,
		want:     map[string]string{"egress-subnets": "10.0.0.2/32", "node": "slurmd-2"},
		wantArgs: []string{"relation-get", "--format=json", "-r", "slurmd:3", "-", "slurmd/2"},
	}, {
		name: "relation-get app",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Relations.AppData(ctx, "slurmctld:3", "slurmd")
		},
		stdout:   `{}`,
		want:     map[string]string{},
		wantArgs: []string{"relation-get", "--app", "--format=json", "-r", "slurmctld:3", "-", "slurmd"},
	}, {
		name: "relation-set unit",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Relations.SetUnitData(ctx, "slurmd:3", map[string]string{"b": "two words", "a": "x=1\ny: \"q\"", "gone": ""})
		},
		wantArgs:  []string{"relation-set", "-r", "slurmd:3", "--file", "-"},
		wantStdin: `{"a":"x=1\ny: \"q\"","b":"two words","gone":""}` + "\n",
	}, {
		name: "relation-set app",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Relations.SetAppData(ctx, "slurmd:3", map[string]string{"controllers": `["10.0.0.1:6817"]`})
		},
		wantArgs:  []string{"relation-set", "--app", "-r", "slurmd:3", "--file", "-"},
		wantStdin: `{"controllers":"[\"10.0.0.1:6817\"]"}` + "\n",
	}, {
		name: "config-get into struct",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			var c config
			err := hc.Config.Decode(ctx, &c)
			return c, err
		},
		stdout:   `{"partition-config":"MaxTime=1:00:00","weight":10,"debug":true,"unset":null}`,
		want:     config{Partition: "MaxTime=1:00:00", Weight: 10, Debug: true},
		wantArgs: []string{"config-get", "--all", "--format=json"},
	}, {
		name: "config-get into map",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			var m map[string]any
			err := hc.Config.Decode(ctx, &m)
			return m, err
		},
		stdout:   `{"a":"x","n":2,"unset":null}`,
		want:     map[string]any{"a": "x", "n": 2.0, "unset": nil},
		wantArgs: []string{"config-get", "--all", "--format=json"},
	}, {
		name: "action-get",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			var p params
			err := hc.Actions.Params(ctx, &p)
			return p, err
		},
		stdout:   `{"parameters":"Weight=10","reset":false}`,
		want:     params{Parameters: "Weight=10"},
		wantArgs: []string{"action-get", "--format=json"},
	}, {
		name: "action-set sorted nested keys",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Actions.Set(ctx, map[string]string{"node.state": "idle", "config": "a=b c"})
		},
		wantArgs: []string{"action-set", "config=a=b c", "node.state=idle"},
	}, {
		name: "action-fail",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Actions.Fail(ctx, "NodeName cannot be set")
		},
		wantArgs: []string{"action-fail", "NodeName cannot be set"},
	}, {
		name: "action-log with a leading dash",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Actions.Log(ctx, "-- draining")
		},
		wantArgs: []string{"action-log", "--", "-- draining"},
	}, {
		name: "status-set unit",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Status.SetUnit(ctx, juju.StatusBlocked, "partition-config: unknown key Foo")
		},
		wantArgs: []string{"status-set", "blocked", "partition-config: unknown key Foo"},
	}, {
		name: "status-set application empty message",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Status.SetApp(ctx, juju.StatusActive, "")
		},
		wantArgs: []string{"status-set", "--application", "active", ""},
	}, {
		name: "application-version-set",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Status.SetVersion(ctx, "22.05.8")
		},
		wantArgs: []string{"application-version-set", "22.05.8"},
	}, {
		name: "status-get unit",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Status.Unit(ctx)
		},
		stdout:   `{"message":"ready","status":"active","status-data":{}}`,
		want:     juju.WorkloadStatus{Code: juju.StatusActive, Message: "ready", Data: map[string]any{}},
		wantArgs: []string{"status-get", "--include-data", "--format=json"},
	}, {
		name: "status-get application",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Status.App(ctx)
		},
		stdout: `{"application-status":{"message":"2 nodes","status":"active","status-data":{},` +
			`"units":{"slurmd/0":{"message":"","status":"waiting","status-data":{}}}}}`,
		want: juju.AppStatus{
			WorkloadStatus: juju.WorkloadStatus{Code: juju.StatusActive, Message: "2 nodes", Data: map[string]any{}},
			Units:          map[string]juju.WorkloadStatus{"slurmd/0": {Code: juju.StatusWaiting, Data: map[string]any{}}},
		},
		wantArgs: []string{"status-get", "--application", "--include-data", "--format=json"},
	}, {
		name: "is-leader",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Leadership.IsLeader(ctx)
		},
		stdout:   "true\n",
		want:     true,
		wantArgs: []string{"is-leader", "--format=json"},
	}, {
		name: "secret-add all flags",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Secrets.Add(ctx, map[string]string{"keyid": "1", "key": "c2VjcmV0"},
				juju.SecretAddOptions{Label: "auth", Description: "slurm auth key", Owner: juju.OwnerApplication})
		},
		stdout:   "secret:cpq5s8ppt4ou0a6ckhpg\n",
		want:     juju.SecretID("secret:cpq5s8ppt4ou0a6ckhpg"),
		wantArgs: []string{"secret-add", "--label", "auth", "--description", "slurm auth key", "--owner", "application", "key=c2VjcmV0", "keyid=1"},
	}, {
		name: "secret-add no flags",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Secrets.Add(ctx, map[string]string{"token": "x"}, juju.SecretAddOptions{})
		},
		stdout:   "secret:cpq5s8ppt4ou0a6ckhpg\n",
		want:     juju.SecretID("secret:cpq5s8ppt4ou0a6ckhpg"),
		wantArgs: []string{"secret-add", "token=x"},
	}, {
		name: "secret-get by id",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Secrets.Get(ctx, "secret:abc", juju.SecretGetOptions{})
		},
		stdout:   `{"key":"k","keyid":"1"}`,
		want:     map[string]string{"key": "k", "keyid": "1"},
		wantArgs: []string{"secret-get", "secret:abc", "--format=json"},
	}, {
		name: "secret-get by label with refresh",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Secrets.Get(ctx, "", juju.SecretGetOptions{Label: "auth", Refresh: true})
		},
		stdout:   `{"key":"k"}`,
		want:     map[string]string{"key": "k"},
		wantArgs: []string{"secret-get", "--label", "auth", "--refresh", "--format=json"},
	}, {
		name: "secret-get id and label with peek",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Secrets.Get(ctx, "secret:abc", juju.SecretGetOptions{Label: "auth", Peek: true})
		},
		stdout:   `{"key":"k"}`,
		want:     map[string]string{"key": "k"},
		wantArgs: []string{"secret-get", "secret:abc", "--label", "auth", "--peek", "--format=json"},
	}, {
		name: "secret-set",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Secrets.Set(ctx, "secret:abc", map[string]string{"key": "new", "keyid": "2"}, juju.SecretSetOptions{})
		},
		wantArgs: []string{"secret-set", "secret:abc", "key=new", "keyid=2"},
	}, {
		name: "secret-set label",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Secrets.Set(ctx, "secret:abc", nil, juju.SecretSetOptions{Label: "l", Description: "d"})
		},
		wantArgs: []string{"secret-set", "secret:abc", "--label", "l", "--description", "d"},
	}, {
		name: "secret-grant",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Secrets.Grant(ctx, "secret:abc", "slurmd:3", "")
		},
		wantArgs: []string{"secret-grant", "secret:abc", "-r", "slurmd:3"},
	}, {
		name: "secret-grant unit",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Secrets.Grant(ctx, "secret:abc", "slurmd:3", "slurmd/1")
		},
		wantArgs: []string{"secret-grant", "secret:abc", "-r", "slurmd:3", "--unit", "slurmd/1"},
	}, {
		name: "secret-revoke",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Secrets.Revoke(ctx, "secret:abc", "slurmd:3")
		},
		wantArgs: []string{"secret-revoke", "secret:abc", "-r", "slurmd:3"},
	}, {
		name: "secret-revoke unit",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Secrets.RevokeUnit(ctx, "secret:abc", "slurmd/1")
		},
		wantArgs: []string{"secret-revoke", "secret:abc", "--unit", "slurmd/1"},
	}, {
		name: "secret-remove",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Secrets.Remove(ctx, "secret:abc", 0)
		},
		wantArgs: []string{"secret-remove", "secret:abc"},
	}, {
		name: "secret-remove revision",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Secrets.Remove(ctx, "secret:abc", 3)
		},
		wantArgs: []string{"secret-remove", "secret:abc", "--revision", "3"},
	}, {
		name: "secret-info-get",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Secrets.Info(ctx, "secret:abc")
		},
		stdout: `{"abc":{"revision":2,"label":"auth","owner":"application","rotation":"never",` +
			`"expiry":"2025-01-02T03:04:05Z","access":[{"target":"application-slurmd","scope":"relation-slurmd.slurmctld","role":"view"}]}}`,
		want: juju.SecretInfo{
			ID: "secret:abc", Revision: 2, Label: "auth", Owner: juju.OwnerApplication, Rotation: "never", Expiry: &expiry,
			Access: []juju.SecretAccess{{Target: "application-slurmd", Scope: "relation-slurmd.slurmctld", Role: "view"}},
		},
		wantArgs: []string{"secret-info-get", "secret:abc", "--format=json"},
	}, {
		name: "secret-info-get by label",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Secrets.InfoByLabel(ctx, "auth")
		},
		stdout:   `{"abc":{"revision":1,"label":"auth","owner":"unit"}}`,
		want:     juju.SecretInfo{ID: "secret:abc", Revision: 1, Label: "auth", Owner: juju.OwnerUnit},
		wantArgs: []string{"secret-info-get", "--label", "auth", "--format=json"},
	}, {
		name: "secret-ids",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Secrets.IDs(ctx)
		},
		stdout:   `["def","abc"]`,
		want:     []juju.SecretID{"secret:abc", "secret:def"},
		wantArgs: []string{"secret-ids", "--format=json"},
	}, {
		name: "open-port",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Ports.Open(ctx, juju.Port{Number: 6817, Protocol: "tcp"})
		},
		wantArgs: []string{"open-port", "6817/tcp"},
	}, {
		name: "close-port",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Ports.Close(ctx, juju.Port{Number: 6818, Protocol: "udp"})
		},
		wantArgs: []string{"close-port", "6818/udp"},
	}, {
		name: "opened-ports",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Ports.Opened(ctx)
		},
		stdout:   `["6817/tcp","6818/udp"]`,
		want:     []juju.Port{{Number: 6817, Protocol: "tcp"}, {Number: 6818, Protocol: "udp"}},
		wantArgs: []string{"opened-ports", "--format=json"},
	}, {
		name: "network-get",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Network.Get(ctx, "slurmd")
		},
		stdout: `{"bind-addresses":[{"mac-address":"aa:bb","interface-name":"eth0","addresses":[{"hostname":"","value":"10.0.0.2","cidr":"10.0.0.0/24"}]}],` +
			`"egress-subnets":["10.0.0.2/32"],"ingress-addresses":["10.0.0.2"]}`,
		want: juju.NetworkInfo{
			BindAddresses: []juju.BindAddress{{MACAddress: "aa:bb", InterfaceName: "eth0",
				Addresses: []juju.InterfaceAddress{{Value: "10.0.0.2", CIDR: "10.0.0.0/24"}}}},
			EgressSubnets:    []string{"10.0.0.2/32"},
			IngressAddresses: []string{"10.0.0.2"},
		},
		wantArgs: []string{"network-get", "slurmd", "--format=json"},
	}, {
		name: "network-get ingress-address",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Network.IngressAddress(ctx, "slurmd")
		},
		stdout:   `"10.0.0.2"`,
		want:     "10.0.0.2",
		wantArgs: []string{"network-get", "slurmd", "--ingress-address", "--format=json"},
	}, {
		name: "unit-get private-address",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return hc.Network.PrivateAddress(ctx)
		},
		stdout:   `"10.0.0.2"`,
		want:     "10.0.0.2",
		wantArgs: []string{"unit-get", "private-address", "--format=json"},
	}, {
		name: "juju-log",
		call: func(ctx context.Context, hc *juju.HookContext) (any, error) {
			return nil, hc.Log.Logf(ctx, juju.LevelWarning, "node %s drained", "slurmd-1")
		},
		wantArgs: []string{"juju-log", "-l", "WARNING", "node slurmd-1 drained"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{res: juju.Result{Stdout: []byte(tc.stdout)}}
			hc := juju.NewHookContext(juju.Event{}, rec)
			got, err := tc.call(context.Background(), hc)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.want != nil {
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("result (-want +got):\n%s", d)
				}
			}
			if len(rec.calls) != 1 {
				t.Fatalf("got %d tool calls, want 1: %q", len(rec.calls), rec.calls)
			}
			if d := cmp.Diff(tc.wantArgs, rec.calls[0].Args); d != "" {
				t.Errorf("argv (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantStdin, string(rec.calls[0].Stdin)); d != "" {
				t.Errorf("stdin (-want +got):\n%s", d)
			}
		})
	}
}

func TestToolErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		call    func(ctx context.Context, hc *juju.HookContext) error
		res     juju.Result
		want    *juju.HookToolError
		wantMsg string
	}{{
		name: "relation-set not leader",
		call: func(ctx context.Context, hc *juju.HookContext) error {
			return hc.Relations.SetAppData(ctx, "slurmd:3", map[string]string{"a": "b"})
		},
		res:     juju.Result{ExitCode: 1, Stderr: []byte("ERROR cannot write relation settings\n")},
		want:    &juju.HookToolError{Tool: "relation-set", Args: []string{"--app", "-r", "slurmd:3", "--file", "-"}, ExitCode: 1, Stderr: "ERROR cannot write relation settings\n"},
		wantMsg: "hook tool relation-set failed with exit code 1: ERROR cannot write relation settings",
	}, {
		name: "secret-add values redacted",
		call: func(ctx context.Context, hc *juju.HookContext) error {
			_, err := hc.Secrets.Add(ctx, map[string]string{"key": "s3cret"}, juju.SecretAddOptions{Label: "auth"})
			return err
		},
		res:     juju.Result{ExitCode: 1, Stderr: []byte("ERROR permission denied")},
		want:    &juju.HookToolError{Tool: "secret-add", Args: []string{"--label", "auth", "key=<redacted>"}, ExitCode: 1, Stderr: "ERROR permission denied"},
		wantMsg: "hook tool secret-add failed with exit code 1: ERROR permission denied",
	}, {
		name: "secret-get not found",
		call: func(ctx context.Context, hc *juju.HookContext) error {
			_, err := hc.Secrets.Get(ctx, "secret:nope", juju.SecretGetOptions{})
			return err
		},
		res:     juju.Result{ExitCode: 1, Stderr: []byte(`ERROR secret "nope" not found`)},
		want:    &juju.HookToolError{Tool: "secret-get", Args: []string{"secret:nope", "--format=json"}, ExitCode: 1, Stderr: `ERROR secret "nope" not found`},
		wantMsg: `hook tool secret-get failed with exit code 1: ERROR secret "nope" not found`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hc := juju.NewHookContext(juju.Event{}, &recorder{res: tc.res})
			err := tc.call(context.Background(), hc)
			var hte *juju.HookToolError
			if !errors.As(err, &hte) {
				t.Fatalf("got error %v, want a *HookToolError", err)
			}
			if d := cmp.Diff(tc.want, hte); d != "" {
				t.Errorf("error (-want +got):\n%s", d)
			}
			if err.Error() != tc.wantMsg {
				t.Errorf("message %q, want %q", err.Error(), tc.wantMsg)
			}
		})
	}
}

func TestBadOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stdout string
		call   func(ctx context.Context, hc *juju.HookContext) error
	}{
		{"empty is-leader", "", func(ctx context.Context, hc *juju.HookContext) error {
			_, err := hc.Leadership.IsLeader(ctx)
			return err
		}},
		{"non-bool is-leader", `"yes"`, func(ctx context.Context, hc *juju.HookContext) error {
			_, err := hc.Leadership.IsLeader(ctx)
			return err
		}},
		{"relation-get list", `["a"]`, func(ctx context.Context, hc *juju.HookContext) error {
			_, err := hc.Relations.UnitData(ctx, "a:1", "b/0")
			return err
		}},
		{"secret-add two words", "secret:a secret:b", func(ctx context.Context, hc *juju.HookContext) error {
			_, err := hc.Secrets.Add(ctx, map[string]string{"abc": "d"}, juju.SecretAddOptions{})
			return err
		}},
		{"secret-info-get two secrets", `{"a":{},"b":{}}`, func(ctx context.Context, hc *juju.HookContext) error {
			_, err := hc.Secrets.Info(ctx, "secret:a")
			return err
		}},
		{"opened-ports range", `["1000-2000/tcp"]`, func(ctx context.Context, hc *juju.HookContext) error { _, err := hc.Ports.Opened(ctx); return err }},
		{"status-get app without application-status", `{}`, func(ctx context.Context, hc *juju.HookContext) error { _, err := hc.Status.App(ctx); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hc := juju.NewHookContext(juju.Event{}, &recorder{res: juju.Result{Stdout: []byte(tc.stdout)}})
			if err := tc.call(context.Background(), hc); err == nil {
				t.Fatal("got no error for bad output")
			}
		})
	}
}

func TestClientRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := &recorder{}
	hc := juju.NewHookContext(juju.Event{}, rec)
	if err := hc.Status.SetUnit(ctx, juju.StatusError, "x"); err == nil {
		t.Error("status-set error: got no error")
	}
	if err := hc.Log.Log(ctx, "LOUD", "x"); err == nil {
		t.Error("juju-log LOUD: got no error")
	}
	if _, err := hc.Secrets.Get(ctx, "", juju.SecretGetOptions{}); err == nil {
		t.Error("secret-get without id or label: got no error")
	}
	if _, err := hc.Secrets.Get(ctx, "secret:a", juju.SecretGetOptions{Peek: true, Refresh: true}); err == nil {
		t.Error("secret-get peek+refresh: got no error")
	}
	if _, err := hc.Secrets.Add(ctx, nil, juju.SecretAddOptions{}); err == nil {
		t.Error("secret-add empty: got no error")
	}
	if err := hc.Relations.SetUnitData(ctx, "a:1", nil); err != nil {
		t.Errorf("relation-set nothing: %v", err)
	}
	if err := hc.Actions.Set(ctx, nil); err != nil {
		t.Errorf("action-set nothing: %v", err)
	}
	if len(rec.calls) != 0 {
		t.Errorf("tools ran for refused or empty input: %q", rec.calls)
	}
}

func TestRunnerError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	hc := juju.NewHookContext(juju.Event{}, &recorder{err: boom})
	if _, err := hc.Leadership.IsLeader(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("got %v, want the runner's error", err)
	}
}
