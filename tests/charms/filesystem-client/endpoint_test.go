package main

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/mountinfo"
)

func TestParseEndpoint(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Endpoint
		ok   bool
	}{
		{"sftp://10.0.0.5:7022/srv/slurmctld", Endpoint{"10.0.0.5", 7022, "/srv/slurmctld"}, true},
		{"sftp://storage-0:1/x", Endpoint{"storage-0", 1, "/x"}, true},
		{"nfs://10.0.0.5:7022/srv", Endpoint{}, false},
		{"sftp://10.0.0.5/srv", Endpoint{}, false},
		{"sftp://10.0.0.5:0/srv", Endpoint{}, false},
		{"sftp://10.0.0.5:65536/srv", Endpoint{}, false},
		{"sftp://u@10.0.0.5:22/srv", Endpoint{}, false},
		{"sftp://[::1]:22/srv", Endpoint{}, false},
		{"sftp://10.0.0.5:22/", Endpoint{}, false},
		{"sftp://10.0.0.5:22/a/../b", Endpoint{}, false},
		{"sftp://10.0.0.5:22/a%20b", Endpoint{}, false},
		{"sftp://10.0.0.5:22/a,b", Endpoint{}, false},
		{"sftp://10.0.0.5:22/a?x=1", Endpoint{}, false},
		{"sftp://h_x:22/a", Endpoint{}, false},
		{"", Endpoint{}, false},
	} {
		got, err := ParseEndpoint(tc.in)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("ParseEndpoint(%q) = %+v, %v; want %+v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseEndpoint(f *testing.F) {
	f.Add("sftp://10.0.0.5:7022/srv/slurmctld")
	f.Add("sftp://h:1/a%2Cb")
	f.Add("sftp://[::1]:2/x")
	f.Fuzz(func(t *testing.T, s string) {
		ep, err := ParseEndpoint(s)
		if err != nil {
			return
		}
		again, err := ParseEndpoint(ep.String())
		if err != nil || again != ep {
			t.Fatalf("%q → %+v re-parses as %+v, %v", s, ep, again, err)
		}
		argv := mount{endpoint: ep, mountpoint: "/m"}.command()
		if len(argv) != 6 || slices.ContainsFunc(argv, func(a string) bool { return a == "" }) {
			t.Fatalf("command %q", argv)
		}
	})
}

func TestMountedIn(t *testing.T) {
	table := []byte(`22 1 0:21 / / rw,relatime - overlay overlay rw
95 22 0:52 / /srv/slurmctld\040state rw,nosuid,nodev,relatime - fuse.sshfs 10.0.0.5:/srv rw,user_id=0
96 22 0:53 / /var/lib/slurm-ha rw - fuse.sshfs 10.0.0.5:/srv rw
`)
	for mp, want := range map[string]bool{"/srv/slurmctld state": true, "/var/lib/slurm-ha": true, "/var/lib/slurm": false, "/srv": false} {
		if got := mountedIn(table, mp); got != want {
			t.Errorf("mountedIn(%q) = %v, want %v", mp, got, want)
		}
	}
}

func TestCommand(t *testing.T) {
	m := mount{endpoint: Endpoint{"10.0.0.5", 7022, "/srv/x"}, mountpoint: "/var/lib/slurm-ha", info: mountinfo.Info{NoSUID: true, ReadOnly: true}}
	want := []string{"/usr/bin/sshfs", "-f", "-o", "directport=7022,allow_other,dir_cache=no,attr_timeout=0,entry_timeout=0,negative_timeout=0,reconnect,nosuid,ro", "10.0.0.5:/srv/x", "/var/lib/slurm-ha"}
	if d := cmp.Diff(want, m.command()); d != "" {
		t.Error(d)
	}
}
