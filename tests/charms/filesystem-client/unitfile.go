package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/charmed-slurm/operators/libs/atomicfile"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/auto"
)

// unitFiles is the host's service manager, which on systemd first gets the unit file of the
// sshfs service: the systemd backend configures packaged units only (their drop-in and
// environment file, libs/service/systemd), and no package ships one for this service. The
// drop-in Configure writes then gives it its command, its user and Restart=on-failure. (The
// real charm mounts through autofs and runs no service of its own.) Under Pebble it is the
// manager unchanged.
type unitFiles struct {
	service.Manager
	// systemd: the manager is systemd's, and Configure writes the unit file.
	systemd bool
	// root prefixes the unit file's path ("/" on a machine).
	root string
	// close closes the manager's connection.
	close func()
}

// withUnitFile is m with the sshfs service's unit file on systemd.
func withUnitFile(m *auto.Manager) *unitFiles {
	return &unitFiles{Manager: m, systemd: m.Backend == service.Systemd, root: "/", close: m.Close}
}

// Close closes the manager's connection, if one was made.
func (u *unitFiles) Close() { u.close() }

// unitFile is the base unit of name: what the drop-in does not set.
func unitFile(name string) string {
	return fmt.Sprintf(`# Written by the filesystem-client test stand-in; its drop-in (%s.service.d) sets the command.
[Unit]
Description=sshfs mount of the filesystem-client test stand-in (%s)
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/bin/false

[Install]
WantedBy=multi-user.target
`, name, name)
}

// Configure implements service.Manager: on systemd it writes the unit file (when it differs)
// before the backend writes the drop-in and reloads systemd for it.
func (u *unitFiles) Configure(ctx context.Context, spec service.Spec) error {
	if u.systemd {
		path := filepath.Join(u.root, "etc/systemd/system", spec.Name+".service")
		want := []byte(unitFile(spec.Name))
		if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, want) {
			if err := atomicfile.Write(ctx, path, want, atomicfile.Options{Mode: 0o644, Reset: true, MkdirMode: 0o755}); err != nil {
				return fmt.Errorf("cannot write the unit file of %q: %w", spec.Name, err)
			}
		}
	}
	return u.Manager.Configure(ctx, spec)
}
