package etchosts_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/etchosts"
)

const owner = "slurmctld charm: login nodes"

// hosts is /etc/hosts as tests/hosts writes it in a machine, and as Debian has it.
const hosts = "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n10.201.0.11 juju-0\n"

func entry(addr string, names ...string) etchosts.Entry {
	return etchosts.Entry{Addr: netip.MustParseAddr(addr), Names: names}
}

func TestReplace(t *testing.T) {
	block := "# BEGIN " + owner + " (managed, edits are overwritten)\n10.201.0.14 juju-3\n# END " + owner + "\n"
	tests := []struct {
		name    string
		in      string
		entries []etchosts.Entry
		want    string
		wantErr string
	}{
		{name: "added at the end", in: hosts, entries: []etchosts.Entry{entry("10.201.0.14", "juju-3")}, want: hosts + block},
		{name: "file without a final newline", in: strings.TrimSuffix(hosts, "\n"), entries: []etchosts.Entry{entry("10.201.0.14", "juju-3")}, want: hosts + block},
		{name: "empty file", in: "", entries: []etchosts.Entry{entry("10.201.0.14", "juju-3")}, want: block},
		{name: "replaced in place, lines after kept", in: hosts + block + "# admin's line\n10.9.9.9 other\n",
			entries: []etchosts.Entry{entry("10.201.0.15", "juju-4"), entry("fd00::5", "juju-5", "login5")},
			want:    hosts + "# BEGIN " + owner + " (managed, edits are overwritten)\n10.201.0.15 juju-4\nfd00::5 juju-5 login5\n# END " + owner + "\n# admin's line\n10.9.9.9 other\n"},
		{name: "unchanged", in: hosts + block, entries: []etchosts.Entry{entry("10.201.0.14", "juju-3")}, want: hosts + block},
		{name: "removed when empty", in: hosts + block + "10.9.9.9 other\n", want: hosts + "10.9.9.9 other\n"},
		{name: "nothing to remove", in: hosts, want: hosts},
		{name: "another owner's block kept", in: hosts + strings.ReplaceAll(block, owner, "other"), entries: []etchosts.Entry{entry("10.201.0.14", "juju-3")},
			want: hosts + strings.ReplaceAll(block, owner, "other") + block},
		{name: "no end", in: hosts + strings.Split(block, "\n")[0] + "\n10.1.1.1 x\n", entries: []etchosts.Entry{entry("10.201.0.14", "juju-3")}, wantErr: "has no end"},
		{name: "end first", in: "# END " + owner + "\n" + block, wantErr: "an end without its beginning"},
		{name: "begins twice", in: block + block, wantErr: "begins twice"},
		{name: "bad name", in: hosts, entries: []etchosts.Entry{entry("10.201.0.14", "juju-3\n10.0.0.1 localhost")}, wantErr: "invalid host name"},
		{name: "no name", in: hosts, entries: []etchosts.Entry{entry("10.201.0.14")}, wantErr: "no name"},
		{name: "no address", in: hosts, entries: []etchosts.Entry{{Names: []string{"x"}}}, wantErr: "no address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := etchosts.Replace([]byte(tt.in), owner, tt.entries)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, string(got)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"juju-3", "login.example.com", "a", "A1-b2", strings.Repeat("a", 63)} {
		if err := etchosts.CheckName(ok); err != nil {
			t.Errorf("CheckName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", "a-", "a..b", "a b", "a\tb", "a_b", "a/b", strings.Repeat("a", 64), strings.Repeat("a.", 127) + "a", "é"} {
		if err := etchosts.CheckName(bad); err == nil {
			t.Errorf("CheckName(%q) accepted", bad)
		}
	}
}

// TestUpdateInPlace: the file keeps its inode (a bind-mounted /etc/hosts cannot be renamed
// over) and mode; a missing file is created only when there is something to write.
func TestUpdateInPlace(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "hosts")
	if changed, err := etchosts.Update(ctx, p, owner, nil); err != nil || changed {
		t.Fatalf("nothing to write: changed %v, %v", changed, err)
	}
	if _, err := os.Stat(p); err == nil {
		t.Fatal("an empty block created the file")
	}
	if err := os.WriteFile(p, []byte(hosts), 0o640); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(p)
	changed, err := etchosts.Update(ctx, p, owner, []etchosts.Entry{entry("10.201.0.14", "juju-3")})
	if err != nil || !changed {
		t.Fatalf("changed %v, %v", changed, err)
	}
	after, _ := os.Stat(p)
	if before.Sys().(*syscall.Stat_t).Ino != after.Sys().(*syscall.Stat_t).Ino || after.Mode().Perm() != 0o640 {
		t.Errorf("inode %d → %d, mode %v: want the same file", before.Sys().(*syscall.Stat_t).Ino, after.Sys().(*syscall.Stat_t).Ino, after.Mode())
	}
	if changed, err := etchosts.Update(ctx, p, owner, []etchosts.Entry{entry("10.201.0.14", "juju-3")}); err != nil || changed {
		t.Errorf("second update: changed %v, %v", changed, err)
	}
	data, _ := os.ReadFile(p)
	if !strings.HasPrefix(string(data), hosts) || !strings.Contains(string(data), "\n10.201.0.14 juju-3\n") {
		t.Errorf("file:\n%s", data)
	}
	// A refused edit leaves the file as it was.
	broken := hosts + "# BEGIN " + owner + " (managed, edits are overwritten)\n"
	os.WriteFile(p, []byte(broken), 0o640)
	if _, err := etchosts.Update(ctx, p, owner, nil); err == nil {
		t.Error("a broken block was edited")
	}
	if data, _ := os.ReadFile(p); string(data) != broken {
		t.Errorf("a refused edit changed the file:\n%s", data)
	}
}

// FuzzReplace: whatever the file, Replace keeps every line outside the block, and replacing
// twice is replacing once.
func FuzzReplace(f *testing.F) {
	f.Add(hosts, "10.0.0.1", "juju-3")
	f.Add(hosts+"# BEGIN "+owner+" (managed, edits are overwritten)\n1.2.3.4 a\n# END "+owner+"\nz\n", "fd00::1", "b")
	f.Add("no newline", "10.0.0.1", "x")
	f.Fuzz(func(t *testing.T, content, addr, name string) {
		a, err := netip.ParseAddr(addr)
		if err != nil || etchosts.CheckName(name) != nil {
			return
		}
		entries := []etchosts.Entry{{Addr: a, Names: []string{name}}}
		once, err := etchosts.Replace([]byte(content), owner, entries)
		if err != nil {
			return
		}
		twice, err := etchosts.Replace(once, owner, entries)
		if err != nil || string(twice) != string(once) {
			t.Fatalf("replace twice differs: %q, %v", twice, err)
		}
		removed, err := etchosts.Replace(once, owner, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Without the block, the lines are the original's without its block (up to the
		// newline added before a block appended to a file that did not end with one).
		orig, _ := etchosts.Replace([]byte(content), owner, nil)
		if strings.TrimRight(string(removed), "\n") != strings.TrimRight(string(orig), "\n") {
			t.Fatalf("lines outside the block changed: %q vs %q", removed, orig)
		}
		if !strings.Contains(string(once), "\n"+entries[0].String()+"\n") {
			t.Fatalf("entry missing in %q", once)
		}
	})
}
