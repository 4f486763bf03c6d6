package integration_test

import (
	"context"
	"strings"
	"testing"

	"github.com/canonical/pebble/client"

	"github.com/charmed-slurm/operators/tests/hosts"
)

// slurmdService runs slurmd on a host through its Pebble.
type slurmdService struct {
	t  testing.TB
	pc *client.Client
}

func newSlurmd(t testing.TB, h *hosts.Host) *slurmdService {
	return &slurmdService{t: t, pc: pebbleClient(t, h)}
}

func quote(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		if strings.ContainsAny(a, " \t\"'\\") {
			a = "'" + a + "'"
		}
		words[i] = a
	}
	return strings.Join(words, " ")
}

func (s *slurmdService) start(ctx context.Context, argv []string) {
	s.t.Helper()
	layer := "services:\n  slurmd:\n    override: replace\n    command: " + quote(argv) + "\n    startup: disabled\n    on-failure: restart\n    kill-delay: 10s\n"
	if err := s.pc.AddLayer(&client.AddLayerOptions{Label: "slurmd", Combine: true, LayerData: []byte(layer)}); err != nil {
		s.t.Fatal(err)
	}
	id, err := s.pc.Start(&client.ServiceOptions{Names: []string{"slurmd"}})
	if err != nil {
		s.t.Fatal(err)
	}
	if chg, err := s.pc.WaitChange(id, nil); err != nil || chg.Err != "" {
		s.t.Fatalf("cannot start slurmd: %v %v", err, chg)
	}
}

func (s *slurmdService) stop(ctx context.Context) {
	s.t.Helper()
	id, err := s.pc.Stop(&client.ServiceOptions{Names: []string{"slurmd"}})
	if err != nil {
		s.t.Fatal(err)
	}
	if chg, err := s.pc.WaitChange(id, nil); err != nil || chg.Err != "" {
		s.t.Fatalf("cannot stop slurmd: %v %v", err, chg)
	}
}
