package hostlist_test

import (
	"fmt"

	"github.com/charmed-slurm/operators/libs/hostlist"
)

func ExampleExpand() {
	names, err := hostlist.Expand("node[01-03,7],gpu[1-2]")
	fmt.Println(names, err)
	names, _ = hostlist.Expand("rack[1-2]-node[01-02]")
	fmt.Println(names)
	// Output:
	// [node01 node02 node03 node7 gpu1 gpu2] <nil>
	// [rack1-node01 rack1-node02 rack2-node01 rack2-node02]
}

func ExampleCompress() {
	fmt.Println(hostlist.Compress([]string{"node01", "node02", "node03", "node7", "gpu1", "gpu2"}))
	fmt.Println(hostlist.CompressSorted([]string{"n10", "n9", "n8", "n9"}))
	// Output:
	// node[01-03,7],gpu[1-2]
	// n[8-10]
}
