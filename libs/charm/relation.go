package charm

import (
	"context"
	"fmt"

	"github.com/charmed-slurm/operators/libs/juju"
)

// Relation returns the unit's relation on endpoint, an endpoint with `limit: 1`, or "" when
// there is none. On a relation hook of endpoint it is the event's own, and none on its
// relation-broken (the relation being broken is gone for this unit); on any other hook it is
// the first relation-ids lists (juju.Relations asks once per hook and endpoint).
func (h *Hook[S]) Relation(ctx context.Context, endpoint string) (juju.RelationID, error) {
	ev := h.Event
	if ev.Kind.IsRelation() && ev.Endpoint == endpoint {
		if ev.Kind == juju.RelationBroken {
			return "", nil
		}
		return ev.Relation, nil
	}
	id, err := h.Relations.First(ctx, endpoint)
	if err != nil {
		return "", fmt.Errorf("cannot list %s relations: %w", endpoint, err)
	}
	return id, nil
}
