package slurm_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

// Removing a dynamic node: drain, wait for its jobs, then delete (slurmd stopped first).
func Example() {
	r := &slurmtest.Runner{} // in production: command.Exec{}
	r.Expect(slurmtest.Real("drain-busy"), slurmtest.Real("squeue-node-empty"),
		slurmtest.Real("show-node-drained"), slurmtest.Real("delete-busy"), slurmtest.Real("delete-drained"))
	c := &slurm.Client{Runner: r, Conf: "/etc/slurm/slurm.conf"}
	ctx := context.Background()

	if err := c.Drain(ctx, "node1", "unit slurmd/1 removed"); err != nil {
		fmt.Println(err)
		return
	}
	if err := c.WaitDrained(ctx, "node1"); err != nil {
		fmt.Println(err)
		return
	}
	for {
		err := c.DeleteNode(ctx, "node1")
		if errors.Is(err, slurm.ErrNodeBusy) {
			fmt.Println("busy, retrying")
			continue
		}
		fmt.Println("deleted:", err == nil)
		break
	}
	// Output:
	// busy, retrying
	// deleted: true
}
