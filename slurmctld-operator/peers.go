package main

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
)

// Controller high availability: every unit runs slurmctld, the leader's configuration on each,
// SlurmctldHost listing them in the stable order of the peer relation, StateSaveLocation on
// storage they share through the mount_info relation (a filesystem-client subordinate). A unit
// that is not the leader runs slurmctld only once the shared storage is mounted on it and the
// leader lists it: never two controllers with separate state.
const (
	// sharedMount is where the filesystem-client subordinate mounts the shared storage (the
	// reference charms' mountpoint).
	sharedMount = "/mnt/slurmctld-statefs"
	// sharedStateDir is StateSaveLocation on the shared storage.
	sharedStateDir = sharedMount + "/checkpoint"
)

// The peer relation of the controllers (high availability) and what each side writes there:
//
//   - every unit, in its unit bag: its host name ("hostname", SlurmctldHost must match it),
//     its address ("address") and whether the shared StateSaveLocation is mounted on it
//     ("storage": "mounted"); a unit the takeover action ran on, its record of it
//     ("took-control", standby.go: the units whose controllers gave up control to it, which
//     stand down until takeover runs on them);
//   - the leader, in the application bag: the controllers in SlurmctldHost order
//     ("controllers", a JSON list of {unit, host, addr}, primary first: the order only grows at
//     its end and loses departed units, whoever leads), the configuration files every
//     controller runs with ("conf", a JSON object file name → content: slurm.conf and the
//     partition includes, written by the leader, checked by Slurm's parser there) and the id
//     of the auth key secret ("auth-secret-id"), which the other units read (the secret
//     belongs to the application), and the rolling reboot under way ("reboots", a JSON
//     rebootPlan, peerKeyReboots), which a new leader takes over (leadership.go);
//   - for the rolling restarts (rolling.go): the leader's turn in the application bag
//     ("restart-turn") and each unit's report in its unit bag ("runs-with").
const (
	peerEndpoint = "slurmctld-peers"

	peerKeyHost    = "hostname"
	peerKeyAddr    = "address"
	peerKeyStorage = "storage"

	peerKeyControllers = "controllers"
	peerKeyConf        = "conf"
	peerKeySecret      = "auth-secret-id"

	storageMounted = "mounted"
)

// controller is one slurmctld of the cluster: its unit, host name and address. Gone marks a
// backup that left while the controller in control runs with it in SlurmctldHost: it stays at
// the end of the list, published to no slurmd or login unit, until slurmctld next starts
// (retire).
type controller struct {
	Unit string `json:"unit"`
	Host string `json:"host"`
	Addr string `json:"addr"`
	Gone bool   `json:"gone,omitempty"`
}

// SlurmctldHost is the controller's SlurmctldHost value, host(addr).
func (c controller) SlurmctldHost() string { return c.Host + "(" + c.Addr + ")" }

// hostRE is a lower-case DNS label's form; its length, at most maxHostLabel, is checked
// apart (a counted repetition {0,61} compiles into 61 copies of its class at every hook's
// start).
var (
	hostRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	unitRE = regexp.MustCompile(`^[a-z][a-z0-9-]*/[0-9]+$`)
)

const maxHostLabel = 63

// maxControllers bounds the controller list (a cluster has a handful).
const maxControllers = 16

func (c controller) check() error {
	if !unitRE.MatchString(c.Unit) || len(c.Unit) > 128 {
		return fmt.Errorf("%q is not a unit name", trunc(c.Unit))
	}
	if len(c.Host) > maxHostLabel || !hostRE.MatchString(c.Host) {
		return fmt.Errorf("unit %s: %q is not a host name (a lower-case DNS label)", c.Unit, trunc(c.Host))
	}
	a, err := netip.ParseAddr(c.Addr)
	if err != nil || a.Zone() != "" || a.String() != c.Addr {
		return fmt.Errorf("unit %s: %q is not an IP address", c.Unit, trunc(c.Addr))
	}
	return nil
}

// decodeControllers reads the leader's controller list; "" is an empty list.
func decodeControllers(raw string) ([]controller, error) {
	if raw == "" {
		return nil, nil
	}
	var ctls []controller
	if err := decodePeerJSON(peerKeyControllers, raw, &ctls); err != nil {
		return nil, err
	}
	if err := checkControllers(ctls); err != nil {
		return nil, fmt.Errorf("invalid %q in peer data: %w", peerKeyControllers, err)
	}
	return ctls, nil
}

// decodePeerJSON decodes raw, the JSON value of peer data key, into v, refusing unknown
// fields and trailing data.
func decodePeerJSON(key, raw string, v any) error {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid %q in peer data: %w", key, err)
	}
	if dec.More() {
		return fmt.Errorf("invalid %q in peer data: trailing data", key)
	}
	return nil
}

func checkControllers(ctls []controller) error {
	if len(ctls) > maxControllers {
		return fmt.Errorf("%d controllers, at most %d", len(ctls), maxControllers)
	}
	seen := map[string]bool{}
	for i, c := range ctls {
		if err := c.check(); err != nil {
			return err
		}
		if i > 0 && ctls[i-1].Gone && !c.Gone {
			return fmt.Errorf("unit %s: listed after %s, which left", c.Unit, ctls[i-1].Unit)
		}
		for _, k := range []string{"u:" + c.Unit, "h:" + c.Host, "a:" + c.Addr} {
			if seen[k] {
				return fmt.Errorf("%s appears twice", k[2:])
			}
			seen[k] = true
		}
	}
	return nil
}

func encodeControllers(ctls []controller) (string, error) {
	if err := checkControllers(ctls); err != nil {
		return "", err
	}
	b, err := json.Marshal(ctls)
	return string(b), err
}

// nextControllers is the controller list after a change of the peers: prev's order kept,
// controllers no longer among candidates dropped, new candidates appended in the order given
// (a controller whose host or address changed keeps its place with the new ones).
func nextControllers(prev, candidates []controller) []controller {
	var out []controller
	for _, p := range prev {
		if i := slices.IndexFunc(candidates, func(c controller) bool { return c.Unit == p.Unit }); i >= 0 {
			out = append(out, candidates[i])
		}
	}
	for _, c := range candidates {
		if !slices.ContainsFunc(out, func(o controller) bool { return o.Unit == c.Unit }) {
			out = append(out, c)
		}
	}
	return out
}

// maxConfSize bounds the configuration shared through the peer relation.
const maxConfSize = 1 << 20

// decodeConf reads the shared configuration files: names the charm manages (managedConf),
// contents without NUL.
func decodeConf(raw string) (map[string]string, error) {
	if raw == "" {
		return nil, nil
	}
	if len(raw) > maxConfSize {
		return nil, fmt.Errorf("invalid %q in peer data: over %d bytes", peerKeyConf, maxConfSize)
	}
	var files map[string]string
	if err := json.Unmarshal([]byte(raw), &files); err != nil {
		return nil, fmt.Errorf("invalid %q in peer data: %w", peerKeyConf, err)
	}
	if _, ok := files["slurm.conf"]; !ok {
		return nil, fmt.Errorf("invalid %q in peer data: no slurm.conf", peerKeyConf)
	}
	for name, content := range files {
		if !managedConf(name) || strings.ContainsAny(name, "/\\") || name != strings.TrimSpace(name) {
			return nil, fmt.Errorf("invalid %q in peer data: %q is not a file the charm manages", peerKeyConf, trunc(name))
		}
		if strings.ContainsRune(content, 0) {
			return nil, fmt.Errorf("invalid %q in peer data: %s holds a NUL byte", peerKeyConf, name)
		}
	}
	return files, nil
}

func trunc(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// live are the controllers that did not leave.
func live(ctls []controller) []controller {
	return slices.DeleteFunc(slices.Clone(ctls), func(c controller) bool { return c.Gone })
}

// hostsOf are the SlurmctldHost values of the controllers.
func hostsOf(ctls []controller) []string {
	out := make([]string, len(ctls))
	for i, c := range ctls {
		out[i] = c.SlurmctldHost()
	}
	return out
}
