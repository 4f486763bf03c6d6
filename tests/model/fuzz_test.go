package model

import (
	"context"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// toolModel is a model with one hook running on alpha/0 (leader) in a relation with beta/0,
// without any agent or machine: enough to run hook tools in-process.
func toolModel(t testing.TB) (*Model, string) {
	st := newState("fuzz", newUUID())
	charm := &Charm{
		Name:     "c",
		Provides: map[string]Endpoint{"source": {Interface: "test"}},
		Requires: map[string]Endpoint{"sink": {Interface: "test"}},
		Options:  map[string]Option{"count": {Type: "int", Default: int64(3)}},
		Actions:  map[string]Action{"act": {}},
	}
	st.Applications["alpha"] = &Application{Name: "alpha", Charm: charm, Leader: "alpha/0", Config: map[string]any{}}
	st.Applications["beta"] = &Application{Name: "beta", Charm: charm, Leader: "beta/0", Config: map[string]any{}}
	st.Units["alpha/0"] = &Unit{Name: "alpha/0", App: "alpha", Machine: "0", Ready: true}
	st.Units["beta/0"] = &Unit{Name: "beta/0", App: "beta", Machine: "1", Ready: true}
	st.Machines["0"] = &MachineState{ID: "0", Address: "10.0.0.1", Unit: "alpha/0"}
	st.Relations[0] = &Relation{ID: 0, Endpoints: []RelationEndpoint{{App: "alpha", Name: "source", Role: "provider", Interface: "test"}, {App: "beta", Name: "sink", Role: "requirer", Interface: "test"}}}
	st.Actions["1"] = &ActionRun{ID: "1", Unit: "alpha/0", Name: "act", Params: map[string]any{"a": "b"}, Status: "running"}
	st.fill()
	st.Units["alpha/0"].Seen.Relations[0] = &RelationLocal{Created: true, Joined: map[string]int{"beta/0": 0}}
	m := &Model{
		opts:     Options{Dir: t.TempDir()},
		state:    st,
		agents:   map[string]*agent{},
		contexts: map[string]*hookContext{},
		changed:  make(chan struct{}),
		subs:     map[chan string]struct{}{},
	}
	hc := &hookContext{id: "ctx", m: m, unit: "alpha/0", app: "alpha", machine: "0",
		hook: Hook{Kind: "action", ActionID: "1", ActionName: "act"}, view: st.clone()}
	m.contexts["ctx"] = hc
	return m, "ctx"
}

// FuzzTool runs every hook tool with arbitrary arguments: it must answer with exit code 0, 1 or
// 2 and never panic.
func FuzzTool(f *testing.F) {
	seeds := []string{
		"relation-get\x00-r\x00source:0\x00-\x00beta/0",
		"relation-set\x00-r\x000\x00a=b\x00c=",
		"relation-set\x00--app\x00--file\x00-",
		"secret-add\x00--label\x00x\x00token=v1",
		"secret-get\x00secret:abc\x00--peek",
		"secret-grant\x00secret:abc\x00-r\x00source:0",
		"action-set\x00a.b.c=1\x00Bad=2",
		"open-port\x008080-8090/udp",
		"status-set\x00--application\x00active\x00msg",
		"config-get\x00count\x00--format=yaml",
		"network-get\x00source\x00--format=json",
		"juju-log\x00-l\x00bogus\x00x",
		"leader-set\x00k=v",
		"state-set\x00a=b",
		"action-get\x00a.b",
		"relation-list\x00-r\x00source:x",
	}
	for _, s := range seeds {
		f.Add(s, "a: b\n")
	}
	f.Fuzz(func(t *testing.T, argv, stdin string) {
		args := strings.Split(argv, "\x00")
		m, ctxID := toolModel(t)
		if _, ok := tools[args[0]]; !ok {
			args[0] = ToolNames()[len(args[0])%len(ToolNames())]
		}
		code := m.runTool(context.Background(), Request{Argv: args, Context: ctxID, Stdin: []byte(stdin)}, io.Discard, io.Discard)
		if code < 0 || code > 2 {
			t.Fatalf("%q: exit code %d", args, code)
		}
	})
}

func FuzzNormalizePort(f *testing.F) {
	for _, s := range []string{"80", "80/tcp", "1000-2000/udp", "icmp", "0", "70000", "5-4", "x/tcp"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := normalizePort(s)
		if err != nil {
			return
		}
		again, err := normalizePort(p)
		if err != nil || again != p {
			t.Fatalf("%q normalised to %q, which normalises to %q, %v", s, p, again, err)
		}
	})
}

func FuzzSecretContent(f *testing.F) {
	for _, s := range []string{"key=v", "token#base64=dmFsdWU=", "a=b", "long-key=x=y", "key#file=x", "=v"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseSecretContent([]string{s})
		if err != nil {
			return
		}
		for k := range c {
			if !secretKey.MatchString(k) {
				t.Fatalf("accepted bad key %q", k)
			}
		}
	})
}

// FuzzReadCharm reads arbitrary charmcraft.yaml files: an error or a charm, never a panic.
func FuzzReadCharm(f *testing.F) {
	for _, name := range []string{"../testdata/testcharm/charmcraft.yaml", "../../slurmd-operator/charmcraft.yaml", "../../slurmctld-operator/charmcraft.yaml", "../../sackd-operator/charmcraft.yaml"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatalf("seed charm: %v", err)
		}
		f.Add(b)
	}
	f.Add([]byte("name: x\nconfig:\n  options:\n    a: {type: int, default: nope}\n"))
	f.Add([]byte("name: x\nprovides:\n  p: {}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "charmcraft.yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "dispatch"), nil, 0o755); err != nil {
			t.Fatal(err)
		}
		c, err := ReadCharm(dir)
		if err != nil {
			return
		}
		for name, o := range c.Options {
			if o.Default != nil {
				if _, err := convertOption(o.Type, o.Default); err != nil {
					t.Fatalf("option %q default %v does not convert: %v", name, o.Default, err)
				}
			}
		}
	})
}

func FuzzActionParams(f *testing.F) {
	f.Add("n", "12", "integer")
	f.Add("b", "true", "boolean")
	f.Add("s", "Weight=10", "string")
	f.Add("o", "{a: [1, 2]}", "object")
	f.Fuzz(func(t *testing.T, key, value, typ string) {
		spec := Action{Params: map[string]Param{key: {Type: typ}}}
		actionParams(spec, map[string]string{key: value})
	})
}

// FuzzParseKV: every argument is a key=value with a key, or the whole list is refused as a
// usage error; the last value of a key wins, and an empty value is kept (the hook tools delete
// the key with it).
func FuzzParseKV(f *testing.F) {
	for _, s := range []string{"a=1", "a=", "a=1 b=2=3", "=1", "a", "a=1 a=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Fields(s)
		kv, err := parseKV(args)
		if err != nil {
			if _, ok := err.(*usageError); !ok {
				t.Fatalf("parseKV(%q): %v is no usage error", args, err)
			}
			return
		}
		want := map[string]string{}
		for _, a := range args {
			k, v, ok := strings.Cut(a, "=")
			if !ok || k == "" {
				t.Fatalf("parseKV(%q) accepted %q", args, a)
			}
			want[k] = v
		}
		if !maps.Equal(want, kv) {
			t.Fatalf("parseKV(%q) = %q, want %q", args, kv, want)
		}
	})
}
