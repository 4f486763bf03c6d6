package juju

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Port is one port and protocol: 6817/tcp.
type Port struct {
	Number   int
	Protocol string // tcp or udp
}

func (p Port) String() string { return fmt.Sprintf("%d/%s", p.Number, p.Protocol) }

// ParsePort parses "6817/tcp" (a bare number means tcp).
func ParsePort(s string) (Port, error) {
	num, proto, ok := strings.Cut(s, "/")
	if !ok {
		proto = "tcp"
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != num {
		return Port{}, fmt.Errorf("invalid port %q: want <1-65535>/<tcp|udp>", s)
	}
	if proto != "tcp" && proto != "udp" {
		return Port{}, fmt.Errorf("invalid port %q: want <1-65535>/<tcp|udp>", s)
	}
	return Port{Number: n, Protocol: proto}, nil
}

// Ports runs open-port, close-port and opened-ports.
type Ports struct{ Runner Runner }

// Open opens a port on the unit's machine: open-port 6817/tcp. It takes
// effect when the hook succeeds.
func (c Ports) Open(ctx context.Context, p Port) error {
	_, err := run(ctx, c.Runner, nil, "open-port", p.String())
	return err
}

// Close closes a port: close-port 6817/tcp.
func (c Ports) Close(ctx context.Context, p Port) error {
	_, err := run(ctx, c.Runner, nil, "close-port", p.String())
	return err
}

// Opened lists the unit's open ports: opened-ports --format=json.
func (c Ports) Opened(ctx context.Context) ([]Port, error) {
	var raw []string
	if err := runJSON(ctx, c.Runner, &raw, "opened-ports", "--format=json"); err != nil {
		return nil, err
	}
	ports := make([]Port, 0, len(raw))
	for _, s := range raw {
		p, err := ParsePort(s)
		if err != nil {
			return nil, fmt.Errorf("cannot decode output of opened-ports: %w", err)
		}
		ports = append(ports, p)
	}
	return ports, nil
}
