package slurmconf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/charmed-slurm/operators/libs/atomicfile"
)

// Owner is a numeric file owner.
type Owner = atomicfile.Owner

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
	target := atomicfile.Resolve(path)
	var (
		orig   []byte
		exists = true
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
	if err := atomicfile.Write(ctx, target, out, atomicfile.Options{Mode: opts.Mode, Owner: opts.Owner}); err != nil {
		return false, err
	}
	return true, nil
}

// WriteFile writes data to path atomically, like [Edit]: an existing file
// keeps its mode and owner, a new one gets those of opts. It is
// [atomicfile.Write] with opts' mode and owner.
func WriteFile(ctx context.Context, path string, data []byte, opts EditOptions) error {
	return atomicfile.Write(ctx, path, data, atomicfile.Options{Mode: opts.Mode, Owner: opts.Owner})
}
