package juju

import "context"

// Config runs config-get.
type Config struct{ Runner Runner }

// Decode reads the whole application configuration into v (a struct with
// json tags naming the options, or a map[string]any):
// config-get --all --format=json. Options without a value or default come
// out as JSON null and leave v's field untouched.
func (c Config) Decode(ctx context.Context, v any) error {
	return runJSON(ctx, c.Runner, v, "config-get", "--all", "--format=json")
}
