package bench

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWrapper: no Wrap runs the hooks bare; "{run}" in any argument names the operator, the hook
// and the run.
func TestWrapper(t *testing.T) {
	if w := wrapper(nil, "slurmd.start"); w != nil {
		t.Errorf("no wrap gave a wrapper: %q", w(1))
	}
	w := wrapper([]string{"strace", "-o", "/tmp/st.{run}", "-e{run}"}, "slurmctld.update-status")
	if d := cmp.Diff([]string{"strace", "-o", "/tmp/st.slurmctld.update-status.3", "-eslurmctld.update-status.3"}, w(3)); d != "" {
		t.Errorf("wrapper (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"strace", "-o", "/tmp/st.slurmctld.update-status.0", "-eslurmctld.update-status.0"}, w(0)); d != "" {
		t.Errorf("warm-up run's wrapper (-want +got):\n%s", d)
	}
}
