package slurmconf

import (
	"bytes"
	"context"
	"errors"
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

// EditOptions control [Edit] and [WriteFile].
type EditOptions struct {
	// Create lets Edit start from an empty document when the file does not
	// exist. Without it a missing file is an error.
	Create bool
	// Mode is the permission of a file that does not exist yet (0644 when
	// zero). An existing file keeps its own mode.
	Mode fs.FileMode
	// Owner of a file that does not exist yet; nil leaves it to the
	// process. An existing file keeps its own owner.
	Owner *Owner
}

// ReadFile reads and parses the file at path.
func ReadFile(ctx context.Context, path string) (*Doc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read slurm.conf: %w", err)
	}
	d, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("cannot parse %s: %w", path, err)
	}
	return d, nil
}

// Edit reads the document at path, applies fn and writes the result back
// atomically: a temporary file in the same directory is written and synced,
// given the original's mode and owner (or those of opts for a new file),
// renamed over path, and the directory is synced. If path is a symbolic
// link, its target is edited. When fn fails, the context is done, or any
// step fails, the original file is left untouched and the error is
// returned. Edit reports whether the file was written: a document that
// renders to the same bytes is not rewritten.
//
// Edit does not lock the file: callers that may run concurrently must
// serialise their edits (Juju runs one hook at a time per unit).
func Edit(ctx context.Context, path string, fn func(*Doc) error, opts EditOptions) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	target := resolve(path)
	var (
		orig   []byte
		exists = true
		mode   = opts.Mode
		owner  = opts.Owner
	)
	st, err := os.Stat(target)
	switch {
	case err == nil:
		if !st.Mode().IsRegular() {
			return false, fmt.Errorf("cannot edit %s: not a regular file", path)
		}
		if orig, err = os.ReadFile(target); err != nil {
			return false, fmt.Errorf("cannot read %s: %w", path, err)
		}
		mode, owner = keptMeta(st, owner)
	case errors.Is(err, fs.ErrNotExist) && opts.Create:
		exists = false
	default:
		return false, fmt.Errorf("cannot edit %s: %w", path, err)
	}
	doc, err := Parse(orig)
	if err != nil {
		return false, fmt.Errorf("cannot parse %s: %w", path, err)
	}
	if err := fn(doc); err != nil {
		return false, err
	}
	out := doc.Bytes()
	if exists && bytes.Equal(out, orig) {
		return false, nil
	}
	if err := writeAtomic(ctx, target, out, mode, owner); err != nil {
		return false, err
	}
	return true, nil
}

// WriteFile writes data to path atomically, like [Edit]: an existing file
// keeps its mode and owner, a new one gets those of opts.
func WriteFile(ctx context.Context, path string, data []byte, opts EditOptions) error {
	target := resolve(path)
	mode, owner := opts.Mode, opts.Owner
	if st, err := os.Stat(target); err == nil {
		mode, owner = keptMeta(st, owner)
	}
	return writeAtomic(ctx, target, data, mode, owner)
}

// resolve returns the target of path when it is a symbolic link that
// resolves, else path itself.
func resolve(path string) string {
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		return resolved
	}
	return path
}

// keptMeta returns the mode and owner an existing file keeps when it is
// rewritten; owner is returned as is when st carries no owner.
func keptMeta(st fs.FileInfo, owner *Owner) (fs.FileMode, *Owner) {
	mode := st.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		owner = &Owner{UID: int(sys.Uid), GID: int(sys.Gid)}
	}
	return mode, owner
}

func writeAtomic(ctx context.Context, path string, data []byte, mode fs.FileMode, owner *Owner) (err error) {
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
		// Chown only when needed: an unprivileged caller may rewrite a
		// file it owns.
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
