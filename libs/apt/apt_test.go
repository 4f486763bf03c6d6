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

// fakeRunner records the commands and answers apt-get like apt does: exit 100 with an E:
// line on stderr for a failing step.
type fakeRunner struct {
	calls  []string
	envs   [][]string
	failOn string // "apt-get update" or "apt-get install": exits 100
	errOn  string // the step whose Run fails
}

func (f *fakeRunner) Run(ctx context.Context, argv, env []string) (command.Output, error) {
	f.calls = append(f.calls, strings.Join(argv, " "))
	f.envs = append(f.envs, env)
	step := strings.Join(argv[:2], " ")
	switch step {
	case f.errOn:
		return command.Output{}, errors.New("exec: \"apt-get\": executable file not found in $PATH")
	case f.failOn:
		return command.Output{Stderr: []byte("E: Unable to locate package slurmd\n"), ExitCode: 100}, nil
	}
	return command.Output{}, nil
}

func TestMissingThenInstall(t *testing.T) {
	needs := []apt.Need{
		{Binary: "slurmctld", Package: "slurmctld"},
		{Binary: "scontrol", Package: "slurm-client"},
		{Binary: "squeue", Package: "slurm-client"},
		{Binary: "munged", Package: "munge"},
	}
	tests := []struct {
		name      string
		needs     []apt.Need
		missing   []string
		failOn    string
		errOn     string
		wantPkgs  []string
		wantCalls []string
		wantErr   string
	}{{
		name:  "all present",
		needs: needs,
	}, {
		name:      "some missing, package once",
		needs:     needs,
		missing:   []string{"scontrol", "squeue", "munged"},
		wantPkgs:  []string{"slurm-client", "munge"},
		wantCalls: []string{"apt-get update", "apt-get install -y --no-install-recommends slurm-client munge"},
	}, {
		name:      "update fails",
		needs:     needs,
		missing:   []string{"munged"},
		failOn:    "apt-get update",
		wantPkgs:  []string{"munge"},
		wantCalls: []string{"apt-get update"},
		wantErr:   "cannot install munge: apt-get update exited with 100: E: Unable to locate package slurmd",
	}, {
		name:      "install fails",
		needs:     needs,
		missing:   []string{"slurmctld", "munged"},
		failOn:    "apt-get install",
		wantPkgs:  []string{"slurmctld", "munge"},
		wantCalls: []string{"apt-get update", "apt-get install -y --no-install-recommends slurmctld munge"},
		wantErr:   "cannot install slurmctld munge: apt-get install exited with 100: E: Unable to locate package slurmd",
	}, {
		name:      "apt-get cannot run",
		needs:     needs,
		missing:   []string{"slurmctld"},
		errOn:     "apt-get update",
		wantPkgs:  []string{"slurmctld"},
		wantCalls: []string{"apt-get update"},
		wantErr:   "cannot install slurmctld: apt-get update: exec: \"apt-get\"",
	}, {
		name:    "bad need",
		needs:   []apt.Need{{Binary: "slurmd"}},
		wantErr: "cannot check package need {Binary:slurmd Package:}",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &fakeRunner{failOn: tt.failOn, errOn: tt.errOn}
			look := func(file string) (string, error) {
				for _, m := range tt.missing {
					if m == file {
						return "", errors.New("exec: " + file + ": executable file not found in $PATH")
					}
				}
				return "/usr/sbin/" + file, nil
			}
			// What a charm's install hook does: Missing, then Install of what is missing.
			pkgs, err := apt.Missing(look, tt.needs)
			if err == nil && len(pkgs) > 0 {
				err = apt.Install(context.Background(), r, pkgs)
			}
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Missing+Install: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Missing+Install error %v, want one containing %q", err, tt.wantErr)
			}
			if d := cmp.Diff(tt.wantPkgs, pkgs); d != "" {
				t.Errorf("packages (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantCalls, r.calls); d != "" {
				t.Errorf("commands (-want +got):\n%s", d)
			}
			for i, env := range r.envs {
				if d := cmp.Diff([]string{"DEBIAN_FRONTEND=noninteractive"}, env); d != "" {
					t.Errorf("env of %s (-want +got):\n%s", r.calls[i], d)
				}
			}
		})
	}
}

func TestMissingRealLookPath(t *testing.T) {
	// exec.LookPath (LookPath nil) on this host: sh exists, the other does not.
	pkgs, err := apt.Missing(nil, []apt.Need{
		{Binary: "sh", Package: "dash"},
		{Binary: "no-such-program-apt-test", Package: "no-such-package"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"no-such-package"}, pkgs); d != "" {
		t.Errorf("missing (-want +got):\n%s", d)
	}
}

func TestInstallWithoutRunner(t *testing.T) {
	err := apt.Install(context.Background(), nil, []string{"munge"})
	if err == nil || !strings.Contains(err.Error(), "cannot install munge") {
		t.Fatalf("Install without runner: %v", err)
	}
}
