package model

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/charmed-slurm/operators/tests/hosts"
)

// installCharm deploys the unpacked charm src into dst, a unit's charm directory, as Juju's
// manifest deployer does (internal/worker/uniter/charm/manifest_deployer.go): the charm's files
// are written over what is there, and, when another charm was deployed before, the files of
// that charm that the new one lacks are removed; every other file is left in place. A charm's
// own files in its directory (its state) therefore survive a refresh, as under Juju. The list
// of the deployed charm's files (its manifest) is kept beside the charm directory, in
// manifests/charm of the unit's agent directory.
//
// Regular files are hard links to the model's unpacked copy when src and dst are on one
// filesystem (the charm's multi-megabyte dispatch binary is not copied for every unit), else
// copies; directories and symbolic links are made anew with the same modes. A charm must
// therefore not rewrite the files it was shipped with in place (writing a new file and
// renaming it over an old one, or any new file, is fine), which no Juju charm does.
func installCharm(src, dst string) error {
	manifest, err := charmManifest(src)
	if err != nil {
		return fmt.Errorf("cannot read charm %s: %w", src, err)
	}
	manifestPath := filepath.Join(filepath.Dir(dst), "manifests", "charm")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if old, err := os.ReadFile(manifestPath); err == nil {
		// Upgrading: remove what only the deployed charm had (deepest first).
		keep := map[string]bool{}
		for _, rel := range manifest {
			keep[rel] = true
		}
		stale := strings.Split(strings.TrimSpace(string(old)), "\n")
		for i := len(stale) - 1; i >= 0; i-- {
			if rel := stale[i]; rel != "" && rel != "." && !keep[rel] {
				if err := os.RemoveAll(filepath.Join(dst, rel)); err != nil {
					return err
				}
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := copyCharm(src, dst, manifest); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(manifestPath), 0o755); err != nil {
		return err
	}
	return writeNew(manifestPath, strings.NewReader(strings.Join(manifest, "\n")+"\n"), os.O_TRUNC, 0o644)
}

// copyCharm writes the entries of manifest (paths below src) at the same paths below dst,
// over what is there; an executable is never written in this process (see deployEntry).
func copyCharm(src, dst string, manifest []string) error {
	for _, rel := range manifest {
		if err := deployEntry(filepath.Join(src, rel), filepath.Join(dst, rel)); err != nil {
			return err
		}
	}
	return nil
}

// charmManifest lists the paths below src, relative to it, parents before children.
func charmManifest(src string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		paths = append(paths, filepath.ToSlash(rel))
		return nil
	})
	return paths, err
}

// deployEntry writes the charm's file, directory or symbolic link p at target, over what is
// there (a directory there is kept, with p's mode).
func deployEntry(p, target string) error {
	info, err := os.Lstat(p)
	if err != nil {
		return err
	}
	switch {
	case info.IsDir():
		if err := os.Mkdir(target, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return os.Chmod(target, info.Mode().Perm())
	case info.Mode()&fs.ModeSymlink != 0:
		link, err := os.Readlink(p)
		if err != nil {
			return err
		}
		if err := os.RemoveAll(target); err != nil {
			return err
		}
		return os.Symlink(link, target)
	case info.Mode().IsRegular():
		if err := os.RemoveAll(target); err != nil {
			return err
		}
		if err := os.Link(p, target); err == nil {
			return nil
		}
		if info.Mode()&0o111 != 0 {
			return hosts.CopyExecutable(p, target, info.Mode().Perm())
		}
		return copyFile(p, target, info.Mode().Perm())
	}
	return fmt.Errorf("cannot install %s: not a regular file, directory or symbolic link", p)
}

// copyFile copies src to a new file dst with mode.
func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeNew(dst, in, os.O_EXCL, mode)
}

// writeNew writes r to dst (created with flag added to O_CREATE|O_WRONLY) and gives it mode,
// whatever the umask.
func writeNew(dst string, r io.Reader, flag int, mode fs.FileMode) error {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|flag, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

// installToolLinks makes dir hold one symbolic link to bin per hook tool name (ToolNames) and
// one named juju-exec, replacing what dir held. Juju puts juju-exec in /usr/bin, which is on
// every hook's PATH too; the model's hosts share /usr, so it goes beside the hook tools.
func installToolLinks(bin, dir string) error {
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range append(ToolNames(), JujuExec) {
		if err := os.Symlink(bin, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// linkUnitTools makes link (a unit's tools directory) a symbolic link to dir (the model's tools
// directory), as Juju's /var/lib/juju/tools/unit-<app>-<n> is a link to the agent's versioned
// tools. One link instead of a link per tool: creating files is what costs here.
func linkUnitTools(dir, link string) error {
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return err
	}
	if err := os.RemoveAll(link); err != nil {
		return err
	}
	return os.Symlink(dir, link)
}
