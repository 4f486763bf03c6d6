package model

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/charmed-slurm/operators/tests/hosts"
)

// installCharm makes dst a copy of the unpacked charm src, as Juju unpacks the charm into each
// unit's charm directory. Regular files are hard links to the model's unpacked copy when src and
// dst are on one filesystem (the charm's multi-megabyte dispatch binary is not copied for every
// unit), else copies; directories and symbolic links are made anew with the same modes. dst is
// replaced. A charm must therefore not rewrite the files it was shipped with in place (writing
// a new file and renaming it over an old one, or any new file, is fine), which no Juju charm
// does: Juju itself replaces the charm directory on upgrade.
func installCharm(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, 0o700); err != nil {
				return err
			}
			return os.Chmod(target, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			if err := os.Link(p, target); err == nil {
				return nil
			}
			if info.Mode()&0o111 != 0 {
				return hosts.CopyExecutable(p, target, info.Mode().Perm())
			}
			return copyFile(p, target, info.Mode().Perm())
		}
		return fmt.Errorf("cannot install %s: not a regular file, directory or symbolic link", p)
	})
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
