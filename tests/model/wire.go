package model

import (
	"context"
	"io"
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
