package bench

import (
	"context"
	"errors"
)

func runOperators(ctx context.Context, opts *RunOptions, rep *Report, root, scratch string) error {
	return errors.New("not yet")
}
