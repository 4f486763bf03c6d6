package model

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/charmed-slurm/operators/tests/hosts"
)

// BaseProvisioner is a Provisioner that can also place a unit on a machine of a given base
// (`juju deploy --base debian@12`).
type BaseProvisioner interface {
	Provisioner
	// Bases lists the bases it can provide, "<os>@<channel>".
	Bases() []string
	// NewMachineBase is NewMachine for a unit of an application deployed with base; an empty
	// base means the provisioner's default.
	NewMachineBase(ctx context.Context, id, unit, base string) (Machine, error)
}

// Based is implemented by machines that know their OS: Base is "<os>@<channel>", shown by
// Status.
type Based interface {
	Base() string
}

// Debian bases and the image suites scripts/images.sh builds for them.
const (
	BaseBookworm = "debian@12" // bookworm: Slurm 22.05, systemd 252
	BaseTrixie   = "debian@13" // trixie: Slurm 24.11, systemd 257
	BaseForky    = "debian@14" // forky (testing): Slurm 26.05, systemd 262
)

// MachineBases are the bases machines can have (each with an image suite), oldest first.
func MachineBases() []string { return []string{BaseBookworm, BaseTrixie, BaseForky} }

// BaseMachines provisions each unit on a tests/hosts Network: on a machine booted by
// systemd-nspawn from the Debian image of its application's base (systemd as PID 1, the
// image's Slurm and munge), or, for an application with no base when Default is empty, on a
// Pebble host as HostMachines does.
type BaseMachines struct {
	// Network holds the hosts and machines.
	Network *hosts.Network
	// Images maps a base ("debian@12") to the root directory of its image
	// (build/images/bookworm/root).
	Images map[string]string
	// Default is the base of units deployed without one; "" puts them on Pebble hosts.
	Default string
	// Binds are the paths the machines and hosts share with the model's process, at the same
	// paths: the model's Dir (its agent socket) and the directory of its hook tools binary.
	Binds []string
	// Prefix starts every host and machine name; default "juju".
	Prefix string
	// CloseNetwork makes Close close Network (when the provisioner owns it).
	CloseNetwork bool
}

var _ BaseProvisioner = (*BaseMachines)(nil)

// Bases implements BaseProvisioner.
func (p *BaseMachines) Bases() []string {
	bases := make([]string, 0, len(p.Images))
	for b := range p.Images {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	return bases
}

// NewMachine implements Provisioner: a machine of the default base.
func (p *BaseMachines) NewMachine(ctx context.Context, id, unit string) (Machine, error) {
	return p.NewMachineBase(ctx, id, unit, "")
}

// NewMachineBase implements BaseProvisioner: "<prefix>-<id>".
func (p *BaseMachines) NewMachineBase(ctx context.Context, id, unit, base string) (Machine, error) {
	if base == "" {
		base = p.Default
	}
	if base == "" {
		return p.hostMachines().NewMachine(ctx, id, unit)
	}
	prefix := p.Prefix
	if prefix == "" {
		prefix = "juju"
	}
	name := fmt.Sprintf("%s-%s", prefix, id)
	img, ok := p.Images[base]
	if !ok {
		return nil, fmt.Errorf("no image for base %q%s (have %s)", base, buildHint(base), strings.Join(p.Bases(), ", "))
	}
	mach, err := p.Network.AddMachine(ctx, hosts.MachineOptions{Name: name, Image: img, Binds: p.Binds})
	if err != nil {
		return nil, err
	}
	return &nspawnMachine{n: p.Network, m: mach, id: id, base: base}, nil
}

// hostMachines is the HostMachines that makes the Pebble hosts and closes the network.
func (p *BaseMachines) hostMachines() *HostMachines {
	return &HostMachines{Network: p.Network, Binds: p.Binds, Prefix: p.Prefix, CloseNetwork: p.CloseNetwork}
}

// Close implements Provisioner.
func (p *BaseMachines) Close() error { return p.hostMachines().Close() }

// nspawnMachine is a unit's machine booted by systemd-nspawn.
type nspawnMachine struct {
	n    *hosts.Network
	m    *hosts.Machine
	id   string // the model's machine id
	base string
	// agent is the stand-in for the machine agent's service in the current boot (StartAgent).
	agent atomic.Pointer[hosts.Proc]
}

func (m *nspawnMachine) Command(ctx context.Context, dir string, argv []string) *exec.Cmd {
	return m.m.CommandIn(ctx, dir, argv)
}
func (m *nspawnMachine) Hostname() string { return m.m.Name }
func (m *nspawnMachine) Addr() netip.Addr { return m.m.Addr }
func (m *nspawnMachine) Root() string     { return "" }
func (m *nspawnMachine) Base() string     { return m.base }

// Path reaches any file of the machine, through its root filesystem.
func (m *nspawnMachine) Path(inside string) string { return m.m.Path(inside) }
func (m *nspawnMachine) Destroy(ctx context.Context) error {
	return m.n.RemoveMachine(m.m.Name)
}

// checkBase returns an error unless base is empty or offered by p.
func checkBase(p Provisioner, base string) error {
	if base == "" {
		return nil
	}
	bp, ok := p.(BaseProvisioner)
	if !ok {
		return fmt.Errorf("base %q: this model's machines have no choice of base", base)
	}
	if !slices.Contains(bp.Bases(), base) {
		return fmt.Errorf("base %q is not available%s (have %s)", base, buildHint(base), strings.Join(bp.Bases(), ", "))
	}
	return nil
}

// buildHint says how to build the machine image of base when it is one of MachineBases:
// ": its machine image is not built (run \"scripts/images.sh trixie\" ...)"; else "".
func buildHint(base string) string {
	suite, ok := ImageSuite(base)
	if !ok {
		return ""
	}
	return fmt.Sprintf(": its machine image is not built (run %q in the repository, or \"make images\" for every base)", "scripts/images.sh "+suite)
}

// newMachine provisions the machine of a unit, on its application's base when the provisioner
// offers a choice.
func (m *Model) newMachine(ctx context.Context, id, unit string) (Machine, error) {
	bp, ok := m.opts.Machines.(BaseProvisioner)
	if !ok {
		return m.opts.Machines.NewMachine(ctx, id, unit)
	}
	base := ""
	m.mu.Lock()
	if u := m.state.Units[unit]; u != nil {
		if app := m.state.Applications[u.App]; app != nil {
			base = app.Base
		}
	}
	m.mu.Unlock()
	return bp.NewMachineBase(ctx, id, unit, base)
}

// machineBase is mach's base when it knows it, else "".
func machineBase(mach Machine) string {
	if b, ok := mach.(Based); ok {
		return b.Base()
	}
	return ""
}

// baseInfo is status's base of a machine: Juju's default (ubuntu@24.04) when unknown.
func baseInfo(base string) BaseInfo {
	name, channel, ok := strings.Cut(base, "@")
	if !ok {
		return BaseInfo{Name: "ubuntu", Channel: "24.04"}
	}
	return BaseInfo{Name: name, Channel: channel}
}

// ImageSuite is the Debian suite whose image (scripts/images.sh) gives machines of base.
func ImageSuite(base string) (string, bool) {
	switch base {
	case BaseBookworm:
		return "bookworm", true
	case BaseTrixie:
		return "trixie", true
	case BaseForky:
		return "forky", true
	}
	return "", false
}

// SuiteBase is the base of machines booted from suite's image: ImageSuite's inverse.
func SuiteBase(suite string) (string, bool) {
	for _, b := range MachineBases() {
		if s, _ := ImageSuite(b); s == suite {
			return b, true
		}
	}
	return "", false
}
