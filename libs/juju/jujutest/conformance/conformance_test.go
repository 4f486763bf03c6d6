package conformance_test

import (
	"testing"

	"github.com/charmed-slurm/operators/libs/juju/jujutest/conformance"
)

// TestJujuTest: jujutest keeps every rule of the table.
func TestJujuTest(t *testing.T) {
	t.Parallel()
	conformance.Run(t, conformance.JujuTest)
}
