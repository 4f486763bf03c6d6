package model

// open-port, close-port, opened-ports, juju-log, network-get, unit-get.

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Ports.

var portRe = regexp.MustCompile(`^(\d+)(?:-(\d+))?(?:/(tcp|udp))?$`)

func normalizePort(arg string) (string, error) {
	if arg == "icmp" {
		return "icmp", nil
	}
	m := portRe.FindStringSubmatch(arg)
	if m == nil {
		return "", &usageError{fmt.Sprintf("invalid port or range %q", arg)}
	}
	from, _ := strconv.Atoi(m[1])
	to := from
	if m[2] != "" {
		to, _ = strconv.Atoi(m[2])
	}
	if from < 1 || to > 65535 || from > to {
		return "", &usageError{fmt.Sprintf("invalid port or range %q", arg)}
	}
	proto := m[3]
	if proto == "" {
		proto = "tcp"
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
	t.hc.m.appendLog(fmt.Sprintf("%s: %s %s unit.%s.juju-log %s", unitTag(t.hc.unit), time.Now().Format("15:04:05"), lvl, t.hc.unit, strings.Join(args, " ")))
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
	return t.out(map[string]any{
		"bind-addresses": []any{map[string]any{
			"mac-address":    "",
			"interface-name": "eth0",
			"addresses":      []any{map[string]any{"hostname": "", "address": addr, "cidr": cidr, "value": addr}},
			"macaddress":     "",
			"interfacename":  "eth0",
		}},
		"egress-subnets":    []string{cidr},
		"ingress-addresses": []string{addr},
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
