package gres_test

import (
	"fmt"

	"github.com/charmed-slurm/operators/libs/gres"
)

// What a slurmd unit with two Tesla T4s and a declared FPGA gives Slurm.
func Example() {
	detected := gres.Detection{GPUs: []gres.Device{
		{Minor: 0, File: "/dev/nvidia0", Model: "Tesla T4"},
		{Minor: 1, File: "/dev/nvidia1", Model: "Tesla T4"},
	}}.Resources()
	declared, err := gres.ParseDeclaration("Name=fpga Type=u250 File=/dev/xclmgmt0")
	if err != nil {
		panic(err)
	}
	res := gres.Merge(detected, declared)
	fmt.Println("--conf: Gres=" + res.String())
	fmt.Println("GresTypes needs:", res.Names())
	fmt.Print(string(res.Conf("gpu-0")))
	// Output:
	// --conf: Gres=gpu:tesla_t4:2,fpga:u250:1
	// GresTypes needs: [gpu fpga]
	// # Generic resources of this node, written by the slurmd charm.
	// NodeName=gpu-0 Name=gpu Type=tesla_t4 File=/dev/nvidia0
	// NodeName=gpu-0 Name=gpu Type=tesla_t4 File=/dev/nvidia1
	// NodeName=gpu-0 Name=fpga Type=u250 File=/dev/xclmgmt0
}
