package authkey_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/authkey"
)

type fileInfo struct {
	Data     string
	Mode     fs.FileMode
	UID, GID int
}

func stat(t *testing.T, path string) fileInfo {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fileInfo{Data: string(data), Mode: fi.Mode().Perm(), UID: int(st.Uid), GID: int(st.Gid)}
}

func TestWrite(t *testing.T) {
	uid, gid := os.Getuid(), os.Getgid()
	tests := []struct {
		name        string
		old         string // "" means no file
		oldMode     fs.FileMode
		key         string
		mode        fs.FileMode
		wantChanged bool
		want        fileInfo
	}{{
		name: "new file, default mode", key: "k1", wantChanged: true,
		want: fileInfo{Data: "k1", Mode: 0o400, UID: uid, GID: gid},
	}, {
		name: "new file, 0600", key: "k1", mode: 0o600, wantChanged: true,
		want: fileInfo{Data: "k1", Mode: 0o600, UID: uid, GID: gid},
	}, {
		name: "same key left alone, mode kept", old: "k1", oldMode: 0o644, key: "k1", mode: 0o400,
		want: fileInfo{Data: "k1", Mode: 0o644, UID: uid, GID: gid},
	}, {
		name: "changed key gets the new mode", old: "k1", oldMode: 0o644, key: "k2", mode: 0o400, wantChanged: true,
		want: fileInfo{Data: "k2", Mode: 0o400, UID: uid, GID: gid},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "etc", "munge", "munge.key")
			if tt.old != "" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tt.old), tt.oldMode); err != nil {
					t.Fatal(err)
				}
			}
			changed, err := authkey.Write(context.Background(), path, []byte(tt.key), authkey.Options{Mode: tt.mode, UID: uid, GID: gid})
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if d := cmp.Diff(tt.want, stat(t, path)); d != "" {
				t.Errorf("key file (-want +got):\n%s", d)
			}
		})
	}
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	if _, err := authkey.Write(ctx, filepath.Join(dir, "k"), nil, authkey.Options{}); err == nil || !strings.Contains(err.Error(), "the key is empty") {
		t.Errorf("empty key: %v", err)
	}
	// The directory's place is taken by a file.
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(blocker, "munge.key")
	if _, err := authkey.Write(ctx, bad, []byte("k"), authkey.Options{UID: os.Getuid(), GID: os.Getgid()}); err == nil || !strings.Contains(err.Error(), "cannot write auth key "+bad) {
		t.Errorf("bad path: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := authkey.Write(cctx, filepath.Join(dir, "k"), []byte("k"), authkey.Options{}); err == nil {
		t.Error("cancelled context: no error")
	}
}

func TestHash(t *testing.T) {
	for _, key := range []string{"", "k1", strings.Repeat("x", 1024)} {
		sum := sha256.Sum256([]byte(key))
		if d := cmp.Diff(hex.EncodeToString(sum[:]), authkey.Hash([]byte(key))); d != "" {
			t.Errorf("Hash(%q) (-want +got):\n%s", key, d)
		}
	}
	if authkey.Hash([]byte("k1")) == authkey.Hash([]byte("k2")) {
		t.Error("different keys hash the same")
	}
}
