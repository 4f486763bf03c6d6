package charmpack_test

import (
	"archive/zip"
	"bytes"
	"context"
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/charmed-slurm/operators/tests/charmpack"
)

// TestPackOperators packs the operators as `make charms` does and checks what Juju reads from
// the zip: the four YAML files and a static, executable dispatch.
func TestPackOperators(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both operators")
	}
	tests := []struct {
		dir, name   string
		relations   map[string]map[string]string // provides/requires → endpoint → interface
		subordinate bool
	}{{
		dir: "slurmctld-operator", name: "slurmctld",
		relations: map[string]map[string]string{"requires": {"slurmd": "slurmd", "sackd": "sackd", "slurmdbd": "slurmdbd"}, "provides": {"mount": "mount_info", "cos-agent": "cos_agent"}},
	}, {
		dir: "tests/charms/filesystem-client", name: "filesystem-client", subordinate: true,
		relations: map[string]map[string]string{"requires": {"mount": "mount_info", "juju-info": "juju-info"}},
	}, {
		dir: "slurmd-operator", name: "slurmd",
		relations: map[string]map[string]string{"provides": {"slurmctld": "slurmd", "cos-agent": "cos_agent"}},
	}, {
		dir: "sackd-operator", name: "sackd",
		relations: map[string]map[string]string{"provides": {"slurmctld": "sackd"}},
	}, {
		dir: "slurmdbd-operator", name: "slurmdbd",
		relations: map[string]map[string]string{"provides": {"slurmctld": "slurmdbd"}, "requires": {"database": "mysql_client"}},
	}, {
		dir: "tests/charms/mariadb", name: "mariadb",
		relations: map[string]map[string]string{"provides": {"database": "mysql_client"}},
	}, {
		dir: "tests/charms/cos-agent", name: "cos-agent-standin",
		relations: map[string]map[string]string{"requires": {"cos-agent": "cos_agent"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), tt.name+".charm")
			if err := charmpack.Pack(context.Background(), charmpack.Options{Dir: filepath.Join("..", "..", tt.dir), Out: out}); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(out); err != nil {
				t.Fatal(err)
			} else if fi.Mode().Perm() != 0o644 {
				t.Errorf("archive mode %v, want 0644 (a non-root juju deploy must read it)", fi.Mode())
			}
			// The options and actions packed are those charmcraft.yaml defines.
			var def struct {
				Config struct {
					Options map[string]any `yaml:"options"`
				} `yaml:"config"`
				Actions map[string]any `yaml:"actions"`
			}
			yml, err := os.ReadFile(filepath.Join("..", "..", tt.dir, "charmcraft.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			mustYAML(t, yml, &def)
			wantOptions, wantActions := keys(def.Config.Options), keys(def.Actions)
			files, modes := readZip(t, out)
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
				Source   []string                     `yaml:"source"`
				Assumes  []string                     `yaml:"assumes"`
				Provides map[string]map[string]string `yaml:"provides"`
				Requires map[string]map[string]string `yaml:"requires"`
				// Subordinate is a subordinate charm's metadata flag.
				Subordinate bool `yaml:"subordinate"`
			}
			mustYAML(t, files["metadata.yaml"], &meta)
			if meta.Subordinate != tt.subordinate {
				t.Errorf("metadata.yaml subordinate %v, want %v", meta.Subordinate, tt.subordinate)
			}
			if tt.subordinate && meta.Requires["mount"]["scope"] != "container" {
				t.Errorf("metadata.yaml: the subordinate's mount endpoint is not container-scoped: %v", meta.Requires["mount"])
			}
			if meta.Name != tt.name || meta.Summary == "" {
				t.Errorf("metadata.yaml: name %q summary %q", meta.Name, meta.Summary)
			}
			if d := cmp.Diff([]string{"https://github.com/charmed-slurm/operators"}, meta.Source); d != "" {
				t.Errorf("metadata.yaml source, from links (-want +got):\n%s", d)
			}
			if d := cmp.Diff([]string{"juju >= 3.1"}, meta.Assumes); d != "" {
				t.Errorf("metadata.yaml assumes (-want +got):\n%s", d)
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
			if d := cmp.Diff(wantOptions, keys(config.Options)); d != "" {
				t.Errorf("config options (-want +got):\n%s", d)
			}
			for name, o := range config.Options {
				if o["type"] == nil || o["description"] == nil {
					t.Errorf("option %s lacks a type or description: %v", name, o)
				}
			}
			var actions map[string]map[string]any
			mustYAML(t, files["actions.yaml"], &actions)
			if d := cmp.Diff(wantActions, keys(actions)); d != "" {
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
			if len(manifest.Bases) != 1 || manifest.Bases[0].Name != "ubuntu" || manifest.Bases[0].Channel == "" || !cmp.Equal(manifest.Bases[0].Architectures, []string{"amd64"}) {
				t.Errorf("manifest.yaml bases: %+v", manifest.Bases)
			}
		})
	}
}

const minimal = `type: charm
name: c
summary: s
description: d
base: ubuntu@24.04
`

func writeCharmcraft(t *testing.T, yml string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "charmcraft.yaml"), []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReadCharmcraftErrors(t *testing.T) {
	if _, err := charmpack.ReadCharmcraft(t.TempDir()); err == nil {
		t.Error("missing charmcraft.yaml: no error")
	}
	for _, tt := range []struct {
		name, yml, err string
	}{
		{"unknown key", minimal + "platforms: {amd64: }\nresources: {img: {type: file}}\n", "field resources not found"},
		{"unknown link", minimal + "platforms: {amd64: }\nlinks: {chat: x}\n", "field chat not found"},
		{"unknown part key", minimal + "platforms: {amd64: }\nparts: {c: {plugin: go, override-stage: x}}\n", "field override-stage not found"},
		{"no platforms", minimal, "platforms is required"},
		{"shorthand not an arch", minimal + "platforms: {x86: }\n", `platform "x86": a shorthand platform must be named after an architecture`},
		{"two build-for", minimal + "platforms: {multi: {build-on: [amd64], build-for: [amd64, arm64]}}\n", "exactly one build-for"},
		{"not a charm", strings.Replace(minimal, "type: charm", "type: bundle", 1) + "platforms: {amd64: }\n", `type is "bundle"`},
		{"bad base", strings.Replace(minimal, "ubuntu@24.04", "ubuntu", 1) + "platforms: {amd64: }\n", "want name@channel"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := charmpack.ReadCharmcraft(writeCharmcraft(t, tt.yml))
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

// One archive per platform, named <out>_<platform>.charm when there are several, with the
// platform's build-for architecture (not its name) in manifest.yaml; links carried into
// metadata.yaml under Juju's names.
func TestPackPlatformsAndLinks(t *testing.T) {
	dir := writeCharmcraft(t, minimal+`links:
  documentation: https://docs.example/c
  issues: https://example/issues
  source: [https://example/src, https://mirror/src]
  website: https://example
  contact: Team <team@example>
platforms:
  x86:
    build-on: [amd64]
    build-for: [amd64]
  arm:
    build-on: [amd64]
    build-for: [ubuntu@24.04:arm64]
`)
	dispatch := filepath.Join(t.TempDir(), "dispatch")
	if err := os.WriteFile(dispatch, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "c.charm")
	if err := charmpack.Pack(context.Background(), charmpack.Options{Dir: dir, Out: out, Dispatch: dispatch}); err != nil {
		t.Fatal(err)
	}
	for platform, arch := range map[string]string{"x86": "amd64", "arm": "arm64"} {
		files, _ := readZip(t, strings.TrimSuffix(out, ".charm")+"_"+platform+".charm")
		var manifest struct {
			Bases []struct {
				Architectures []string `yaml:"architectures"`
			} `yaml:"bases"`
		}
		mustYAML(t, files["manifest.yaml"], &manifest)
		if len(manifest.Bases) != 1 || !cmp.Equal(manifest.Bases[0].Architectures, []string{arch}) {
			t.Errorf("%s: manifest bases %+v, want architectures [%s]", platform, manifest.Bases, arch)
		}
		var meta map[string]any
		mustYAML(t, files["metadata.yaml"], &meta)
		want := map[string]any{
			"docs": "https://docs.example/c", "issues": []any{"https://example/issues"},
			"source": []any{"https://example/src", "https://mirror/src"}, "website": []any{"https://example"},
			"maintainers": []any{"Team <team@example>"},
		}
		got := map[string]any{}
		for k := range want {
			got[k] = meta[k]
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: metadata links (-want +got):\n%s", platform, d)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s written although the charm has two platforms", out)
	}
}

// readZip returns the archive's files and their permission bits.
func readZip(t *testing.T, path string) (map[string][]byte, map[string]uint32) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	files := map[string][]byte{}
	modes := map[string]uint32{}
	for _, f := range zr.File {
		modes[f.Name] = uint32(f.Mode().Perm())
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
	}
	return files, modes
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
