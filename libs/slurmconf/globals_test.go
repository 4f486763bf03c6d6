package slurmconf_test

import (
	"slices"
	"testing"

	"github.com/charmed-slurm/operators/libs/slurmconf"
)

func TestGlobalKey(t *testing.T) {
	tests := []struct {
		name, key, want string
		ok              bool
	}{
		{"exact", "MinJobAge", "MinJobAge", true},
		{"case", "minjobage", "MinJobAge", true},
		{"typo", "MinJobAg", "MinJobAge", false},
		{"far", "NoSuchKeyAtAll", "", false},
		{"entry key", "PartitionName", "", false},
		{"include", "Include", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := slurmconf.GlobalKey(tt.key)
			if got != tt.want || ok != tt.ok {
				t.Errorf("GlobalKey(%q) = %q, %v; want %q, %v", tt.key, got, ok, tt.want, tt.ok)
			}
		})
	}
	keys := slurmconf.GlobalKeys()
	if !slices.IsSorted(keys) || len(keys) < 200 {
		t.Errorf("GlobalKeys: %d keys, sorted %v", len(keys), slices.IsSorted(keys))
	}
}
