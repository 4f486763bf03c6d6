package charmpack_test

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
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
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	// The repository is the operators' parent: keep its files (and their directories).
	tracked := map[string]bool{}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		tracked[f] = true
		for d := filepath.Dir(f); d != "."; d = filepath.Dir(d) {
			tracked[d+"/"] = true
		}
	}
	for _, charm := range []string{"slurmctld-operator", "slurmd-operator"} {
		t.Run(charm, func(t *testing.T) {
			// The project directory and its parent, copied so that the build cannot see
			// anything a checkout does not hold.
			tree := t.TempDir()
			keep := func(rel string) bool { return tracked[rel] }
			prime, err := charmpack.CraftBuild(context.Background(), charmpack.CraftOptions{
				Dir:  filepath.Join(root, charm),
				Work: filepath.Join(tree, "work"),
				Keep: keep,
			})
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
			// The same charmcraft.yaml packs with what charmcraft built.
			if err := charmpack.Pack(context.Background(), charmpack.Options{
				Dir: filepath.Join(root, charm), Out: filepath.Join(tree, "out.charm"), Dispatch: filepath.Join(prime, "dispatch"),
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
