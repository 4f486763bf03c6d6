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

// BuildBinaries builds the juju-local CLI into dir and the hook tools (jujuc) beside it
// (ToolsBeside), from the tests module in testsDir, and returns the CLI's path.
func BuildBinaries(ctx context.Context, testsDir, dir string) (cli string, err error) {
	cli = filepath.Join(dir, "juju-local")
	for bin, pkg := range map[string]string{cli: "./cmd/juju-local", ToolsBeside(cli): "./cmd/jujuc"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
		cmd.Dir = testsDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("cannot build %s: %v\n%s", pkg, err, out)
		}
	}
	return cli, nil
}
