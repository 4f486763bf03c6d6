// Package apt installs the Debian packages that provide the programs a charm runs, and only
// those that are missing.
//
// A charm lists what it needs as [Need] values: a program looked up on PATH and the package
// that provides it. [Missing] looks every program up and returns the packages to install
// (each once, in the order first needed), so the charm can show them in its status;
// [Install] then refreshes the package lists and installs them:
//
//	pkgs, err := apt.Missing(nil, []apt.Need{
//		{Binary: "slurmd", Package: "slurmd"},
//		{Binary: "munged", Package: "munge"},
//	})
//	if err == nil && len(pkgs) > 0 {
//		err = apt.Install(ctx, command.Exec{}, pkgs)
//	}
//
// The commands run through a [command.Runner] as argv slices with
// DEBIAN_FRONTEND=noninteractive:
//
//	apt-get update
//	apt-get install -y --no-install-recommends <packages>
//
// A command that cannot run or exits non-zero ends Install with an error that names the
// packages, the apt-get step and its standard error.
//
// [Installed] (dpkg-query) and [Candidate] (apt-cache policy) tell which version of a package
// is installed and which apt would install, so that a charm can refuse a release before it
// installs or configures anything:
//
//	v, err := apt.Installed(ctx, runner, "slurm-client") // "22.05.8-4+deb12u3", or "" when absent
package apt

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/charmed-slurm/operators/libs/command"
)

// Need is a program and the Debian package that provides it.
type Need struct {
	Binary  string
	Package string
}

// Missing returns the packages of the needs whose program LookPath (exec.LookPath when nil)
// cannot find, each once, in the order of needs. A need with an empty Binary or Package is
// an error naming it.
func Missing(lookPath func(string) (string, error), needs []Need) ([]string, error) {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	var pkgs []string
	for _, n := range needs {
		if n.Binary == "" || n.Package == "" {
			return nil, fmt.Errorf("cannot check package need %+v: binary and package are required", n)
		}
		if _, err := lookPath(n.Binary); err != nil && !slices.Contains(pkgs, n.Package) {
			pkgs = append(pkgs, n.Package)
		}
	}
	return pkgs, nil
}

// Install runs `apt-get update` then `apt-get install -y --no-install-recommends pkgs`.
func Install(ctx context.Context, runner command.Runner, pkgs []string) error {
	if len(pkgs) == 0 {
		return nil
	}
	names := strings.Join(pkgs, " ")
	if runner == nil {
		return fmt.Errorf("cannot install %s: no runner", names)
	}
	for _, argv := range [][]string{
		{"apt-get", "update"},
		append([]string{"apt-get", "install", "-y", "--no-install-recommends"}, pkgs...),
	} {
		if err := aptGet(ctx, runner, argv); err != nil {
			return fmt.Errorf("cannot install %s: %w", names, err)
		}
	}
	return nil
}

// Update runs `apt-get update`, so that Candidate reads fresh package lists.
func Update(ctx context.Context, runner command.Runner) error {
	if runner == nil {
		return errors.New("cannot update the package lists: no runner")
	}
	if err := aptGet(ctx, runner, []string{"apt-get", "update"}); err != nil {
		return fmt.Errorf("cannot update the package lists: %w", err)
	}
	return nil
}

// aptGet runs one apt-get step; the error names the step and its standard error.
func aptGet(ctx context.Context, runner command.Runner, argv []string) error {
	step := strings.Join(argv[:2], " ")
	out, err := runner.Run(ctx, argv, []string{"DEBIAN_FRONTEND=noninteractive"})
	if err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	if out.ExitCode != 0 {
		msg := strings.TrimSpace(string(out.Stderr))
		if msg == "" {
			msg = "no error output"
		}
		return fmt.Errorf("%s exited with %d: %s", step, out.ExitCode, msg)
	}
	return nil
}
