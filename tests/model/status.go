package model

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Status is the model's status in the shape of `juju status --format=json`.
type Status struct {
	Model        ModelStatus            `json:"model" yaml:"model"`
	Machines     map[string]MachineInfo `json:"machines" yaml:"machines"`
	Applications map[string]AppStatus   `json:"applications" yaml:"applications"`
}

// ModelStatus is the model section.
type ModelStatus struct {
	Name        string      `json:"name" yaml:"name"`
	Type        string      `json:"type" yaml:"type"`
	Controller  string      `json:"controller" yaml:"controller"`
	Cloud       string      `json:"cloud" yaml:"cloud"`
	Version     string      `json:"version" yaml:"version"`
	ModelStatus StatusValue `json:"model-status" yaml:"model-status"`
	SLA         string      `json:"sla" yaml:"sla"`
}

// StatusValue is a status with its message, as `juju status` prints them.
type StatusValue struct {
	Current string `json:"current" yaml:"current"`
	Message string `json:"message,omitempty" yaml:"message,omitempty"`
	Since   string `json:"since,omitempty" yaml:"since,omitempty"`
	Version string `json:"version,omitempty" yaml:"version,omitempty"`
}

// MachineInfo is one machine.
type MachineInfo struct {
	JujuStatus    StatusValue `json:"juju-status" yaml:"juju-status"`
	Hostname      string      `json:"hostname,omitempty" yaml:"hostname,omitempty"`
	DNSName       string      `json:"dns-name,omitempty" yaml:"dns-name,omitempty"`
	IPAddresses   []string    `json:"ip-addresses,omitempty" yaml:"ip-addresses,omitempty"`
	InstanceID    string      `json:"instance-id" yaml:"instance-id"`
	MachineStatus StatusValue `json:"machine-status" yaml:"machine-status"`
	Base          BaseInfo    `json:"base" yaml:"base"`
	// BootID is the running machine's boot id, new on every boot (juju-local only: Juju's
	// status has none).
	BootID string `json:"boot-id,omitempty" yaml:"boot-id,omitempty"`
}

// BaseInfo is a machine's OS.
type BaseInfo struct {
	Name    string `json:"name" yaml:"name"`
	Channel string `json:"channel" yaml:"channel"`
}

// AppStatus is one application.
type AppStatus struct {
	Charm             string                  `json:"charm" yaml:"charm"`
	CharmOrigin       string                  `json:"charm-origin" yaml:"charm-origin"`
	CharmName         string                  `json:"charm-name" yaml:"charm-name"`
	CharmRev          int                     `json:"charm-rev" yaml:"charm-rev"`
	Exposed           bool                    `json:"exposed" yaml:"exposed"`
	Life              string                  `json:"life,omitempty" yaml:"life,omitempty"`
	ApplicationStatus StatusValue             `json:"application-status" yaml:"application-status"`
	Relations         map[string][]RelatedApp `json:"relations,omitempty" yaml:"relations,omitempty"`
	Units             map[string]UnitStatus   `json:"units,omitempty" yaml:"units,omitempty"`
	Version           string                  `json:"version,omitempty" yaml:"version,omitempty"`
	EndpointBindings  map[string]string       `json:"endpoint-bindings,omitempty" yaml:"endpoint-bindings,omitempty"`
}

// RelatedApp is one relation of an application's endpoint.
type RelatedApp struct {
	RelatedApplication string `json:"related-application" yaml:"related-application"`
	Interface          string `json:"interface" yaml:"interface"`
	Scope              string `json:"scope" yaml:"scope"`
}

// UnitStatus is one unit.
type UnitStatus struct {
	WorkloadStatus StatusValue `json:"workload-status" yaml:"workload-status"`
	JujuStatus     StatusValue `json:"juju-status" yaml:"juju-status"`
	Life           string      `json:"life,omitempty" yaml:"life,omitempty"`
	Leader         bool        `json:"leader,omitempty" yaml:"leader,omitempty"`
	Machine        string      `json:"machine" yaml:"machine"`
	OpenPorts      []string    `json:"open-ports,omitempty" yaml:"open-ports,omitempty"`
	PublicAddress  string      `json:"public-address,omitempty" yaml:"public-address,omitempty"`
}

var severity = map[string]int{"error": 100, "blocked": 90, "maintenance": 80, "waiting": 70, "active": 60, "terminated": 50, "unknown": 40}

func since(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("02 Jan 2006 15:04:05Z")
}

// Status returns the model's status.
func (m *Model) Status(ctx context.Context) *Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status()
}

func (m *Model) status() *Status {
	s := m.state
	st := &Status{
		Model: ModelStatus{
			Name: s.Name, Type: "iaas", Controller: "juju-local", Cloud: "localhost",
			Version: JujuVersion, ModelStatus: StatusValue{Current: "available"}, SLA: "unsupported",
		},
		Machines:     map[string]MachineInfo{},
		Applications: map[string]AppStatus{},
	}
	for id, ms := range s.Machines {
		mi := MachineInfo{
			JujuStatus:    StatusValue{Current: ms.Status, Message: ms.Message, Version: JujuVersion},
			Hostname:      ms.Hostname,
			DNSName:       ms.Address,
			InstanceID:    ms.Hostname,
			MachineStatus: StatusValue{Current: "running"},
			Base:          baseInfo(ms.Base),
			BootID:        ms.BootID,
		}
		if u := s.Units[ms.Unit]; u != nil && u.Reboot != "" {
			mi.MachineStatus = StatusValue{Current: "running", Message: "rebooting"}
		}
		if ms.Address != "" {
			mi.IPAddresses = []string{ms.Address}
		}
		if ms.Status == "pending" {
			mi.MachineStatus = StatusValue{Current: "pending"}
			mi.InstanceID = "pending"
		}
		st.Machines[id] = mi
	}
	for name, a := range s.Applications {
		as := AppStatus{
			Charm: a.Charm.Name, CharmOrigin: "local", CharmName: a.Charm.Name, CharmRev: 0,
			Version: a.Version, Units: map[string]UnitStatus{}, Relations: map[string][]RelatedApp{},
			EndpointBindings: map[string]string{"": "alpha"},
		}
		if a.Dying {
			as.Life = "dying"
		}
		for _, ep := range append(append(sortedKeys(a.Charm.Provides), sortedKeys(a.Charm.Requires)...), sortedKeys(a.Charm.Peers)...) {
			as.EndpointBindings[ep] = "alpha"
		}
		var ids []int
		for id := range s.Relations {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		for _, id := range ids {
			r := s.Relations[id]
			ep, ok := r.endpointOf(name)
			if !ok {
				continue
			}
			as.Relations[ep.Name] = append(as.Relations[ep.Name], RelatedApp{RelatedApplication: r.remoteApp(name), Interface: ep.Interface, Scope: "global"})
		}
		worst := StatusValue{Current: "unknown"}
		for un, u := range s.Units {
			if u.App != name {
				continue
			}
			us := UnitStatus{
				WorkloadStatus: StatusValue{Current: u.Workload.Status, Message: u.Workload.Message, Since: since(u.Workload.Since)},
				JujuStatus:     StatusValue{Current: u.Agent.Status, Message: u.Agent.Message, Since: since(u.Agent.Since), Version: JujuVersion},
				Leader:         a.Leader == un,
				Machine:        u.Machine,
				OpenPorts:      u.Ports,
			}
			if m.busy(un) && u.Agent.Status == "idle" {
				us.JujuStatus.Current = "executing"
			}
			if u.Agent.Status == "error" {
				// As juju status shows it: the hook error is the workload status, the agent idles.
				us.WorkloadStatus = StatusValue{Current: "error", Message: u.Agent.Message, Since: since(u.Agent.Since)}
				us.JujuStatus = StatusValue{Current: "idle", Since: since(u.Agent.Since), Version: JujuVersion}
			}
			if u.Dying {
				us.Life = "dying"
			}
			if ms := s.Machines[u.Machine]; ms != nil {
				us.PublicAddress = ms.Address
			}
			if severity[us.WorkloadStatus.Current] > severity[worst.Current] {
				worst = StatusValue{Current: us.WorkloadStatus.Current, Message: us.WorkloadStatus.Message}
			}
			as.Units[un] = us
		}
		if a.Status.Status != "" && a.Status.Status != "unknown" {
			as.ApplicationStatus = StatusValue{Current: a.Status.Status, Message: a.Status.Message, Since: since(a.Status.Since)}
		} else {
			as.ApplicationStatus = worst
		}
		if len(as.Relations) == 0 {
			as.Relations = nil
		}
		st.Applications[name] = as
	}
	return st
}

// busy reports whether unit has work to do or under way; callers hold m.mu.
func (m *Model) busy(unit string) bool {
	u := m.state.Units[unit]
	if u == nil {
		return false
	}
	if a := m.agents[unit]; a != nil && a.running {
		return true
	}
	if u.Dying {
		return true
	}
	if !u.Ready {
		return u.Agent.Status != "error"
	}
	// A machine rebooting (or down between two boots) has start to run when it is back.
	if a := m.agents[unit]; u.Reboot != "" || a != nil && a.machineDown() {
		return true
	}
	// What the agent would decide, on a copy: deciding applies what runs no hook.
	rs := m.state.remoteState(u, 0, 0, time.Now())
	if a := m.agents[unit]; a != nil {
		rs = a.remoteState(u, time.Now())
	}
	c := deepCopy(reflect.ValueOf(u)).Interface().(*Unit)
	_, ok := decide(c, &rs)
	return ok
}

// idle reports whether no unit has anything to do; callers hold m.mu.
func (m *Model) idle() bool {
	for name := range m.state.Units {
		if m.busy(name) {
			return false
		}
	}
	for _, a := range m.state.Applications {
		if a.Dying {
			return false
		}
	}
	for _, r := range m.state.Relations {
		if r.Dying {
			return false
		}
	}
	return true
}

// UnitError is returned by Wait when a unit is in error and nothing else is running.
type UnitError struct {
	Unit    string
	Message string
}

func (e *UnitError) Error() string { return fmt.Sprintf("unit %s is in error: %s", e.Unit, e.Message) }

// WaitOptions say what Wait waits for.
type WaitOptions struct {
	// Until, when set, must also hold (it is checked when the model is idle).
	Until func(*Status) bool
	// AllowErrors makes Wait return when idle even with units in error (otherwise it returns a
	// *UnitError).
	AllowErrors bool
}

// Wait waits until every unit is idle with nothing queued (and opts.Until holds), ctx ends, or
// a unit is in error while nothing else runs.
func (m *Model) Wait(ctx context.Context, opts WaitOptions) error {
	for {
		m.mu.Lock()
		changed := m.changed
		idle := m.idle()
		var st *Status
		var uerr error
		if idle {
			st = m.status()
			if !opts.AllowErrors {
				for _, name := range sortedKeys(m.state.Units) {
					if u := m.state.Units[name]; u.Agent.Status == "error" {
						uerr = &UnitError{Unit: name, Message: u.Agent.Message}
						break
					}
				}
			}
		}
		m.mu.Unlock()
		if uerr != nil {
			return uerr
		}
		// Until runs without the model's lock: it may call the model.
		if idle && (opts.Until == nil || opts.Until(st)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cannot wait for the model: %w", ctx.Err())
		case <-changed:
		}
	}
}

// AllActive is a Wait condition: every unit's workload is active.
func AllActive(st *Status) bool {
	for _, a := range st.Applications {
		for _, u := range a.Units {
			if u.WorkloadStatus.Current != "active" {
				return false
			}
		}
	}
	return true
}

// WriteTable prints st as `juju status` does.
func (st *Status) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "Model\tController\tCloud/Region\tVersion\tSLA\tTimestamp")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", st.Model.Name, st.Model.Controller, st.Model.Cloud, st.Model.Version, st.Model.SLA, time.Now().UTC().Format("15:04:05Z"))
	if len(st.Applications) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "App\tVersion\tStatus\tScale\tCharm\tChannel\tRev\tExposed\tMessage")
		for _, name := range sortedKeys(st.Applications) {
			a := st.Applications[name]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t\t%d\t%s\t%s\n", name, a.Version, a.ApplicationStatus.Current, len(a.Units), a.CharmName, a.CharmRev, "no", a.ApplicationStatus.Message)
		}
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "Unit\tWorkload\tAgent\tMachine\tPublic address\tPorts\tMessage")
		for _, name := range sortedKeys(st.Applications) {
			a := st.Applications[name]
			units := sortedKeys(a.Units)
			sort.Slice(units, func(i, j int) bool { return unitNumber(units[i]) < unitNumber(units[j]) })
			for _, un := range units {
				u := a.Units[un]
				label := un
				if u.Leader {
					label += "*"
				}
				msg := u.WorkloadStatus.Message
				if u.JujuStatus.Current == "executing" && u.JujuStatus.Message != "" && msg == "" {
					msg = "(" + u.JujuStatus.Message + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", label, u.WorkloadStatus.Current, u.JujuStatus.Current, u.Machine, u.PublicAddress, strings.Join(u.OpenPorts, ","), msg)
			}
		}
	}
	if len(st.Machines) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "Machine\tState\tAddress\tInst id\tBase\tAZ\tMessage")
		ids := sortedKeys(st.Machines)
		sort.Slice(ids, func(i, j int) bool { return len(ids[i]) < len(ids[j]) || len(ids[i]) == len(ids[j]) && ids[i] < ids[j] })
		for _, id := range ids {
			mi := st.Machines[id]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s@%s\t\t%s\n", id, mi.JujuStatus.Current, mi.DNSName, mi.InstanceID, mi.Base.Name, mi.Base.Channel, mi.MachineStatus.Current)
		}
	}
	return tw.Flush()
}
