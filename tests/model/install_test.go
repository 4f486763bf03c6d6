package model

import (
	"maps"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tree describes a directory: path → "dir 0755", "file 0644 <content>", "link <target>".
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link " + l
		case info.IsDir():
			out[rel] = "dir " + info.Mode().Perm().String()
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = "file " + info.Mode().Perm().String() + " " + string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

func TestInstallCharm(t *testing.T) {
	src := filepath.Join(t.TempDir(), "charm")
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{"", 0o755}, {"src", 0o700}} {
		if err := os.MkdirAll(filepath.Join(src, d.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(src, d.path), d.mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct {
		path, content string
		mode          os.FileMode
	}{{"dispatch", "#!/bin/sh\n", 0o755}, {"metadata.yaml", "name: x\n", 0o644}, {"src/secret", "s", 0o600}} {
		if err := os.WriteFile(filepath.Join(src, f.path), []byte(f.content), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(src, f.path), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("dispatch", filepath.Join(src, "hooks-install")); err != nil {
		t.Fatal(err)
	}
	want := readTree(t, src)

	t.Run("new", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "var/lib/juju/agents/unit-a-0/charm")
		if err := installCharm(src, dst); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, readTree(t, dst)); d != "" {
			t.Errorf("installed charm differs (-want +got):\n%s", d)
		}
		// Same filesystem: the files are the model's, not copies.
		if a, b := inode(t, filepath.Join(src, "dispatch")), inode(t, filepath.Join(dst, "dispatch")); a != b {
			t.Errorf("dispatch was copied (inode %d, source %d), want a hard link", b, a)
		}
	})

	// An upgrade, as Juju's manifest deployer does it: the old charm's files the new one lacks
	// go, the new charm's files replace the old ones, and the files the charm wrote itself (its
	// state) stay.
	t.Run("upgrade", func(t *testing.T) {
		old := filepath.Join(t.TempDir(), "old")
		for _, f := range []struct{ path, content string }{{"dispatch", "old\n"}, {"gone/only-in-old", "x"}, {"metadata.yaml", "name: old\n"}} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(old, f.path)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(old, f.path), []byte(f.content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		dst := filepath.Join(t.TempDir(), "var/lib/juju/agents/unit-a-0/charm")
		if err := installCharm(old, dst); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, ".state.json"), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := installCharm(src, dst); err != nil {
			t.Fatal(err)
		}
		wantUp := maps.Clone(want)
		wantUp[".state.json"] = "file -rw------- {}"
		if d := cmp.Diff(wantUp, readTree(t, dst)); d != "" {
			t.Errorf("upgraded charm differs (-want +got):\n%s", d)
		}
	})

	t.Run("missing source", func(t *testing.T) {
		if err := installCharm(filepath.Join(t.TempDir(), "none"), filepath.Join(t.TempDir(), "charm")); err == nil {
			t.Error("installCharm of a missing charm succeeded")
		}
	})
}

func TestCopyFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst")
	if err := copyFile(src, dst, 0o751); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		Content string
		Mode    os.FileMode
	}
	if d := cmp.Diff(file{"content", 0o751}, file{string(data), st.Mode().Perm()}); d != "" {
		t.Errorf("copy differs (-want +got):\n%s", d)
	}
	if inode(t, src) == inode(t, dst) {
		t.Error("copyFile made a link")
	}
	if err := copyFile(src, dst, 0o644); err == nil {
		t.Error("copyFile over an existing file succeeded")
	}
}

func TestLinkUnitTools(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := installToolLinks("/bin/true", tools); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "machine/var/lib/juju/tools/unit-a-0")
	for range 2 { // the second replaces the first
		if err := linkUnitTools(tools, link); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range append(ToolNames(), JujuExec) {
		got, err := os.Readlink(filepath.Join(link, name))
		if err != nil {
			t.Fatal(err)
		}
		if got != "/bin/true" {
			t.Errorf("%s links to %q, want /bin/true", name, got)
		}
	}
}
