package atomicfile_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/atomicfile"
)

// meta is what a test checks of a file.
type meta struct {
	Data     string
	Mode     fs.FileMode
	UID, GID int
}

func stat(t *testing.T, path string) meta {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	return meta{Data: string(data), Mode: st.Mode().Perm(), UID: int(sys.Uid), GID: int(sys.Gid)}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	// other is an owner different from the test's when it runs as root (chown works), else
	// the test's own.
	me := atomicfile.Owner{UID: os.Getuid(), GID: os.Getgid()}
	other := me
	if os.Getuid() == 0 {
		other = atomicfile.Owner{UID: 4321, GID: 4322}
	}
	for _, tt := range []struct {
		name     string
		existing *meta // nil: no file before
		opts     atomicfile.Options
		want     meta
	}{
		{name: "new file gets the options", opts: atomicfile.Options{Mode: 0o600, Owner: &other},
			want: meta{Data: "new", Mode: 0o600, UID: other.UID, GID: other.GID}},
		{name: "new file default mode", want: meta{Data: "new", Mode: 0o644, UID: me.UID, GID: me.GID}},
		{name: "existing file keeps its mode and owner", existing: &meta{Data: "old", Mode: 0o640},
			opts: atomicfile.Options{Mode: 0o600, Owner: &other}, want: meta{Data: "new", Mode: 0o640, UID: me.UID, GID: me.GID}},
		{name: "reset applies the options to an existing file", existing: &meta{Data: "old", Mode: 0o644},
			opts: atomicfile.Options{Mode: 0o400, Owner: &other, Reset: true}, want: meta{Data: "new", Mode: 0o400, UID: other.UID, GID: other.GID}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			if tt.existing != nil {
				if err := os.WriteFile(path, []byte(tt.existing.Data), tt.existing.Mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, tt.existing.Mode); err != nil {
					t.Fatal(err)
				}
			}
			if err := atomicfile.Write(context.Background(), path, []byte("new"), tt.opts); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, stat(t, path)); d != "" {
				t.Errorf("file (-want +got):\n%s", d)
			}
			left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
			if len(left) > 0 {
				t.Errorf("temporary files left: %q", left)
			}
		})
	}
}

func TestWriteSymlinkReplacesTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target"), filepath.Join(dir, "link")
	if err := os.WriteFile(target, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(context.Background(), link, []byte("new"), atomicfile.Options{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.Readlink(link); got != target {
		t.Errorf("link now points at %q", got)
	}
	if got := stat(t, target); got.Data != "new" || got.Mode != 0o640 {
		t.Errorf("target = %+v", got)
	}
}

func TestWriteDirectories(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "f")
	if err := atomicfile.Write(context.Background(), path, []byte("x"), atomicfile.Options{}); err == nil {
		t.Error("missing directory without MkdirMode: no error")
	}
	if err := atomicfile.Write(context.Background(), path, []byte("x"), atomicfile.Options{MkdirMode: 0o700}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Dir(path))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("directory: %v, %v", st.Mode(), err)
	}
}

func TestWriteCancelledKeepsOriginal(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := atomicfile.Write(ctx, path, []byte("new"), atomicfile.Options{}); err == nil {
		t.Error("cancelled: no error")
	}
	if got := stat(t, path).Data; got != "old" {
		t.Errorf("file now %q", got)
	}
}
