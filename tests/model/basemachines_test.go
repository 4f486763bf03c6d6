package model_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/model"
)

// basedLocal is a BaseProvisioner over LocalMachines: it records the base each unit was
// placed on and gives machines that report it.
type basedLocal struct {
	model.LocalMachines
	placed map[string]string // unit → base asked for
}

type basedMachine struct {
	model.Machine
	base string
}

func (m basedMachine) Base() string { return m.base }

func (p *basedLocal) Bases() []string { return []string{model.BaseBookworm, model.BaseTrixie} }

func (p *basedLocal) NewMachineBase(ctx context.Context, id, unit, base string) (model.Machine, error) {
	p.placed[unit] = base
	m, err := p.NewMachine(ctx, id, unit)
	if err != nil || base == "" {
		return m, err
	}
	return basedMachine{Machine: m, base: base}, nil
}

func TestDeployBase(t *testing.T) {
	prov := &basedLocal{placed: map[string]string{}}
	m := newModel(t, modelOptions{prov: func(t *testing.T) model.Provisioner {
		prov.LocalMachines = model.LocalMachines{Dir: filepath.Join(t.TempDir(), "machines")}
		return prov
	}})
	ctx := context.Background()
	for _, tt := range []struct {
		name, base string
	}{
		{"old", model.BaseBookworm},
		{"new", model.BaseTrixie},
		{"plain", ""},
	} {
		if _, err := m.Deploy(ctx, model.DeployOptions{Charm: charmDir, Name: tt.name, Base: tt.base}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Deploy(ctx, model.DeployOptions{Charm: charmDir, Name: "bad", Base: "ubuntu@26.04"}); err == nil || !strings.Contains(err.Error(), "ubuntu@26.04") {
		t.Errorf("deploy on an unknown base: got %v, want an error naming it", err)
	}
	// A base of ours whose image was never built (this provisioner offers debian@12 and
	// debian@13 only): the error names the command that builds it.
	_, err := m.Deploy(ctx, model.DeployOptions{Charm: charmDir, Name: "unbuilt", Base: model.BaseForky})
	if want := `base "debian@14" is not available: its machine image is not built (run "scripts/images.sh forky" in the repository`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("deploy on a base with no image: got %v, want an error saying %s", err, want)
	}
	waitIdle(t, m)
	if d := cmp.Diff(map[string]string{"old/0": model.BaseBookworm, "new/0": model.BaseTrixie, "plain/0": ""}, prov.placed); d != "" {
		t.Errorf("bases the units were placed on (-want +got):\n%s", d)
	}
	st := m.Status(ctx)
	got := map[string]string{}
	for app, a := range st.Applications {
		for _, u := range a.Units {
			b := st.Machines[u.Machine].Base
			got[app] = b.Name + "@" + b.Channel
		}
	}
	want := map[string]string{"old": "debian@12", "new": "debian@13", "plain": "ubuntu@24.04"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("status bases (-want +got):\n%s", d)
	}
}

func TestDeployBaseNeedsABaseProvisioner(t *testing.T) {
	m := newModel(t, modelOptions{})
	_, err := m.Deploy(context.Background(), model.DeployOptions{Charm: charmDir, Base: model.BaseTrixie})
	if err == nil || !strings.Contains(err.Error(), "debian@13") {
		t.Errorf("got %v, want an error naming the base", err)
	}
}
