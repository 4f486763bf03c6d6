package main

import (
	"context"

	"github.com/charmed-slurm/operators/libs/juju"
)

// refresh observes what the unit's status needs and reports it: the relation, while sackd was
// never started for a controller; sackd itself (its service, the configuration it fetched,
// sinfo through it) while it should run.
func (h *hook) refresh(ctx context.Context) error {
	if h.st.refused() != "" {
		return h.report(ctx, observed{})
	}
	if h.st.Applied == nil {
		id, err := h.relationID(ctx)
		return h.report(ctx, observed{noRelation: err == nil && id == "", relationErr: err})
	}
	o := h.sackd().observe(ctx)
	if o.serviceErr != nil {
		h.logf(ctx, juju.LevelWarning, "cannot ask the service manager about sackd: %v", o.serviceErr)
	}
	if o.sinfoErr != nil {
		h.logf(ctx, juju.LevelWarning, "sinfo through sackd: %v", o.sinfoErr)
	}
	return h.report(ctx, o)
}
