package hosts

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// plug wires network namespace netns into the network as its i-th member (a host or a
// machine): a veth pair from the switch's bridge to eth0 carrying addr (on-link over
// OnLinkBits), and the loopback up. Two `ip -batch` runs, one per namespace (ip stops at
// the first command that fails and exits non-zero), instead of one ip process per step: a
// scale step of 256 hosts ran 1280 of them.
func (n *Network) plug(ctx context.Context, netns string, i int, addr netip.Addr) error {
	veth := "v" + strconv.Itoa(i)
	batches := []struct {
		netns string
		steps [][]string
	}{
		{n.switchNS, [][]string{
			{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns},
			{"link", "set", veth, "master", "br0", "up"},
		}},
		{netns, [][]string{
			{"link", "set", "lo", "up"},
			{"addr", "add", netip.PrefixFrom(addr, OnLinkBits).String(), "dev", "eth0"},
			{"link", "set", "eth0", "up"},
		}},
	}
	for _, b := range batches {
		if err := runBatch(ctx, []string{"ip", "-n", b.netns, "-batch", "-"}, b.steps); err != nil {
			return err
		}
	}
	return nil
}

// runBatch runs argv, a command reading one command a line from its standard input (ip
// -batch -), with steps as those lines. No step may hold a newline, and no word a space, a
// quote or a backslash (ip's batch reader splits the words of a line and would take them
// apart): the words are names and addresses this package makes.
func runBatch(ctx context.Context, argv []string, steps [][]string) error {
	var in strings.Builder
	for _, step := range steps {
		for _, w := range step {
			if w == "" || strings.ContainsAny(w, " \t\n\"'\\#") {
				return fmt.Errorf("cannot run %s: word %q of %q cannot be passed in a batch", strings.Join(argv, " "), w, step)
			}
		}
		in.WriteString(strings.Join(step, " ") + "\n")
	}
	return runInput(ctx, argv, in.String())
}
