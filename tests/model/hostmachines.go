package model

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"

	"github.com/charmed-slurm/operators/tests/hosts"
)

// HostMachines provisions every machine as a real host of a tests/hosts Network: its own
// network, UTS, IPC, mount and PID namespaces, Pebble as its supervisor, private /var/lib/juju
// and /tmp.
type HostMachines struct {
	// Network holds the hosts.
	Network *hosts.Network
	// Binds are the paths the hosts share with the model's process although they lie in a
	// host's private directories (its /tmp: hosts.HostOptions.Binds): the model's Dir (its
	// agent socket and tools links) and the directory of its hook tools binary.
	Binds []string
	// Prefix starts every host name; default "juju".
	Prefix string
	// CloseNetwork makes Close close Network (when the provisioner owns it).
	CloseNetwork bool
}

// NewMachine implements Provisioner: host "<prefix>-<id>".
func (p *HostMachines) NewMachine(ctx context.Context, id, unit string) (Machine, error) {
	prefix := p.Prefix
	if prefix == "" {
		prefix = "juju"
	}
	name := fmt.Sprintf("%s-%s", prefix, id)
	h, err := p.Network.AddHost(ctx, hosts.HostOptions{Name: name, Binds: p.Binds})
	if err != nil {
		return nil, err
	}
	return &hostMachine{n: p.Network, h: h}, nil
}

// Close implements Provisioner.
func (p *HostMachines) Close() error {
	if p.CloseNetwork {
		return p.Network.Close()
	}
	return nil
}

type hostMachine struct {
	n *hosts.Network
	h *hosts.Host
}

func (m *hostMachine) Command(ctx context.Context, dir string, argv []string) *exec.Cmd {
	if dir == "" {
		return m.h.Command(ctx, argv)
	}
	return m.h.CommandIn(ctx, dir, argv)
}
func (m *hostMachine) Hostname() string { return m.h.Name }
func (m *hostMachine) Addr() netip.Addr { return m.h.Addr }
func (m *hostMachine) Root() string     { return "" }

// Path is the host-side directory behind the host's private /var/lib/juju (and its other
// private directories, hosts.PrivateDirs).
func (m *hostMachine) Path(inside string) string { return m.h.Path(inside) }
func (m *hostMachine) Destroy(ctx context.Context) error {
	return m.n.RemoveHost(m.h.Name)
}
