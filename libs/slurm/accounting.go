package slurm

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
)

// DbdAgentQueue runs `sdiag` and returns the size of slurmctld's queue of records for
// slurmdbd ("DBD Agent queue size: N"): records slurmctld holds while slurmdbd or its
// database is away, sent once it is back. A controller without accounting reports none.
func (c *Client) DbdAgentQueue(ctx context.Context) (int, error) {
	out, err := c.run(ctx, true, "sdiag")
	if err != nil {
		return 0, err
	}
	return ParseDbdAgentQueue(out)
}

// ParseDbdAgentQueue reads the DBD agent queue size from sdiag's output; 0 when sdiag shows
// none (no accounting storage).
func ParseDbdAgentQueue(data []byte) (int, error) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		s := strings.TrimSpace(string(line))
		rest, ok := strings.CutPrefix(s, "DBD Agent queue size:")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(rest))
		if err != nil || n < 0 {
			return 0, fmt.Errorf("cannot parse sdiag line %q", s)
		}
		return n, nil
	}
	return 0, nil
}

// ClusterKnown runs `sacctmgr show cluster` against the slurmdbd that Conf's
// AccountingStorageHost names and reports whether it holds cluster name.
func (c *Client) ClusterKnown(ctx context.Context, name string) (bool, error) {
	if err := checkName("cluster", name); err != nil {
		return false, err
	}
	out, err := c.run(ctx, true, "sacctmgr", "-n", "-P", "show", "cluster", name, "format=cluster")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == name {
			return true, nil
		}
	}
	return false, nil
}
