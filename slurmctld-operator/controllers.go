package main

import (
	"context"
	"net"
	"strconv"
)

// controllers are the slurmctld addresses (host:port, primary first) that this controller
// publishes to every application that uses the cluster (slurmd, sackd): its ingress address
// on the slurmd endpoint. The one place that decides the list.
func (h *hook) controllers(ctx context.Context) ([]string, error) {
	addr, err := h.ingress(ctx)
	if err != nil {
		return nil, err
	}
	return []string{net.JoinHostPort(addr, strconv.Itoa(SlurmctldPort))}, nil
}
