package slurmconf_test

import (
	"testing"

	"github.com/charmed-slurm/operators/libs/slurmconf"
	"github.com/google/go-cmp/cmp"
)

func TestKeysOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		major, minor int
		want         string
	}{
		{0, 0, "22.05"}, // unknown version: the oldest supported release
		{22, 5, "22.05"},
		{23, 1, "22.05"},
		{23, 2, "24.11"},
		{23, 11, "24.11"},
		{24, 11, "24.11"},
		{25, 11, "24.11"},
	}
	for _, tt := range tests {
		if got := slurmconf.KeysOf(tt.major, tt.minor).Release(); got != tt.want {
			t.Errorf("KeysOf(%d, %d).Release() = %q, want %q", tt.major, tt.minor, got, tt.want)
		}
	}
}

// TestKeysDiffer pins what differs between the releases' key sets (each set is proven
// against its release's parser by the oracle tests) and that the package-level functions
// keep 22.05's set.
func TestKeysDiffer(t *testing.T) {
	t.Parallel()
	old, cur := slurmconf.KeysOf(22, 5), slurmconf.KeysOf(24, 11)
	type verdicts struct{ Old, New, Default bool }
	tests := []struct {
		name  string
		check func(k *slurmconf.Keys) bool
		pkg   func() bool
		want  verdicts
	}{
		{
			name: "partition MaxCPUsPerSocket",
			check: func(k *slurmconf.Keys) bool {
				return k.ValidatePartitionParams(slurmconf.Params{{Key: "MaxCPUsPerSocket", Value: "2"}}) == nil
			},
			pkg: func() bool {
				return slurmconf.ValidatePartitionParams(slurmconf.Params{{Key: "MaxCPUsPerSocket", Value: "2"}}) == nil
			},
			want: verdicts{Old: false, New: true, Default: false},
		},
		{
			name: "partition value PowerDownOnIdle=YES",
			check: func(k *slurmconf.Keys) bool {
				return k.ValidatePartitionValues(slurmconf.Params{{Key: "PowerDownOnIdle", Value: "YES"}}) == nil
			},
			pkg: func() bool {
				return slurmconf.ValidatePartitionValues(slurmconf.Params{{Key: "PowerDownOnIdle", Value: "YES"}}) == nil
			},
			want: verdicts{Old: false, New: true, Default: false},
		},
		{
			name: "partition value PowerDownOnIdle=maybe",
			check: func(k *slurmconf.Keys) bool {
				return k.ValidatePartitionValues(slurmconf.Params{{Key: "PowerDownOnIdle", Value: "maybe"}}) == nil
			},
			pkg: func() bool {
				return slurmconf.ValidatePartitionValues(slurmconf.Params{{Key: "PowerDownOnIdle", Value: "maybe"}}) == nil
			},
			want: verdicts{},
		},
		{
			name: "node RestrictedCoresPerGPU",
			check: func(k *slurmconf.Keys) bool {
				_, err := k.ParseNode("NodeName=n1 RestrictedCoresPerGPU=1")
				return err == nil
			},
			pkg:  func() bool { _, err := slurmconf.ParseNode("NodeName=n1 RestrictedCoresPerGPU=1"); return err == nil },
			want: verdicts{Old: false, New: true, Default: false},
		},
		{
			name:  "global SlurmctldPlugstack",
			check: func(k *slurmconf.Keys) bool { _, ok := k.GlobalKey("slurmctldplugstack"); return ok },
			pkg:   func() bool { _, ok := slurmconf.GlobalKey("SlurmctldPlugstack"); return ok },
			want:  verdicts{Old: true, New: false, Default: true},
		},
		{
			name:  "global HashPlugin",
			check: func(k *slurmconf.Keys) bool { _, ok := k.GlobalKey("HashPlugin"); return ok },
			pkg:   func() bool { _, ok := slurmconf.GlobalKey("HashPlugin"); return ok },
			want:  verdicts{Old: false, New: true, Default: false},
		},
		{
			name: "document with a 24.11 partition key",
			check: func(k *slurmconf.Keys) bool {
				d, err := slurmconf.Parse([]byte("PartitionName=p Nodes=ALL PowerDownOnIdle=YES\n"))
				return err == nil && d.ValidateFor(k) == nil
			},
			pkg: func() bool {
				d, err := slurmconf.Parse([]byte("PartitionName=p Nodes=ALL PowerDownOnIdle=YES\n"))
				return err == nil && d.Validate() == nil
			},
			want: verdicts{Old: false, New: true, Default: false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := verdicts{Old: tt.check(old), New: tt.check(cur), Default: tt.pkg()}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("accepted (-want +got):\n%s", d)
			}
		})
	}
}
