package hosts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// This machine kind's mounts (cgroup v1 with a name=systemd hierarchy and the unified one
// beside it), a pure cgroup2 host, and none.
func TestParseCgroupMounts(t *testing.T) {
	tests := []struct {
		name, mountinfo string
		want            []string
	}{{
		name: "hybrid",
		mountinfo: `30 24 0:26 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs rw,mode=755
33 30 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`,
		want: []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"},
	}, {
		name:      "unified",
		mountinfo: "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
		want:      []string{"/sys/fs/cgroup"},
	}, {
		name:      "escaped mount point, mounted twice",
		mountinfo: "1 2 0:38 / /a\\040b rw - cgroup2 cgroup2 rw\n3 4 0:38 / /a\\040b rw - cgroup2 cgroup2 rw\n",
		want:      []string{"/a b"},
	}, {
		name:      "a v1 hierarchy whose name only starts like systemd's",
		mountinfo: "1 2 0:40 / /x rw - cgroup cgroup rw,name=systemd2\n",
	}, {
		name:      "none, and junk",
		mountinfo: "garbage\n1 2 - \n30 24 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseCgroupMounts([]byte(tt.mountinfo))); diff != "" {
				t.Errorf("parseCgroupMounts (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseCgroupMounts(f *testing.F) {
	f.Add([]byte("41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"))
	f.Add([]byte("40 30 0:36 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range parseCgroupMounts(data) {
			if d == "" {
				t.Fatalf("empty mount point from %q", data)
			}
		}
	})
}

// cgroupArgv's shell writes its PID into every file given, then becomes argv: the PID in the
// files is the one argv runs as.
func TestCgroupArgv(t *testing.T) {
	dir := t.TempDir()
	procs := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
	argv := cgroupArgv(procs, []string{"/bin/sh", "-c", `echo $$; echo "$1"`, "sh", "x -- y"})
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[1] != "x -- y" {
		t.Fatalf("argv printed %q, want its PID and its argument", out)
	}
	if _, err := strconv.Atoi(lines[0]); err != nil {
		t.Fatalf("argv printed %q, want its PID first", out)
	}
	for _, p := range procs {
		got, err := os.ReadFile(p)
		if err != nil || strings.TrimSpace(string(got)) != lines[0] {
			t.Errorf("%s holds %q (%v), want argv's PID %s", p, got, err, lines[0])
		}
	}
	// A file it cannot write: argv never runs.
	bad := cgroupArgv([]string{filepath.Join(dir, "missing", "cgroup.procs")}, []string{"/bin/sh", "-c", "echo ran"})
	out, err = exec.Command(bad[0], bad[1:]...).Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 || strings.Contains(string(out), "ran") {
		t.Errorf("with an unwritable cgroup: output %q, error %v; want exit 125 and argv not run", out, err)
	}
}
