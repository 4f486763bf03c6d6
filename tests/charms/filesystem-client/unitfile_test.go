package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/servicetest"
)

// TestUnitFile: on systemd the sshfs service gets its unit file before the backend configures
// it (the backend writes a drop-in for a packaged unit, and none is packaged), once; under
// Pebble nothing is written.
func TestUnitFile(t *testing.T) {
	ctx := context.Background()
	spec := service.Spec{Name: serviceName, Command: []string{"/usr/bin/sshfs", "-f", "h:/x", "/m"}}
	for _, systemd := range []bool{true, false} {
		root := t.TempDir()
		m := servicetest.New()
		u := &unitFiles{Manager: m, systemd: systemd, root: root}
		path := filepath.Join(root, "etc/systemd/system", serviceName+".service")
		for range 2 {
			if err := u.Configure(ctx, spec); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		switch {
		case systemd && err != nil:
			t.Fatalf("systemd: no unit file: %v", err)
		case systemd && string(got) != unitFile(serviceName):
			t.Errorf("systemd: unit file %q", got)
		case !systemd && err == nil:
			t.Errorf("pebble: unit file written: %q", got)
		}
		if d := cmp.Diff([]string{"configure " + serviceName, "configure " + serviceName}, m.Calls()); d != "" {
			t.Errorf("systemd %v: calls (-want +got):\n%s", systemd, d)
		}
	}
}
