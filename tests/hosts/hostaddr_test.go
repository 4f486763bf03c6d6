package hosts

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHostAddr(t *testing.T) {
	for _, tt := range []struct {
		name   string
		subnet string
		i      int
		want   string
	}{
		{"first host", "10.201.7.0/24", 1, "10.201.7.11"},
		{"last host in the /24", "10.201.7.0/24", 240, "10.201.7.250"},
		{"past the /24", "10.201.7.0/24", 246, "10.201.8.0"},
		{"the 1000th", "10.201.7.0/24", 1000, "10.201.10.242"},
		{"carry into the second octet", "10.201.255.0/24", 300, "10.202.0.54"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := hostAddr(netip.MustParsePrefix(tt.subnet), tt.i)
			if d := cmp.Diff(tt.want, got.String()); d != "" {
				t.Errorf("hostAddr(%s, %d) (-want +got):\n%s", tt.subnet, tt.i, d)
			}
			if !netip.PrefixFrom(netip.MustParseAddr("10.0.0.0"), OnLinkBits).Contains(got) {
				t.Errorf("%s is not on-link (10.0.0.0/%d)", got, OnLinkBits)
			}
		})
	}
}
