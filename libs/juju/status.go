package juju

import (
	"context"
	"fmt"
)

// StatusCode is a workload status.
type StatusCode string

// The workload statuses a charm sets, and those Juju reports.
const (
	StatusActive      StatusCode = "active"
	StatusBlocked     StatusCode = "blocked"
	StatusMaintenance StatusCode = "maintenance"
	StatusWaiting     StatusCode = "waiting"
	StatusUnknown     StatusCode = "unknown"
	StatusError       StatusCode = "error"
	StatusTerminated  StatusCode = "terminated"
)

// Settable reports whether a charm may set the status with status-set.
func (c StatusCode) Settable() bool {
	switch c {
	case StatusActive, StatusBlocked, StatusMaintenance, StatusWaiting:
		return true
	}
	return false
}

// WorkloadStatus is one status with its message.
type WorkloadStatus struct {
	Code    StatusCode     `json:"status"`
	Message string         `json:"message"`
	Data    map[string]any `json:"status-data,omitempty"`
}

// AppStatus is the application's status and its units' statuses.
type AppStatus struct {
	WorkloadStatus
	Units map[string]WorkloadStatus `json:"units"`
}

// Status runs status-set and status-get.
type Status struct{ Runner Runner }

// SetUnit sets the unit's status: status-set <code> <msg>.
func (c Status) SetUnit(ctx context.Context, code StatusCode, msg string) error {
	if !code.Settable() {
		return fmt.Errorf("cannot set unit status: invalid status %q", code)
	}
	_, err := run(ctx, c.Runner, nil, textArgs([]string{"status-set", string(code)}, msg)...)
	return err
}

// SetApp sets the application's status; only the leader may:
// status-set --application <code> <msg>.
func (c Status) SetApp(ctx context.Context, code StatusCode, msg string) error {
	if !code.Settable() {
		return fmt.Errorf("cannot set application status: invalid status %q", code)
	}
	_, err := run(ctx, c.Runner, nil, textArgs([]string{"status-set", "--application", string(code)}, msg)...)
	return err
}

// SetVersion records the workload's version, which juju status shows in the application's
// Version column: application-version-set <version>.
func (c Status) SetVersion(ctx context.Context, version string) error {
	_, err := run(ctx, c.Runner, nil, "application-version-set", version)
	return err
}

// Unit reads the unit's status: status-get --include-data --format=json.
func (c Status) Unit(ctx context.Context) (WorkloadStatus, error) {
	var st WorkloadStatus
	err := runJSON(ctx, c.Runner, &st, "status-get", "--include-data", "--format=json")
	return st, err
}

// App reads the application's status and its units'; only the leader may:
// status-get --application --include-data --format=json.
func (c Status) App(ctx context.Context) (AppStatus, error) {
	var out struct {
		App *AppStatus `json:"application-status"`
	}
	if err := runJSON(ctx, c.Runner, &out, "status-get", "--application", "--include-data", "--format=json"); err != nil {
		return AppStatus{}, err
	}
	if out.App == nil {
		return AppStatus{}, fmt.Errorf("cannot decode output of status-get: no application-status")
	}
	return *out.App, nil
}
