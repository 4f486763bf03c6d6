package model

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/charmed-slurm/operators/tests/model/wire"
)

// Request is one command sent over a model socket (wire.Request).
type Request = wire.Request

// Call sends req to the model socket at path and returns the command's exit code (wire.Call).
func Call(ctx context.Context, path string, req Request, stdout, stderr io.Writer) (int, error) {
	return wire.Call(ctx, path, req, stdout, stderr)
}

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
