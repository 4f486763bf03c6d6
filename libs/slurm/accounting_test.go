package slurm_test

import (
	"testing"

	"github.com/charmed-slurm/operators/libs/slurm"
)

func TestParseDbdAgentQueue(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		out  string
		want int
		ok   bool
	}{
		{"queue", "*******************************************************\nServer thread count:  3\nAgent queue size:     0\nAgent count:          0\nAgent thread count:   0\nDBD Agent queue size: 10\n", 10, true},
		{"empty queue", "DBD Agent queue size: 0\n", 0, true},
		{"no accounting", "Server thread count:  3\nAgent queue size:     0\n", 0, true},
		{"garbage", "DBD Agent queue size: many\n", 0, false},
		{"negative", "DBD Agent queue size: -1\n", 0, false},
	} {
		got, err := slurm.ParseDbdAgentQueue([]byte(tt.out))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("%s: got %d, %v", tt.name, got, err)
		}
	}
}

func FuzzParseDbdAgentQueue(f *testing.F) {
	f.Add("DBD Agent queue size: 3\n")
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := slurm.ParseDbdAgentQueue([]byte(s)); err == nil && n < 0 {
			t.Errorf("negative queue %d", n)
		}
	})
}
