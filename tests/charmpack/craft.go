package charmpack

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// CraftOptions say which charm CraftBuild builds and where.
type CraftOptions struct {
	// Dir is the charm's project directory (charmcraft.yaml). Sources are relative to it.
	Dir string
	// Work is where the parts, stage and prime directories are made, as charmcraft makes them
	// in its build environment.
	Work string
	// GoArgv is the go command (default {"go"}): what the part's build-snaps provide.
	GoArgv []string
	// Keep, when set, says which files of a local source are pulled (path relative to the
	// source; a directory's path ends in "/", and a directory not kept is not entered); nil
	// pulls every file. A test pulls what a fresh checkout holds.
	Keep func(rel string) bool
}

// CraftBuild runs the lifecycle of the charm's parts as charmcraft runs it (craft-parts: pull,
// build, stage, prime) and returns the prime directory, from which charmcraft packs the charm.
// Local sources only; plugins go (the go plugin's commands: go mod download all, then
// go install -p <n> ./... with GOBIN=$CRAFT_PART_INSTALL/bin, in source-subdir) and nil; each
// part's build-environment, organize and prime keys are applied.
func CraftBuild(ctx context.Context, opts CraftOptions) (string, error) {
	c, err := ReadCharmcraft(opts.Dir)
	if err != nil {
		return "", err
	}
	order, err := partOrder(c.Parts)
	if err != nil {
		return "", err
	}
	stage, prime := filepath.Join(opts.Work, "stage"), filepath.Join(opts.Work, "prime")
	for _, d := range []string{stage, prime} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	for _, name := range order {
		p := c.Parts[name]
		dirs := partDirs(opts.Work, name)
		if err := pullPart(opts, p, dirs); err != nil {
			return "", fmt.Errorf("cannot pull part %s: %w", name, err)
		}
		if err := buildPart(ctx, opts, p, dirs); err != nil {
			return "", fmt.Errorf("cannot build part %s: %w", name, err)
		}
		if err := organize(dirs.install, p.Organize); err != nil {
			return "", fmt.Errorf("cannot organize part %s: %w", name, err)
		}
		if err := copyTree(dirs.install, stage, nil); err != nil {
			return "", fmt.Errorf("cannot stage part %s: %w", name, err)
		}
		keep := func(rel string) bool { return true }
		if len(p.Prime) > 0 {
			keep = func(rel string) bool {
				if strings.HasSuffix(rel, "/") {
					return true
				}
				for _, f := range p.Prime {
					if rel == f || strings.HasPrefix(rel, strings.TrimSuffix(f, "/")+"/") {
						return true
					}
				}
				return false
			}
		}
		if err := copyTree(stage, prime, keep); err != nil {
			return "", fmt.Errorf("cannot prime part %s: %w", name, err)
		}
	}
	return prime, nil
}

type craftDirs struct{ src, build, install string }

func partDirs(work, name string) craftDirs {
	base := filepath.Join(work, "parts", name)
	return craftDirs{filepath.Join(base, "src"), filepath.Join(base, "build"), filepath.Join(base, "install")}
}

// partOrder sorts the parts so that each comes after the parts it names in after.
func partOrder(parts map[string]Part) ([]string, error) {
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(string) error
	visit = func(n string) error {
		switch state[n] {
		case 1:
			return fmt.Errorf("parts: cycle through %q in after", n)
		case 2:
			return nil
		}
		p, ok := parts[n]
		if !ok {
			return fmt.Errorf("parts: unknown part %q in after", n)
		}
		state[n] = 1
		for _, a := range p.After {
			if err := visit(a); err != nil {
				return err
			}
		}
		state[n] = 2
		order = append(order, n)
		return nil
	}
	for _, n := range sortedKeys(parts) {
		if err := visit(n); err != nil {
			return nil, err
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("charmcraft.yaml has no parts")
	}
	return order, nil
}

func pullPart(opts CraftOptions, p Part, d craftDirs) error {
	if p.SourceType != "" && p.SourceType != "local" {
		return fmt.Errorf("source-type %q: only local sources are built here", p.SourceType)
	}
	src := filepath.Join(opts.Dir, p.Source)
	if p.Source == "" {
		src = opts.Dir
	}
	if err := os.RemoveAll(d.src); err != nil {
		return err
	}
	return copyTree(src, d.src, opts.Keep)
}

func buildPart(ctx context.Context, opts CraftOptions, p Part, d craftDirs) error {
	for _, dir := range []string{d.build, d.install} {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := copyTree(d.src, d.build, nil); err != nil {
		return err
	}
	if err := os.MkdirAll(d.install, 0o755); err != nil {
		return err
	}
	work := filepath.Join(d.build, p.SourceSubdir)
	env := append(os.Environ(), "CRAFT_PART_SRC="+d.src, "CRAFT_PART_BUILD="+d.build, "CRAFT_PART_INSTALL="+d.install, "CRAFT_PART_BUILD_WORK="+work)
	for _, kv := range p.BuildEnvironment {
		for k, v := range kv {
			env = append(env, k+"="+os.Expand(v, func(name string) string { return lookupEnv(env, name) }))
		}
	}
	goArgv := opts.GoArgv
	if len(goArgv) == 0 {
		goArgv = []string{"go"}
	}
	var cmds [][]string
	switch p.Plugin {
	case "go":
		env = append(env, "GOBIN="+filepath.Join(d.install, "bin"))
		cmds = [][]string{
			append(append([]string{}, goArgv...), "mod", "download", "all"),
			append(append([]string{}, goArgv...), "install", "-p", strconv.Itoa(runtime.NumCPU()), "./..."),
		}
	case "nil":
	default:
		return fmt.Errorf("plugin %q: only the go and nil plugins are built here", p.Plugin)
	}
	for _, argv := range cmds {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = work, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, out)
		}
	}
	return nil
}

// lookupEnv is the last value of name in env (later entries win, as exec does).
func lookupEnv(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// organize moves files within the install directory as the part's organize key says
// (source path → destination path, both relative to it).
func organize(install string, moves map[string]string) error {
	for _, from := range sortedKeys(moves) {
		to := filepath.Join(install, moves[from])
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(install, from), to); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies the regular files, directories and symbolic links of src into dst, keeping
// modes; keep (nil: all) selects files by their path relative to src. The project's own work
// directories (parts, stage, prime) and .git are never copied, as charmcraft leaves them out;
// keep is also asked about each directory (its path ending in "/").
func copyTree(src, dst string, keep func(rel string) bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || rel == "parts" || rel == "stage" || rel == "prime" ||
			rel != "." && keep != nil && !keep(rel+"/")) {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if keep == nil { // a filtered copy makes only the directories of the files it keeps
				return os.MkdirAll(target, info.Mode().Perm()|0o700)
			}
			return nil
		case keep != nil && !keep(rel):
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			data, err := os.ReadFile(p) // sources and built files: small enough to hold
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, info.Mode().Perm())
		}
		return nil
	})
}
