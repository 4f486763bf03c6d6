package hosts

import (
	"context"
	"net/netip"
	"strconv"
)

// plug wires network namespace netns into the network as its i-th member (a host or a
// machine): a veth pair from the switch's bridge to eth0 carrying addr (on-link over
// OnLinkBits), and the loopback up.
func (n *Network) plug(ctx context.Context, netns string, i int, addr netip.Addr) error {
	veth := "v" + strconv.Itoa(i)
	steps := [][]string{
		{"ip", "-n", netns, "link", "set", "lo", "up"},
		{"ip", "-n", n.switchNS, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns},
		{"ip", "-n", n.switchNS, "link", "set", veth, "master", "br0", "up"},
		{"ip", "-n", netns, "addr", "add", netip.PrefixFrom(addr, OnLinkBits).String(), "dev", "eth0"},
		{"ip", "-n", netns, "link", "set", "eth0", "up"},
	}
	for _, argv := range steps {
		if err := run(ctx, argv); err != nil {
			return err
		}
	}
	return nil
}
