package cosagent

import (
	"context"
	"fmt"

	"github.com/charmed-slurm/operators/libs/juju"
)

// Provider publishes a unit's Data on every relation of its cos_agent endpoint.
type Provider struct {
	HookContext *juju.HookContext
	// Endpoint is the provider's endpoint; Endpoint ("cos-agent") when empty.
	Endpoint string
}

func (p Provider) endpoint() string {
	if p.Endpoint == "" {
		return Endpoint
	}
	return p.Endpoint
}

// Relations are the endpoint's relations, less the one a relation-broken hook is about.
func (p Provider) Relations(ctx context.Context) ([]juju.RelationID, error) {
	hc := p.HookContext
	ids, err := hc.Relations.IDs(ctx, p.endpoint())
	if err != nil {
		return nil, fmt.Errorf("cannot list %s relations: %w", p.endpoint(), err)
	}
	out := ids[:0]
	for _, id := range ids {
		if hc.Event.Kind == juju.RelationBroken && id == hc.Event.Relation {
			continue
		}
		out = append(out, id)
	}
	return out, nil
}

// Publish checks d and writes it to this unit's databag in every relation of the endpoint
// (Juju fires no relation-changed when the value is unchanged). It reports how many
// relations it wrote to.
func (p Provider) Publish(ctx context.Context, d Data) (int, error) {
	bag, err := d.Encode()
	if err != nil {
		return 0, err
	}
	ids, err := p.Relations(ctx)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		if err := p.HookContext.Relations.SetUnitData(ctx, id, bag); err != nil {
			return 0, fmt.Errorf("cannot publish cos_agent data on %s: %w", id, err)
		}
	}
	return len(ids), nil
}
