package juju

import "context"

// NetworkInfo is network-get's view of one endpoint binding.
type NetworkInfo struct {
	BindAddresses    []BindAddress `json:"bind-addresses"`
	EgressSubnets    []string      `json:"egress-subnets"`
	IngressAddresses []string      `json:"ingress-addresses"`
}

// BindAddress is one interface of a binding.
type BindAddress struct {
	MACAddress    string             `json:"mac-address"`
	InterfaceName string             `json:"interface-name"`
	Addresses     []InterfaceAddress `json:"addresses"`
}

// InterfaceAddress is one address of an interface.
type InterfaceAddress struct {
	Hostname string `json:"hostname"`
	Value    string `json:"value"`
	CIDR     string `json:"cidr"`
}

// Network runs network-get and unit-get.
type Network struct{ Runner Runner }

// Get reads the network configuration of the endpoint's binding:
// network-get <endpoint> --format=json.
func (c Network) Get(ctx context.Context, endpoint string) (NetworkInfo, error) {
	var info NetworkInfo
	err := runJSON(ctx, c.Runner, &info, "network-get", endpoint, "--format=json")
	return info, err
}

// IngressAddress is the address this unit advertises for incoming
// connections on the endpoint (an IP address or a host name):
// network-get <endpoint> --ingress-address --format=json.
func (c Network) IngressAddress(ctx context.Context, endpoint string) (string, error) {
	var addr string
	err := runJSON(ctx, c.Runner, &addr, "network-get", endpoint, "--ingress-address", "--format=json")
	return addr, err
}

// PrivateAddress is the unit's private address:
// unit-get private-address --format=json.
func (c Network) PrivateAddress(ctx context.Context) (string, error) {
	var addr string
	err := runJSON(ctx, c.Runner, &addr, "unit-get", "private-address", "--format=json")
	return addr, err
}
