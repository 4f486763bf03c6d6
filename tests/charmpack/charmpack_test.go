package charmpack_test

import (
	"archive/zip"
	"bytes"
	"context"
	"debug/elf"
	"io"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/charmed-slurm/operators/tests/charmpack"
)

// TestPackOperators packs both operators as `make charms` does and checks what Juju reads from
// the zip: the four YAML files and a static, executable dispatch.
func TestPackOperators(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both operators")
	}
	tests := []struct {
		dir, name string
		relations map[string]map[string]string // provides/requires → endpoint → interface
		options   []string
		actions   []string
	}{{
		dir: "slurmctld-operator", name: "slurmctld",
		relations: map[string]map[string]string{"requires": {"slurmd": "slurmd"}},
		options:   []string{"cluster-name", "default-partition", "max-node-count", "slurm-conf-parameters"},
		actions:   []string{"delete-node", "drain", "resume", "rotate-auth-key", "set-node-state", "show-current-config"},
	}, {
		dir: "slurmd-operator", name: "slurmd",
		relations: map[string]map[string]string{"provides": {"slurmctld": "slurmd"}},
		options:   []string{"default-node-reason", "default-node-state", "partition-config"},
		actions:   []string{"node-config"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), tt.name+".charm")
			if err := charmpack.Pack(context.Background(), charmpack.Options{Dir: filepath.Join("..", "..", tt.dir), Out: out}); err != nil {
				t.Fatal(err)
			}
			zr, err := zip.OpenReader(out)
			if err != nil {
				t.Fatal(err)
			}
			defer zr.Close()
			files := map[string][]byte{}
			modes := map[string]uint32{}
			for _, f := range zr.File {
				rc, err := f.Open()
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					t.Fatal(err)
				}
				files[f.Name] = b
				modes[f.Name] = uint32(f.Mode().Perm())
			}
			var names []string
			for n := range files {
				names = append(names, n)
			}
			sort.Strings(names)
			if d := cmp.Diff([]string{"actions.yaml", "config.yaml", "dispatch", "manifest.yaml", "metadata.yaml"}, names); d != "" {
				t.Fatalf("zip contents (-want +got):\n%s", d)
			}
			if modes["dispatch"]&0o111 == 0 {
				t.Errorf("dispatch mode %o is not executable", modes["dispatch"])
			}
			ef, err := elf.NewFile(bytes.NewReader(files["dispatch"]))
			if err != nil {
				t.Fatalf("dispatch is not an ELF binary: %v", err)
			}
			for _, p := range ef.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("dispatch is dynamically linked; a charm's dispatch must be static")
				}
			}

			var meta struct {
				Name     string                       `yaml:"name"`
				Summary  string                       `yaml:"summary"`
				Provides map[string]map[string]string `yaml:"provides"`
				Requires map[string]map[string]string `yaml:"requires"`
			}
			mustYAML(t, files["metadata.yaml"], &meta)
			if meta.Name != tt.name || meta.Summary == "" {
				t.Errorf("metadata.yaml: name %q summary %q", meta.Name, meta.Summary)
			}
			gotRel := map[string]map[string]string{}
			for kind, eps := range map[string]map[string]map[string]string{"provides": meta.Provides, "requires": meta.Requires} {
				for ep, def := range eps {
					if gotRel[kind] == nil {
						gotRel[kind] = map[string]string{}
					}
					gotRel[kind][ep] = def["interface"]
				}
			}
			if d := cmp.Diff(tt.relations, gotRel); d != "" {
				t.Errorf("relations (-want +got):\n%s", d)
			}

			var config struct {
				Options map[string]map[string]any `yaml:"options"`
			}
			mustYAML(t, files["config.yaml"], &config)
			if d := cmp.Diff(tt.options, keys(config.Options)); d != "" {
				t.Errorf("config options (-want +got):\n%s", d)
			}
			for name, o := range config.Options {
				if o["type"] == nil || o["description"] == nil {
					t.Errorf("option %s lacks a type or description: %v", name, o)
				}
			}
			var actions map[string]map[string]any
			mustYAML(t, files["actions.yaml"], &actions)
			if d := cmp.Diff(tt.actions, keys(actions)); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
			var manifest struct {
				Bases []struct {
					Name          string   `yaml:"name"`
					Channel       string   `yaml:"channel"`
					Architectures []string `yaml:"architectures"`
				} `yaml:"bases"`
			}
			mustYAML(t, files["manifest.yaml"], &manifest)
			if len(manifest.Bases) != 1 || manifest.Bases[0].Name != "ubuntu" || manifest.Bases[0].Channel == "" || len(manifest.Bases[0].Architectures) == 0 {
				t.Errorf("manifest.yaml bases: %+v", manifest.Bases)
			}
		})
	}
}

func TestReadCharmcraftErrors(t *testing.T) {
	if _, err := charmpack.ReadCharmcraft(t.TempDir()); err == nil {
		t.Error("missing charmcraft.yaml: no error")
	}
}

func mustYAML(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("cannot parse %s: %v", data, err)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
