package charmpack_test

import (
	"archive/zip"
	"bytes"
	"context"
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/charmpack"
)

// TestCraftBuild runs the operators' charmcraft.yaml parts as charmcraft runs them, on a copy
// of the repository holding what a checkout holds (the files git tracks, and new files not
// ignored, so that work in progress builds as it will once committed), laid out as
// charmcraft lays it out: the prime directory must hold exactly a static, executable dispatch.
func TestCraftBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both operators from a copy of the repository")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	keep, err := charmpack.CheckoutFiles(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, charm := range []string{"slurmctld-operator", "slurmd-operator", "sackd-operator", "slurmdbd-operator"} {
		t.Run(charm, func(t *testing.T) {
			tree := t.TempDir()
			// In a checkout (charmcraft pack --destructive-mode): the project directory's
			// parent, copied so that the build cannot see anything a checkout does not hold.
			checkout := craftAndPack(t, charmpack.CraftOptions{Dir: filepath.Join(root, charm), Work: filepath.Join(tree, "checkout"), Keep: keep})
			// Staged (make charmcraft-projects; then plain charmcraft pack, which mounts only
			// the project directory): the build sees the staged directory and nothing else.
			staged := filepath.Join(tree, "project")
			if err := charmpack.Stage(charmpack.StageOptions{Root: root, Charm: charm, Dst: staged, Keep: keep}); err != nil {
				t.Fatal(err)
			}
			managed := craftAndPack(t, charmpack.CraftOptions{Dir: staged, Work: filepath.Join(tree, "managed")})
			if d := cmp.Diff(zipListing(t, checkout), zipListing(t, managed)); d != "" {
				t.Errorf("the staged project packs a different charm (-checkout +staged):\n%s", d)
			}
		})
	}
}

// craftAndPack runs the parts of o.Dir's charmcraft.yaml, checks that the prime directory
// holds exactly a static, executable dispatch, packs it with the same charmcraft.yaml and
// returns the .charm.
func craftAndPack(t *testing.T, o charmpack.CraftOptions) string {
	t.Helper()
	prime, err := charmpack.CraftBuild(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(prime)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if d := cmp.Diff([]string{"dispatch"}, names); d != "" {
		t.Fatalf("prime (-want +got):\n%s", d)
	}
	fi, err := os.Stat(filepath.Join(prime, "dispatch"))
	if err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("dispatch: %v %v, want an executable", fi, err)
	}
	bin, err := os.ReadFile(filepath.Join(prime, "dispatch"))
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("dispatch is not an ELF binary: %v", err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("dispatch is dynamically linked")
		}
	}
	out := filepath.Join(o.Work, "out.charm")
	if err := charmpack.Pack(context.Background(), charmpack.Options{Dir: o.Dir, Out: out, Dispatch: filepath.Join(prime, "dispatch")}); err != nil {
		t.Fatal(err)
	}
	return out
}

// zipListing is each file of a .charm with its mode and, but for dispatch, its content.
func zipListing(t *testing.T, path string) map[string]string {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	out := map[string]string{}
	for _, f := range zr.File {
		content := "(binary)"
		if f.Name != "dispatch" {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			content = string(b)
		}
		out[f.Name] = f.Mode().String() + " " + content
	}
	return out
}

// TestStageRefuses: a part source outside the charm's folder other than the repository, and a
// replace outside the repository's top folders, cannot be staged.
func TestStageRefuses(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"source elsewhere": {"charmcraft.yaml": "name: x\nparts:\n  charm:\n    source: ../other\n", "go.mod": "module x\n"},
		"replace deeper":   {"charmcraft.yaml": "name: x\n", "go.mod": "module x\nreplace a => ../../a\n"},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			for f, c := range files {
				if err := os.MkdirAll(filepath.Join(root, "charm"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, "charm", f), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := charmpack.Stage(charmpack.StageOptions{Root: root, Charm: "charm", Dst: filepath.Join(root, "out")})
			if err == nil || !strings.Contains(err.Error(), "cannot stage") {
				t.Errorf("Stage: %v, want a refusal", err)
			}
		})
	}
}
