package charm_test

import (
	"errors"
	"testing"

	"github.com/charmed-slurm/operators/libs/charm"
)

// TestPending: Wait gives Start's result and error, as often as asked, only once the function
// has returned; a nil Pending is done with the zero value.
func TestPending(t *testing.T) {
	release := make(chan struct{})
	returned := false
	p := charm.Start(func() (int, error) {
		<-release
		returned = true
		return 7, nil
	})
	close(release)
	for range 2 {
		if v, err := p.Wait(); v != 7 || err != nil || !returned {
			t.Errorf("Wait = %d, %v (returned %v), want 7, nil after the function returned", v, err, returned)
		}
	}
	boom := errors.New("boom")
	if _, err := charm.Start(func() (string, error) { return "", boom }).Wait(); !errors.Is(err, boom) {
		t.Errorf("Wait's error = %v, want %v", err, boom)
	}
	var none *charm.Pending[string]
	if v, err := none.Wait(); v != "" || err != nil {
		t.Errorf("nil Pending: Wait = %q, %v, want the zero value", v, err)
	}
}
