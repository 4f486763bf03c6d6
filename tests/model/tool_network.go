package model

// open-port, close-port, opened-ports, juju-log, network-get, unit-get.

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Ports.

func normalizePort(arg string) (string, error) {
	// As core/network.ParsePortRange reads the lowercased argument (jujuc/ports.go).
	arg = strings.ToLower(arg)
	proto := "tcp"
	if r, p, ok := strings.Cut(arg, "/"); ok {
		arg, proto = r, p
	}
	parts := strings.Split(arg, "-")
	var from, to int
	switch {
	case len(parts) > 2:
		return "", &usageError{fmt.Sprintf("invalid port range %q", arg)}
	case len(parts) == 1 && parts[0] == "icmp":
		from, to, proto = -1, -1, "icmp"
	default:
		var err error
		if from, err = strconv.Atoi(parts[0]); err != nil {
			what := parts[0]
			if len(parts) == 1 {
				what = arg
			}
			return "", &usageError{fmt.Sprintf("invalid port %q: %v", what, err)}
		}
		to = from
		if len(parts) == 2 {
			if to, err = strconv.Atoi(parts[1]); err != nil {
				return "", &usageError{fmt.Sprintf("invalid port %q: %v", parts[1], err)}
			}
		}
	}
	// PortRange.Validate.
	switch {
	case proto != "tcp" && proto != "udp" && proto != "icmp":
		return "", &usageError{fmt.Sprintf(`invalid protocol %q, expected "tcp", "udp", or "icmp"`, proto)}
	case proto == "icmp" && (from != -1 || to != -1):
		return "", &usageError{fmt.Sprintf(`protocol "icmp" doesn't support any ports; got "%v"`, from)}
	case proto == "icmp":
		return "icmp", nil
	case from > to:
		return "", &usageError{fmt.Sprintf("invalid port range %d-%d/%s", from, to, proto)}
	case from < 0 || from > 65535 || to < 0 || to > 65535:
		return "", &usageError{fmt.Sprintf("port range bounds must be between 0 and 65535, got %d-%d", from, to)}
	}
	if from == to {
		return fmt.Sprintf("%d/%s", from, proto), nil
	}
	return fmt.Sprintf("%d-%d/%s", from, to, proto), nil
}

func (t *toolCall) ports(open bool) error {
	t.fs.String("endpoints", "", "endpoints (ignored)")
	args, err := t.parse(1, 1)
	if err != nil {
		return err
	}
	p, err := normalizePort(args[0])
	if err != nil {
		return err
	}
	unit := t.hc.unit
	return t.hc.do(func(s *State) error {
		u := s.Units[unit]
		if u == nil {
			return nil
		}
		var keep []string
		for _, x := range u.Ports {
			if x != p {
				keep = append(keep, x)
			}
		}
		if open {
			keep = append(keep, p)
		}
		sort.Strings(keep)
		u.Ports = keep
		return nil
	})
}

func (t *toolCall) openPort() error  { return t.ports(true) }
func (t *toolCall) closePort() error { return t.ports(false) }

func (t *toolCall) openedPorts() error {
	t.withFormat()
	t.fs.Bool("endpoints", false, "show endpoints (ignored)")
	if _, err := t.parse(0, 0); err != nil {
		return err
	}
	ports := append([]string{}, t.unitState().Ports...)
	return t.out(ports)
}

func (t *toolCall) jujuLog() error {
	level := t.fs.StringP("log-level", "l", "INFO", "log level")
	debug := t.fs.Bool("debug", false, "log at DEBUG level")
	args, err := t.parse(1, -1)
	if err != nil {
		return err
	}
	lvl := strings.ToUpper(*level)
	if *debug {
		lvl = "DEBUG"
	}
	switch lvl {
	case "TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL":
	default:
		return &usageError{fmt.Sprintf("invalid log level %q", *level)}
	}
	// In a relation hook Juju prefixes the message with the relation ("peer:0: "; jujuc/juju-log.go, FakeId).
	prefix := ""
	if h := t.hc.hook; strings.HasPrefix(h.Kind, "relation-") {
		prefix = fmt.Sprintf("%s:%d: ", h.Endpoint, h.RelationID)
	}
	t.hc.m.appendLog(fmt.Sprintf("%s: %s %s unit.%s.juju-log %s%s", unitTag(t.hc.unit), time.Now().Format("15:04:05"), lvl, t.hc.unit, prefix, strings.Join(args, " ")))
	return nil
}

func (t *toolCall) address() (string, error) {
	ms := t.hc.m.state.Machines[t.hc.machine]
	if ms == nil || ms.Address == "" {
		return "", errors.New("unit has no address")
	}
	return ms.Address, nil
}

func (t *toolCall) networkGet() error {
	t.withFormat()
	rel := t.fs.StringP("relation", "r", "", "relation id")
	ingress := t.fs.Bool("ingress-address", false, "only the ingress address")
	bind := t.fs.Bool("bind-address", false, "only the bind address")
	egress := t.fs.Bool("egress-subnets", false, "only the egress subnets")
	primary := t.fs.Bool("primary-address", false, "only the primary address (deprecated)")
	args, err := t.parse(0, 1)
	if err != nil {
		return err
	}
	binding := ""
	if len(args) == 1 {
		binding = args[0]
	} else if *rel != "" {
		r, err := t.relation(*rel)
		if err != nil {
			return err
		}
		ep, _ := r.endpointOf(t.hc.app)
		binding = ep.Name
	} else {
		return &usageError{"no arguments specified"}
	}
	a := t.hc.view.Applications[t.hc.app]
	if _, _, ok := a.Charm.endpoint(binding); !ok && binding != "juju-info" {
		return fmt.Errorf("no network config found for binding %q", binding)
	}
	addr, err := t.address()
	if err != nil {
		return err
	}
	cidr := addr + "/32"
	switch {
	case *ingress:
		return t.out(addr)
	case *bind, *primary:
		return t.out(addr)
	case *egress:
		return t.out(cidr)
	}
	// Juju's display, in its order (jujuc/network-get.go, resultToDisplay).
	type address struct {
		Hostname string `json:"hostname" yaml:"hostname"`
		Value    string `json:"value" yaml:"value"`
		CIDR     string `json:"cidr" yaml:"cidr"`
	}
	type iface struct {
		MACAddress    string    `json:"mac-address" yaml:"mac-address"`
		InterfaceName string    `json:"interface-name" yaml:"interface-name"`
		Addresses     []address `json:"addresses" yaml:"addresses"`
	}
	type info struct {
		BindAddresses    []iface  `json:"bind-addresses" yaml:"bind-addresses"`
		EgressSubnets    []string `json:"egress-subnets" yaml:"egress-subnets"`
		IngressAddresses []string `json:"ingress-addresses" yaml:"ingress-addresses"`
	}
	return t.out(info{
		BindAddresses:    []iface{{InterfaceName: "eth0", Addresses: []address{{Value: addr, CIDR: cidr}}}},
		EgressSubnets:    []string{cidr},
		IngressAddresses: []string{addr},
	})
}

func (t *toolCall) unitGet() error {
	t.withFormat()
	args, err := t.parse(1, 1)
	if err != nil {
		return err
	}
	switch args[0] {
	case "private-address", "public-address":
	default:
		return &usageError{fmt.Sprintf("unknown setting %q", args[0])}
	}
	addr, err := t.address()
	if err != nil {
		return err
	}
	return t.out(addr)
}
