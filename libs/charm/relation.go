package charm

import (
	"context"
	"fmt"

	"github.com/charmed-slurm/operators/libs/juju"
)

// Relation returns the unit's relation on endpoint, an endpoint with `limit: 1`, or "" when
// there is none. On a relation hook of endpoint it is the event's own, and none on its
// relation-broken (the relation being broken is gone for this unit); on any other hook it is
// the first relation-ids lists, asked once per hook and endpoint.
func (h *Hook[S]) Relation(ctx context.Context, endpoint string) (juju.RelationID, error) {
	ev := h.Event
	if ev.Kind.IsRelation() && ev.Endpoint == endpoint {
		if ev.Kind == juju.RelationBroken {
			return "", nil
		}
		return ev.Relation, nil
	}
	if id, ok := h.relations[endpoint]; ok {
		return id, nil
	}
	ids, err := h.Relations.IDs(ctx, endpoint)
	if err != nil {
		return "", fmt.Errorf("cannot list %s relations: %w", endpoint, err)
	}
	var id juju.RelationID
	if len(ids) > 0 {
		id = ids[0]
	}
	if h.relations == nil {
		h.relations = map[string]juju.RelationID{}
	}
	h.relations[endpoint] = id
	return id, nil
}
