package apt_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/apt"
	"github.com/charmed-slurm/operators/libs/command"
)

// Real outputs, recorded on Debian 12 (this machine) and in the Debian 13 image
// (scripts/images.sh).
const (
	dpkgInstalled = "ii |22.05.8-4+deb12u3\n"                        // slurm-client, Debian 12
	dpkgUnknown   = "dpkg-query: no packages found matching sackd\n" // stderr, exit 1
	policySackd13 = `sackd:
  Installed: 24.11.5-4+deb13u1
  Candidate: 24.11.5-4+deb13u1
  Version table:
 *** 24.11.5-4+deb13u1 100
        100 /var/lib/dpkg/status
`
	policyClient12 = `slurm-client:
  Installed: 22.05.8-4+deb12u3
  Candidate: 22.05.8-4+deb12u3
  Version table:
 *** 22.05.8-4+deb12u3 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
        100 /var/lib/dpkg/status
`
)

// answerRunner answers every command with out, recording the argv and environment.
type answerRunner struct {
	out   command.Output
	err   error
	calls []string
	env   [][]string
}

func (r *answerRunner) Run(ctx context.Context, argv, env []string) (command.Output, error) {
	r.calls = append(r.calls, strings.Join(argv, " "))
	r.env = append(r.env, env)
	return r.out, r.err
}

func TestInstalled(t *testing.T) {
	tests := []struct {
		name    string
		out     command.Output
		err     error
		want    string
		wantErr string
	}{
		{name: "installed", out: command.Output{Stdout: []byte(dpkgInstalled)}, want: "22.05.8-4+deb12u3"},
		{name: "never installed", out: command.Output{Stderr: []byte(dpkgUnknown), ExitCode: 1}},
		{name: "removed, configuration left", out: command.Output{Stdout: []byte("rc |24.11.5-4+deb13u1\n")}},
		{name: "dpkg fails otherwise", out: command.Output{Stderr: []byte("dpkg-query: error: cannot access archive\n"), ExitCode: 2},
			wantErr: "cannot ask dpkg about sackd: dpkg-query exited with 2: dpkg-query: error: cannot access archive"},
		{name: "cannot run", err: errors.New("exec: not found"), wantErr: "cannot ask dpkg about sackd: exec: not found"},
		{name: "garbage", out: command.Output{Stdout: []byte("hello\n")}, wantErr: `unexpected dpkg-query output "hello\n"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &answerRunner{out: tt.out, err: tt.err}
			got, err := apt.Installed(context.Background(), r, "sackd")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Installed = %q, want %q", got, tt.want)
			}
			if d := cmp.Diff([]string{`dpkg-query -W -f ${db:Status-Abbrev}|${Version}\n sackd`}, r.calls); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}

func TestCandidate(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		code    int
		want    string
		wantErr string
	}{
		{name: "installed here", out: policySackd13, want: "24.11.5-4+deb13u1"},
		{name: "from the archive", out: policyClient12, want: "22.05.8-4+deb12u3"},
		{name: "unknown package (apt prints nothing)", out: ""},
		{name: "no candidate", out: "sackd:\n  Installed: (none)\n  Candidate: (none)\n  Version table:\n"},
		{name: "apt fails", code: 100, wantErr: "apt-cache exited with 100"},
		{name: "no candidate line", out: "sackd:\n  Installed: (none)\n", wantErr: "no Candidate line"},
		{name: "two packages", out: policySackd13 + policyClient12, wantErr: "2 Candidate lines"},
		{name: "bad version", out: "sackd:\n  Candidate: latest\n", wantErr: `bad version "latest"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &answerRunner{out: command.Output{Stdout: []byte(tt.out), ExitCode: tt.code}}
			got, err := apt.Candidate(context.Background(), r, "sackd")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Candidate = %q, want %q", got, tt.want)
			}
			if d := cmp.Diff([][]string{{"LC_ALL=C"}}, r.env); d != "" {
				t.Errorf("environment (-want +got):\n%s", d)
			}
		})
	}
}

func TestBadPackageName(t *testing.T) {
	for _, pkg := range []string{"", "a", "Sackd", "-x", "sackd; rm", "sack d"} {
		r := &answerRunner{}
		if _, err := apt.Installed(context.Background(), r, pkg); err == nil || !strings.Contains(err.Error(), "invalid package name") {
			t.Errorf("Installed(%q): err = %v, want invalid package name", pkg, err)
		}
		if _, err := apt.Candidate(context.Background(), r, pkg); err == nil || !strings.Contains(err.Error(), "invalid package name") {
			t.Errorf("Candidate(%q): err = %v, want invalid package name", pkg, err)
		}
		if len(r.calls) != 0 {
			t.Errorf("%q: ran %q", pkg, r.calls)
		}
	}
}

// FuzzParse feeds arbitrary outputs to both parsers: no panic, and a version returned is one
// line with no space.
func FuzzParse(f *testing.F) {
	for _, s := range []string{dpkgInstalled, "rc |1.0\n", "|", "ii|", policySackd13, policyClient12, "", "Candidate: (none)\n", "Candidate: 1:2.0\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		for name, parse := range map[string]func(string) (string, error){"ParseInstalled": apt.ParseInstalled, "ParseCandidate": apt.ParseCandidate} {
			v, err := parse(out)
			if err != nil && v != "" {
				t.Fatalf("%s(%q) = %q with error %v", name, out, v, err)
			}
			if strings.ContainsAny(v, " \t\r\n") {
				t.Fatalf("%s(%q) = %q: a version with white space", name, out, v)
			}
		}
	})
}

func TestUpdate(t *testing.T) {
	r := &fakeRunner{}
	if err := apt.Update(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"apt-get update"}, r.calls); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	r = &fakeRunner{failOn: "apt-get update"}
	err := apt.Update(context.Background(), r)
	if err == nil || err.Error() != "cannot update the package lists: apt-get update exited with 100: E: Unable to locate package slurmd" {
		t.Errorf("err = %v", err)
	}
}
