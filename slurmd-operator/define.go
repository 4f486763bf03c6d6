package main

import (
	"context"
	"errors"
	"reflect"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurm"
)

// slurmd's definition ahead, on a new node's join. Besides the machine's facts, slurmd's
// definition needs the controller's databag (relation-get: the controllers, the versions,
// the managed GRES types) and not the key, which secret-get, the next read, fetches with
// the databag's secret id. So while secret-get runs, slurmd's service is defined as the
// join will define it (its gres.conf lines, its files and, on systemd, the check of the
// definition systemd holds), neither enabled nor started; the join's start skips a
// definition identical to the one it would make (slurmdDaemon.start) and makes any other
// itself. What the join would refuse (joinHold, the join's own decision: a release the
// controller does not accept, a configuration it would not send, GRES it does not manage, no
// controller, a departed node) is not defined ahead; the join itself decides, and reports,
// as before. slurmd's systemd drop-in, which names its path and nothing of the node, is
// defined from the hook's start, beside relation-get and `slurmd -C`.

// errNotAhead: the definition is left to the join.
var errNotAhead = errors.New("slurmd's definition left to the join")

// defineAhead starts slurmd's definition in the background when this relation hook is a new
// node's join with the machine's version and GRES detection known (install's); the hook
// waits for it before the definition's own step and before it ends (slurmdAhead).
func (h *hook) defineAhead(ctx context.Context) {
	ev := h.hc.Event
	switch ev.Kind {
	case juju.RelationCreated, juju.RelationJoined, juju.RelationChanged:
	default:
		return
	}
	f := h.st.Facts
	if h.st.Applied != nil || h.st.Gres == nil || f == nil {
		return
	}
	v, err := slurm.ParseVersion(f.Version)
	if err != nil {
		return
	}
	declared, err := parseGenericResources(h.cfg.GenericResources)
	if err != nil {
		return
	}
	// What the background reads of the state is copied here: the hook goes on with it.
	in := nodeInputs{Machine: f.Machine, App: ev.App, Node: h.node, NodeConfig: h.st.NodeConfig, Detected: h.st.Gres.Detected, Declared: declared}
	in.GresOptions.AutoDetectOff = slurm.FeaturesOf(v).GPUAutoDetect
	machine := h.machine
	if f.hasMachine() {
		machine = nil
	}
	hc, id, d, res, departed := h.hc, ev.Relation, h.slurmd(), genericResources{h}, h.st.Departed
	// slurmd's drop-in (systemd; Pebble has no such part) names slurmd's path and nothing of
	// the node: it is defined from the hook's start, beside relation-get and `slurmd -C`,
	// whatever the join then decides. systemd runs it only once slurmd is started or enabled,
	// which the join alone does, after writing slurmd's arguments.
	dropIn := charm.Start(func() (struct{}, error) {
		return struct{}{}, service.Define(ctx, d.c.Services, d.spec(&Applied{}))
	})
	h.slurmdAhead = charm.Start(func() (service.Spec, error) {
		defer dropIn.Wait()                      // done when the definition ahead is
		_, bag, err := hc.RemoteAppData(ctx, id) // the hook's own read: one relation-get
		if err != nil {
			return service.Spec{}, err
		}
		cb, err := slurmd.DecodeControllerBag(bag)
		if err != nil {
			return service.Spec{}, err
		}
		// As the join: decided before the machine's facts and the configuration are there,
		// then with the configuration's resources.
		if !joinHold(departed, cb, v, nil).starts() {
			return service.Spec{}, errNotAhead
		}
		if machine != nil {
			if in.Machine, err = machine.Wait(); err != nil {
				return service.Spec{}, err
			}
		}
		nc, err := buildNode(in)
		if err != nil {
			return service.Spec{}, err
		}
		if !joinHold(departed, cb, v, nc.Gres).starts() {
			return service.Spec{}, errNotAhead
		}
		if err := res.writeConf(ctx, nc.GresConf); err != nil {
			return service.Spec{}, err
		}
		if _, err := dropIn.Wait(); err != nil {
			return service.Spec{}, err
		}
		spec := d.spec(&Applied{Controllers: cb.Controllers, Conf: nc.Conf})
		if err := d.c.Services.Configure(ctx, spec); err != nil {
			return service.Spec{}, err
		}
		return spec, nil
	})
}

// definedAhead reports whether slurmd's definition made ahead is spec. It waits for it.
func (h *hook) definedAhead(spec service.Spec) bool {
	if h.slurmdAhead == nil {
		return false
	}
	got, err := h.slurmdAhead.Wait()
	return err == nil && reflect.DeepEqual(got, spec)
}
