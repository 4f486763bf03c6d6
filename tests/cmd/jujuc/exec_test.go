package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/model/wire"
)

// fakeAgent serves a unit's run socket in dataDir and records the requests; it answers
// "out:<commands>" on stdout, "err" on stderr and exit code 3.
func fakeAgent(t *testing.T, dataDir, unit string) *[]wire.Request {
	t.Helper()
	dir := filepath.Join(dataDir, "agents", unitTag(unit))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", fmt.Sprintf("/proc/self/fd/%d/run.socket", d.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reqs []wire.Request
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wire.Serve(ctx, ln, func(ctx context.Context, req wire.Request, stdout, stderr io.Writer) int {
			mu.Lock()
			reqs = append(reqs, req)
			mu.Unlock()
			fmt.Fprint(stdout, "out:"+req.Argv[len(req.Argv)-1])
			fmt.Fprint(stderr, "err")
			return 3
		}, &wg)
	}()
	t.Cleanup(func() {
		cancel()
		ln.Close()
		wg.Wait()
		d.Close()
	})
	return &reqs
}

func TestJujuExec(t *testing.T) {
	for _, tt := range []struct {
		name     string
		args     []string
		contexts string // JUJU_CONTEXT_ID
		units    []string
		want     []string // the request's argv; nil: none sent
		code     int
		stdout   string
		stderr   string
	}{
		{name: "unit and one command line", args: []string{"slurmctld/0", "echo a b"}, units: []string{"slurmctld/0"},
			want: []string{"juju-exec", "slurmctld/0", "echo a b"}, code: 3, stdout: "out:echo a b", stderr: "err"},
		{name: "-u and arguments joined as Juju does", args: []string{"-u", "slurmctld/0", "--", "env", "A=b c", `x"$y\z`, "plain"}, units: []string{"slurmctld/0"},
			want: []string{"juju-exec", "slurmctld/0", `env "A=b c" "x\"\$y\\z" plain`}, code: 3, stdout: `out:env "A=b c" "x\"\$y\\z" plain`, stderr: "err"},
		{name: "unit tag", args: []string{"unit-slurm-ctld-12", "true"}, units: []string{"slurm-ctld/12"},
			want: []string{"juju-exec", "slurm-ctld/12", "true"}, code: 3, stdout: "out:true", stderr: "err"},
		{name: "the only unit on the machine, no name given", args: []string{"hostname -f"}, units: []string{"slurmctld/0"},
			want: []string{"juju-exec", "slurmctld/0", "hostname -f"}, code: 3, stdout: "out:hostname -f", stderr: "err"},
		{name: "-u empty: the only unit", args: []string{"-u", "", "true"}, units: []string{"slurmctld/0"},
			want: []string{"juju-exec", "slurmctld/0", "true"}, code: 3, stdout: "out:true", stderr: "err"},
		{name: "no name and two units", args: []string{"true"}, units: []string{"a/0", "b/0"}, code: 2,
			stderr: `ERROR "true" is neither a unit name nor a unit tag, and no unit` + "\n"},
		{name: "inside a hook", args: []string{"slurmctld/0", "true"}, contexts: "slurmctld/0-update-status-1", units: []string{"slurmctld/0"}, code: 2,
			stderr: `ERROR juju-exec cannot be called from within a hook, have context "slurmctld/0-update-status-1"` + "\n"},
		{name: "another machine's unit", args: []string{"slurmd/3", "true"}, units: []string{"slurmctld/0"}, code: 1,
			stderr: `ERROR unit "slurmd/3" not found on this machine` + "\n"},
		{name: "missing commands", args: []string{"slurmctld/0"}, units: []string{"slurmctld/0"}, code: 2, stderr: "ERROR missing commands\n"},
		{name: "missing unit", units: []string{"slurmctld/0"}, code: 2, stderr: "ERROR missing unit-name\n"},
		{name: "bad -u", args: []string{"-u", "Slurm/0", "true"}, units: []string{"slurmctld/0"}, code: 2, stderr: `ERROR "Slurm/0" is not a valid unit tag` + "\n"},
		{name: "unknown flag", args: []string{"--bogus", "slurmctld/0", "true"}, units: []string{"slurmctld/0"}, code: 2,
			stderr: "ERROR flag provided but not defined: -bogus\n"},
		{name: "--no-context is not played", args: []string{"--no-context", "true"}, units: []string{"slurmctld/0"}, code: 2,
			stderr: "ERROR --no-context, --force-remote-unit and --operator are not played by the local model\n"},
		{name: "relation contexts are not played", args: []string{"-r", "slurmd:1", "slurmctld/0", "true"}, units: []string{"slurmctld/0"}, code: 2,
			stderr: "ERROR relation contexts (-r, --remote-unit, --remote-app) are not played by the local model\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, err := os.MkdirTemp("", "jx") // short: t.TempDir's path may not fit a socket address
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(data) })
			var reqs []*[]wire.Request
			for _, u := range tt.units {
				reqs = append(reqs, fakeAgent(t, data, u))
			}
			var stdout, stderr bytes.Buffer
			code := jujuExec(tt.args, execEnv{
				Getenv:  func(k string) string { return map[string]string{"JUJU_CONTEXT_ID": tt.contexts}[k] },
				DataDir: data, Stdout: &stdout, Stderr: &stderr,
			})
			if code != tt.code || stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
			}
			var got []string
			for _, r := range reqs {
				for _, req := range *r {
					got = append(got, req.Argv...)
				}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("request (-want +got):\n%s", d)
			}
		})
	}
}

func TestJujuExecDataDir(t *testing.T) {
	look := func(name string) (string, error) {
		if name == "juju-exec" {
			return "/srv/m1/var/lib/juju/tools/unit-a-0/juju-exec", nil
		}
		return "", errors.New("not found")
	}
	for _, tt := range []struct{ argv0, want string }{
		{"/var/lib/juju/tools/unit-slurmctld-0/juju-exec", "/var/lib/juju"},
		{"juju-exec", "/srv/m1/var/lib/juju"},
		{"/usr/bin/juju-exec", "/var/lib/juju"},
		{"./juju-exec", "/var/lib/juju"},
	} {
		if got := dataDir(tt.argv0, look); got != tt.want {
			t.Errorf("dataDir(%q) = %q, want %q", tt.argv0, got, tt.want)
		}
	}
}

// FuzzUnitName: a unit name is its own name and its tag's; nothing else parses to a name
// with other than one slash or that is not a valid name.
func FuzzUnitName(f *testing.F) {
	for _, s := range []string{"slurmd/0", "unit-slurmd-3", "unit-a-b-c-10", "a/01", "unit-a-", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := unitName(s)
		if err != nil {
			return
		}
		if !unitRE.MatchString(u) {
			t.Fatalf("unitName(%q) = %q, not a unit name", s, u)
		}
		if back, err := unitName(unitTag(u)); err != nil || back != u {
			t.Fatalf("unitName(unitTag(%q)) = %q, %v", u, back, err)
		}
		if strings.HasPrefix(s, "unit-") && unitTag(u) != s {
			t.Fatalf("tag %q gave %q, whose tag is %q", s, u, unitTag(u))
		}
	})
}
