package slurm

import (
	"context"
	"fmt"
	"strings"

	"github.com/charmed-slurm/operators/libs/hostlist"
)

// RebootNodes runs `scontrol reboot ASAP nextstate=resume reason=R <nodes>`: each node is
// drained at once, rebooted by slurmd's RebootProgram when its jobs have ended, and returned to
// service when its slurmd registers again (within ResumeTimeout). The reason (required) is one
// argv element.
func (c *Client) RebootNodes(ctx context.Context, nodes []string, reason string) error {
	if len(nodes) == 0 {
		return fmt.Errorf("cannot reboot nodes: no node given")
	}
	if strings.TrimSpace(reason) == "" || strings.ContainsAny(reason, "\n\r\"") {
		return fmt.Errorf("cannot reboot nodes: reason %q is empty or has a newline or double quote", reason)
	}
	for _, n := range nodes {
		if err := checkName("node", n); err != nil {
			return err
		}
	}
	_, err := c.run(ctx, true, "scontrol", "reboot", "ASAP", "nextstate=resume", "reason="+reason, hostlist.Compress(nodes))
	return err
}
