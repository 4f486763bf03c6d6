// Package pebble implements service.Manager with Pebble (github.com/canonical/pebble).
//
// Each service is one Pebble layer labelled with the service name, holding the service
// with `override: replace`, `on-failure: restart` (and `on-success: ignore` for a spec that
// says StayStopped) and the spec's command, environment, user and kill-delay. Enabling adds
// a second layer, labelled "<name>-startup", that merges `startup: enabled` (or disabled) on
// top, so re-configuring a service keeps whether it is enabled. Start, stop and restart
// wait for Pebble's change to finish; a failed change (for example a command that exits at once) is returned as an error.
// Pebble finishes a start change only once the service has stayed up for 1 s; Spawn and
// Respawn do not wait for that: they poll the change and the services API (every
// PollInterval) and return as soon as the change's start task runs and the service is
// active, or with the change's error if it failed first.
//
//	m, err := pebble.New("/var/lib/pebble/default/.pebble.socket")
//	err = m.Configure(ctx, service.Spec{Name: "slurmd", Command: argv})
//	err = m.Start(ctx, "slurmd")
//	err = m.Spawn(ctx, "munged") // returns within milliseconds; check readiness yourself
package pebble

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/canonical/pebble/client"

	"github.com/charmed-slurm/operators/libs/service"
)

// Manager is a service.Manager backed by a Pebble daemon. It is safe for concurrent use: its
// requests go to Pebble one at a time (Pebble's client records each answer's maintenance
// state in itself), so that a charm can define one service while another starts.
type Manager struct {
	Client *client.Client
	// PollInterval is how often Spawn and Respawn poll Pebble; zero means
	// DefaultPollInterval.
	PollInterval time.Duration

	mu sync.Mutex // held for each request to Pebble
}

// DefaultPollInterval is Spawn's and Respawn's default poll interval.
const DefaultPollInterval = 2 * time.Millisecond

var _ service.Manager = (*Manager)(nil)

// New connects to the Pebble daemon listening on socket.
func New(socket string) (*Manager, error) {
	c, err := client.New(&client.Config{Socket: socket})
	if err != nil {
		return nil, fmt.Errorf("cannot create pebble client for %q: %w", socket, err)
	}
	return &Manager{Client: c}, nil
}

// layer is Pebble's layer format. It is written as JSON, which Pebble's YAML parser reads.
type layer struct {
	Summary  string                  `json:"summary,omitempty"`
	Services map[string]layerService `json:"services"`
}

type layerService struct {
	Override    string            `json:"override"`
	Summary     string            `json:"summary,omitempty"`
	Command     string            `json:"command,omitempty"`
	Startup     string            `json:"startup,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
	User        string            `json:"user,omitempty"`
	KillDelay   string            `json:"kill-delay,omitempty"`
	OnFailure   string            `json:"on-failure,omitempty"`
	OnSuccess   string            `json:"on-success,omitempty"`
}

// Configure implements service.Manager.
func (m *Manager) Configure(ctx context.Context, spec service.Spec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	cmd, err := Command(spec.Command)
	if err != nil {
		return fmt.Errorf("cannot configure service %q: %w", spec.Name, err)
	}
	svc := layerService{
		Override:    "replace",
		Summary:     spec.Summary,
		Command:     cmd,
		Environment: spec.Environment,
		User:        spec.User,
		OnFailure:   "restart",
	}
	if spec.StayStopped {
		svc.OnSuccess = "ignore"
	}
	if spec.KillDelay > 0 {
		svc.KillDelay = spec.KillDelay.String()
	}
	l := layer{Summary: spec.Summary, Services: map[string]layerService{spec.Name: svc}}
	if err := m.addLayer(ctx, spec.Name, l); err != nil {
		return fmt.Errorf("cannot configure service %q: %w", spec.Name, err)
	}
	return nil
}

func (m *Manager) addLayer(ctx context.Context, label string, l layer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.Client.AddLayer(&client.AddLayerOptions{Combine: true, Label: label, LayerData: data})
}

// Enable implements service.Manager.
func (m *Manager) Enable(ctx context.Context, name string) error {
	return m.setStartup(ctx, name, "enabled")
}

// Disable implements service.Manager.
func (m *Manager) Disable(ctx context.Context, name string) error {
	return m.setStartup(ctx, name, "disabled")
}

func (m *Manager) setStartup(ctx context.Context, name, startup string) error {
	if err := service.ValidateName(name); err != nil {
		return fmt.Errorf("cannot set service %q startup to %s: %w", name, startup, err)
	}
	l := layer{Services: map[string]layerService{name: {Override: "merge", Startup: startup}}}
	if err := m.addLayer(ctx, name+"-startup", l); err != nil {
		return fmt.Errorf("cannot set service %q startup to %s: %w", name, startup, m.why(ctx, name, err))
	}
	return nil
}

// why is err of a request about name, or ErrUnknownService when name is not in Pebble's
// plan (asked only once a request failed: Pebble refuses to act on an unknown service, and
// a startup layer for one leaves a service with no command, which it refuses too).
func (m *Manager) why(ctx context.Context, name string, err error) error {
	if _, ierr := m.info(ctx, name); errors.Is(ierr, service.ErrUnknownService) {
		return fmt.Errorf("%w (%v)", ierr, err)
	}
	return err
}

// Start implements service.Manager.
func (m *Manager) Start(ctx context.Context, name string) error {
	return m.act(ctx, "start", name, m.Client.Start, m.waitReady)
}

// Stop implements service.Manager.
func (m *Manager) Stop(ctx context.Context, name string) error {
	return m.act(ctx, "stop", name, m.Client.Stop, m.waitReady)
}

// Restart implements service.Manager.
func (m *Manager) Restart(ctx context.Context, name string) error {
	return m.act(ctx, "restart", name, m.Client.Restart, m.waitReady)
}

// Spawn implements service.Manager: Start without Pebble's 1 s stay-up check.
func (m *Manager) Spawn(ctx context.Context, name string) error {
	return m.act(ctx, "start", name, m.Client.Start, m.waitSpawned)
}

// Respawn implements service.Manager: Restart without Pebble's 1 s stay-up check.
func (m *Manager) Respawn(ctx context.Context, name string) error {
	return m.act(ctx, "restart", name, m.Client.Restart, m.waitSpawned)
}

// act asks Pebble to verb name with do and waits for the change with wait.
func (m *Manager) act(ctx context.Context, verb, name string, do func(*client.ServiceOptions) (string, error), wait func(ctx context.Context, id, name string) error) error {
	if err := service.ValidateName(name); err != nil {
		return fmt.Errorf("cannot %s service %q: %w", verb, name, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cannot %s service %q: %w", verb, name, err)
	}
	m.mu.Lock()
	id, err := do(&client.ServiceOptions{Names: []string{name}})
	m.mu.Unlock()
	if err != nil {
		return fmt.Errorf("cannot %s service %q: %w", verb, name, m.why(ctx, name, err))
	}
	if err := wait(ctx, id, name); err != nil {
		return fmt.Errorf("cannot %s service %q: %w", verb, name, err)
	}
	return nil
}

// waitReady waits for change id to be ready (Pebble's /wait), giving up when ctx ends.
func (m *Manager) waitReady(ctx context.Context, id, _ string) error {
	chg, err := m.change(ctx, id, "/wait")
	if err != nil {
		return err
	}
	if chg.Err != "" {
		return errors.New(chg.Err)
	}
	if !chg.Ready {
		return fmt.Errorf("change %s not ready (status %s)", id, chg.Status)
	}
	return nil
}

// waitSpawned polls change id until it is ready (its error, if any, is returned) or its
// start task is running (or done) with the service active: the process of this change
// was started. A restart's stop task runs first, so the old process does not count.
func (m *Manager) waitSpawned(ctx context.Context, id, name string) error {
	every := m.PollInterval
	if every <= 0 {
		every = DefaultPollInterval
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("change %s not started: %w", id, ctx.Err())
		case <-timer.C:
		}
		chg, err := m.change(ctx, id, "")
		if err != nil {
			return err
		}
		if chg.Err != "" {
			return errors.New(chg.Err)
		}
		if chg.Ready {
			return nil
		}
		if startRunning(chg) {
			info, err := m.info(ctx, name)
			if err != nil {
				return err
			}
			if info.Current == client.StatusActive {
				return nil
			}
		}
		timer.Reset(every)
	}
}

// startRunning reports whether chg has a start task that runs or ran.
func startRunning(chg *client.Change) bool {
	for _, t := range chg.Tasks {
		if t.Kind == "start" && (t.Status == "Doing" || t.Status == "Done") {
			return true
		}
	}
	return false
}

// change gets change id from /v1/changes/<id><suffix>: suffix "" answers at once, "/wait"
// once the change is ready. The client's own Change and WaitChange take no ctx.
func (m *Manager) change(ctx context.Context, id, suffix string) (*client.Change, error) {
	m.mu.Lock()
	resp, err := m.Client.Requester().Do(ctx, &client.RequestOptions{
		Type:   client.SyncRequest,
		Method: "GET",
		Path:   "/v1/changes/" + id + suffix,
	})
	m.mu.Unlock()
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("change %s not finished: %w", id, ctxErr)
		}
		return nil, err
	}
	var chg client.Change
	if err := resp.DecodeResult(&chg); err != nil {
		return nil, fmt.Errorf("cannot read change %s: %w", id, err)
	}
	return &chg, nil
}

// Status implements service.Manager.
func (m *Manager) Status(ctx context.Context, name string) (service.Status, error) {
	info, err := m.info(ctx, name)
	if err != nil {
		return service.Status{}, fmt.Errorf("cannot get status of service %q: %w", name, err)
	}
	st := service.Status{Name: name, Since: info.CurrentSince, Enabled: info.Startup == client.StartupEnabled}
	switch info.Current {
	case client.StatusActive:
		st.State = service.StateActive
	case client.StatusInactive:
		st.State = service.StateInactive
	case client.StatusError:
		st.State = service.StateFailed
	case client.StatusBackoff:
		st.State = service.StateActivating
	default:
		return service.Status{}, fmt.Errorf("cannot get status of service %q: unknown pebble status %q", name, info.Current)
	}
	return st, nil
}

func (m *Manager) info(ctx context.Context, name string) (*client.ServiceInfo, error) {
	if err := service.ValidateName(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	infos, err := m.Client.Services(&client.ServicesOptions{Names: []string{name}})
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	for _, info := range infos {
		if info.Name == name {
			return info, nil
		}
	}
	return nil, fmt.Errorf("%w %q in pebble's plan", service.ErrUnknownService, name)
}

// Command renders argv as a Pebble command string, quoting each argument so that Pebble's
// shell-like splitting gives argv back. Arguments "[" and "]" are refused: Pebble reads
// them as its default-arguments brackets even when quoted.
func Command(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("empty command")
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		if a == "[" || a == "]" {
			return "", fmt.Errorf("command argument %d is %q, which pebble reads as a bracket group", i, a)
		}
		words[i] = quote(a)
	}
	return strings.Join(words, " "), nil
}

func quote(s string) string {
	if s == "" {
		return "''"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_@%+=:,./-", c) >= 0 {
			continue
		}
		return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
	}
	return s
}
