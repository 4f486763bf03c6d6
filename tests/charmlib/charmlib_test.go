package charmlib_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/juju/charm/v12"
	"gopkg.in/yaml.v3"

	"github.com/charmed-slurm/operators/tests/charmpack"
)

// TestJujuReadsCharms packs every charm of the repository as `make charms` does and reads each
// archive as Juju 3.6 does when deploying it: ReadCharmArchive (metadata, manifest, config,
// actions), the metadata check for the charm's format, the manifest's bases, every action's
// JSON schema compiled (defaults inserted), the config defaults validated, and the archive
// expanded with an executable dispatch.
func TestJujuReadsCharms(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the charms")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"slurmctld-operator", "slurmd-operator", "sackd-operator", "slurmdbd-operator", "tests/charms/mariadb", "tests/testdata/testcharm", "tests/charms/cos-agent"} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			src := filepath.Join(root, dir)
			out := filepath.Join(t.TempDir(), "c.charm")
			if err := charmpack.Pack(context.Background(), charmpack.Options{Dir: src, Out: out}); err != nil {
				t.Fatal(err)
			}
			var def struct {
				Name    string `yaml:"name"`
				Actions map[string]struct {
					Params map[string]struct {
						Default any `yaml:"default"`
					} `yaml:"params"`
				} `yaml:"actions"`
				Config struct {
					Options map[string]struct {
						Default any `yaml:"default"`
					} `yaml:"options"`
				} `yaml:"config"`
			}
			data, err := os.ReadFile(filepath.Join(src, "charmcraft.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(data, &def); err != nil {
				t.Fatal(err)
			}

			ch, err := charm.ReadCharmArchive(out)
			if err != nil {
				t.Fatalf("juju cannot read the archive: %v", err)
			}
			if err := charm.CheckMeta(ch); err != nil {
				t.Errorf("metadata check (format %v): %v", charm.MetaFormat(ch), err)
			}
			if f := charm.MetaFormat(ch); f != charm.FormatV2 {
				t.Errorf("charm format %v, want v2 (a manifest with bases)", f)
			}
			if ch.Meta().Name != def.Name {
				t.Errorf("name %q, want %q", ch.Meta().Name, def.Name)
			}
			if ch.Manifest() == nil {
				t.Fatal("no manifest")
			}
			if err := ch.Manifest().Validate(); err != nil {
				t.Errorf("manifest: %v", err)
			}
			for _, b := range ch.Manifest().Bases {
				if d := cmp.Diff([]string{"amd64"}, b.Architectures); d != "" || b.Name != "ubuntu" {
					t.Errorf("manifest base %+v (architectures -want +got:\n%s)", b, d)
				}
			}

			var names []string
			for name, spec := range ch.Actions().ActionSpecs {
				names = append(names, name)
				got, err := spec.InsertDefaults(map[string]any{})
				if err != nil {
					t.Errorf("action %s: schema does not compile: %v", name, err)
					continue
				}
				want := map[string]any{}
				for p, v := range def.Actions[name].Params {
					if v.Default != nil {
						want[p] = v.Default
					}
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("action %s: defaults Juju inserts (-want +got):\n%s", name, d)
				}
			}
			sort.Strings(names)
			var wantNames []string
			for name := range def.Actions {
				wantNames = append(wantNames, name)
			}
			sort.Strings(wantNames)
			if d := cmp.Diff(wantNames, names); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}

			defaults := ch.Config().DefaultSettings()
			if _, err := ch.Config().ValidateSettings(defaults); err != nil {
				t.Errorf("config defaults do not validate: %v", err)
			}
			for name, o := range def.Config.Options {
				if _, ok := ch.Config().Options[name]; !ok {
					t.Errorf("config option %s missing", name)
					continue
				}
				if o.Default != nil && !cmp.Equal(normal(o.Default), normal(defaults[name])) {
					t.Errorf("config option %s default %v (%T), want %v", name, defaults[name], defaults[name], o.Default)
				}
			}

			expanded := t.TempDir()
			if err := ch.ExpandTo(expanded); err != nil {
				t.Fatalf("expand: %v", err)
			}
			fi, err := os.Stat(filepath.Join(expanded, "dispatch"))
			if err != nil || fi.Mode()&0o111 == 0 {
				t.Errorf("expanded dispatch: %v %v, want executable", fi, err)
			}
		})
	}
}

// normal makes YAML numbers comparable with Juju's int64 config values.
func normal(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	}
	return v
}

// The library refuses what Juju refuses: the check can fail.
func TestJujuRefusesBadCharms(t *testing.T) {
	for _, tt := range []struct{ name, extra string }{
		{"bad assumes", "assumes:\n  - juju >= banana\n"},
		{"reserved interface", "provides:\n  info:\n    interface: juju-info\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			yml := "type: charm\nname: bad\nsummary: s\ndescription: d\nbase: ubuntu@24.04\nplatforms:\n  amd64:\n" + tt.extra
			if err := os.WriteFile(filepath.Join(dir, "charmcraft.yaml"), []byte(yml), 0o644); err != nil {
				t.Fatal(err)
			}
			dispatch := filepath.Join(dir, "dispatch")
			if err := os.WriteFile(dispatch, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "bad.charm")
			if err := charmpack.Pack(context.Background(), charmpack.Options{Dir: dir, Out: out, Dispatch: dispatch}); err != nil {
				t.Fatal(err)
			}
			ch, err := charm.ReadCharmArchive(out)
			if err == nil {
				err = charm.CheckMeta(ch)
			}
			if err == nil {
				t.Errorf("juju's charm library accepted %q", tt.extra)
			}
		})
	}
}
