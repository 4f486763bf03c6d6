package model

import (
	"context"
	"io"

	"github.com/charmed-slurm/operators/tests/model/wire"
)

// Request is one command sent over a model socket (wire.Request).
type Request = wire.Request

// Call sends req to the model socket at path and returns the command's exit code (wire.Call).
func Call(ctx context.Context, path string, req Request, stdout, stderr io.Writer) (int, error) {
	return wire.Call(ctx, path, req, stdout, stderr)
}
