// Package authkey installs a Slurm cluster's shared auth key on a host: the munge key
// (/etc/munge/munge.key, owner munge, mode 0400) before Slurm 23.11, or slurm.key (owner
// slurm, mode 0600) with auth/slurm.
//
// [Write] replaces the key file only when its content differs, and reports whether it did,
// so that a caller restarts munged (or slurmctld) only then:
//
//	changed, err := authkey.Write(ctx, "/etc/munge/munge.key", key, authkey.Options{
//		Mode: 0o400, UID: uid, GID: gid,
//	})
//
// A changed key is written atomically ([atomicfile.Write]: a temporary file renamed over the
// old one) with the mode and owner asked for, whatever the old file had. The key's directory is created (mode 0755) when missing.
//
// [Hash] is the SHA-256 of a key in hex: charms record it to tell later whether the key
// file still holds the key they installed without keeping the key itself.
package authkey

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"

	"github.com/charmed-slurm/operators/libs/atomicfile"
)

// Options are the key file's mode and owner.
type Options struct {
	// Mode of the key file; 0400 when zero.
	Mode fs.FileMode
	// UID and GID own the key file.
	UID, GID int
}

// Write makes the file at path hold key, with opts' mode and owner when it is written. It
// reports whether the file changed (it was missing or held something else). An empty key
// is an error.
func Write(ctx context.Context, path string, key []byte, opts Options) (changed bool, err error) {
	if len(key) == 0 {
		return false, fmt.Errorf("cannot write auth key %s: the key is empty", path)
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("cannot write auth key %s: %w", path, err)
	}
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, key) {
		return false, nil
	}
	mode := opts.Mode
	if mode == 0 {
		mode = 0o400
	}
	wopts := atomicfile.Options{Mode: mode, Owner: &atomicfile.Owner{UID: opts.UID, GID: opts.GID}, Reset: true, MkdirMode: 0o755}
	if err := atomicfile.Write(ctx, path, key, wopts); err != nil {
		return false, fmt.Errorf("cannot write auth key %s: %w", path, err)
	}
	return true, nil
}

// Hash is the hex SHA-256 of key.
func Hash(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:])
}
