// Package atomicfile writes files so that a reader sees either the old content or the new,
// never a half-written file, with the owner and mode the caller asks for.
//
// [Write] writes the data to a temporary file in the same directory, sets its mode and
// owner, syncs it, renames it over the path and syncs the directory. If path is a symbolic
// link, its target is replaced. When any step fails, or ctx is done before the rename, the
// original file is left untouched and the temporary file removed.
//
// By default an existing file keeps its own mode and owner (an administrator's chmod
// survives a rewrite) and [Options] apply to a new file only; [Options.Reset] applies them
// to an existing file too, which is what a secret such as munge.key needs:
//
//	err := atomicfile.Write(ctx, "/etc/munge/munge.key", key, atomicfile.Options{
//		Mode: 0o400, Owner: &atomicfile.Owner{UID: uid, GID: gid}, Reset: true, MkdirMode: 0o755,
//	})
//
// Write does not lock: callers that may run concurrently serialise their writes (Juju runs
// one hook at a time per unit).
package atomicfile

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Owner is a numeric file owner.
type Owner struct {
	UID int
	GID int
}

// Options are the mode and owner of the written file.
type Options struct {
	// Mode is the permission of a new file (0644 when zero).
	Mode fs.FileMode
	// Owner of a new file; nil leaves it to the process.
	Owner *Owner
	// Reset applies Mode and Owner to an existing file too; without it an existing file
	// keeps its own mode and owner.
	Reset bool
	// MkdirMode, when not zero, creates the file's missing parent directories with this
	// mode; zero makes a missing directory an error.
	MkdirMode fs.FileMode
}

// Write replaces the file at path with data atomically (see the package documentation).
func Write(ctx context.Context, path string, data []byte, opts Options) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	target := Resolve(path)
	mode, owner := opts.Mode, opts.Owner
	if st, err := os.Stat(target); err == nil && !opts.Reset {
		mode, owner = KeptMeta(st, owner)
	}
	if opts.MkdirMode != 0 {
		if err := os.MkdirAll(filepath.Dir(target), opts.MkdirMode); err != nil {
			return fmt.Errorf("cannot write %s: %w", path, err)
		}
	}
	return write(ctx, target, data, mode, owner)
}

// Resolve returns the target of path when it is a symbolic link that resolves, else path
// itself.
func Resolve(path string) string {
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		return resolved
	}
	return path
}

// KeptMeta returns the mode and owner an existing file (st) keeps when it is rewritten;
// owner is returned as is when st carries no owner.
func KeptMeta(st fs.FileInfo, owner *Owner) (fs.FileMode, *Owner) {
	mode := st.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		owner = &Owner{UID: int(sys.Uid), GID: int(sys.Gid)}
	}
	return mode, owner
}

func write(ctx context.Context, path string, data []byte, mode fs.FileMode, owner *Owner) (err error) {
	if mode == 0 {
		mode = 0o644
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("cannot write %s: %w", path, err)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if owner != nil {
		// Chown only when needed: an unprivileged caller may rewrite a file it owns.
		var sys *syscall.Stat_t
		if st, serr := f.Stat(); serr == nil {
			sys, _ = st.Sys().(*syscall.Stat_t)
		}
		if sys == nil || int(sys.Uid) != owner.UID || int(sys.Gid) != owner.GID {
			if err = f.Chown(owner.UID, owner.GID); err != nil {
				return err
			}
		}
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = ctx.Err(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
