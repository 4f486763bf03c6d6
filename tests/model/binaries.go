package model

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ToolsBeside is the hook tools binary (jujuc) beside the juju-local CLI binary cli: where
// `make tools` builds it and where juju-local's daemon looks for it, as Juju's jujuc lies
// beside jujud.
func ToolsBeside(cli string) string { return filepath.Join(filepath.Dir(cli), "jujuc") }

// BuildBinaries builds the juju-local CLI into dir, the hook tools (jujuc) beside it
// (ToolsBeside), both from the tests module in testsDir, and the referee (RefereeBeside) from
// its own module in testsDir/referee (outside the workspace: it builds Juju 3.6 with Juju's
// own dependency versions), and returns the CLI's path.
func BuildBinaries(ctx context.Context, testsDir, dir string) (cli string, err error) {
	cli = filepath.Join(dir, "juju-local")
	builds := []struct{ bin, dir, pkg, gowork string }{
		{cli, testsDir, "./cmd/juju-local", ""},
		{ToolsBeside(cli), testsDir, "./cmd/jujuc", ""},
		{RefereeBeside(cli), filepath.Join(testsDir, "referee"), ".", "GOWORK=off"},
	}
	for _, b := range builds {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.bin, b.pkg)
		cmd.Dir = b.dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b.gowork != "" {
			cmd.Env = append(cmd.Env, b.gowork)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("cannot build %s in %s: %v\n%s", b.pkg, b.dir, err, out)
		}
	}
	return cli, nil
}
