package charmpack

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// StageOptions say which charm Stage lays out and where.
type StageOptions struct {
	// Root is the repository (go.work's directory); Charm is the charm's folder in it.
	Root, Charm string
	// Dst is the project directory to make: it must not exist yet.
	Dst string
	// Keep, as in CraftOptions, selects the repository's files by their path relative to Root
	// (nil: every file).
	Keep func(rel string) bool
}

// replaceLine matches a go.mod replace directive to a folder beside the charm's.
var replaceLine = regexp.MustCompile(`^replace\s+\S+\s+=>\s+\.\./([A-Za-z0-9._-]+)\s*$`)

// Stage lays out a charm as a self-contained charmcraft project, for `charmcraft pack` in
// managed mode (which mounts only the project directory in its build instance): Dst holds the
// charm's folder, every folder its go.mod replaces (../libs, ../interfaces) and, at its top,
// the charm's charmcraft.yaml with its parts' `source: ..` (the repository, in a checkout)
// made `source: .` (the project itself): the same parts, with source-subdir, build the same
// dispatch. A part source elsewhere outside the charm's folder is refused.
func Stage(o StageOptions) error {
	if _, err := os.Stat(o.Dst); err == nil {
		return fmt.Errorf("%s exists: staging makes a new project directory", o.Dst)
	}
	charmDir := filepath.Join(o.Root, o.Charm)
	gomod, err := os.ReadFile(filepath.Join(charmDir, "go.mod"))
	if err != nil {
		return err
	}
	dirs := []string{o.Charm}
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if m := replaceLine.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
			dirs = append(dirs, m[1])
		} else if strings.Contains(sc.Text(), "=> ../") {
			return fmt.Errorf("%s/go.mod: cannot stage %q (a replace outside the repository's top folders)", o.Charm, strings.TrimSpace(sc.Text()))
		}
	}
	craft, err := os.ReadFile(filepath.Join(charmDir, "charmcraft.yaml"))
	if err != nil {
		return err
	}
	var staged []string
	for _, l := range strings.Split(string(craft), "\n") {
		key, val, _ := strings.Cut(strings.TrimSpace(l), ":")
		val = strings.TrimSpace(val)
		switch {
		case key == "source" && val == "..":
			l = strings.Replace(l, "source: ..", "source: .", 1)
		case key == "source" && strings.HasPrefix(val, "../"):
			return fmt.Errorf("%s/charmcraft.yaml: cannot stage %q (only a part's `source: ..` is rewritten)", o.Charm, strings.TrimSpace(l))
		}
		staged = append(staged, l)
	}
	for _, d := range dirs {
		keep := o.Keep
		if keep != nil {
			keep = func(rel string) bool { return o.Keep(d + "/" + rel) }
		}
		if err := copyTree(filepath.Join(o.Root, d), filepath.Join(o.Dst, d), keep); err != nil {
			return fmt.Errorf("cannot stage %s: %w", d, err)
		}
	}
	return os.WriteFile(filepath.Join(o.Dst, "charmcraft.yaml"), []byte(strings.Join(staged, "\n")), 0o644)
}

// CheckoutFiles returns a Keep function selecting what a checkout of the repository at root
// holds: the files git tracks and the new files it does not ignore (so that work in progress
// stages as it will once committed), and their directories.
func CheckoutFiles(ctx context.Context, root string) (func(rel string) bool, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	kept := map[string]bool{}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		kept[f] = true
		for d := filepath.Dir(f); d != "."; d = filepath.Dir(d) {
			kept[d+"/"] = true
		}
	}
	return func(rel string) bool { return kept[rel] }, nil
}
