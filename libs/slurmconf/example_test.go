package slurmconf_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/charmed-slurm/operators/libs/slurmconf"
)

func Example() {
	in := `# Cluster "lab"
ClusterName=lab
SlurmctldHost=ctl   # the controller

PartitionName=debug Nodes=n[1-2] MaxTime=30 # short jobs
`
	doc, err := slurmconf.Parse([]byte(in))
	if err != nil {
		fmt.Println(err)
		return
	}
	// Add a NodeSet and a Partition for an application of dynamic nodes.
	_ = doc.SetNodeSet(slurmconf.NodeSet{Name: "gpu", Params: slurmconf.Params{{Key: "Feature", Value: "gpu"}}})
	part, _ := slurmconf.ParsePartition("PartitionName=gpu Nodes=gpu DefaultTime=45:00 MaxTime=1:00:00")
	_ = doc.SetPartition(part)
	// Change a partition and a global key: only their lines are rendered again.
	debug, _ := doc.Partition("debug")
	debug.Params.Set("maxtime", "60")
	_ = doc.SetPartition(debug)
	_ = doc.Set("MaxNodeCount", "100")
	fmt.Print(doc.String())
	// Output:
	// # Cluster "lab"
	// ClusterName=lab
	// SlurmctldHost=ctl   # the controller
	// MaxNodeCount=100
	//
	// NodeSet=gpu Feature=gpu
	// PartitionName=debug Nodes=n[1-2] MaxTime=60 # short jobs
	// PartitionName=gpu Nodes=gpu DefaultTime=45:00 MaxTime=1:00:00
}

func ExampleParseParams() {
	// The partition-config option of the slurmd charm.
	p, err := slurmconf.ParseParams("DefaultTime=45:00 MaxTime=1:00:00")
	if err == nil {
		err = slurmconf.ValidatePartitionParams(p)
	}
	fmt.Println(p, err)

	// A typo is reported with its column and key.
	p, err = slurmconf.ParseParams("DefaultTime=45:00 MaxTme=1:00:00")
	if err == nil {
		err = slurmconf.ValidatePartitionParams(p)
	}
	fmt.Println(err)
	// Output:
	// DefaultTime=45:00 MaxTime=1:00:00 <nil>
	// unknown partition key "MaxTme" (did you mean "MaxTime"?)
}

func ExampleParsePartition() {
	_, err := slurmconf.ParsePartition("PartitionName=batch Nodes=batch MaxTme=1:00:00")
	var pe *slurmconf.ParseError
	if errors.As(err, &pe) {
		fmt.Println(pe.Col, pe.Key)
		fmt.Println(err)
	}
	// Output:
	// 33 MaxTme
	// line 1, column 33: unknown partition key "MaxTme" (did you mean "MaxTime"?)
}

func ExampleEdit() {
	dir, _ := os.MkdirTemp("", "slurmconf")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "slurm.conf")
	_ = os.WriteFile(path, []byte("ClusterName=lab\n"), 0o644)

	changed, err := slurmconf.Edit(context.Background(), path, func(d *slurmconf.Doc) error {
		return d.AddInclude("/etc/slurm/apps/gpu.conf")
	}, slurmconf.EditOptions{})
	fmt.Println(changed, err)
	data, _ := os.ReadFile(path)
	fmt.Print(string(data))
	// Output:
	// true <nil>
	// ClusterName=lab
	// Include /etc/slurm/apps/gpu.conf
}
