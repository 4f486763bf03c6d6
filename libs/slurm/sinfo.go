package slurm

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Partitions runs `sinfo -h -o %R` and returns the partitions it lists, each once, in
// sinfo's order. It is how a login node tells that Slurm's clients reach the controller
// through it (its sack socket and configuration): no partition is no error.
func (c *Client) Partitions(ctx context.Context) ([]string, error) {
	out, err := c.run(ctx, true, "sinfo", "-h", "-o", "%R")
	if err != nil {
		return nil, err
	}
	return ParsePartitions(out)
}

// ParsePartitions parses `sinfo -h -o %R`: one partition name per line, a name once per
// group of nodes in the same state. Names are returned once each, in order.
func ParsePartitions(data []byte) ([]string, error) {
	var names []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if strings.ContainsAny(l, " \t=") {
			return nil, fmt.Errorf("cannot parse sinfo partition line %q", l)
		}
		if !slices.Contains(names, l) {
			names = append(names, l)
		}
	}
	return names, nil
}
