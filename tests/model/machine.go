package model

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
)

// Machine is where one unit runs: a host with its own namespaces (tests/hosts) or, for fast
// unit tests, a plain directory on this machine (LocalMachines).
type Machine interface {
	// Command returns a command that runs argv on the machine, in the directory dir (a path as
	// commands on the machine see it, with Root; "" for the machine's default).
	Command(ctx context.Context, dir string, argv []string) *exec.Cmd
	// Hostname is the machine's host name.
	Hostname() string
	// Addr is the machine's address (invalid when it has none).
	Addr() netip.Addr
	// Root is prepended to the machine's paths (/var/lib/juju/...) to name them in commands run
	// on the machine: "" for a host with its own mount namespace.
	Root() string
	// Path is the path, in the model's own process, of the machine's file or directory inside
	// (an absolute path as seen on the machine). The model installs each unit's charm and hook
	// tools through it, with no process started on the machine. It must reach at least
	// /var/lib/juju.
	Path(inside string) string
	// Destroy stops everything on the machine and removes it.
	Destroy(ctx context.Context) error
}

// Provisioner creates machines.
type Provisioner interface {
	// NewMachine creates machine id (a small number as a string) for unit.
	NewMachine(ctx context.Context, id, unit string) (Machine, error)
	// Close destroys what the provisioner still holds.
	Close() error
}

// LocalMachines provisions "machines" that are directories under Dir: commands run as plain
// processes of this machine with the machine's paths under <Dir>/machine-<id>. It is for fast
// unit tests of the model; it gives no isolation.
type LocalMachines struct {
	Dir string
}

// NewMachine implements Provisioner.
func (p LocalMachines) NewMachine(ctx context.Context, id, unit string) (Machine, error) {
	root := filepath.Join(p.Dir, "machine-"+id)
	if err := os.MkdirAll(filepath.Join(root, "var/lib/juju"), 0o755); err != nil {
		return nil, fmt.Errorf("cannot create machine %s: %w", id, err)
	}
	return &localMachine{root: root, name: "machine-" + id}, nil
}

// Close implements Provisioner.
func (p LocalMachines) Close() error { return nil }

type localMachine struct {
	root string
	name string
}

func (m *localMachine) Command(ctx context.Context, dir string, argv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir // its commands see this machine's file system: dir is under Root already
	return cmd
}
func (m *localMachine) Hostname() string { return m.name }
func (m *localMachine) Addr() netip.Addr { return netip.AddrFrom4([4]byte{127, 0, 0, 1}) }
func (m *localMachine) Root() string     { return m.root }
func (m *localMachine) Path(inside string) string {
	return filepath.Join(m.root, filepath.Clean("/"+inside))
}
func (m *localMachine) Destroy(ctx context.Context) error {
	if err := os.RemoveAll(m.root); err != nil {
		return fmt.Errorf("cannot destroy machine %s: %w", m.name, err)
	}
	return nil
}
