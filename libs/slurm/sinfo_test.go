package slurm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

// TestPartitions replays `sinfo -h -o %R` on a Slurm 24.11 and a 26.05 login node (sackd),
// answering and without a sack socket.
func TestPartitions(t *testing.T) {
	for _, r := range []struct {
		release string
		real    func(string) slurmtest.Case
	}{
		{"24.11", slurmtest.Real2411},
		{"26.05", slurmtest.Real2605},
	} {
		t.Run(r.release, func(t *testing.T) {
			c, rec := newClient(r.real("login-sinfo"))
			got, err := c.Partitions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"slurmd"}, got); d != "" {
				t.Errorf("partitions (-want +got):\n%s", d)
			}
			if calls := rec.Calls(); len(calls) != 1 || calls[0].Env[0] != "SLURM_CONF=/etc/slurm/slurm.conf" {
				t.Errorf("calls %+v, want one with SLURM_CONF", calls)
			}

			c, _ = newClient(r.real("login-no-sack"))
			_, err = c.Partitions(context.Background())
			if err == nil || !strings.Contains(err.Error(), "Protocol authentication error") {
				t.Errorf("without sackd: err = %v, want the authentication error", err)
			}
		})
	}
}

func TestParsePartitions(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "slurmd\n", want: []string{"slurmd"}},
		{in: "b\na\nb\n\n", want: []string{"b", "a"}},
		{in: "PARTITION AVAIL\n", wantErr: true},
		{in: "a=b\n", wantErr: true},
	}
	for _, tt := range tests {
		got, err := slurm.ParsePartitions([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("ParsePartitions(%q): err = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("ParsePartitions(%q) (-want +got):\n%s", tt.in, d)
		}
	}
}

func FuzzPartitions(f *testing.F) {
	f.Add(slurmtest.Real2411("login-sinfo").Output.Stdout)
	f.Add(slurmtest.Real2605("login-sinfo").Output.Stdout)
	f.Add([]byte("a\nb\na\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		names, err := slurm.ParsePartitions(data)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, " \t\n=") || seen[n] {
				t.Fatalf("ParsePartitions(%q) gave %q", data, names)
			}
			seen[n] = true
		}
	})
}
