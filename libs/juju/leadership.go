package juju

import "context"

// Leadership runs is-leader.
type Leadership struct{ Runner Runner }

// IsLeader reports whether this unit is its application's leader:
// is-leader --format=json. Leadership holds for the rest of the hook.
func (c Leadership) IsLeader(ctx context.Context) (bool, error) {
	var leader bool
	err := runJSON(ctx, c.Runner, &leader, "is-leader", "--format=json")
	return leader, err
}
