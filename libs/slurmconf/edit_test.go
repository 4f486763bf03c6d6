package slurmconf_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/charmed-slurm/operators/libs/slurmconf"
	"github.com/google/go-cmp/cmp"
)

const conf = "# cluster\nClusterName=c\nPartitionName=p Nodes=n MaxTime=10  # keep\n"

func writeConf(t *testing.T, mode fs.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(path, []byte(conf), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // umask-proof
		t.Fatal(err)
	}
	return path
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// onlyFile checks that the directory holds nothing but the edited file
// (no temporary file left behind).
func onlyFile(t *testing.T, path string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if d := cmp.Diff([]string{filepath.Base(path)}, names); d != "" {
		t.Errorf("directory content (-want +got):\n%s", d)
	}
}

func TestEditFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := writeConf(t, 0o640)
	before := inode(t, path)
	changed, err := slurmconf.Edit(ctx, path, func(d *slurmconf.Doc) error {
		p, _ := d.Partition("p")
		p.Params.Set("MaxTime", "20")
		return d.SetPartition(p)
	}, slurmconf.EditOptions{Mode: 0o600})
	if err != nil || !changed {
		t.Fatalf("Edit = %v, %v", changed, err)
	}
	got, _ := os.ReadFile(path)
	want := "# cluster\nClusterName=c\nPartitionName=p Nodes=n MaxTime=20  # keep\n"
	if d := cmp.Diff(want, string(got)); d != "" {
		t.Errorf("content (-want +got):\n%s", d)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the original 0640", st.Mode().Perm())
	}
	if inode(t, path) == before {
		t.Error("file was rewritten in place, not replaced by rename")
	}
	onlyFile(t, path)
}

func TestEditNoChange(t *testing.T) {
	t.Parallel()
	path := writeConf(t, 0o644)
	before := inode(t, path)
	changed, err := slurmconf.Edit(context.Background(), path, func(d *slurmconf.Doc) error {
		return d.Set("ClusterName", "c")
	}, slurmconf.EditOptions{})
	if err != nil || changed {
		t.Fatalf("Edit = %v, %v; want no change", changed, err)
	}
	if inode(t, path) != before {
		t.Error("unchanged file was rewritten")
	}
}

func TestEditFailureKeepsOriginal(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name string
		fn   func(context.CancelFunc) func(*slurmconf.Doc) error
		want error
	}{
		{"fn fails after editing", func(context.CancelFunc) func(*slurmconf.Doc) error {
			return func(d *slurmconf.Doc) error {
				d.Delete("ClusterName")
				return boom
			}
		}, boom},
		{"context cancelled before the rename", func(cancel context.CancelFunc) func(*slurmconf.Doc) error {
			return func(d *slurmconf.Doc) error {
				d.Delete("ClusterName")
				cancel()
				return nil
			}
		}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeConf(t, 0o644)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			changed, err := slurmconf.Edit(ctx, path, tt.fn(cancel), slurmconf.EditOptions{})
			if !errors.Is(err, tt.want) || changed {
				t.Fatalf("Edit = %v, %v; want %v", changed, err, tt.want)
			}
			got, _ := os.ReadFile(path)
			if string(got) != conf {
				t.Errorf("original changed: %q", got)
			}
			onlyFile(t, path)
		})
	}
}

func TestEditParseErrorKeepsOriginal(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "slurm.conf")
	bad := "ClusterName=c\nPartitionName=p MaxTime\n"
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	called := false
	_, err := slurmconf.Edit(context.Background(), path, func(*slurmconf.Doc) error { called = true; return nil }, slurmconf.EditOptions{})
	var pe *slurmconf.ParseError
	if !errors.As(err, &pe) || pe.Line != 2 {
		t.Fatalf("Edit = %v, want a ParseError on line 2", err)
	}
	if called {
		t.Error("fn called on an unparsable file")
	}
}

func TestEditMissingFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "part.conf")
	_, err := slurmconf.Edit(context.Background(), path, func(*slurmconf.Doc) error { return nil }, slurmconf.EditOptions{})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Edit of a missing file without Create = %v, want ErrNotExist", err)
	}
	opts := slurmconf.EditOptions{Create: true, Mode: 0o600}
	if os.Geteuid() == 0 {
		opts.Owner = &slurmconf.Owner{UID: 4321, GID: 4322}
	}
	changed, err := slurmconf.Edit(context.Background(), path, func(d *slurmconf.Doc) error {
		if got := d.String(); got != "" {
			t.Errorf("new document not empty: %q", got)
		}
		return d.SetNodeSet(slurmconf.NodeSet{Name: "app", Params: slurmconf.Params{{Key: "Feature", Value: "app"}}})
	}, opts)
	if err != nil || !changed {
		t.Fatalf("Edit with Create = %v, %v", changed, err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "NodeSet=app Feature=app\n" {
		t.Errorf("content %q", got)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if opts.Owner != nil {
		sys := st.Sys().(*syscall.Stat_t)
		if int(sys.Uid) != 4321 || int(sys.Gid) != 4322 {
			t.Errorf("owner %d:%d, want 4321:4322", sys.Uid, sys.Gid)
		}
		// An existing file keeps its owner whatever the options say.
		if _, err := slurmconf.Edit(context.Background(), path, func(d *slurmconf.Doc) error {
			return d.Set("A", "1")
		}, slurmconf.EditOptions{Owner: &slurmconf.Owner{UID: 0, GID: 0}, Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
		st, _ = os.Stat(path)
		sys = st.Sys().(*syscall.Stat_t)
		if int(sys.Uid) != 4321 || int(sys.Gid) != 4322 || st.Mode().Perm() != 0o600 {
			t.Errorf("after a second edit: owner %d:%d mode %v, want 4321:4322 0600", sys.Uid, sys.Gid, st.Mode().Perm())
		}
	}
	onlyFile(t, path)
}

func TestEditSymlink(t *testing.T) {
	t.Parallel()
	target := writeConf(t, 0o644)
	link := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := slurmconf.Edit(context.Background(), link, func(d *slurmconf.Doc) error {
		return d.Set("ClusterName", "z")
	}, slurmconf.EditOptions{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v %v", fi, err)
	}
	d, err := slurmconf.ReadFile(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := d.Get("ClusterName"); v != "z" {
		t.Errorf("target ClusterName = %q, want z", v)
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.conf")
	if err := slurmconf.WriteFile(context.Background(), path, []byte("A=1\n"), slurmconf.EditOptions{Mode: 0o640}); err != nil {
		t.Fatal(err)
	}
	if err := slurmconf.WriteFile(context.Background(), path, []byte("A=2\n"), slurmconf.EditOptions{Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(got) != "A=2\n" || st.Mode().Perm() != 0o640 {
		t.Errorf("content %q mode %v, want A=2 and the first mode 0640", got, st.Mode().Perm())
	}
	if err := slurmconf.WriteFile(context.Background(), filepath.Join(t.TempDir(), "missing", "x"), nil, slurmconf.EditOptions{}); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
	onlyFile(t, path)
}
